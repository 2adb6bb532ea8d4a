"""Iceberg tables: what a file may declare (checked at collection, one line each), the
runtime jar's cache (fetched once, checked, fetched again when damaged, one line when it
cannot be), and a Spark without a runtime saying so instead of running."""
import hashlib
import io
import json
import zipfile

import pytest

from harness.scenario.tables import parse_transform
from harness.spark import jvm_packages
from harness.spark.formats import iceberg
from tests.conftest import MINIMAL
from tests.scenario.test_scenario import error_of
from tests.test_plugin import make_suite

pytest_plugins = ["pytester"]

ICEBERG_A = MINIMAL.replace("      k: {key: {cardinality: 10}}\n",
                            "      k: {key: {cardinality: 10}}\n      v: {sequence: {}}\n"
                            "      d: {uniform: {min: \"2024-01-01\", max: \"2024-12-31\"}, type: date}\n"
                            "    materialize: catalog\n    format: iceberg\n", 1)


def test_transforms_are_read_as_iceberg_writes_them():
    assert parse_transform("k").sql() == "`k`"
    assert parse_transform("bucket(8, k)").sql() == "bucket(8, `k`)"
    assert parse_transform(" truncate( 4 , name ) ").sql() == "truncate(4, `name`)"
    assert parse_transform("days(ts)").sql() == "days(`ts`)"
    for text, says in [("bucket(0, k)", "must be 1 – 100,000"), ("bucket(100001, k)", "must be 1 – 100,000"),
                       ("bucket(k)", "bucket(N, column)"), ("days(4, ts)", "days(column)"),
                       ("zorder(k)", "unknown transform 'zorder'"), ("bucket(x, k)", "whole number"),
                       ("k; DROP", "not a column or a transform")]:
        with pytest.raises(ValueError, match=None) as raised:
            parse_transform(text)
        assert says in str(raised.value), (text, raised.value)


@pytest.mark.parametrize("layout, says", [
    ("    partition_by: ['bucket(4, k)']\n", None),
    ("    partition_by: ['zorder(k)']\n", "tables.a.partition_by[0]: unknown transform 'zorder'"),
    ("    partition_by: ['bucket(0, k)']\n", "tables.a.partition_by[0]: 'bucket(0, k)': the bucket count must be 1 – 100,000"),
    ("    partition_by: ['bucket(100001, k)']\n", "the bucket count must be 1 – 100,000"),
    ("    partition_by: ['bucket(4, kk)']\n", "tables.a.partition_by[0]: 'kk' is not a column of table 'a' (did you mean 'k'?)"),
    ("    partition_by: ['hours(d)']\n", "Iceberg's hours transform does not apply to column 'd' of type date"),
    ("    sort_by: [vv]\n", "tables.a.sort_by[0]: 'vv' is not a column of table 'a'"),
    ("    properties: {location: /tmp/x}\n", "tables.a.properties.location: table property 'location' may not be set"),
    ("    properties: {write.metadata.path: /tmp/x}\n", "table property 'write.metadata.path' may not be set"),
    ("    properties: {format-version: 9}\n", "tables.a.properties.format-version: 9 is not a value"),
    ("    bucket_by: {columns: [k], buckets: 4}\n", "tables.a.bucket_by: an Iceberg table is bucketed by its partition spec"),
    ("    analyze: table\n", "tables.a.analyze: an Iceberg table keeps its own statistics"),
])
def test_an_iceberg_layout_is_checked_at_collection(write_scenario, layout, says):
    text = ICEBERG_A.replace("    format: iceberg\n", "    format: iceberg\n" + layout, 1)
    if says is None:
        from harness.scenario.model import load_scenario
        load_scenario(write_scenario(text))
        return
    message = error_of(write_scenario, text)
    assert says in message, message
    assert "\n" not in message and "Traceback" not in message


def test_iceberg_only_keys_and_formats_need_an_iceberg_catalog_table(write_scenario):
    plain = ICEBERG_A.replace("    format: iceberg\n", "")
    assert "tables.a.sort_by: `sort_by` is an Iceberg table's: add `format: iceberg`" in error_of(
        write_scenario, plain.replace("    materialize: catalog\n", "    materialize: catalog\n    sort_by: [k]\n"))
    lazy = ICEBERG_A.replace("    materialize: catalog\n", "")
    assert "tables.a.format: `format: iceberg` is for a catalog table of generated or literal rows: add " \
           "`materialize: catalog`" in error_of(write_scenario, lazy)
    assert "tables.a.partition_by[0]" in error_of(
        write_scenario, plain.replace("    materialize: catalog\n", "    materialize: catalog\n    partition_by: ['bucket(4, k)']\n"))


DERIVED_B = MINIMAL.replace("""  b:
    rows: 10
    columns:
      k: {sequence: {}}
""", """  b0:
    rows: 10
    columns:
      k: {sequence: {}}
  b:
    sql: SELECT k, COUNT(*) AS n FROM b0 GROUP BY k
    format: iceberg
""", 1)


def test_a_derived_table_may_be_written_as_an_iceberg_table(write_scenario):
    from harness.scenario.model import load_scenario
    # its columns are Spark's to say: a partition column is checked when the table is built
    load_scenario(write_scenario(DERIVED_B.replace("    format: iceberg\n",
                                                   "    format: iceberg\n    partition_by: ['bucket(4, k)']\n"
                                                   "    sort_by: [n]\n")))
    assert "tables.b.partition_by[0]: unknown transform 'zorder'" in error_of(
        write_scenario, DERIVED_B.replace("    format: iceberg\n", "    format: iceberg\n    partition_by: ['zorder(k)']\n"))
    assert "tables.b.partition_by: a derived table is laid out only as a table of a format that writes it" \
        in error_of(write_scenario, DERIVED_B.replace("    format: iceberg\n", "    partition_by: [k]\n"))
    assert "tables.b.properties.location: table property 'location' may not be set" in error_of(
        write_scenario, DERIVED_B.replace("    format: iceberg\n", "    format: iceberg\n    properties: {location: /x}\n"))
    assert "tables.b.materialize: a derived table has no 'materialize'" in error_of(
        write_scenario, DERIVED_B.replace("    format: iceberg\n", "    format: iceberg\n    materialize: catalog\n"))


def test_a_derived_iceberg_tables_columns_are_checked_once_spark_says_them():
    from harness.spark.datagen import DataGenError, _check_iceberg_columns
    columns = {"k": "bigint", "n": "bigint", "day": "date"}
    _check_iceberg_columns("b", {"partition_by": ["bucket(4, k)", "days(day)"], "sort_by": ["n desc"]}, columns)
    with pytest.raises(DataGenError, match=r"tables.b.partition_by\[1\]: 'kk' is not a column of derived table 'b' "
                                           r"\(its columns: k, n, day\)"):
        _check_iceberg_columns("b", {"partition_by": ["k", "bucket(2, kk)"]}, columns)
    with pytest.raises(DataGenError, match=r"tables.b.partition_by\[0\]: Iceberg's days transform does not apply "
                                           r"to column 'k' of type bigint"):
        _check_iceberg_columns("b", {"partition_by": ["days(k)"]}, columns)
    with pytest.raises(DataGenError, match=r"tables.b.sort_by\[0\]: 'x'"):
        _check_iceberg_columns("b", {"sort_by": ["x"]}, columns)


STATS_ICEBERG = """\
id: stats_iceberg
description: statistics-only Iceberg tables
tables:
  a:
    format: iceberg
    schema: {k: long, name: string, d: date, ts: timestamp, x: double}
    stats: {rows: 1000, size_bytes: 80000}
    partition_by: ['bucket(4, k)']
  b:
    schema: {k: long}
    stats: {rows: 10, size_bytes: 80}
join: {left: a, right: b, on: [k]}
expect: {strategy: BroadcastHashJoin}
"""


@pytest.mark.parametrize("layout, says", [
    ("", None),
    ("    partition_values: [{values: [0], rows: 600}, {values: [3], rows: 400}]\n", None),
    ("    partition_values: [{values: [null], rows: 1000}]\n", None),
    ("    partition_values: [{values: [4], rows: 1000}]\n",
     "tables.a.partition_values[0].values[0]: bucket 4 is not one of bucket(4, k)'s 0 – 3"),
    ("    partition_values: [{values: [0, 1], rows: 1000}]\n",
     "tables.a.partition_values[0].values: 2 value(s) for the 1 field(s) of partition_by"),
    ("    partition_values: [{values: [0], rows: 600}, {values: [0], rows: 400}]\n",
     "tables.a.partition_values[1].values: the same partition twice"),
    ("    partition_values: [{values: [0], rows: 999}]\n",
     "tables.a.partition_values: the partitions hold 999 rows, stats.rows says 1,000"),
    ("    partition_values: [{values: ['zero'], rows: 1000}]\n",
     "tables.a.partition_values[0].values[0]: bucket(k) takes a whole number, not 'zero'"),
    ("    partition_values: []\n",
     "tables.a.partition_values: an Iceberg table is sized by its files' record counts: one with no partition"),
    ("    partition_values:\n      - {values: [0], rows: 1000, data_files: [{rows: 600, columns: {k: {lower: 0, upper: 9, "
     "nulls: 0}}}, {rows: 400, size_bytes: 1 KiB, columns: {d: {lower: '2024-01-01', upper: '2024-01-09'}}}]}\n", None),
    ("    partition_values:\n      - {values: [0], rows: 1000, data_files: [{rows: 600}, {rows: 300}]}\n",
     "tables.a.partition_values[0].data_files: the files hold 900 rows, partition_values[0].rows says 1,000"),
    ("    partition_values:\n      - {values: [0], rows: 1000, data_files: [{rows: 1000, columns: {kk: {lower: 0}}}]}\n",
     "tables.a.partition_values[0].data_files[0].columns.kk: 'kk' is not a column of the table"),
    ("    partition_values:\n      - {values: [0], rows: 1000, data_files: [{rows: 1000, columns: {k: {lower: 9, "
     "upper: 2}}}]}\n", "tables.a.partition_values[0].data_files[0].columns.k.lower: lower bound 9 is above upper"),
    ("    partition_values:\n      - {values: [0], rows: 1000, data_files: [{rows: 1000, columns: {k: {lower: 'x'}}}]}\n",
     "tables.a.partition_values[0].data_files[0].columns.k.lower: 'x' is not a long"),
    ("    partition_values:\n      - {values: [0], rows: 1000, data_files: [{rows: 1000, columns: {k: {nulls: 1001}}}]}"
     "\n", "tables.a.partition_values[0].data_files[0].columns.k.nulls: more nulls than the file's 1,000 rows"),
    ("    data_files: [{rows: 1000}]\n",
     "tables.a.data_files: a partitioned table lists its data files under each partition of `partition_values`"),
])
def test_a_statistics_only_iceberg_table_is_checked_at_collection(write_scenario, layout, says):
    text = STATS_ICEBERG.replace("    partition_by: ['bucket(4, k)']\n", "    partition_by: ['bucket(4, k)']\n" + layout)
    if says is None:
        from harness.scenario.model import load_scenario
        load_scenario(write_scenario(text))
        return
    message = error_of(write_scenario, text)
    assert says in message, message


def test_a_statistics_only_iceberg_table_lists_its_partitions_unless_all_are_buckets(write_scenario):
    spec = "    partition_by: ['bucket(4, k)']\n"
    days = STATS_ICEBERG.replace(spec, "    partition_by: ['days(d)', name]\n")
    assert "tables.a.partition_values: list the table's partitions: only an all-bucket partition spec" in \
        error_of(write_scenario, days)
    from harness.scenario.model import load_scenario
    listed = days.replace("    partition_by: ['days(d)', name]\n", "    partition_by: ['days(d)', name]\n"
                          "    partition_values:\n"
                          "      - {values: ['2024-01-01', alpha], rows: 700}\n"
                          "      - {values: [2024-01-02, null], rows: 300}\n")
    load_scenario(write_scenario(listed))
    assert "tables.a.partition_values[0].values[0]: days(d) takes a date (YYYY-MM-DD), not 3" in error_of(
        write_scenario, listed.replace("['2024-01-01', alpha]", "[3, alpha]"))
    assert "tables.a.partition_values[0].values[0]: partition values of a timestamp column cannot be replayed" in \
        error_of(write_scenario, STATS_ICEBERG.replace(spec, "    partition_by: [ts]\n"
                                                       "    partition_values: [{values: [1], rows: 1000}]\n"))
    assert "tables.a.partition_by: 65,536 bucket combinations: a statistics-only Iceberg table has at most 10,000" \
        in error_of(write_scenario, STATS_ICEBERG.replace(spec, "    partition_by: ['bucket(256, k)', 'bucket(256, d)']\n"))
    assert "tables.a.stats: an Iceberg table is sized by its row count: add `rows`" in error_of(
        write_scenario, STATS_ICEBERG.replace("stats: {rows: 1000, size_bytes: 80000}", "stats: {size_bytes: 80000}"))
    assert "tables.a.stats.columns: an Iceberg table's column statistics are not replayed" in error_of(
        write_scenario, STATS_ICEBERG.replace("size_bytes: 80000}", "size_bytes: 80000, columns: {k: {distinct: 9}}}"))
    assert "tables.b.partition_values: an unpartitioned table has no partition values: add `partition_by`" in \
        error_of(write_scenario, STATS_ICEBERG.replace("    stats: {rows: 10, size_bytes: 80}\n",
                                                       "    stats: {rows: 10, size_bytes: 80}\n"
                                                       "    partition_values: [{values: [1], rows: 10}]\n"))
    unpartitioned = STATS_ICEBERG.replace("  b:\n    schema: {k: long}\n", "  b:\n    format: iceberg\n    schema: {k: long}\n")
    files = "    stats: {rows: 10, size_bytes: 80}\n    data_files: [{rows: 4, columns: {k: {lower: 0, upper: 3}}}, {rows: 6}]\n"
    load_scenario(write_scenario(unpartitioned.replace("    stats: {rows: 10, size_bytes: 80}\n", files)))
    assert "tables.b.data_files: the files hold 9 rows, stats.rows says 10" in error_of(
        write_scenario, unpartitioned.replace("    stats: {rows: 10, size_bytes: 80}\n", files.replace("rows: 6", "rows: 5")))
    assert "tables.b.data_files: `data_files` is an Iceberg table's: add `format: iceberg`" in error_of(
        write_scenario, STATS_ICEBERG.replace("    stats: {rows: 10, size_bytes: 80}\n", files))


def test_partition_values_are_a_statistics_only_tables(write_scenario):
    generated = ICEBERG_A.replace("    format: iceberg\n", "    format: iceberg\n    partition_by: [k]\n"
                                  "    partition_values: [{values: [1], rows: 100}]\n")
    assert "tables.a.partition_values: `partition_values` lists a statistics-only table's partitions" in \
        error_of(write_scenario, generated)


def test_every_bucket_is_a_partition_by_default():
    from harness.scenario.tables import default_partitions
    table = {"partition_by": ["bucket(2, k)", "bucket(3, j)"], "stats": {"rows": 8}}
    partitions = default_partitions(table)
    assert [p["values"] for p in partitions] == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    assert [p["rows"] for p in partitions] == [2, 2, 1, 1, 1, 1]
    assert default_partitions({"stats": {"rows": 5}}) == [{"values": [], "rows": 5}]
    assert default_partitions({"partition_by": ["days(d)"], "stats": {"rows": 5}}) is None


def test_a_statistics_only_iceberg_tables_twin_keeps_its_layout():
    from harness.scenario.twin import twin_data
    data = {"id": "s", "description": "d", "synthetic": {"scale": 0.01},
            "tables": {"a": {"format": "iceberg", "schema": {"k": "long"}, "stats": {"rows": 100000, "size_bytes": 800000},
                             "partition_by": ["bucket(4, k)"], "sort_by": ["k"],
                             "partition_values": [{"values": [0], "rows": 100000}]}},
            "join": {}, "expect": {}}
    twin = twin_data(data)["tables"]["a"]
    assert twin["format"] == "iceberg" and twin["materialize"] == "catalog"
    assert twin["partition_by"] == ["bucket(4, k)"] and twin["sort_by"] == ["k"]
    assert "partition_values" not in twin and twin["rows"] == 1000


def test_a_twins_partition_columns_take_the_listed_partitions_values():
    from harness.scenario.twin import twin_data
    table = {"format": "iceberg", "schema": {"k": "long", "day": "date", "month": "date", "region": "string"},
             "stats": {"rows": 1000, "size_bytes": 8000},
             "partition_by": ["bucket(4, k)", "days(day)", "months(month)", "region"],
             "partition_values": [{"values": [0, "2026-11-01", 682, "eu"], "rows": 700},
                                  {"values": [1, "2026-11-02", 683, None], "rows": 200},
                                  {"values": [1, "2026-11-01", 683, "us"], "rows": 100}]}
    twin = twin_data({"id": "s", "description": "d", "synthetic": {"scale": 1.0}, "tables": {"a": table},
                      "join": {}, "expect": {}})["tables"]["a"]
    columns = twin["columns"]
    assert columns["day"] == {"values": ["2026-11-01", "2026-11-02"], "weights": [800, 200], "type": "date"}
    # months since 1970: 682 is November 2026
    assert columns["month"] == {"values": ["2026-11-01", "2026-12-01"], "weights": [700, 300], "type": "date"}
    assert columns["region"] == {"values": ["eu", "us"], "weights": [700, 100], "type": "string", "nulls": 0.2}
    assert "values" not in columns["k"]  # a bucket is a hash: the column keeps its keys


def test_only_vetted_iceberg_configs_may_be_set(write_scenario):
    with_conf = ICEBERG_A + "spark_conf:\n  spark.sql.iceberg.planning.preserve-data-grouping: true\n"
    from harness.scenario.model import load_scenario
    load_scenario(write_scenario(with_conf))
    assert "spark_conf.spark.sql.iceberg.split-size: 'spark.sql.iceberg.split-size' is not one of Iceberg's configs" in \
        error_of(write_scenario, ICEBERG_A + "spark_conf:\n  spark.sql.iceberg.split-size: 10\n")
    assert "takes true or false" in error_of(
        write_scenario, ICEBERG_A + "spark_conf:\n  spark.sql.iceberg.planning.preserve-data-grouping: yes please\n")


# ---------------------------------------------------------------- the jar cache

COORDINATE = jvm_packages.Coordinate("org.apache.iceberg", "iceberg-spark-runtime-9.9_2.13", "1.0.0",
                                     marker="org/apache/iceberg/spark/SparkCatalog.class")


def _jar_bytes(marker: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        # a fixed time: the same bytes on every call (writestr with a name stamps the clock's)
        entry = zipfile.ZipInfo("org/apache/iceberg/spark/SparkCatalog.class", date_time=(2026, 1, 1, 0, 0, 0))
        archive.writestr(entry, b"\xca\xfe\xba\xbe" + marker)
    return buffer.getvalue()


@pytest.fixture
def repository(tmp_path):
    """A Maven repository on disk (file://) holding COORDINATE and its SHA-1."""
    folder = tmp_path / "repo" / "org" / "apache" / "iceberg" / COORDINATE.artifact / COORDINATE.version
    folder.mkdir(parents=True)
    jar = folder / COORDINATE.file_name()
    jar.write_bytes(_jar_bytes())
    (folder / (jar.name + ".sha1")).write_text(hashlib.sha1(jar.read_bytes()).hexdigest() + "  " + jar.name + "\n")
    return (tmp_path / "repo").as_uri(), jar


def test_the_runtime_is_fetched_once_and_fetched_again_when_damaged(tmp_path, repository):
    url, published = repository
    cache = tmp_path / "cache"
    jar = jvm_packages.ensure_jar(COORDINATE, cache, url)
    assert jar.read_bytes() == published.read_bytes()
    published.write_bytes(_jar_bytes(b"newer"))  # the cache is not asked again while intact
    assert jvm_packages.ensure_jar(COORDINATE, cache, url).read_bytes() == jar.read_bytes() != published.read_bytes()
    published.write_bytes(_jar_bytes())
    jar.write_bytes(jar.read_bytes()[:100])  # a partial download
    assert jvm_packages.ensure_jar(COORDINATE, cache, url).read_bytes() == published.read_bytes()
    assert not list(cache.glob(".*.part"))


def test_a_jar_put_in_the_cache_by_hand_is_used_if_it_opens(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / COORDINATE.file_name()).write_bytes(_jar_bytes())
    assert jvm_packages.ensure_jar(COORDINATE, cache, "file:///nowhere") == cache / COORDINATE.file_name()
    (cache / COORDINATE.file_name()).write_bytes(b"not a jar")
    with pytest.raises(jvm_packages.PackageUnavailable) as raised:
        jvm_packages.ensure_jar(COORDINATE, cache, "file:///nowhere")
    message = str(raised.value)
    assert COORDINATE.words() in message and str(cache / COORDINATE.file_name()) in message and "\n" not in message


def test_a_download_that_does_not_match_its_checksum_is_refused(tmp_path, repository):
    url, published = repository
    published.write_bytes(_jar_bytes(b"tampered"))
    with pytest.raises(jvm_packages.PackageUnavailable, match="does not match its published SHA-1"):
        jvm_packages.ensure_jar(COORDINATE, tmp_path / "cache", url)
    assert not (tmp_path / "cache" / COORDINATE.file_name()).exists()


def test_runtimes_are_listed_for_the_versions_with_one():
    assert iceberg.runtime_for("3.5.9")[0].artifact == "iceberg-spark-runtime-3.5_2.12"
    assert iceberg.runtime_for("4.1.4")[0].artifact.endswith("_2.13")
    assert iceberg.runtime_for("4.3.0") is None and iceberg.runtime_for("3.2.4") is None
    assert iceberg.not_available("4.3.0") == "not available on Spark 4.3 (no Iceberg runtime)"


def test_a_spark_without_a_runtime_reports_iceberg_cases_not_available(pytester, session):
    """On the installed Spark when it has no runtime (4.2+): every case and check of an
    Iceberg scenario is skipped with the reason, none passes, none fails."""
    spark = session.versions["spark"]
    if iceberg.runtime_for(spark) is not None:
        pytest.skip(f"Spark {spark} has an Iceberg runtime")
    text = ICEBERG_A.replace("    format: iceberg\n", "    format: iceberg\n    partition_by: ['bucket(4, k)']\n")
    make_suite(pytester, {"ice.yaml": text})
    result = pytester.runpytest("scenarios", "--report-dir", "out", "--fresh", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=3)  # the case, its cross-strategy check and its partitions check
    records = json.loads((pytester.path / "out" / spark / "results.json").read_text())["cases"]
    assert [r["status"] for r in records] == ["skipped", "skipped", "skipped"]
    assert all(iceberg.not_available(spark) in r["message"] for r in records)


class _RecordingSpark:
    """Stands in for a session: records SQL text and table lookups, knows one config."""

    def __init__(self):
        self.statements, self.lookups = [], []
        self.conf = type("Conf", (), {"get": staticmethod(lambda key, default=None: "SparkCatalog")})()

    def sql(self, text):
        self.statements.append(text)

    def table(self, name):
        self.lookups.append(name)
        return type("Frame", (), {"schema": None, "name": name})()


def test_a_derived_tables_column_names_cannot_write_ddl():
    """A derived table's column names are Spark's answer to the file's SQL (`AS` anything):
    quoted, never text of the CREATE TABLE; a nested field name that could carry DDL is
    refused."""
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType
    hostile = "x` bigint) USING iceberg LOCATION '/tmp/elsewhere' --"
    spark = _RecordingSpark()
    iceberg._create(spark, "harness_iceberg.scenario_1.t", StructType([StructField(hostile, LongType())]),
                    {"partition_by": ["bucket(4, k)"]}, {})
    (statement,) = spark.statements
    assert "(`x`` bigint) USING iceberg LOCATION '/tmp/elsewhere' --` bigint) USING iceberg PARTITIONED BY" in statement
    nested = StructType([StructField("s", StructType([StructField("a:int> ) LOCATION '/x' --", IntegerType())]))])
    with pytest.raises(ValueError, match="whose field names an Iceberg table written by the harness cannot carry"):
        iceberg._create(_RecordingSpark(), "harness_iceberg.scenario_1.t", nested, {}, {})


def test_a_derived_iceberg_table_is_looked_up_once_per_worker(monkeypatch):
    """Every run of a case (and every forced strategy) builds its inputs again: the
    derived table is written once and its frame kept, the catalog not asked again."""
    from harness.spark import datagen
    datagen.forget_tables()
    spark, built = _RecordingSpark(), []
    from types import SimpleNamespace
    from harness.spark.formats import iceberg as iceberg_format
    there = SimpleNamespace(**{**vars(iceberg_format), "exists": lambda spark_, table: True})
    monkeypatch.setattr(datagen, "format_of", lambda spec: there)
    specs = {"a": {"rows": 1, "columns": {"k": {"sequence": {}}}}, "b": {"sql": "SELECT k FROM a", "format": "iceberg"},
             "c": {"rows": 2, "columns": {"k": {"sequence": {}}}}}
    first = datagen.derived_catalog_table(spark, 1, "b", specs, {}, lambda: built.append(1))
    again = datagen.derived_catalog_table(spark, 1, "b", specs, {}, lambda: built.append(1))
    assert first is again and len(spark.lookups) == 1 and built == []
    other = datagen.derived_catalog_table(spark, 2, "b", specs, {}, lambda: built.append(1))  # another seed
    assert other is not first and len(spark.lookups) == 2
    # named by the tables declared up to it: a table after it does not rename it, one before does
    later = {**specs, "c": {"rows": 3, "columns": {"k": {"sequence": {}}}}}
    earlier = {**specs, "a": {"rows": 3, "columns": {"k": {"sequence": {}}}}}
    name = datagen.derived_catalog_name(1, "b", specs, {})
    assert datagen.derived_catalog_name(1, "b", later, {}) == name != datagen.derived_catalog_name(1, "b", earlier, {})
    datagen.forget_tables()
