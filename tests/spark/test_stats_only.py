"""Statistics-only tables plan exactly as the ANALYZEd tables whose numbers they carry.

Each table is first generated, written to the catalog and ANALYZEd FOR ALL COLUMNS;
its catalog statistics are read back as `capture` reads them and written into a statistics-only twin (an empty
table with those statistics injected). Both scenarios are planned with CBO on and off,
a side filtered through a derived table included: the estimates and join nodes must be
the same. Run on every version of the matrix (see README, "Statistics-only tables").
"""
import copy
import datetime as dt
from pathlib import Path

import pytest
import yaml

from harness.capturing.catalog import catalog_table
from harness.check import runner
from harness.scenario.model import expand, load_scenario

ANALYZED = """\
id: twin
description: generated tables, ANALYZEd for all columns
tables:
  fact:
    rows: 20000
    materialize: catalog
    analyze: columns
    columns:
      k: {key: {cardinality: 500}}
      v: {uniform: {min: 1, max: 1000}, type: int}
      amount: {uniform: {min: 0, max: 500}, type: "decimal(10,2)"}
      day: {uniform: {min: "2020-01-01", max: "2020-12-31"}, type: date}
      at: {uniform: {min: "2021-01-01T00:00:00", max: "2021-03-01T00:00:00"}, type: timestamp}
      label: {values: [a, bb, ccc], nulls: 0.1}
      ratio: {expr: "CAST(id % 100 AS FLOAT) / 7"}
      small: {expr: "CAST(id % 300 AS SMALLINT)"}
  dim:
    rows: 500
    materialize: catalog
    analyze: columns
    columns:
      k: {sequence: {}}
      name: {faker: {provider: first_name, pool: 50}}
  {filtered}:
    from: fact
    steps:
      - filter: "v < 40 AND day < DATE'2020-03-01'"
join: {left: dim, right: {right}, on: [k]}
matrix:
  conf:
    spark.sql.cbo.enabled: [true, false]
expect: {}
"""

def _observe(session, path) -> dict:
    out = {}
    for case in expand(load_scenario(path)):
        observed, _ = runner.capture(session, case, execute=False, collect_rows=False)
        assert observed.error is None, (path.name, observed.error)
        out[case.label] = (observed.estimates, [(j["strategy"], j["build_side"], j["tables"])
                                                for j in observed.initial.joins])
    return out


@pytest.mark.parametrize("right", ["fact", "filtered"])
def test_a_statistics_only_twin_plans_like_the_analyzed_table(session, write_scenario, right):
    from harness.scenario import confs
    from harness.spark import datagen

    analyzed_text = ANALYZED.replace("{filtered}", "filtered").replace("{right}", right)
    analyzed_path = write_scenario(analyzed_text, "analyzed.yaml")
    analyzed = _observe(session, analyzed_path)

    scenario = load_scenario(analyzed_path)
    data = copy.deepcopy(scenario.data)
    for name in ("fact", "dim"):  # read as `capture` reads a production table
        spec = scenario.data["tables"][name]
        table = catalog_table(session.spark, datagen.catalog_table_name(scenario.seed, name, spec, confs.data_conf({})))
        data["tables"][name] = {"schema": table.schema, "stats": table.stats}
    data["id"] = "twin_stats_only"
    twin = _observe(session, write_scenario(yaml.safe_dump(data, sort_keys=False), "twin.yaml"))

    assert set(twin) == {"cbo=on", "cbo=off"}
    assert twin == analyzed
    # the statistics were read: with CBO the filtered side's estimate has a row count
    if right == "filtered":
        estimates, _ = twin["cbo=on"]
        assert estimates[0]["right"]["row_count"] is not None
        assert estimates[0]["right"]["row_count"] < 20000


def test_timestamps_are_written_as_spark_writes_them():
    from harness.spark.stats_only import external_value
    assert external_value("2021-01-01T00:00:00", "timestamp") == "2021-01-01 00:00:00.000000"
    assert external_value("2021-01-01T01:00:00+01:00", "timestamp") == "2021-01-01 00:00:00.000000"
    assert external_value(dt.date(2020, 1, 2).isoformat(), "date") == "2020-01-02"
    assert external_value(7, "long") == "7" and external_value(True, "boolean") == "true"


def _scan_size(spark, sql: str) -> int:
    return int(str(spark.sql(sql)._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))


# path characters, and longer as a folder name than a local file system's 255 bytes
LONG_VALUE = "a/../b=c%" + "/" * 100
PARTITIONED = {
    "schema": {"id": "long", "day": "date", "region": "string"},
    "stats": {"size_bytes": (40 << 40) + (10 << 30) + 2048, "rows": 1000},
    "partition_by": ["day", "region"],
    "partition_values": [
        {"values": ["2024-01-01", "eu"], "size_bytes": 40 << 40, "rows": 900},  # 40 TiB: 40 sparse files
        {"values": ["2024-01-02", LONG_VALUE], "size_bytes": 10 << 30, "rows": 90},
        {"values": ["2024-01-03", None], "size_bytes": 1024, "rows": 5},
        {"values": [None, "us"], "size_bytes": 1024, "rows": 5},
    ],
}


def test_a_statistics_only_partitioned_table_is_sized_by_the_partitions_a_plan_keeps(session):
    """As over the production table: a plan without partition filters sees the table's
    statistics; one that prunes sees the kept partitions' sizes; a value with path
    characters or a null is its own partition; nothing occupies disk or leaves the table's
    folder."""
    from harness.spark.stats_only import stats_only_table, table_location
    spark = session.spark
    stats_only_table(spark, "partitioned_replay", PARTITIONED)
    query = "SELECT id, day, region FROM partitioned_replay"
    assert _scan_size(spark, query) == PARTITIONED["stats"]["size_bytes"]
    assert _scan_size(spark, f"{query} WHERE day = DATE'2024-01-01'") == 40 << 40
    assert _scan_size(spark, f"{query} WHERE region = '{LONG_VALUE}'") == 10 << 30
    assert _scan_size(spark, f"{query} WHERE region IS NULL") == 1024
    assert _scan_size(spark, f"{query} WHERE day IS NULL") == 1024
    assert _scan_size(spark, f"{query} WHERE day IS NOT NULL") == (40 << 40) + (10 << 30) + 1024
    location = Path(table_location(spark, "partitioned_replay")).resolve()
    files = [f for f in location.rglob("*") if f.is_file() and not f.name.startswith((".", "_"))]
    assert len(files) == 40 + 1 + 1 + 1
    assert sum(f.stat().st_size for f in files) == PARTITIONED["stats"]["size_bytes"]
    assert sum(f.stat().st_blocks for f in files) == 0
    assert all(location in f.resolve().parents for f in files)
    assert not [d for d in location.rglob("*") if d.is_dir() and "=" in d.name]  # no folder per partition
    assert len(spark.sql("SHOW PARTITIONS partitioned_replay").collect()) == 4


def test_a_partitioned_table_never_analyzed_is_sized_by_spark_s_default_until_pruned(session):
    from harness.spark.stats_only import stats_only_table
    spark = session.spark
    never = {**PARTITIONED, "stats": {}}
    stats_only_table(spark, "partitioned_never_analyzed", never)
    assert _scan_size(spark, "SELECT * FROM partitioned_never_analyzed") == 2 ** 63 - 1  # defaultSizeInBytes
    assert _scan_size(spark, "SELECT * FROM partitioned_never_analyzed WHERE day = DATE'2024-01-03'") == 1024


def test_a_partitioned_table_with_no_partition_is_sized_by_its_statistics_until_pruned(session):
    """`partition_values: []`: an unfiltered scan is sized by the injected statistics, a
    pruned one by the files of the partitions kept — none (Spark's floor of 1 byte)."""
    from harness.spark.stats_only import stats_only_table
    spark = session.spark
    empty = {**PARTITIONED, "partition_values": []}
    stats_only_table(spark, "partitioned_empty", empty)
    assert _scan_size(spark, "SELECT * FROM partitioned_empty") == PARTITIONED["stats"]["size_bytes"]
    assert _scan_size(spark, "SELECT * FROM partitioned_empty WHERE day = DATE'2024-01-03'") == 1
    assert spark.sql("SHOW PARTITIONS partitioned_empty").collect() == []


def test_a_shared_catalogs_tables_are_created_once_per_worker_whatever_reads_them(session, tmp_path, monkeypatch):
    """Every query of a workload reads the catalog's tables; each is created in the
    worker's catalog once (its name is a digest of its spec), not once per case."""
    from harness.spark.formats import parquet
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "catalog.yaml").write_text(
        "tables:\n"
        "  facts:\n    schema: {k: int, v: long}\n    stats: {size_bytes: 40000000000, rows: 900000000}\n"
        "  dims:\n    schema: {k: int, name: string}\n    stats: {size_bytes: 2000000, rows: 20000}\n")
    made = []
    original = parquet.write_stats_only
    monkeypatch.setattr(parquet, "write_stats_only", lambda spark, table, spec: (made.append(table),
                                                                                  original(spark, table, spec)))
    for i, where in enumerate(("", " WHERE v > 3", " WHERE k < 10")):
        path = folder / f"q{i}.yaml"
        path.write_text(f"id: shared_catalog_q{i}\ndescription: q\ncatalog: catalog.yaml\njoin:\n"
                        f"  sql: SELECT * FROM facts JOIN dims USING (k){where}\n"
                        "expect:\n  strategy: BroadcastHashJoin\n  build_side: right\n")
        (case,) = expand(load_scenario(path))
        record = runner.run_case(case, session)
        assert record.status == "passed", record.message
    assert len(made) <= 2 and len(set(made)) == len(made)  # none twice (an earlier test may have made them)
