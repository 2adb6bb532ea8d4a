"""`expect: {cost: …}`: bounds read at collection, one line for each bad one."""
import pytest

from harness.check import expect
from harness.scenario.errors import ScenarioError
from harness.scenario.model import expand, load_scenario
from tests.conftest import MINIMAL
from tests.scenario.test_scenario import STATS_ONLY


def _with_cost(text: str, cost: str) -> str:
    return text.replace("  build_side: right\n", f"  build_side: right\n  cost: {cost}\n")


def _error(write_scenario, text):
    with pytest.raises(ScenarioError) as info:
        load_scenario(write_scenario(text))
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_sizes_and_counts_are_read_into_bounds(write_scenario):
    scenario = load_scenario(write_scenario(_with_cost(
        MINIMAL, "{shuffle_bytes: {left: {max: 2 MiB}, right: 0}, spill_bytes: 0, broadcast_bytes: {max: 1.5 KiB},"
                 " peak_memory: {min: 1, max: 3 GiB}, partitions: {left: {min: 2, max: 200}}}")))
    assert scenario.data["expect"]["cost"] == {
        "shuffle_bytes": {"left": {"max": 2 << 20}, "right": {"min": 0, "max": 0}},
        "spill_bytes": {"min": 0, "max": 0},
        "broadcast_bytes": {"both": {"max": 1536}},
        "peak_memory": {"min": 1, "max": 3 << 30},
        "partitions": {"left": {"min": 2, "max": 200}}}
    case = expand(scenario)[0]
    assert expect.executes(expect.resolve(case, "4.3.0"))   # a cost bound runs the query


@pytest.mark.parametrize("cost, where, words", [
    ("{spill_bytes: -1}", "expect.cost.spill_bytes", "less than the minimum of 0"),
    ("{spill_bytes: lots}", "expect.cost.spill_bytes", "'lots' is not a size"),
    ("{peak_memory: {max: 2 MB}}", "expect.cost.peak_memory.max", "is not a size"),
    ("{shuffle_records: {left: 2 MiB}}", "expect.cost.shuffle_records.left", "is not a count"),
    ("{spill_bytes: {min: 2 KiB, max: 1 KiB}}", "expect.cost.spill_bytes.min", "is above max"),
    ("{shuffle_bites: 0}", "expect.cost.shuffle_bites", "did you mean 'shuffle_bytes'"),
    ("{spill_bytes: {left: 0}}", "expect.cost.spill_bytes", ""),
])
def test_a_bad_bound_is_one_line_naming_file_line_and_field(write_scenario, cost, where, words):
    message = _error(write_scenario, _with_cost(MINIMAL, cost))
    assert "case.yaml:" in message and where in message and words in message


def test_a_bound_where_nothing_runs_is_refused(write_scenario):
    message = _error(write_scenario, _with_cost(STATS_ONLY, "{spill_bytes: 0}"))
    assert "expect.cost" in message and "plan-only" in message


def test_a_bound_in_an_override_is_read_too(write_scenario):
    text = MINIMAL + "  overrides:\n    - when: {spark: '<3.5'}\n      cost: {output_rows: {max: 1e3}}\n"
    assert "case.yaml:21: expect.overrides[0].cost.output_rows.max: '1e3' is not a count" in \
        _error(write_scenario, text)
