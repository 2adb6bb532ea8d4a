"""Capture of tables in the states production tables are often in — catalog statistics
older than the files (files written outside Spark after ANALYZE), a partition whose
folder was deleted outside Spark, an empty partition, an ORC table — replayed on the
same Spark: the replay's joins, build sides, shuffles, pruning and the size and row
estimates of both sides of every join equal the direct plan's exactly, with the
broadcast threshold set at the real top join's smaller side (a replayed estimate one
byte larger would plan another strategy). And the self-check: a file whose sizes are
not Spark's is written with a warning at its top, never silently."""
from __future__ import annotations

import glob
import os
import shutil
import urllib.parse

import pytest
import yaml

from harness.capturing import fidelity
from harness.capturing.to_scenario import CaptureError, capture
from tests.capturing.real_plans import captured_at_threshold

DB = "states"
FACTS = ("ev_stale", "ev_gone", "ev_empty", "ev_orc")
DIMS = ("cu", "days")
QUERIES = {
    "one_day": "SELECT f.amount, c.region FROM states.{f} f JOIN states.cu c ON f.customer = c.customer "
               "WHERE f.day = 2",
    "all_days": "SELECT f.amount, c.region FROM states.{f} f JOIN states.cu c ON f.customer = c.customer",
    "dpp": "SELECT f.amount, d.name FROM states.{f} f JOIN states.days d ON f.day = d.day WHERE d.name = 'd1'",
    "two_facts": "SELECT f.amount, g.amount FROM states.{f} f JOIN states.ev_stale g ON f.customer = g.customer "
                 "WHERE f.day >= 1 AND g.day = 0",
}


def _folder(spark, table: str) -> str:
    location = spark.sql(f"DESCRIBE FORMATTED {DB}.{table}").where("col_name = 'Location'").collect()[0][1]
    return urllib.parse.unquote(urllib.parse.urlparse(location).path)


def _write_fact(spark, table: str, fmt: str) -> None:
    spark.range(60000).selectExpr("id % 3000 AS customer", "CAST(id AS DOUBLE) AS amount",
                                  "CAST(CASE WHEN id < 30000 THEN 0 ELSE id % 4 END AS INT) AS day") \
        .write.format(fmt).partitionBy("day").saveAsTable(f"{DB}.{table}")
    spark.sql(f"ANALYZE TABLE {DB}.{table} COMPUTE STATISTICS FOR ALL COLUMNS")


@pytest.fixture(scope="module")
def states():
    """The warehouse, each fact in its state (changed outside Spark after ANALYZE)."""
    from harness.spark.session import get_session
    spark = get_session().spark
    catalog = spark._jsparkSession.catalog()
    if catalog.databaseExists(DB) and catalog.tableExists(DB, "days"):
        return spark
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
    spark.range(3000).selectExpr("id AS customer", "concat('r', id % 4) AS region").write.saveAsTable(f"{DB}.cu")
    spark.range(4).selectExpr("CAST(id AS INT) AS day", "concat('d', id) AS name").write.saveAsTable(f"{DB}.days")
    for table in DIMS:
        spark.sql(f"ANALYZE TABLE {DB}.{table} COMPUTE STATISTICS FOR ALL COLUMNS")
    for table in FACTS:
        _write_fact(spark, table, "orc" if table == "ev_orc" else "parquet")
    for table in ("ev_stale", "ev_orc"):  # a file another writer put in a partition after ANALYZE
        folder = _folder(spark, table)
        data = sorted(f for f in glob.glob(f"{folder}/day=1/*") if not os.path.basename(f).startswith((".", "_")))
        shutil.copy(data[0], f"{folder}/day=1/written-outside-spark-{os.path.basename(data[0])}")
    shutil.rmtree(f"{_folder(spark, 'ev_gone')}/day=3")  # deleted outside Spark
    empty = f"{_folder(spark, 'ev_empty')}/day=9"
    os.makedirs(empty)
    spark.sql(f"ALTER TABLE {DB}.ev_empty ADD PARTITION (day = 9) LOCATION '{empty}'")
    for table in FACTS:
        spark.sql(f"REFRESH TABLE {DB}.{table}")
    return spark


@pytest.mark.parametrize("cbo", [False, True], ids=["cbo-off", "cbo-on"])
@pytest.mark.parametrize("query", list(QUERIES))
@pytest.mark.parametrize("fact", FACTS)
def test_a_table_in_a_production_state_replays_spark_s_own_estimates(session, states, tmp_path, fact, query, cbo,
                                                                     assert_replays):
    text = QUERIES[query].format(f=fact)
    conf = {"spark.sql.adaptive.enabled": "false", "spark.sql.cbo.enabled": str(cbo).lower()}
    path, direct, direct_estimates = captured_at_threshold(states, text, tmp_path / f"{fact}_{query}.yaml",
                                                           {t: t for t in FACTS + DIMS}, conf)
    written = path.read_text()
    assert "WARNING" not in written, written[:2000]
    data = yaml.safe_load(written)
    table = data["tables"][fact]
    if fact in ("ev_stale", "ev_orc"):
        assert table.get("stale_stats") is True and "replayed as they are (stale_stats)" in written
    if fact == "ev_gone":
        assert [p["size_bytes"] for p in table["partition_values"] if p["values"] == [3]] == [0]
        assert "the folder of partition {'day': '3'} is gone" in written
    if fact == "ev_empty":
        assert [p["size_bytes"] for p in table["partition_values"] if p["values"] == [9]] == [0]
    if fact == "ev_orc":
        assert table["format"] == "orc" and "replayed as a statistics-only parquet table" not in written
    assert_replays(path, direct, direct_estimates)


def test_a_file_whose_sizes_are_not_spark_s_says_so_at_its_top(session, states, tmp_path, monkeypatch, capsys):
    """The stale table written with its files' total (what capture wrote before): the
    self-check plans the file and names the join side, its table and the two sizes."""
    from harness.capturing import catalog

    def files_total(stats, partitions, where, notes):
        stats["size_bytes"] = sum(p["size_bytes"] for p in partitions)
        return False

    monkeypatch.setattr(catalog, "_stale_stats", files_total)
    text = QUERIES["all_days"].format(f="ev_stale")
    path = capture(text, tmp_path / "stale.yaml", spark=states)
    first = path.read_text().splitlines()[0]
    assert first.startswith("# WARNING: replayed here, this file plans otherwise than the real query: join 1 ")
    assert "side (ev_stale): real " in first and ", replay " in first
    assert "warning: " in capsys.readouterr().err


def test_the_differences_the_self_check_names():
    real = {"joins": [("BroadcastHashJoin", "right", ["a", "b"], {"left": 0, "right": 0}, {"left": ["none"]})],
            "estimates": [{"left": {"bytes": 373674, "rows": None, "tables": ["a"]},
                           "right": {"bytes": 100, "rows": 4, "tables": ["b"]}}]}
    assert fidelity.differences(real, real) == []
    replay = {"joins": [("SortMergeJoin", "none", ["a", "b"], {"left": 1, "right": 1}, {"left": ["none"]})],
              "estimates": [{"left": {"bytes": 703532, "rows": None, "tables": ["a"]},
                             "right": {"bytes": 100, "rows": 4, "tables": ["b"]}}]}
    found = fidelity.differences(real, replay)
    assert found[0].startswith("join 1 (a, b): real BroadcastHashJoin (build right;")
    assert found[1] == "join 1 left side (a): real 373,674 B, replay 703,532 B"
    assert fidelity.differences(real, {"joins": [], "estimates": []})[0].startswith(
        "the real query plans 1 join(s), the replay 0")


def test_an_id_another_file_of_the_folder_holds_is_refused(session, states, tmp_path):
    text = QUERIES["one_day"].format(f="ev_gone")
    first = capture(text, tmp_path / "q.yaml", spark=states)
    assert yaml.safe_load(first.read_text())["id"] == "q"
    again = capture(text, tmp_path / "q.yaml", spark=states)  # the same file rewritten: its own id
    assert again == first
    broadcast = capture(text, tmp_path / "q_broadcast.yaml", spark=states, source="q.sql")
    assert yaml.safe_load(broadcast.read_text())["id"] == "q_broadcast"  # the output file's name
    with pytest.raises(CaptureError, match=r"q\.yaml already holds id 'q'"):
        capture(text, tmp_path / "other.yaml", spark=states, scenario_id="q")
    assert not (tmp_path / "other.yaml").exists()


HIVE_SCRIPT = """
import os, sys
os.chdir(sys.argv[1])  # the Hive metastore's Derby files
from pyspark.sql import SparkSession
from harness.capturing.to_scenario import capture
spark = (SparkSession.builder.master("local[1]").config("spark.sql.catalogImplementation", "hive")
         .config("spark.sql.warehouse.dir", os.path.join(sys.argv[1], "wh")).getOrCreate())
spark.sql("CREATE DATABASE shop")
spark.range(20000).selectExpr("id % 500 AS customer", "CAST(id % 4 AS INT) AS day").write.partitionBy("day") \\
    .saveAsTable("shop.orders")
spark.range(500).selectExpr("id AS customer", "concat('c', id) AS name").write.saveAsTable("shop.customers")
path = capture("SELECT * FROM shop.orders o JOIN shop.customers c ON o.customer = c.customer WHERE o.day = 1",
               os.path.join(sys.argv[1], "q.yaml"), spark=spark)
spark.sql("CREATE TABLE shop.visits (customer BIGINT, pages INT) PARTITIONED BY (day INT) STORED AS ORC")
spark.sql("INSERT INTO shop.visits PARTITION (day = 1) SELECT id % 500, CAST(id % 7 AS INT) FROM range(5000)")
spark.sql("INSERT INTO shop.visits PARTITION (day = 2) SELECT id % 500, CAST(id % 7 AS INT) FROM range(9000)")
capture("SELECT * FROM shop.visits v JOIN shop.customers c ON v.customer = c.customer WHERE v.day = 2",
        os.path.join(sys.argv[1], "hive_orc.yaml"), spark=spark)
print("DATABASES", sorted(r[0] for r in spark.sql("SHOW DATABASES").collect()))
"""


def test_the_self_check_plans_in_a_hive_metastore_and_leaves_it_as_it_was(tmp_path):
    """A Hive metastore takes only folders as partition locations: the self-check's
    statistics-only partitions are folders there, and its scratch database is dropped."""
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", HIVE_SCRIPT, str(tmp_path)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "DATABASES ['default', 'shop']" in done.stdout
    written = (tmp_path / "q.yaml").read_text()
    assert written.startswith("# Captured from query") and "WARNING" not in written, written[:1000]
    hive_orc = (tmp_path / "hive_orc.yaml").read_text()  # a Hive table STORED AS ORC: replayed as an ORC table
    assert "WARNING" not in hive_orc and "replayed as a statistics-only parquet" not in hive_orc, hive_orc[:1000]
    assert yaml.safe_load(hive_orc)["tables"]["visits"]["format"] == "orc"


def test_a_capture_without_its_self_check_says_so(session, states, tmp_path, monkeypatch):
    from harness.capturing import fidelity

    def never(*args):
        raise AssertionError("the self-check ran")

    monkeypatch.setattr(fidelity, "self_check", never)
    path = capture(QUERIES["one_day"].format(f="ev_stale"), tmp_path / "q.yaml", spark=states, self_check=False)
    assert "# Not self-checked (--no-self-check): whether its replay plans as the real query did is unchecked" in \
        path.read_text()


# ---------------------------------------------------------------- column histograms

HIST_DB = "hist_states"
HIST_QUERIES = {
    # 90 % of the fact's keys sit below 100: min/max says a filter above 100 keeps nearly
    # everything, the histogram says a tenth
    "skewed_key": "SELECT f.amount, d.name FROM hist_states.hf f JOIN hist_states.hd d ON f.k = d.k "
                  "WHERE f.k >= 100",
    # a date range over a skewed day column, and a double range on the dimension
    "date_range": "SELECT f.amount, d.name FROM hist_states.hf f JOIN hist_states.hd d ON f.k = d.k "
                  "WHERE f.day < DATE'2024-01-08' AND d.weight > 0.5",
}


@pytest.fixture(scope="module")
def histograms():
    """A fact with skewed keys and days and a dimension, ANALYZEd with histograms."""
    from harness.spark.session import get_session
    spark = get_session().spark
    catalog = spark._jsparkSession.catalog()
    if catalog.databaseExists(HIST_DB) and catalog.tableExists(HIST_DB, "hd"):
        return spark
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {HIST_DB}")
    spark.range(100000).selectExpr("CAST(CASE WHEN id < 90000 THEN id % 100 ELSE id END AS INT) AS k",
                                   "CAST(id AS DOUBLE) AS amount",
                                   "date_add(DATE'2024-01-01', CAST(CASE WHEN id < 80000 THEN id % 7 "
                                   "ELSE id % 365 END AS INT)) AS day") \
        .write.saveAsTable(f"{HIST_DB}.hf")
    spark.range(5000).selectExpr("CAST(id * 20 AS INT) AS k", "concat('n', id) AS name",
                                 "CAST(pow(id / 5000.0, 4) AS DOUBLE) AS weight") \
        .write.saveAsTable(f"{HIST_DB}.hd")
    spark.conf.set("spark.sql.statistics.histogram.enabled", "true")
    try:
        for table in ("hf", "hd"):
            spark.sql(f"ANALYZE TABLE {HIST_DB}.{table} COMPUTE STATISTICS FOR ALL COLUMNS")
    finally:
        spark.conf.unset("spark.sql.statistics.histogram.enabled")
    return spark


@pytest.mark.parametrize("cbo", [False, True], ids=["cbo-off", "cbo-on"])
@pytest.mark.parametrize("query", list(HIST_QUERIES))
def test_column_histograms_replay_spark_s_own_filter_estimates(session, histograms, tmp_path, query, cbo,
                                                               assert_replays):
    """Captured per column (height, each bin's bounds and distinct count) and injected on
    replay: with CBO on, a filter's selectivity comes from the bins, as over the real table."""
    conf = {"spark.sql.adaptive.enabled": "false", "spark.sql.cbo.enabled": str(cbo).lower()}
    path, direct, direct_estimates = captured_at_threshold(histograms, HIST_QUERIES[query], tmp_path / f"{query}.yaml",
                                                           {"hf": "hf", "hd": "hd"}, conf)
    written = path.read_text()
    assert "WARNING" not in written, written[:2000]
    columns = yaml.safe_load(written)["tables"]["hf"]["stats"]["columns"]
    histogram = columns["k"]["histogram"]
    assert len(histogram["bins"]) == 254 and histogram["height"] == pytest.approx(100000 / 254)
    assert histogram["bins"][0][:2] == [0.0, 0.0] and histogram["bins"][-1][1] == 99999.0
    assert columns["day"]["histogram"]["bins"][0][0] == 19723.0  # 2024-01-01, days since 1970
    assert_replays(path, direct, direct_estimates)
