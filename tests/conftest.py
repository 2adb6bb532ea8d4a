import textwrap
from pathlib import Path

import pyspark.sql.functions  # noqa: E402,F401
import pytest

# Imported when the tests are collected, before any `pytester` fixture: pytester drops at
# the end of each test the modules imported during it, so PySpark or harness modules first
# imported inside a test would be imported afresh in the next one, with no SparkContext in
# their class attributes while the JVM of this process still runs (the next in-process
# run then fails in F.expr on `SparkContext._active_spark_context`).
import harness.check.agreement  # noqa: E402,F401
import harness.check.runner  # noqa: E402,F401
import harness.plugin  # noqa: E402,F401
import harness.spark.session  # noqa: E402,F401

# And the reference engine's C extensions, which cannot be initialized twice in one
# process: DuckDB first imported inside a pytester run, dropped at its end, then imported
# again by the next test aborts the worker ("Fatal Python error: Aborted" in
# duckdb/__init__.py; measured with test_plugin's mixed run followed by test_reuse's).
import duckdb  # noqa: E402,F401
import pyarrow  # noqa: E402,F401

try:  # PySpark's Py4J converters import numpy on a case's first job group: never twice
    import numpy  # noqa: F401
except ImportError:
    pass

# Faker is installed where the suite runs (the matrix fills the pool cache from there); a
# matrix environment of an old Python may have none: the pools are then read from the cache.
NEEDS_FAKER = pytest.mark.skipif(__import__("importlib").util.find_spec("faker") is None,
                                 reason="Faker is not installed in this environment")


@pytest.fixture
def session():
    # Not session-scoped: a fault test may stop the SparkContext; get_session() then builds
    # a new one (and otherwise returns the one this process already has).
    from harness.spark.session import get_session
    return get_session()


@pytest.fixture
def assert_replays():
    """Run a captured scenario file in this process's session and assert it passes and
    plans what the real query planned: the same join nodes (strategy, build side, tables,
    shuffles, scans) and the same estimates of both sides of every join."""
    def check(path, direct: list, direct_estimates: list):
        from harness.check import runner
        from harness.scenario.model import expand, load_scenario
        from harness.spark.session import get_session
        record = runner.run_case(expand(load_scenario(path))[0], get_session())
        assert record.status == "passed", record.message
        replayed = [(j["strategy"], j["build_side"], j["tables"], j["shuffles"], j["scans"])
                    for j in record.observed.initial.joins]
        assert replayed == direct
        assert record.observed.estimates == direct_estimates
        return record
    return check


@pytest.fixture
def write_scenario(tmp_path):
    """Write a scenario file from YAML text; returns its path."""
    def write(text: str, name: str = "case.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path
    return write


MINIMAL = """\
id: minimal
description: two small tables
tables:
  a:
    rows: 100
    columns:
      k: {key: {cardinality: 10}}
  b:
    rows: 10
    columns:
      k: {sequence: {}}
join:
  left: a
  right: b
  on: [k]
expect:
  strategy: BroadcastHashJoin
  build_side: right
"""


def fake_record(case_id="c[inner]", strategy="BroadcastHashJoin", build_side=None, *, file=None, status="passed",
                spark="4.3.0", rows=None, checksum=None, warnings=(), error=None, expected=None, **observed) -> dict:
    """One case record as the harness writes it (built from harness.core.records and validated
    against the results schema), for tests of the tools that read results."""
    from harness.core.records import (
        CaseRecord,
        Identity,
        Observation,
        PlanView,
        SparkError,
    )
    from harness.report.version_report import build_results, validate_results
    if build_side is None:
        build_side = "right" if strategy == "BroadcastHashJoin" else "none"
    joins = [] if strategy is None else [{"strategy": strategy, "build_side": build_side, "join_type": "Inner",
                                          "left_keys": "List(k#1L)", "right_keys": "List(k#2L)", "condition": "",
                                          "null_aware": False, "skew": False, "tables": None}]
    identity = Identity(scenario_id=case_id.split("[")[0], file=file or f"scenarios/equi/{case_id.split('[')[0]}.yaml",
                        line=1, tags=["equi"], bug=None, join_type="inner", api="dataframe",
                        versions={"spark": spark, "java": "17", "python": "3.11"}, master="local[2]", cluster=None)
    observed.setdefault("initial", PlanView(joins=joins))
    seen = Observation(executed=rows is not None, rows=rows, checksum=checksum,
                       warnings=list(warnings), error=SparkError.from_json(error), **observed)
    record = CaseRecord(identity=identity, case_id=case_id, label=case_id.partition("[")[2].rstrip("]"), params={},
                        description="d", status=status, message="", expected=expected or {"plan": "initial"},
                        observed=seen, timings={"total_s": 1.0}).to_json()
    validate_results(build_results([record], []))
    return record


def fake_results(records: list, spark="4.3.0") -> dict:
    """A whole results.json document around `records`, validated."""
    from harness.report.version_report import build_results, validate_results
    results = build_results(records, [])
    results["versions"]["spark"] = spark
    validate_results(results)
    return results
