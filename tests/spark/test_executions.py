"""Shared executions: the same physical query under the same configs runs once per worker;
anything that can change the answer (data, seed, rows, filter, condition, join type, a
config) runs again."""
from __future__ import annotations

import pytest

from harness.check import runner
from harness.scenario.model import expand, load_scenario
from harness.spark import executions

BASE = """\
id: shared
description: shared executions
seed: 5
tables:
  a: {rows: 3000, columns: {k: {key: {cardinality: 300}}, v: {uniform: {min: 0, max: 9}}}}
  b: {rows: 300, columns: {k: {sequence: {}}, w: {uniform: {min: 0, max: 9}}}}
join: {left: a, right: b, on: [k]}
expect: {}
"""

VARIANTS = {
    "seed": ("seed: 5", "seed: 6"),
    "rows": ("a: {rows: 3000", "a: {rows: 2999"),
    "filter": ("b: {rows: 300, columns", "b: {rows: 300, filter: 'w > 0', columns"),
    "condition": ("join: {left: a, right: b, on: [k]}", "join: {left: a, right: b, on: [k], condition: 'v < w'}"),
    "join type": ("join: {left: a, right: b, on: [k]}", "join: {left: a, right: b, on: [k], type: left_outer}"),
    "a config": ("expect: {}", "spark_conf: {spark.sql.ansi.enabled: true}\nexpect: {}"),
    "a generator": ("v: {uniform: {min: 0, max: 9}}", "v: {uniform: {min: 0, max: 8}}"),
}


def observe(session, write_scenario, text: str, name: str, expect: str = "{}"):
    (case,) = expand(load_scenario(write_scenario(text.replace("expect: {}", f"expect: {expect}"), name)))
    record = runner.run_case(case, session)
    assert record.observed.executed, record.message
    return record


def test_the_same_query_runs_once_and_gives_the_same_answer(session, write_scenario):
    executions.forget()
    first = observe(session, write_scenario, BASE, "one.yaml")
    again = observe(session, write_scenario, BASE.replace("id: shared", "id: again"), "two.yaml")
    assert "shared_execution" not in first.observed.timings
    assert again.observed.timings.get("shared_execution") == 1.0
    assert (again.observed.rows, again.observed.checksum) == (first.observed.rows, first.observed.checksum)
    assert again.observed.final.joins == first.observed.final.joins


@pytest.mark.parametrize("what", sorted(VARIANTS))
def test_anything_that_can_change_the_answer_runs_again(session, write_scenario, what):
    executions.forget()
    observe(session, write_scenario, BASE, "base.yaml")
    old, new = VARIANTS[what]
    assert old in BASE
    changed = observe(session, write_scenario, BASE.replace(old, new), "changed.yaml")
    assert "shared_execution" not in changed.observed.timings, what


def test_a_case_that_collects_its_rows_runs_every_time(session, write_scenario):
    executions.forget()
    observe(session, write_scenario, BASE, "base.yaml")
    with_rows = observe(session, write_scenario, BASE, "rows.yaml", expect="{result_rows: []}")
    assert "shared_execution" not in with_rows.observed.timings


FIXED_PLAN = BASE.replace("expect: {}", "spark_conf: {spark.sql.adaptive.enabled: false, "
                                        "spark.sql.autoBroadcastJoinThreshold: 10485760}\nexpect: {}")


def test_a_plan_reached_by_other_plan_choices_runs_once_without_aqe(session, write_scenario):
    """A broadcast chosen by the threshold and the same broadcast forced by a hint (the
    threshold off) are one physical plan: without AQE, nothing else reads the threshold."""
    executions.forget()
    first = observe(session, write_scenario, FIXED_PLAN, "threshold.yaml")
    hinted = FIXED_PLAN.replace("10485760", "-1").replace("on: [k]}", "on: [k], hints: {right: BROADCAST}}")
    again = observe(session, write_scenario, hinted, "hint.yaml")
    assert first.observed.final.top["strategy"] == again.observed.final.top["strategy"] == "BroadcastHashJoin"
    assert again.observed.timings.get("shared_execution") == 1.0
    assert (again.observed.rows, again.observed.checksum) == (first.observed.rows, first.observed.checksum)


def test_under_aqe_every_config_still_separates_two_runs(session, write_scenario):
    """AQE reads the threshold again while the query runs: the same initial plan under
    another threshold is another query."""
    executions.forget()
    adaptive = FIXED_PLAN.replace("spark.sql.adaptive.enabled: false", "spark.sql.adaptive.enabled: true")
    observe(session, write_scenario, adaptive, "threshold.yaml")
    hinted = adaptive.replace("10485760", "-1").replace("on: [k]}", "on: [k], hints: {right: BROADCAST}}")
    again = observe(session, write_scenario, hinted, "hint.yaml")
    assert "shared_execution" not in again.observed.timings


def test_a_config_outside_plan_choice_separates_a_fixed_plan(session, write_scenario):
    executions.forget()
    observe(session, write_scenario, FIXED_PLAN, "plain.yaml")
    ansi = FIXED_PLAN.replace("spark_conf: {", "spark_conf: {spark.sql.ansi.enabled: true, ")
    again = observe(session, write_scenario, ansi, "ansi.yaml")
    assert "shared_execution" not in again.observed.timings


class _Plan:
    """A plan whose canonical form prints as `text`, which `sameResult` finds equal to any
    other: an engine's canonicalization that drops what tells two plans apart."""

    def __init__(self, text: str):
        self.text = text

    def sameResult(self, other) -> bool:
        return True

    def canonicalized(self):
        return self

    def toString(self) -> str:
        return self.text


def test_under_an_engine_a_hit_is_confirmed_by_the_canonical_plan_text():
    from harness.spark import executions
    semi = "SortMergeJoin [none#0L], [none#1L], LeftSemi\n+- Exchange hashpartitioning(none#0L, 2), [plan_id=7]"
    anti = semi.replace("LeftSemi", "LeftAnti")
    key = ("engine-test", 0, 1, "confs")
    executions.remember(key, executions.Executed(300, "0" * 16, _Plan(semi)))
    try:
        assert executions.lookup(key, _Plan(anti)) is not None  # sameResult alone: taken
        assert executions.lookup(key, _Plan(anti), confirm_text=True) is None  # the text says otherwise
        # the same plan in another query: only its exchanges' plan ids differ
        same = executions.lookup(key, _Plan(semi.replace("plan_id=7", "plan_id=93")), confirm_text=True)
        assert same is not None and same.rows == 300
    finally:
        executions.forget()
