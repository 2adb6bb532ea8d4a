"""harness.scenario.workload: the bulk nested-loop work a selection holds, from its files."""
from harness.check.expect import executes
from harness.scenario.model import expand, load_scenario
from harness.scenario.workload import nested_loop_pairs, prefers_optimising_jit
from tests.conftest import MINIMAL

BAND = MINIMAL.replace("rows: 100\n", "rows: 200000\n").replace("rows: 10\n", "rows: 2000\n") \
    .replace("  on: [k]\n", "  condition: \"l.k >= r.k AND l.k <= r.k + 1\"\n") \
    .replace("expect:\n  strategy: BroadcastHashJoin\n  build_side: right\n", "expect: {}\n")


def runs(case) -> bool:
    return executes(case.expect)


def cases_of(write_scenario, text, name="case.yaml"):
    return expand(load_scenario(write_scenario(text, name)))


def test_a_nested_loop_compares_every_pair_an_equi_join_none(write_scenario):
    (band,) = cases_of(write_scenario, BAND)
    (equi,) = cases_of(write_scenario, MINIMAL, "equi.yaml")
    assert nested_loop_pairs(band, runs) == 400_000_000
    assert nested_loop_pairs(equi, runs) == 0


def test_bulk_nested_loops_choose_the_optimising_jit_unless_short_cases_outweigh_them(write_scenario):
    band = cases_of(write_scenario, BAND)
    short = cases_of(write_scenario, MINIMAL, "equi.yaml")
    assert prefers_optimising_jit(band, runs)
    assert not prefers_optimising_jit(short, runs)
    assert not prefers_optimising_jit(band + short * 600, runs)  # a suite of short cases around one loop


def test_a_plan_only_nested_loop_executes_nothing(write_scenario):
    stats_only = BAND.replace("    rows: 2000\n    columns:\n      k: {sequence: {}}\n",
                              "    schema: {k: long}\n    stats: {size_bytes: 16000, rows: 2000}\n")
    assert stats_only != BAND
    (case,) = cases_of(write_scenario, stats_only)
    assert nested_loop_pairs(case, runs) == 0


def test_a_nested_loop_planned_only_for_its_strategy_executes_nothing(write_scenario):
    (case,) = cases_of(write_scenario, BAND.replace("expect: {}\n", "expect: {strategy: BroadcastNestedLoopJoin}\n"))
    assert nested_loop_pairs(case, runs) == 0


def test_the_shipped_suite_keeps_the_quick_jit():
    from harness.scenario.model import scenario_files
    from pathlib import Path
    shipped = Path(__file__).resolve().parents[2] / "scenarios"
    cases = [case for path in scenario_files([str(shipped)]) for case in expand(load_scenario(path))]
    assert len(cases) > 500 and not prefers_optimising_jit(cases, runs)
