"""An observation's key changes with everything that can change what Spark shows, and
with nothing that only judges it."""
import copy
import dataclasses
import textwrap

import pytest

from harness.core.options import RunOptions
from harness.scenario.model import expand, load_scenario
from harness.store import fingerprint
from harness.store.fingerprint import Environment, case_key
from tests.conftest import MINIMAL

WITH_MATRIX = MINIMAL + textwrap.dedent("""\
    spark_conf:
      spark.sql.shuffle.partitions: 4
    matrix:
      join_type: [inner, left_outer]
    """)
NEEDS = {"execute": True, "result_rows": False, "operators": False}


@pytest.fixture
def scenario(write_scenario):
    return load_scenario(write_scenario(WITH_MATRIX))


def _key(scenario, edit=None, env=None, needs=NEEDS, which=0, kind="case"):
    edited = copy.deepcopy(scenario)
    if edit is not None:
        edit(edited.data)
    return case_key(expand(edited)[which], kind, env or Environment.of(RunOptions()), needs)


def _set(path, value):
    def edit(data):
        target = data
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
    return edit


RE_RUN = {
    "table rows": _set(("tables", "a", "rows"), 101),
    "a column": _set(("tables", "b", "columns", "k"), {"sequence": {"start": 2}}),
    "the join": _set(("join", "on"), ["k", "k"]),
    "a config": _set(("spark_conf", "spark.sql.shuffle.partitions"), 5),
    "the matrix": _set(("matrix", "join_type"), ["left_outer", "inner"]),
    "the seed": _set(("seed",), 7),
    "the timeout": _set(("timeout",), 30),
}
JUDGING_ONLY = {
    "description": _set(("description",), "another description"),
    "tags": _set(("tags",), ["new-tag"]),
    "expect": _set(("expect",), {"strategy": "SortMergeJoin"}),
    "bug": _set(("bug",), {"id": "SPARK-1", "affected": "<3.0"}),
}


@pytest.mark.parametrize("what", RE_RUN)
def test_a_change_to_what_spark_runs_changes_the_key(scenario, what):
    assert _key(scenario, RE_RUN[what]) != _key(scenario)


@pytest.mark.parametrize("what", JUDGING_ONLY)
def test_a_change_to_what_only_judges_keeps_the_key(scenario, what):
    assert _key(scenario, JUDGING_ONLY[what]) == _key(scenario)


def test_the_matrix_entry_and_the_kind_are_in_the_key(scenario):
    assert _key(scenario, which=0) != _key(scenario, which=1)
    assert _key(scenario, kind="case") != _key(scenario, kind="agreement")


def test_what_the_expectations_make_a_run_observe_is_in_the_key(scenario):
    assert _key(scenario, needs={**NEEDS, "result_rows": True}) != _key(scenario)
    assert _key(scenario, needs={**NEEDS, "operators": True}) != _key(scenario)


ENVIRONMENT = {"spark": "9.9.9", "java": "21.0.1", "python": "3.99.0", "faker": "1.0.0", "harness": "0" * 64}


@pytest.mark.parametrize("field", ENVIRONMENT)
def test_versions_and_the_harness_source_are_in_the_key(scenario, field):
    env = Environment.of(RunOptions())
    assert _key(scenario, env=dataclasses.replace(env, **{field: ENVIRONMENT[field]})) != _key(scenario, env=env)


@pytest.mark.parametrize("option", [{"master": "local[3]"}, {"remote": "sc://h:15002"}, {"observe": True},
                                    {"plan_text": "failed"}, {"spark_conf": {"spark.executor.memory": "2g"}},
                                    {"driver_jvm_flags": "-Dspark.sql.ansi.enabled=true"},
                                    {"driver_jvm_flags": "-XX:TieredStopAtLevel=1 -Xss64m"},
                                    {"reference": "off"}, {"reference": "partitions"}])
def test_session_and_observing_options_are_in_the_key(scenario, option):
    assert _key(scenario, env=Environment.of(RunOptions(**option))) != _key(scenario, env=Environment.of(RunOptions()))


@pytest.mark.parametrize("flags", ["", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1 -XX:+UseG1GC",
                                   "-XX:Tier4BackEdgeThreshold=2000000 -XX:CICompilerCount=2",
                                   "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=240m"])
def test_flags_that_only_choose_the_jvm_s_compilers_and_collector_are_not(scenario, flags):
    assert _key(scenario, env=Environment.of(RunOptions(driver_jvm_flags=flags))) == _key(scenario)


def test_where_results_and_the_store_go_are_not(scenario):
    assert _key(scenario, env=Environment.of(RunOptions(work_dir="/elsewhere"))) == _key(scenario)


def test_faker_pool_contents_are_in_the_key(write_scenario, monkeypatch):
    text = MINIMAL.replace("k: {sequence: {}}", "k: {sequence: {}}\n      name: {faker: {provider: first_name, pool: 20}}")
    scenario = load_scenario(write_scenario(text))
    before = _key(scenario)
    from harness.spark import datagen
    real = datagen.faker_pool
    monkeypatch.setattr(datagen, "faker_pool", lambda *args: ("changed",) + tuple(real(*args))[1:])
    assert _key(scenario) != before


def test_harness_source_digest_follows_every_file(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "t.j2").write_text("{{ x }}")
    monkeypatch.setattr(fingerprint, "HARNESS_DIR", tmp_path)
    fingerprint.harness_source.cache_clear()
    try:
        first = fingerprint.harness_source()
        fingerprint.harness_source.cache_clear()
        (tmp_path / "t.j2").write_text("{{ y }}")
        assert fingerprint.harness_source() != first
    finally:
        fingerprint.harness_source.cache_clear()


def test_java_version_without_starting_a_jvm():
    assert fingerprint.java_version() not in ("", "none")


def test_the_sql_verdict_key_ignores_what_only_judges(scenario):
    env = Environment.of(RunOptions())
    edited = copy.deepcopy(scenario)
    edited.data["expect"] = {"strategy": "SortMergeJoin"}
    edited.data["description"] = "other"
    assert fingerprint.sql_check_key(edited, env) == fingerprint.sql_check_key(scenario, env)
    edited.data["join"]["on"] = ["k", "k"]
    assert fingerprint.sql_check_key(edited, env) != fingerprint.sql_check_key(scenario, env)
