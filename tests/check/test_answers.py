"""The answer checks that need no declared answer (ternary logic partitioning, the item:
tests/check/test_partitions.py): two observations of one answer that disagree, a rewrite that
changes the query's output, `expect.columns`, and answers in messages as declared."""
import pytest

from harness.check import expect, runner, ternary
from harness.check.compare_results import answers_disagree, output_changed
from harness.core.records import Observation
from harness.scenario.model import expand, load_scenario

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


def test_a_limit_or_a_random_value_is_not_partitioned():
    assert ternary.why_not([{"class": "org.apache.spark.sql.catalyst.plans.logical.GlobalLimit"}]).startswith(
        "a LIMIT")
    assert ternary.why_not([{"class": "org.apache.spark.sql.catalyst.expressions.Uuid"}]).startswith("Uuid")
    assert ternary.why_not([{"class": "org.apache.spark.sql.catalyst.plans.logical.Project"}]) is None
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


def test_a_known_bug_whose_answer_nobody_compared_is_unchecked_not_behaving_correctly(session, write_scenario):
    text = FACT.replace("expect: {}", "reference: {skip: \"the answer is not compared\"}\nexpect:\n"
                        "  columns: [[k, bigint], [v, bigint], [k, bigint]]").replace(
        "join: {", "bug: {id: SPARK-1, affected: \">=3.0\"}\njoin: {")
    record = runner.run_case(expand(load_scenario(write_scenario(text)))[0], session)
    assert record.status == "unchecked", record.message
    assert "reference: not compared (the file turns it off: the answer is not compared)" in record.message
    assert "behaves correctly" not in record.message
