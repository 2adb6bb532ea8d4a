"""Capture of Delta and Iceberg tables in production states, replayed on the same Spark
in a separate process as a replay runs (a fresh harness session, the in-memory catalog):
Delta made by CREATE TABLE AS SELECT in a Hive metastore then appended to and deleted
from (sized by its catalog entry), with column mapping, with deletion vectors, with
checkpoints and remove actions; Iceberg with an evolved partition spec and position
deletes. The replay's joins, build sides, shuffles, pruning and both side estimates of
every join equal the real plan's, at a broadcast threshold on the real smaller side.
Needs the package of the running Spark (Delta 3.5 – 4.2, Iceberg 3.3 – 4.1): skipped
elsewhere, run in each matrix environment that has one."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pyspark
import pytest
import yaml

from harness.spark.formats import delta, iceberg

CAPTURE = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    out = Path(sys.argv[1]); fmt = sys.argv[2]
    os.chdir(out)  # the Hive metastore's Derby files
    from harness.capturing.to_scenario import capture
    from harness.core.options import RunOptions
    from harness.observe import jvm_plans
    from harness.spark.query import checksum_frame
    from harness.spark.session import get_session
    hive = {"spark.sql.catalogImplementation": "hive"} if fmt == "delta" else {}
    spark = get_session(RunOptions(formats=(fmt,), spark_conf=hive)).spark
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    jvm = spark._jvm
    if fmt == "delta":
        P = "prod"
        spark.sql("CREATE DATABASE prod")
        spark.sql("CREATE TABLE prod.f_ctas USING delta PARTITIONED BY (day) AS SELECT id % 3000 AS customer, "
                  "CAST(id AS DOUBLE) AS amount, CAST(id % 3 AS INT) AS day FROM range(20000)")
        spark.sql("INSERT INTO prod.f_ctas SELECT id % 3000, CAST(id AS DOUBLE), CAST(id % 3 AS INT) FROM range(90000)")
        spark.sql("DELETE FROM prod.f_ctas WHERE day = 2 AND customer > 1000")
        spark.sql("CREATE TABLE prod.f_cm (customer bigint, amount double, day int) USING delta PARTITIONED BY (day) "
                  "TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', "
                  "'delta.minWriterVersion' = '5')")
        spark.sql("INSERT INTO prod.f_cm SELECT id % 3000, CAST(id AS DOUBLE), CAST(id % 3 AS INT) FROM range(60000)")
        spark.sql("CREATE TABLE prod.f_dv (customer bigint, amount double, day int) USING delta PARTITIONED BY (day) "
                  "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
        spark.sql("INSERT INTO prod.f_dv SELECT id % 3000, CAST(id AS DOUBLE), CAST(id % 3 AS INT) FROM range(60000)")
        spark.sql("DELETE FROM prod.f_dv WHERE customer % 10 <> 0")
        spark.sql("CREATE TABLE prod.f_ckpt (customer bigint, amount double, day int) USING delta "
                  "PARTITIONED BY (day) TBLPROPERTIES ('delta.checkpointInterval' = '2')")
        for i in range(5):
            spark.sql(f"INSERT INTO prod.f_ckpt SELECT id % 3000, CAST(id AS DOUBLE), CAST(id % 3 AS INT) "
                      f"FROM range({i * 10000}, {(i + 1) * 10000})")
        spark.sql("DELETE FROM prod.f_ckpt WHERE day = 1")  # remove actions
        facts = ["f_ctas", "f_cm", "f_dv", "f_ckpt"]
        dims = "USING delta"
    else:
        P = "harness_iceberg.prod"
        spark.sql(f"CREATE TABLE {P}.f_evolved (customer bigint, amount double, day int) USING iceberg "
                  "PARTITIONED BY (day) TBLPROPERTIES ('write.spark.fanout.enabled' = 'true')")
        spark.sql(f"INSERT INTO {P}.f_evolved SELECT id % 3000, CAST(id AS DOUBLE), CAST(id % 3 AS INT) "
                  "FROM range(30000)")
        table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, f"{P}.f_evolved")
        table.updateSpec().addField(jvm.org.apache.iceberg.expressions.Expressions.bucket("customer", 4)).commit()
        spark.sql(f"REFRESH TABLE {P}.f_evolved")
        spark.sql(f"INSERT INTO {P}.f_evolved SELECT id % 3000, CAST(id AS DOUBLE), CAST(1 + id % 2 AS INT) "
                  "FROM range(20000)")
        spark.sql(f"CREATE TABLE {P}.f_deletes (customer bigint, amount double, day int) USING iceberg "
                  "PARTITIONED BY (day) TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = "
                  "'merge-on-read', 'write.spark.fanout.enabled' = 'true')")
        spark.sql(f"INSERT INTO {P}.f_deletes SELECT id % 3000, CAST(id AS DOUBLE), CAST(id % 3 AS INT) "
                  "FROM range(30000)")
        try:  # a row-level DELETE: Spark 3.4+ plans it without Iceberg's session extensions
            spark.sql(f"DELETE FROM {P}.f_deletes WHERE customer < 1000")
        except Exception as exc:
            print("NO POSITION DELETES", str(exc).splitlines()[0][:200])
        deletes = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, f"{P}.f_deletes")
        deletes.expireSnapshots().expireOlderThan(jvm.System.currentTimeMillis() + 1).retainLast(1).commit()
        # an equality delete on customer in day 1, committed as Iceberg's metadata holds one (planning reads
        # only the metadata; Spark's SQL writes position deletes only)
        field_ids = spark.sparkContext._gateway.new_array(jvm.int, 1)
        field_ids[0] = deletes.schema().findField("customer").fieldId()
        equality = (jvm.org.apache.iceberg.FileMetadata.deleteFileBuilder(deletes.spec())
                    .ofEqualityDeletes(field_ids).withPath(deletes.location() + "/data/equality-deletes-00.parquet")
                    .withFormat("PARQUET").withPartitionPath("day=1").withFileSizeInBytes(1024).withRecordCount(50)
                    .build())
        deletes.newRowDelta().addDeletes(equality).commit()
        spark.sql(f"REFRESH TABLE {P}.f_deletes")
        # files Iceberg skips by their column bounds: a day written hour block by hour block (a file
        # per block), and each bucket of a bucketed fact written customer range by customer range
        spark.sql(f"CREATE TABLE {P}.f_hours (customer bigint, amount double, day int, ts timestamp) USING iceberg "
                  "PARTITIONED BY (days(ts)) TBLPROPERTIES ('write.spark.fanout.enabled' = 'true')")
        for hour in (8, 10, 12, 14):
            spark.sql(f"INSERT INTO {P}.f_hours SELECT id % 3000, CAST(id AS DOUBLE), 1, "
                      f"timestamp_seconds(unix_seconds(TIMESTAMP'2024-01-02 {hour:02d}:00:00') + id % 3600) "
                      "FROM range(6000)")
        spark.sql(f"CREATE TABLE {P}.f_bucketed (customer bigint, amount double, day int) USING iceberg "
                  "PARTITIONED BY (bucket(4, customer)) TBLPROPERTIES ('write.spark.fanout.enabled' = 'true')")
        for low in (0, 1000, 2000):
            spark.sql(f"INSERT INTO {P}.f_bucketed SELECT {low} + id % 1000, CAST(id AS DOUBLE), CAST(id % 3 AS INT) "
                      "FROM range(9000)")
        facts = ["f_evolved", "f_deletes", "f_hours", "f_bucketed"]
        dims = "USING iceberg"
    spark.sql(f"CREATE TABLE {P}.cu {dims} AS SELECT id AS customer, concat('r', id % 4) AS region FROM range(3000)")
    spark.sql(f"CREATE TABLE {P}.days {dims} AS SELECT CAST(id AS INT) AS day, concat('d', id) AS name FROM range(3)")
    queries = {
        "one_day": "SELECT f.amount, c.region FROM {P}.{f} f JOIN {P}.cu c ON f.customer = c.customer WHERE f.day = 1",
        "all_days": "SELECT f.amount, c.region FROM {P}.{f} f JOIN {P}.cu c ON f.customer = c.customer",
        "dpp": "SELECT f.amount, d.name FROM {P}.{f} f JOIN {P}.days d ON f.day = d.day WHERE d.name = 'd1'",
    }
    names = {t: t for t in facts + ["cu", "days"]}
    shapes = {}
    bounded = {  # a filter inside one partition, over one hour of the day; a key range Iceberg skips files by
        ("f_hours", "one_hour"): "SELECT f.amount, c.region FROM {P}.{f} f JOIN {P}.cu c ON f.customer = c.customer "
                                 "WHERE f.ts >= TIMESTAMP'2024-01-02 10:00:00' AND f.ts < TIMESTAMP'2024-01-02 "
                                 "11:00:00'",
        ("f_bucketed", "key_range"): "SELECT f.amount, c.region FROM {P}.{f} f JOIN {P}.cu c ON f.customer = "
                                     "c.customer WHERE c.customer < 400",
    }
    runs = [(fact, query, text, "false") for fact in facts for query, text in queries.items()]
    runs += [(fact, query + suffix, text, cbo) for (fact, query), text in bounded.items() if fact in facts
             for suffix, cbo in (("", "false"), ("_cbo", "true"))]
    for fact, query, text, cbo in runs:
        spark.conf.set("spark.sql.cbo.enabled", cbo)
        text = text.format(P=P, f=fact)
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
        top = jvm_plans.join_estimates(spark.sql(text), logical=False)[0]
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(min(s["size_in_bytes"] for s in top.values())))
        frame = checksum_frame(spark.sql(text))
        joins = [[j.strategy, j.build_side, j.tables, j.shuffles, j.scans]
                 for j in jvm_plans.join_nodes(jvm_plans.current_plan(frame), names)]
        path = capture(text, out / f"{fact}_{query}.yaml", spark=spark)
        shapes[path.name] = {"joins": joins, "estimates": jvm_plans.join_estimates(frame)}
    print("SHAPES " + json.dumps(shapes))
    if fmt == "delta":  # tables Spark cannot read: one line each, no file written
        import glob, shutil
        from harness.capturing.to_scenario import CaptureError
        spark.sql("CREATE TABLE prod.no_log USING delta AS SELECT id AS customer FROM range(10)")
        spark.sql("CREATE TABLE prod.bad_ckpt (customer bigint) USING delta TBLPROPERTIES "
                  "('delta.checkpointInterval' = '1')")
        spark.sql("INSERT INTO prod.bad_ckpt SELECT id FROM range(10)")
        location = spark.sql("DESCRIBE DETAIL prod.no_log").collect()[0]["location"].replace("file:", "")
        shutil.rmtree(location + "/_delta_log")
        location = spark.sql("DESCRIBE DETAIL prod.bad_ckpt").collect()[0]["location"].replace("file:", "")
        for checkpoint in glob.glob(location + "/_delta_log/*.checkpoint*.parquet"):
            Path(checkpoint).write_bytes(b"not a parquet file")
        for f in glob.glob(location + "/_delta_log/*.json"):  # no commit to rebuild the snapshot from
            os.remove(f)
        spark.catalog.clearCache()
        for table in ("no_log", "bad_ckpt"):
            try:
                capture(f"SELECT * FROM prod.{table} t JOIN prod.cu c ON t.customer = c.customer",
                        out / "broken" / f"{table}.yaml", spark=spark)
                print("REFUSED " + table + " NOT")
            except CaptureError as exc:
                print("REFUSED " + table + " " + str(exc).replace("\\n", " "))
""")

REPLAY = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from harness.check import runner
    from harness.core.options import RunOptions
    from harness.scenario.model import expand, load_scenario
    from harness.spark.session import get_session
    session = get_session(RunOptions(formats=(sys.argv[2],)))
    shapes = {}
    for path in sorted(Path(sys.argv[1]).glob("*.yaml")):
        record = runner.run_case(expand(load_scenario(path))[0], session)
        shapes[path.name] = {"status": record.status, "message": record.message,
                             "joins": [[j["strategy"], j["build_side"], j["tables"], j["shuffles"], j["scans"]]
                                       for j in record.observed.initial.joins],
                             "estimates": record.observed.estimates}
    print("SHAPES " + json.dumps(shapes))
""")

FORMATS = {
    "delta": (delta.runtime_for(pyspark.__version__) is None, delta.not_available(pyspark.__version__)),
    "iceberg": (iceberg.runtime_for(pyspark.__version__) is None, iceberg.not_available(pyspark.__version__)),
}


def _shapes(script: str, *args: str) -> tuple[dict, list[str]]:
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    line = next(line for line in lines if line.startswith("SHAPES "))
    return json.loads(line[len("SHAPES "):]), lines


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_lake_tables_in_production_states_replay_spark_s_own_estimates(tmp_path, fmt):
    if FORMATS[fmt][0]:
        pytest.skip(FORMATS[fmt][1])
    if fmt == "delta" and tuple(int(p) for p in pyspark.__version__.split(".")[:2]) < (3, 5):
        # measured on 3.5 and 4.1 (Delta 3.3.2, 4.4.0); Delta 0.8 on 3.0.3 refuses the writer
        # version column mapping needs ("delta.minWriterVersion needs to be ... between [1, 3]")
        pytest.skip(f"the Delta release of Spark {pyspark.__version__} cannot make these states (column mapping, "
                    "deletion vectors): measured on 3.5 and 4.1")
    real, real_output = _shapes(CAPTURE, str(tmp_path), fmt)
    texts = {name: (tmp_path / name).read_text() for name in real}
    warned = {name: text.splitlines()[0] for name, text in texts.items() if "WARNING" in text}
    replayed, _ = _shapes(REPLAY, str(tmp_path), fmt)
    mismatched = {name: (real[name], replayed[name]) for name in real
                  if (real[name]["joins"], real[name]["estimates"]) !=
                  (replayed[name]["joins"], replayed[name]["estimates"])}
    # a replay that differs is one the file warns about at its top, never a silent one
    assert set(mismatched) <= set(warned), {n: mismatched[n] for n in set(mismatched) - set(warned)}
    failed = {name: r["message"] for name, r in replayed.items() if r["status"] != "passed"}
    assert set(failed) <= set(warned), failed
    if fmt == "delta":
        assert not warned, warned
        refused = [line for line in real_output if line.startswith("REFUSED ")]
        assert len(refused) == 2 and not any(line.endswith(" NOT") for line in refused), refused
        for table in ("no_log", "bad_ckpt"):
            assert any(f"the table prod.{table} cannot be read: " in line for line in refused), refused
        assert not (tmp_path / "broken").exists() or not list((tmp_path / "broken").iterdir())
        assert "catalog_stats:" in texts["f_ctas_one_day.yaml"]
        assert "values: [null]" not in texts["f_cm_one_day.yaml"]
    else:  # an evolved spec replayed as its history made it, position deletes as they are
        exact = {f"{fact}_{query}.yaml" for fact in ("f_evolved", "f_deletes") for query in ("one_day", "all_days")}
        assert any(line.startswith("NO POSITION DELETES") for line in real_output) == (pyspark.__version__ < "3.4")
        assert not exact & set(warned), warned
        evolved = yaml.safe_load(texts["f_evolved_one_day.yaml"])["tables"]["f_evolved"]
        assert evolved["earlier_specs"] == [["day"]] and {p.get("spec") for p in evolved["partition_values"]} == {0, None}
        assert "dynamic_pruning:\n  - {table: f_deletes, pruned: true, reuses_broadcast: true}" in \
            texts["f_deletes_dpp.yaml"]
        # the files of each partition with their bounds: the hour filter and the key range replay exactly
        # (every file: the dynamic pruning through `days` too, whose filtered scan skips files by their bounds)
        assert not warned, warned
        hours = yaml.safe_load(texts["f_hours_one_hour.yaml"])["tables"]["f_hours"]
        (day,) = hours["partition_values"]
        # (a file per hour block and writer task: 4 on one task, 8 on Iceberg 1.6's two)
        assert len(day["data_files"]) >= 4 and sum(f["rows"] for f in day["data_files"]) == day["rows"] == 24000
        assert "2024-01-02T10:00:00+00:00" in {f["columns"]["ts"]["lower"] for f in day["data_files"]}
        bucketed = yaml.safe_load(texts["f_bucketed_key_range.yaml"])["tables"]["f_bucketed"]
        assert all(len(p["data_files"]) >= 3 for p in bucketed["partition_values"])
