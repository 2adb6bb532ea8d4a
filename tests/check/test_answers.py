"""The answer checks that need no declared answer: ternary logic partitioning
(harness.check.ternary), two observations of one answer that disagree, a rewrite that
changes the query's output, `expect.columns`, and answers in messages as declared."""
import contextlib

import pytest

from harness.check import agreement, expect, runner, ternary
from harness.check.compare_results import answers_disagree, output_changed
from harness.core.records import Observation
from harness.scenario.model import expand, load_scenario
from harness.spark.query import checksum_frame, checksum_text

FACT = """\
id: answers_fact
description: a fact with NULL keys joined to a dimension
tables:
  fact:
    rows: 2000
    columns:
      k: {key: {cardinality: 50}, nulls: 0.1}
      v: {uniform: {min: 0, max: 100}}
  dim:
    rows: 50
    columns:
      k: {sequence: {start: 0}}
join: {left: fact, right: dim, on: [k], type: left_outer}
expect: {}
"""


def _query(session, write_scenario, text=FACT):
    case = expand(load_scenario(write_scenario(text)))[0]
    scope = session.case_scope(120)
    scope.__enter__()
    tables = runner.prepare_inputs(session, scope, case, {})
    return case, scope, runner.sized_query(session, scope, case.join, {}, tables)


def test_the_three_partitions_add_up_to_the_query_and_a_wrong_total_does_not(session, write_scenario):
    case, scope, query = _query(session, write_scenario)
    try:
        row = checksum_frame(query).collect()[0]
        rows, checksum = int(row["rows"]), checksum_text(row["hash_sum"])
        columns = [[f.name, f.dataType.simpleString()] for f in query.schema.fields]
        found = ternary.partition(query, columns, case.join, rows, checksum)
        assert found["agrees"] and found["column"] == "k" and found["rows"] == rows == 2000
        assert [part["where"] for part in found["parts"]] == ["p", "NOT p", "p IS NULL"]
        assert all(part["rows"] > 0 for part in found["parts"])  # the NULL keys fall in the third
        wrong = ternary.partition(query, columns, case.join, rows + 1, checksum)
    finally:
        scope.__exit__(None, None, None)
    assert not wrong["agrees"]
    status, message = agreement._partitions_verdict("passed", "6 runs over 4 strategies agree", wrong)
    assert status == "correctness" and message.startswith("ternary partitioning on k does not add up")


def test_the_oracle_runs_where_no_reference_compared_and_says_so(session, write_scenario):
    off = FACT.replace("expect: {}", "reference: {skip: \"a test of the oracle\"}\nexpect: {}")
    record = agreement.run_agreement(expand(load_scenario(write_scenario(off)))[0], session)
    assert record.status == "passed", record.message
    assert "reference: not compared (the file turns it off: a test of the oracle)" in record.message
    assert "ternary partitioning on k agrees" in record.message
    assert record.timings["partitions_s"] > 0 and "reference_s" in record.timings  # what each oracle took
    with_reference = agreement.run_agreement(expand(load_scenario(write_scenario(FACT, "b.yaml")))[0], session)
    assert "ternary" not in with_reference.message  # the reference compared: nothing more to run
    assert "partitions_s" not in with_reference.timings


def test_a_limit_is_not_partitioned():
    assert ternary.picks_rows([{"class": "org.apache.spark.sql.catalyst.plans.logical.GlobalLimit"}])
    assert ternary.key_column([["a", "map<int,int>"], ["b", "int"]], {"sql": "x"}) == 1
    assert ternary.key_column([["x", "int"], ["k", "int"]], {"on": [["k", "kk"]]}) == 1


def test_a_count_and_a_collection_of_one_answer_that_disagree_are_correctness():
    observed = Observation(executed=True, rows=3, checksum="0" * 16, result_rows=[])
    assert answers_disagree(observed, 1000) == ("Spark's two observations of one answer disagree: counted 3 rows "
                                                "with the checksum, collected 0")
    assert answers_disagree(Observation(executed=True, rows=3, result_rows=[[1], [2], [3]]), 1000) is None
    assert answers_disagree(Observation(executed=True, rows=5000, result_rows=[[1]] * 1001), 1000) is None


def test_a_rewrite_that_changes_the_output_is_correctness():
    change = {"analysed": [["a", "int"]], "optimized": [["a", "int"], ["exists", "boolean"]]}
    assert output_changed(Observation(output_change=change)) == (
        "the optimized plan's output is not the query's: analysed (a int), optimized (a int, exists boolean)")
    assert output_changed(Observation()) is None


def test_columns_are_read_from_the_plan_and_compared_as_declared(session, write_scenario):
    text = FACT.replace("expect: {}", "expect:\n  columns: [[k, bigint], [v, bigint], [k, bigint]]")
    record = runner.run_case(expand(load_scenario(write_scenario(text)))[0], session)
    assert record.observed.columns == [["k", "bigint"], ["v", "bigint"], ["k", "bigint"]]
    assert record.status == "passed" and not record.observed.executed  # read without running
    wrong = text.replace("[v, bigint]", "[v, double]")
    record = runner.run_case(expand(load_scenario(write_scenario(wrong, "b.yaml")))[0], session)
    assert record.status == "failed"
    assert record.message.startswith("column 2 differs: expected v double, observed v bigint")
    assert expect.columns_differ([["a", "int"]], [["a", "int"], ["b", "int"]]) == \
        "expected 1 columns (a int), observed 2 (a int, b int)"


@pytest.mark.parametrize("rows,text", [
    ([[1.0, "a", None]], "[[1, 'a', null]]"),
    ([[2.5, "b", 1e20]], "[[2.5, 'b', 1e+20]]"),
])
def test_answers_in_messages_show_whole_numbers_as_declared(rows, text):
    assert expect.rows_text(rows) == text


def test_an_oracle_cut_at_the_timeout_is_not_compared_never_an_error(session, write_scenario, monkeypatch):
    """The strategies answered in time and the partitions did not: the check keeps its
    verdict and says the oracle compared nothing (measured: an Iceberg check on a busy
    machine was cut there, and the exception lost its worker)."""
    off = FACT.replace("expect: {}", "reference: {skip: \"a test of the oracle\"}\nexpect: {}")
    case = expand(load_scenario(write_scenario(off)))[0]
    scopes = []
    real_scope = session.case_scope

    @contextlib.contextmanager
    def remembered(*args, **kwargs):
        with real_scope(*args, **kwargs) as scope:
            scopes.append(scope)
            yield scope

    def cut(*args, **kwargs):
        scopes[-1].timed_out.set()  # what the watchdog does when the scenario's time runs out
        raise RuntimeError("Job 993 cancelled part of cancelled job group")
    monkeypatch.setattr(session, "case_scope", remembered)
    monkeypatch.setattr(ternary, "partition", cut)
    record = agreement.run_agreement(case, session)
    assert record.status == "passed", record.message
    assert "ternary partitioning: not compared (cut at the scenario's timeout (120 s))" in record.message


def test_a_known_bug_whose_answer_nobody_compared_is_unchecked_not_behaving_correctly(session, write_scenario):
    text = FACT.replace("expect: {}", "reference: {skip: \"the answer is not compared\"}\nexpect:\n"
                        "  columns: [[k, bigint], [v, bigint], [k, bigint]]").replace(
        "join: {", "bug: {id: SPARK-1, affected: \">=3.0\"}\njoin: {")
    record = runner.run_case(expand(load_scenario(write_scenario(text)))[0], session)
    assert record.status == "unchecked", record.message
    assert "reference: not compared (the file turns it off: the answer is not compared)" in record.message
    assert "behaves correctly" not in record.message


def test_partitions_of_an_empty_answer_never_make_a_single_strategy_green():
    empty = {"column": "k", "predicate": "p", "parts": [{"where": w, "rows": 0, "checksum": "0" * 16}
                                                        for w in ("p", "NOT p", "p IS NULL")],
             "rows": 0, "checksum": "0" * 16, "query_rows": 0, "query_checksum": "0" * 16, "agrees": True}
    single = "only one strategy could be compared (BroadcastHashJoin (right)): nothing to check against"
    status, message = agreement._partitions_verdict("unchecked", single, empty)
    assert status == "unchecked" and "ternary partitioning on k agrees: 0 (p)" in message
