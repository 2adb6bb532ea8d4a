"""Delta Lake tables: what a file may declare (one line each, at collection), the Delta
log a statistics-only table is replayed from, the package chosen per Spark minor, and —
where the running Spark has a Delta release — a statistics-only Delta table sized as the
production table: the whole snapshot without a partition filter, the kept partitions'
sizes with one (Delta 2.0 and later; before, the whole snapshot, as over a real table)."""
import json

import pytest
import yaml

from harness.scenario.model import load_scenario
from harness.scenario.tables import declares_format
from harness.spark.formats import delta
from tests.conftest import MINIMAL
from tests.scenario.test_scenario import error_of

STATS_DELTA = MINIMAL.replace("""  b:
    rows: 10
    columns:
      k: {sequence: {}}
""", """  b:
    format: delta
    schema: {k: long, day: date}
    stats: {size_bytes: 50 GiB, rows: 500}
    partition_by: [day]
    partition_values:
      - {values: ["2024-01-01"], size_bytes: 40 GiB, rows: 400}
      - {values: [null], size_bytes: 10 GiB, rows: 100}
""")
WITH_ROWS = MINIMAL.replace("      k: {key: {cardinality: 10}}\n",
                            "      k: {key: {cardinality: 10}}\n      p: {key: {cardinality: 3}}\n"
                            "    materialize: catalog\n    format: delta\n    partition_by: [p]\n", 1)


def test_delta_tables_load(write_scenario):
    assert load_scenario(write_scenario(STATS_DELTA)).data["tables"]["b"]["stats"]["size_bytes"] == 50 << 30
    assert load_scenario(write_scenario(WITH_ROWS)).data["tables"]["a"]["format"] == "delta"
    with_properties = WITH_ROWS.replace("    format: delta\n", "    format: delta\n    properties: {delta.appendOnly: true, "
                                        "delta.dataSkippingNumIndexedCols: 8}\n")
    assert load_scenario(write_scenario(with_properties)).data["tables"]["a"]["properties"]["delta.appendOnly"] is True


@pytest.mark.parametrize("text, says", [
    (STATS_DELTA[:STATS_DELTA.index("    partition_values:")] + "    partition_values: []\n"
     + STATS_DELTA[STATS_DELTA.index("join:"):],
     "tables.b.partition_values: a Delta table is sized by its log's add actions: one with no partition"),
    (WITH_ROWS.replace("    partition_by: [p]\n", "    bucket_by: {columns: [k], buckets: 4}\n"),
     "tables.a.bucket_by: Delta Lake does not bucket a table"),
    (WITH_ROWS.replace("    materialize: catalog\n", ""), "tables.a.format: `format: delta` is for a catalog table"),
    (WITH_ROWS.replace("    materialize: catalog\n", "    materialize: catalog\n    analyze: table\n"),
     "tables.a.analyze: a Delta table is sized from its log"),
    (STATS_DELTA.replace("stats: {size_bytes: 50 GiB, rows: 500}", "stats: {}"),
     "tables.b.stats: a Delta table's log holds its size: add `size_bytes`"),
    (STATS_DELTA.replace("rows: 500}", "rows: 500, columns: {k: {distinct: 5}}}"),
     "tables.b.stats.columns: a Delta table's column statistics are not replayed"),
    (STATS_DELTA.replace("size_bytes: 40 GiB", "size_bytes: 39 GiB"), "the partitions hold"),
    (STATS_DELTA.replace("format: delta", "format: delta\n    sort_by: [k]"), "tables.b.sort_by: `sort_by` is an "
                                                                               "Iceberg table's"),
    (STATS_DELTA.replace("format: delta", "format: delta\n    properties: {delta.logStore.class: x}"),
     "tables.b.properties.delta.logStore.class: table property 'delta.logStore.class' may not be set"),
    (STATS_DELTA.replace("format: delta", "format: delta\n    properties: {delta.checkpointInterval: 0}"),
     "tables.b.properties.delta.checkpointInterval: 0 is not a value"),
])
def test_what_a_delta_table_may_not_declare(write_scenario, text, says):
    assert says in error_of(write_scenario, text)


def test_a_statistics_only_delta_log_carries_each_partition_s_size_and_rows():
    spec = load_spec(STATS_DELTA)
    actions = delta.log_actions(spec, "id-1")
    assert actions[0] == {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
    meta = actions[1]["metaData"]
    assert meta["partitionColumns"] == ["day"] and meta["configuration"] == {}
    assert delta.log_actions({**spec, "properties": {"delta.appendOnly": True}}, "id-3")[1]["metaData"][
        "configuration"] == {"delta.appendOnly": "true"}
    assert [f["type"] for f in json.loads(meta["schemaString"])["fields"]] == ["long", "date"]
    adds = [a["add"] for a in actions[2:]]
    assert [(a["partitionValues"], a["size"], json.loads(a["stats"])) for a in adds] == [
        ({"day": "2024-01-01"}, 40 << 30, {"numRecords": 400}), ({"day": None}, 10 << 30, {"numRecords": 100})]
    assert adds[1]["path"].startswith("day=__HIVE_DEFAULT_PARTITION__/")
    unpartitioned = {"schema": {"k": "long"}, "stats": {"size_bytes": 123}}
    assert [a["add"]["size"] for a in delta.log_actions(unpartitioned, "id-2")[2:]] == [123]


def load_spec(text: str) -> dict:
    import yaml
    from harness.scenario.tables import byte_size
    spec = yaml.safe_load(text)["tables"]["b"]
    spec["stats"]["size_bytes"] = byte_size(spec["stats"]["size_bytes"])
    for p in spec["partition_values"]:
        p["size_bytes"] = byte_size(p["size_bytes"])
    return spec


def test_the_package_per_spark_minor_and_none_for_4_3():
    assert [c.artifact for c in delta.runtime_for("3.0.3")] == ["delta-core_2.12"]
    assert [c.artifact for c in delta.runtime_for("3.5.9")] == ["delta-spark_2.12", "delta-storage"]
    assert delta.runtime_for("4.1.4")[0].artifact == "delta-spark_4.1_2.13"
    assert delta.runtime_for("4.3.0") is None
    assert delta.not_available("4.3.0") == "not available on Spark 4.3 (no Delta Lake release)"


def test_a_run_loads_delta_only_when_a_file_declares_it(tmp_path):
    (tmp_path / "a.yaml").write_text("tables:\n  t:\n    format: iceberg\n")
    assert not declares_format([tmp_path], "delta") and declares_format([tmp_path], "iceberg")
    (tmp_path / "b.yaml").write_text("tables:\n  t:\n    format: 'delta'\n")
    assert declares_format([tmp_path], "delta")


def test_a_statistics_only_delta_table_is_sized_by_its_log():
    """Runs where this process's session starts here, with Delta (e.g. this file alone in a
    matrix environment: `python -m pytest tests/spark/test_delta.py`)."""
    from harness.core.options import RunOptions
    from harness.spark import formats
    from harness.spark.session import get_session
    spark = get_session(RunOptions.from_env(formats=("delta",))).spark
    if delta.runtime_for(spark.version) is None or not delta.loaded(spark):
        pytest.skip("this session has no Delta Lake (a Spark with a Delta release, started with a Delta scenario)")
    formats.delta.write_stats_only(spark, "delta_replay",
                                          {**load_spec(STATS_DELTA), "properties": {"delta.appendOnly": True}})
    properties = {row[0]: row[1] for row in spark.sql("SHOW TBLPROPERTIES delta_replay").collect()}
    assert properties.get("delta.appendOnly") == "true"

    def size(sql):
        return int(str(spark.sql(sql)._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    assert size("SELECT * FROM delta_replay") == 50 << 30
    pruned = size("SELECT * FROM delta_replay WHERE day = DATE'2024-01-01'")
    assert pruned == (40 << 30 if spark.version >= "3.2" else 50 << 30)


DELTA_QUERIES = {
    "one_partition": "SELECT f.v, d.name FROM delta_fact f JOIN delta_dim d ON f.k = d.k WHERE f.p = 2",
    "all": "SELECT f.v, d.name FROM delta_fact f JOIN delta_dim d ON f.k = d.k",
    "dpp": "SELECT f.v, d.name FROM delta_fact f JOIN delta_dim d ON f.p = d.k WHERE d.name = 'n1'",
}


@pytest.mark.parametrize("name", list(DELTA_QUERIES))
def test_a_delta_table_round_trips_through_capture(tmp_path, name, assert_replays):
    """A real partitioned Delta table with data, captured (its log's partitions, sizes and
    record counts) and replayed as a statistics-only Delta table on the same Spark, plans
    as the original query: the same joins, build sides, shuffles, pruning and estimates."""
    from harness.capturing.to_scenario import capture
    from harness.core.options import RunOptions
    from harness.observe import jvm_plans
    from harness.spark.query import checksum_frame
    from harness.spark.session import get_session
    session = get_session(RunOptions.from_env(formats=("delta",)))
    spark = session.spark
    if not delta.loaded(spark):
        pytest.skip("this session has no Delta Lake")
    if not spark._jsparkSession.catalog().tableExists("delta_fact"):
        spark.range(40000).selectExpr("id % 500 AS k", "CAST(id AS DOUBLE) AS v",
                                      "CAST(CASE WHEN id < 30000 THEN 0 ELSE id % 4 END AS INT) AS p") \
            .write.format("delta").partitionBy("p").saveAsTable("delta_fact")
        spark.range(500).selectExpr("CAST(id AS INT) AS k", "concat('n', id % 3) AS name") \
            .write.format("delta").saveAsTable("delta_dim")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        path = capture(DELTA_QUERIES[name], tmp_path / "d.yaml", source="d.sql")
        frame = checksum_frame(spark.sql(DELTA_QUERIES[name]))
        names = {"delta_fact": "delta_fact", "delta_dim": "delta_dim"}
        direct = [(j.strategy, j.build_side, j.tables, j.shuffles, j.scans)
                  for j in jvm_plans.join_nodes(jvm_plans.current_plan(frame), names)]
        direct_estimates = jvm_plans.join_estimates(frame)
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
    fact = yaml.safe_load(path.read_text())["tables"]["delta_fact"]
    assert fact["format"] == "delta" and fact["partition_by"] == ["p"]
    assert [p["values"] for p in fact["partition_values"]] == [[0], [1], [2], [3]]
    if spark.version >= "3.2":  # Delta 0.8 and 1.0 (Spark 3.0, 3.1) write no record counts into the log
        assert [p["rows"] for p in fact["partition_values"]] == [32500, 2500, 2500, 2500]
    assert_replays(path, direct, direct_estimates)
