"""Scenario SQL whose answer differs between runs is refused at collection, decided from
Spark's analysed plan (its `deterministic`, and the clock), unless the file says so is
intended (`expect: {varies: {checksum: why}}`); a field declared as varying is never asserted."""
from __future__ import annotations

import json

import pytest

from harness.scenario.errors import ScenarioError
from harness.scenario.model import expand, load_scenario
from tests.conftest import MINIMAL
from tests.test_security import refusal, with_sql


def with_expr(expression: str) -> str:
    return MINIMAL.replace("k: {sequence: {}}", f"k: {{sequence: {{}}}}\n      x: {{expr: {json.dumps(expression)}}}")


@pytest.mark.parametrize("expression, named", [
    ("rand()", "rand()"),
    ("rand(7) * 10", "rand()"),  # seeded: it still depends on how rows fall into partitions
    ("uuid()", "uuid()"),
    ("shuffle(array(id, 1, 2))", "shuffle()"),
    ("monotonically_increasing_id()", "monotonically_increasing_id()"),
    ("cast(current_timestamp() AS string)", "CurrentTimestamp (the clock)"),
])
def test_a_non_deterministic_column_is_refused_naming_file_line_and_field(session, write_scenario, expression, named):
    message = refusal(session, write_scenario, with_expr(expression))
    assert message.startswith(str(write_scenario(with_expr(expression)))), message
    assert f":12: tables.b.columns.x.expr: {named} is non-deterministic" in message
    assert "`expect: {varies: {checksum: ...}}`" in message and "\n" not in message


def test_a_non_deterministic_filter_condition_or_query_is_refused(session, write_scenario):
    filt = MINIMAL.replace("    rows: 10\n", "    rows: 10\n    filter: \"rand() < 0.5\"\n")
    assert "tables.b.filter: rand() is non-deterministic" in refusal(session, write_scenario, filt)
    # (a join condition Spark itself refuses to analyse with rand() in it: the case says so)
    # inside a subquery of join.sql, and hidden in a CTE
    sql = "WITH s AS (SELECT k, uuid() AS u FROM b) SELECT * FROM a JOIN s ON a.k = s.k"
    assert "join.sql: uuid() is non-deterministic" in refusal(session, write_scenario, with_sql(sql))
    sql = "SELECT * FROM a JOIN b ON a.k = b.k WHERE a.k IN (SELECT k FROM b WHERE rand() > 0.5)"
    assert "join.sql: rand() is non-deterministic" in refusal(session, write_scenario, with_sql(sql))


def test_text_that_only_looks_non_deterministic_is_accepted(session, write_scenario):
    """Decided from the plan, not the text: a column named rand, a string 'uuid()'."""
    from harness.spark.sql_guard import check_scenario
    text = with_expr("concat('uuid()', ' rand()')").replace("x: {expr:", "rand: {expr:")
    check_scenario(session.spark, load_scenario(write_scenario(text)))


def test_declared_as_intended_it_runs_and_its_checksum_is_not_compared(session, write_scenario):
    from harness.check.agreement import run_agreement
    from harness.spark.sql_guard import check_scenario
    text = with_expr("uuid()") + "  varies:\n    checksum: a uuid per row, by design\n"
    scenario = load_scenario(write_scenario(text))
    check_scenario(session.spark, scenario)
    record = run_agreement(expand(scenario)[0], session)
    assert record.status in ("passed", "unchecked"), record.message
    assert "checksum not compared (a uuid per row, by design)" in record.message


@pytest.mark.parametrize("declared, expectation, field", [
    ("checksum", "checksum: \"0000000000000001\"", "expect.checksum"),
    ("checksum", "result_rows: [[1]]", "expect.result_rows"),
    ("rows", "rows: 10", "expect.rows"),
    ("final_plan", "plan: final", "expect.plan"),
    ("warnings", "warnings: []", "expect.warnings"),
])
def test_a_field_declared_as_varying_cannot_be_asserted(write_scenario, declared, expectation, field):
    text = MINIMAL + f"  varies:\n    {declared}: Spark's own choice\n  {expectation}\n"
    with pytest.raises(ScenarioError) as info:
        load_scenario(write_scenario(text))
    assert f"{field}: " in str(info.value) and "`varies`" in str(info.value)
    assert "Spark's own choice" in str(info.value)


def test_a_variation_declared_where_an_override_applies_is_checked_with_it(write_scenario):
    """Declared in an override (some versions or cases only): the override merged over the
    base may not assert the field; an override that stops asserting it may declare it."""
    base = MINIMAL + "  plan: final\n  overrides:\n    - when: {spark: \"<3.2\"}\n"
    with pytest.raises(ScenarioError, match=r"expect\.plan: checks the final plan, which `varies` says differs"):
        load_scenario(write_scenario(base + "      varies: {final_plan: AQE re-plans by stage order}\n"))
    scenario = load_scenario(write_scenario(base + "      plan: initial\n"
                                            "      varies: {final_plan: AQE re-plans by stage order}\n"))
    from harness.check.expect import resolve
    case = expand(scenario)[0]
    assert resolve(case, "3.1.3")["varies"] == {"final_plan": "AQE re-plans by stage order"}
    assert "varies" not in resolve(case, "4.3.0")


def test_an_unknown_varies_field_or_an_empty_reason_is_refused(write_scenario):
    with pytest.raises(ScenarioError, match=r"expect\.varies\.strategy"):
        load_scenario(write_scenario(MINIMAL + "  varies:\n    strategy: sometimes\n"))
    with pytest.raises(ScenarioError, match=r"expect\.varies\.checksum"):
        load_scenario(write_scenario(MINIMAL + "  varies:\n    checksum: \"\"\n"))


NAMED_BY_A_WALK = [
    ("SELECT id FROM range(3)", None),
    ("SELECT rand() FROM range(3)", "rand()"),
    ("SELECT id, (SELECT max(id) FROM range(2) WHERE rand() > 0.5) FROM range(3)", "rand()"),
    ("SELECT id FROM range(3) WHERE id IN (SELECT id FROM range(2) WHERE rand() > 0.5)", "rand()"),
    ("SELECT id FROM range(3) WHERE EXISTS (SELECT 1 FROM range(2) r WHERE r.id = uuid())", "uuid()"),
    ("SELECT max(id) FROM range(3)", None),
    # first() and collect_list() are non-deterministic to Spark before 3.3 (measured on
    # 3.0.3, 3.1.3, 3.2.4), not from 3.3 on
    ("SELECT first(id) FROM range(3)", "first()"),
    ("SELECT collect_list(id) FROM range(3)", "collect_list()"),
    ("SELECT id FROM range(3) ORDER BY rand()", "rand()"),
    ("SELECT monotonically_increasing_id()", "monotonically_increasing_id()"),
]


@pytest.mark.parametrize("query, culprit", NAMED_BY_A_WALK)
def test_the_one_call_determinism_of_a_plan_agrees_with_the_walk(session, monkeypatch, query, culprit):
    """From 3.3 a plan tells its determinism in one call; a plan that holds a
    non-deterministic expression (in a subquery too) is still walked to name it."""
    from harness.spark import sql_guard
    if culprit in ("first()", "collect_list()") and tuple(map(int, session.spark.version.split(".")[:2])) >= (3, 3):
        culprit = None
    plan = session.spark.sql(query)._jdf.queryExecution().analyzed()
    found = sql_guard._nondeterministic_in(plan)
    assert (found is None) == (culprit is None)
    assert culprit is None or culprit in found
    walk_only = type("WalkOnly", (), {"__init__": lambda self, p: setattr(self, "p", p),
                                      "deterministic": lambda self: (_ for _ in ()).throw(AttributeError()),
                                      "__getattr__": lambda self, name: getattr(self.p, name)})
    assert (sql_guard._nondeterministic_in(walk_only(plan)) is None) == (culprit is None)


@pytest.mark.parametrize("aggregate, named", [
    ("first(b.k)", "First"), ("last(b.k)", "Last"), ("collect_list(b.k)", "CollectList"),
    ("collect_set(b.k)", "CollectSet"), ("percentile_approx(b.k, 0.5)", "ApproximatePercentile"),
])
def test_an_aggregate_whose_answer_is_the_arrival_order_is_refused_on_every_version(session, write_scenario,
                                                                                   aggregate, named):
    """Spark calls these deterministic from 3.3 on, yet the partitioning and the strategy
    decide which row arrives first: refused at collection unless declared, as rand() is."""
    sql = f"SELECT a.k, {aggregate} AS v FROM a JOIN b ON a.k = b.k GROUP BY a.k"
    message = refusal(session, write_scenario, with_sql(sql))
    assert f"join.sql: {named} (its answer is the order rows arrive in) is non-deterministic" in message
    assert "`expect: {varies: {checksum: ...}}`" in message
    from harness.spark.sql_guard import check_scenario
    check_scenario(session.spark, load_scenario(write_scenario(with_sql(sql.replace(aggregate, "max(b.k)")), "max.yaml")))
