"""Statistics-only tables plan exactly as the ANALYZEd tables whose numbers they carry.

Each table is first generated, written to the catalog and ANALYZEd FOR ALL COLUMNS;
its catalog statistics are read back as `capture` reads them and written into a statistics-only twin (an empty
table with those statistics injected). Both scenarios are planned with CBO on and off,
a side filtered through a derived table included: the estimates and join nodes must be
the same. Run on every version of the matrix (see README, "Statistics-only tables").
"""
import copy
import datetime as dt

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
