"""ORC tables: what a file may declare (one line each, at collection, naming file, line
and field), and on the running Spark: rows written as an ORC catalog table with its
vetted properties, a statistics-only ORC table sized as the production table (the
statistics unfiltered, the kept partitions' sizes when pruned) and read by ORC scans."""
import pytest

from harness.scenario.model import load_scenario
from harness.spark.formats import orc
from tests.scenario.test_scenario import error_of
from tests.spark.test_delta import STATS_DELTA
from tests.spark.test_delta import WITH_ROWS as DELTA_WITH_ROWS

# the Delta tests' tables, as ORC tables
STATS_ORC = STATS_DELTA.replace("format: delta", "format: orc")
WITH_ROWS = DELTA_WITH_ROWS.replace("format: delta", "format: orc")


def test_orc_tables_load(write_scenario):
    assert load_scenario(write_scenario(STATS_ORC)).data["tables"]["b"]["format"] == "orc"
    bucketed = WITH_ROWS.replace("    partition_by: [p]\n", "    partition_by: [p]\n    bucket_by: {columns: [k], "
                                 "buckets: 4, sort_by: [k]}\n    properties: {orc.compress: zlib}\n")
    assert load_scenario(write_scenario(bucketed)).data["tables"]["a"]["bucket_by"]["buckets"] == 4


def test_a_property_outside_the_vetted_list_is_one_line_naming_file_line_and_field(write_scenario):
    text = WITH_ROWS.replace("    format: orc\n", "    format: orc\n    properties: {orc.encrypt: 'pii:k'}\n")
    said = error_of(write_scenario, text)
    assert said.endswith("case.yaml:11: tables.a.properties.orc.encrypt: table property 'orc.encrypt' may not be set "
                         "from a scenario (allowed on an ORC table: orc.compress, orc.row.index.stride, "
                         "orc.stripe.size)") and "\n" not in said


@pytest.mark.parametrize("text, says", [
    (WITH_ROWS.replace("    format: orc\n", "    format: orc\n    properties: {orc.compress: ZSTD}\n"),
     "tables.a.properties.orc.compress: 'ZSTD' is not a value this harness sets for 'orc.compress'"),
    (WITH_ROWS.replace("    materialize: catalog\n", "    materialize: parquet\n"),
     "tables.a.format: `format: orc` is for a catalog table: add `materialize: catalog` (not `parquet`)"),
    (WITH_ROWS.replace("    partition_by: [p]\n", "    sort_by: [k]\n"),
     "tables.a.sort_by: `sort_by` is an Iceberg table's sort order; an ORC table is laid out by `partition_by`"),
    (WITH_ROWS.replace("    partition_by: [p]\n", "    files_per_partition: 2\n"),
     "tables.a.files_per_partition: `files_per_partition` is an Iceberg table's"),
    (WITH_ROWS.replace("    partition_by: [p]\n", "    partition_by: [p, k]\n"),
     "tables.a.partition_by: a table cannot be partitioned by all of its columns"),
    (STATS_ORC.replace("{k: long, day: date}", "{k: long, day: double}").replace('"2024-01-01"', "1"),
     "tables.b.partition_values[0].values[0]: partitions of a double column cannot be replayed"),
    (STATS_ORC.replace("size_bytes: 10 GiB, rows: 100", "size_bytes: 11 GiB, rows: 100"),
     "tables.b.partition_values: the partitions hold 54,760,833,024 bytes, stats.size_bytes says 53,687,091,200"),
    (STATS_ORC.replace("format: orc", "format: orcs"),
     "tables.b.format: 'orcs' is not a table format of the harness (known: delta, iceberg, orc, parquet)"),
])
def test_what_an_orc_table_may_not_declare_is_one_line(write_scenario, text, says):
    said = error_of(write_scenario, text)
    assert says in said and "\n" not in said, said


def test_orc_tables_are_written_sized_and_scanned_as_orc(session):
    spark = session.spark
    frame = spark.range(1000).selectExpr("id AS k", "CAST(id % 3 AS INT) AS p")
    spec = {"partition_by": ["p"], "bucket_by": {"columns": ["k"], "buckets": 4}, "properties": {"orc.compress": "ZLIB"}}
    try:
        orc.write(spark, "orc_rows", frame, spec)
        table = spark._jsparkSession.sessionState().catalog().getTableMetadata(
            spark._jsparkSession.sessionState().sqlParser().parseTableIdentifier("orc_rows"))
        assert str(table.provider().get()) == "orc"
        assert str(table.storage().properties().get("orc.compress").get()) == "ZLIB"
        assert spark.sql("SELECT count(*) FROM orc_rows WHERE p = 1").collect()[0][0] == 333
        stats = load_scenario_spec(STATS_ORC)
        orc.write_stats_only(spark, "orc_stats", stats)

        def size(sql):
            return int(str(spark.sql(sql)._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
        assert size("SELECT * FROM orc_stats") == 50 << 30
        assert size("SELECT * FROM orc_stats WHERE day = DATE'2024-01-01'") == 40 << 30
        plan = spark.sql("SELECT * FROM orc_stats WHERE day = DATE'2024-01-01'")._jdf.queryExecution() \
            .executedPlan().toString()
        assert "FileScan orc" in plan, plan
    finally:
        spark.sql("DROP TABLE IF EXISTS orc_rows")
        spark.sql("DROP TABLE IF EXISTS orc_stats")


def load_scenario_spec(text: str) -> dict:
    import yaml

    from harness.scenario.tables import byte_size
    spec = yaml.safe_load(text)["tables"]["b"]
    spec["stats"]["size_bytes"] = byte_size(spec["stats"]["size_bytes"])
    for partition in spec["partition_values"]:
        partition["size_bytes"] = byte_size(partition["size_bytes"])
    return spec
