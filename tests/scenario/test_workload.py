"""harness.scenario.workload: the bulk nested-loop work a selection holds, from its files."""
from harness.scenario.model import expand, load_scenario
from harness.scenario.workload import nested_loop_pairs, prefers_optimising_jit
from tests.conftest import MINIMAL

BAND = MINIMAL.replace("rows: 100\n", "rows: 200000\n").replace("rows: 10\n", "rows: 2000\n") \
    .replace("  on: [k]\n", "  condition: \"l.k >= r.k AND l.k <= r.k + 1\"\n") \
    .replace("expect:\n  strategy: BroadcastHashJoin\n  build_side: right\n", "expect: {}\n")


def cases_of(write_scenario, text, name="case.yaml"):
    return expand(load_scenario(write_scenario(text, name)))


def test_a_nested_loop_compares_every_pair_an_equi_join_none(write_scenario):
    (band,) = cases_of(write_scenario, BAND)
    (equi,) = cases_of(write_scenario, MINIMAL, "equi.yaml")
    assert nested_loop_pairs(band) == 400_000_000
    assert nested_loop_pairs(equi) == 0


def test_bulk_nested_loops_choose_the_optimising_jit_unless_short_cases_outweigh_them(write_scenario):
    band = cases_of(write_scenario, BAND)
    short = cases_of(write_scenario, MINIMAL, "equi.yaml")
    assert prefers_optimising_jit(band)
    assert not prefers_optimising_jit(short)
    assert not prefers_optimising_jit(band + short * 600)  # a suite of short cases around one loop


def test_a_plan_only_nested_loop_executes_nothing(write_scenario):
    stats_only = BAND.replace("    rows: 2000\n    columns:\n      k: {sequence: {}}\n",
                              "    schema: {k: long}\n    stats: {size_bytes: 16000, rows: 2000}\n")
    assert stats_only != BAND
    (case,) = cases_of(write_scenario, stats_only)
    assert nested_loop_pairs(case) == 0
