"""Capture of a query over Iceberg tables: the tables become statistics-only Iceberg tables
with their partition spec and partitions, and the replay plans the storage-partitioned
join the real tables got. Needs the Iceberg runtime of the running Spark (3.3 - 4.1): in a
child process whose session loads it, as a run with Iceberg scenarios does."""
import subprocess
import sys
import textwrap

import pyspark
import pytest
import yaml

from harness.spark.formats import iceberg

pytestmark = pytest.mark.skipif(iceberg.runtime_for(pyspark.__version__) is None,
                                reason=iceberg.not_available(pyspark.__version__))

SCRIPT = textwrap.dedent("""
    import sys
    from pathlib import Path
    from harness import capture
    from harness.check import runner
    from harness.core.options import RunOptions
    from harness.scenario.model import expand, load_scenario
    from harness.spark.session import get_session

    out = Path(sys.argv[1])
    session = get_session(RunOptions(formats=("iceberg",)))
    spark = session.spark
    spark.sql("CREATE TABLE harness_iceberg.prod.orders (order_id bigint, customer_id bigint, day date) "
              "USING iceberg PARTITIONED BY (bucket(4, customer_id), days(day)) "
              "TBLPROPERTIES ('write.spark.fanout.enabled'='true')")
    spark.sql("CREATE TABLE harness_iceberg.prod.customers (customer_id bigint, region string) "
              "USING iceberg PARTITIONED BY (bucket(4, customer_id)) "
              "TBLPROPERTIES ('write.spark.fanout.enabled'='true')")
    spark.sql("INSERT INTO harness_iceberg.prod.orders SELECT id, id % 300, "
              "date_add(DATE'2026-11-01', CAST(id % 2 AS INT)) FROM range(6000)")
    spark.sql("INSERT INTO harness_iceberg.prod.customers SELECT id, concat('r', id % 5) FROM range(300)")
    for key, value in {"spark.sql.autoBroadcastJoinThreshold": "-1", "spark.sql.sources.v2.bucketing.enabled": "true",
                       "spark.sql.iceberg.planning.preserve-data-grouping": "true",
                       "spark.sql.requireAllClusterKeysForCoPartition": "false"}.items():
        spark.conf.set(key, value)
    query = ("SELECT o.order_id, c.region FROM harness_iceberg.prod.orders o "
             "JOIN harness_iceberg.prod.customers c ON o.customer_id = c.customer_id")
    capture(query, out / "sql.yaml", spark=spark)
    orders = spark.table("harness_iceberg.prod.orders")
    customers = spark.table("harness_iceberg.prod.customers")
    capture(orders.join(customers, "customer_id").select("order_id", "region"), out / "frame.yaml")
    try:  # Iceberg's metadata tables are not tables of rows
        capture("SELECT * FROM harness_iceberg.prod.orders.snapshots", out / "meta.yaml", spark=spark)
    except Exception as exc:
        print("refused:", type(exc).__name__, exc)
    for name in ("sql.yaml", "frame.yaml"):
        spark.conf.unset("spark.sql.iceberg.planning.preserve-data-grouping")  # the file's configs say it
        (case,) = expand(load_scenario(out / name))
        record = runner.run_case(case, session)
        top = record.observed.initial.joins[0]
        print(name, record.status, top["strategy"], top["shuffles"], record.message)
""")


def test_a_captured_query_over_iceberg_tables_replays_its_storage_partitioned_join(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.endswith(".yaml") or ".yaml " in line]
    assert lines == ["sql.yaml passed SortMergeJoin {'left': 0, 'right': 0} ",
                     "frame.yaml passed SortMergeJoin {'left': 0, 'right': 0} "], done.stdout[-3000:]
    assert "refused: CaptureError query: it reads Iceberg's metadata table prod.orders.snapshots: capture reads " \
           "tables of rows" in done.stdout, done.stdout[-3000:]
    assert not (tmp_path / "meta.yaml").exists()
    data = yaml.safe_load((tmp_path / "sql.yaml").read_text())
    orders = data["tables"]["orders"]
    assert (orders["format"], orders["partition_by"]) == ("iceberg", ["bucket(4, customer_id)", "days(day)"])
    assert sum(p["rows"] for p in orders["partition_values"]) == orders["stats"]["rows"] == 6000
    assert {p["values"][1] for p in orders["partition_values"]} == {"2026-11-01", "2026-11-02"}
    assert data["spark_conf"]["spark.sql.iceberg.planning.preserve-data-grouping"] is True
    assert data["expect"]["shuffles"] == {"left": 0, "right": 0}
    assert data["expect"]["key_grouped"] == {"left": True, "right": True}
