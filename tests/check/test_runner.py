"""harness.check.runner, harness.spark.query and harness.check.agreement on real Spark: what a case
observes, the record it makes, and the cross-strategy check (including a real
correctness failure)."""
import json

import pytest

from harness.check.agreement import forced_variants, run_agreement
from harness.check.runner import capture, resolve_conf, run_case
from harness.core.records import Observation
from harness.scenario.model import expand, load_scenario
from harness.spark import query
from tests.conftest import MINIMAL


def only_case(write_scenario, text, name="case.yaml"):
    return expand(load_scenario(write_scenario(text, name)))[0]


def test_sql_text_and_condition_from_a_join_spec():
    join = {"left": "a", "right": "b", "type": "left", "on": ["k", ["x", "y"]], "condition": "l.v < r.v",
            "hints": {"left": ["MERGE"], "right": [{"name": "FOO", "unknown": True}]}}
    assert query.condition_text(join) == "l.`k` = r.`k` AND l.`x` = r.`y` AND (l.v < r.v)"
    assert query.sql_text(join) == ("SELECT /*+ MERGE(l), FOO(r) */ * FROM a l LEFT OUTER JOIN b r "
                                    "ON l.`k` = r.`k` AND l.`x` = r.`y` AND (l.v < r.v)")


def test_relative_sizes_resolve_against_the_top_join_estimate():
    estimates = [{"left": {"size_in_bytes": 8000}, "right": {"size_in_bytes": 800}}]
    conf = {"spark.sql.autoBroadcastJoinThreshold": {"estimate_of": "right", "plus": -1},
            "spark.sql.adaptive.autoBroadcastJoinThreshold": {"estimate_of": "left", "times": 2},
            "spark.sql.shuffle.partitions": 4}
    assert resolve_conf(conf, estimates) == {"spark.sql.autoBroadcastJoinThreshold": 799,
                                             "spark.sql.adaptive.autoBroadcastJoinThreshold": 16000,
                                             "spark.sql.shuffle.partitions": 4}


def test_a_case_observes_plans_estimates_and_rows(session, write_scenario):
    text = MINIMAL.replace("  build_side: right\n", "  build_side: right\n  rows: 100\n  plan: both\n")
    record = run_case(only_case(write_scenario, text), session)
    assert record.status == "passed", record.message
    seen = record.observed
    assert isinstance(seen, Observation) and seen.executed and seen.rows == 100
    assert seen.initial.top["strategy"] == "BroadcastHashJoin" and seen.final.top["build_side"] == "right"
    assert seen.estimates[0]["left"]["size_in_bytes"] > seen.estimates[0]["right"]["size_in_bytes"] > 0
    assert len(seen.checksum) == 16 and "BroadcastHashJoin" in seen.initial.text
    assert record.model["agrees"]
    as_json = record.to_json()
    assert as_json["observed"]["initial"]["joins"][0]["strategy"] == "BroadcastHashJoin"
    assert "plan_objects" not in as_json["observed"]  # JVM objects never enter a record


def test_plan_only_cases_do_not_execute(session, write_scenario):
    observed, plan_objects = capture(session, only_case(write_scenario, MINIMAL), execute=False, collect_rows=False)
    assert not observed.executed and observed.rows is None and observed.final is None
    assert set(plan_objects) == {"initial"}


def test_forced_variants_cover_every_strategy(write_scenario):
    case = only_case(write_scenario, MINIMAL)
    labels = [label for label, _, _ in forced_variants(case)]
    assert labels == ["as written", "BROADCAST@left", "BROADCAST@right", "SHUFFLE_HASH@left", "SHUFFLE_HASH@right",
                      "MERGE", "SHUFFLE_REPLICATE_NL"]


def test_agreement_passes_when_every_strategy_gives_the_same_answer(session, write_scenario):
    record = run_agreement(only_case(write_scenario, MINIMAL), session)
    assert record.status == "passed", record.message
    assert {r.strategy for r in record.runs} >= {"BroadcastHashJoin", "ShuffledHashJoin", "SortMergeJoin"}
    assert len({(r.rows, r.checksum) for r in record.runs}) == 1


@pytest.fixture
def wrong_under_one_strategy(monkeypatch):
    """Make the sort-merge variant return other rows, as a Spark bug under one strategy
    would: the check must report `correctness` naming it."""
    import harness.check.agreement as agreement_module
    real = agreement_module.run_forced

    def run_forced(session, scope, join, conf, tables, **how):
        ran = real(session, scope, join, conf, tables, **how)
        if join.get("hints", {}).get("left") == ["MERGE"]:
            ran.rows += 1
        return ran
    monkeypatch.setattr(agreement_module, "run_forced", run_forced)


def test_a_strategy_with_other_rows_is_a_correctness_failure(session, write_scenario, wrong_under_one_strategy):
    record = run_agreement(only_case(write_scenario, MINIMAL), session)
    assert record.status == "correctness"
    assert "SortMergeJoin (build none, forced MERGE) gives 101 rows" in record.message


@pytest.fixture
def throws_under_one_strategy(monkeypatch):
    """Make the sort-merge variant fail at run time, as a codegen bug under one strategy
    would: a strategy that throws while others answer is a correctness failure."""
    import harness.check.agreement as agreement_module
    real = agreement_module.run_forced

    def run_forced(session, scope, join, conf, tables, **how):
        if join.get("hints", {}).get("left") == ["MERGE"]:
            exc = RuntimeError("java.lang.IllegalStateException: codegen broke")
            exc.harness_phase = "execution"
            raise exc
        return real(session, scope, join, conf, tables, **how)
    monkeypatch.setattr(agreement_module, "run_forced", run_forced)


def test_a_strategy_that_throws_while_others_answer_is_a_correctness_failure(session, write_scenario,
                                                                             throws_under_one_strategy):
    record = run_agreement(only_case(write_scenario, MINIMAL), session)
    assert record.status == "correctness"
    assert "forced MERGE threw RuntimeError: codegen broke while BroadcastHashJoin" in record.message


def test_a_check_with_one_strategy_is_unchecked_not_passed(session, write_scenario):
    # a non-equi join over a big table filtered down to a few rows: the declared size
    # rules nested loops out, the real size lets them in, so two strategies are compared
    text = MINIMAL.replace("    rows: 100\n", "    rows: 200000\n    filter: \"k < 3\"\n").replace(
        "  on: [k]\n", "  condition: \"l.k < r.k\"\n").replace(
        "  strategy: BroadcastHashJoin\n  build_side: right\n", "  strategy: BroadcastNestedLoopJoin\n")
    text = text.replace("      k: {sequence: {}}", "      k: {sequence: {}}").replace("    rows: 10\n", "    rows: 200\n")
    record = run_agreement(only_case(write_scenario, text), session)
    assert record.status == "passed", record.message
    assert {r.strategy for r in record.runs} >= {"BroadcastNestedLoopJoin", "CartesianProduct"}
    # an outer non-equi join can only be a broadcast nested loop: nothing to compare with
    only_bnlj = MINIMAL.split("join:")[0].replace("    rows: 10\n", "    rows: 200000\n") + (
        "join:\n  sql: \"SELECT * FROM a LEFT OUTER JOIN b ON a.k < b.k LIMIT 5\"\n"
        "expect:\n  strategy: BroadcastNestedLoopJoin\n")
    record = run_agreement(only_case(write_scenario, only_bnlj, "bnlj.yaml"), session)
    assert record.status == "unchecked", record.message
    assert "only one strategy could be compared (BroadcastNestedLoopJoin (right))" in record.message


def test_literal_strings_reach_spark_as_data_never_as_sql(session, write_scenario):
    hostile = ["it's", "back\\\\slash", "'); SELECT reflect('java.lang.System', 'exit', 0); --", "new\\nline"]
    rows = ", ".join(f"[{i}, {json.dumps(v)}]" for i, v in enumerate(hostile))
    text = MINIMAL.replace("""  b:
    rows: 10
    columns:
      k: {sequence: {}}""", f"""  b:
    schema: {{k: long, s: string}}
    values: [{rows}]""").replace("  strategy: BroadcastHashJoin\n  build_side: right\n", "  rows: 4\n")
    text = text.replace("""  left: a
  right: b
  on: [k]""", """  sql: "SELECT s FROM b\"""")
    record = run_case(only_case(write_scenario, text), session)
    assert record.status == "passed", record.message
    observed, _ = capture(session, only_case(write_scenario, text, "again.yaml"), execute=True, collect_rows=True)
    assert sorted(r[0] for r in observed.result_rows) == sorted(json.loads(json.dumps(hostile)))


NESTED_LOOPS_TOO_BIG = MINIMAL.replace("rows: 100\n", "rows: 5000\n").replace("rows: 10\n", "rows: 5000\n") \
    .replace("  on: [k]\n", "  condition: \"l.k < r.k\"\n").replace("expect:\n  strategy: BroadcastHashJoin\n  build_side: right\n",
                                                                  "expect: {}\n")


def test_nested_loops_too_big_to_compare_every_pair_are_planned_never_run(session, write_scenario, monkeypatch):
    """25 million pairs: every strategy Spark can force is a nested loop, so the check has
    nothing to compare; nothing executes at all, and the verdict says so."""
    from harness.check import runner
    executed = []
    real = runner._execute
    monkeypatch.setattr(runner, "_execute", lambda *args, **kw: executed.append(1) or real(*args, **kw))
    record = run_agreement(only_case(write_scenario, NESTED_LOOPS_TOO_BIG), session)
    assert record.status == "unchecked", record.message
    assert "nested-loop strategies were not forced" in record.message
    assert "the join as written was planned, not run" in record.message
    assert executed == []
    assert [(run.forced, run.rows) for run in record.runs] == [("as written", None)]


def test_the_join_as_written_stays_the_reference_of_a_check(session, write_scenario):
    record = run_agreement(only_case(write_scenario, MINIMAL), session)
    assert record.status == "passed", record.message
    assert record.runs[0].forced == "as written" and record.runs[0].rows == 100
    assert all(run.rows == 100 for run in record.runs)
