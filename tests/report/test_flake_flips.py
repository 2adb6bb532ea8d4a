"""The flake finder's comparison: what differs between runs of one item, and only that."""
from __future__ import annotations

import copy

from harness.report import flakes
from tests.conftest import fake_record


def runs_of(*records) -> dict:
    return {records[0]["case_id"]: {n: r for n, r in enumerate(records, start=1)}}


def test_identical_runs_do_not_flip_whatever_their_ids_paths_and_timings():
    first = fake_record(rows=10, checksum="00000000000000aa")
    second = copy.deepcopy(first)
    first["observed"]["initial"]["text"] = ("SortMergeJoin [k#12L], [k#40L], Inner\n+- FileScan parquet "
                                            "Location: InMemoryFileIndex[file:/tmp/join-harness-ab12/t/a] plan_id=7 "
                                            "runId = 0f8fad5b-d9cb-469f-a165-70867728950e MemoryWrite@5ee833a1")
    second["observed"]["initial"]["text"] = ("SortMergeJoin [k#3L], [k#9L], Inner\n+- FileScan parquet "
                                             "Location: InMemoryFileIndex[file:/tmp/join-harness-zz99/t/a] plan_id=91 "
                                             "runId = 7c9e6679-7425-40de-944b-e07fc1f90ae7 MemoryWrite@1b2c3d4e")
    second["observed"]["timings"] = {"execute_s": 99.0}
    second["run"] = {"id": "other", "at": "2026-01-01T00:00:00+00:00", "host": "x", "reused": False}
    assert flakes.flips(runs_of(first, second)) == []


def test_a_differing_figure_is_a_flip_naming_the_field_and_each_runs_value():
    steps = [{"added": {"v": 2}, "micro_batches": 2, "emitted": 1, "watermark": None, "state_rows": 3,
              "late_rows_dropped": 0}]
    first = fake_record(rows=10, checksum="00000000000000aa", stream_steps=steps)
    second = copy.deepcopy(first)
    second["observed"]["stream_steps"][0]["state_rows"] = 2
    third = copy.deepcopy(first)
    found = flakes.flips(runs_of(first, second, third))
    assert [f["field"] for f in found[0]["fields"]] == ["stream steps[0].state_rows"]
    assert found[0]["fields"][0]["values"] == {"1": "3", "2": "2", "3": "3"}
    assert found[0]["runs"] == 3 and found[0]["spark_variation"] is False


def test_a_verdict_that_flips_is_named_with_its_values():
    first = fake_record(rows=10, checksum="00000000000000aa")
    second = copy.deepcopy(first)
    second["status"] = "failed"
    found = flakes.flips(runs_of(first, second))
    assert found[0]["fields"] == [{"key": "verdict", "path": "", "field": "verdict",
                                   "values": {"1": "passed", "2": "failed"}}]


def test_the_same_red_on_every_run_is_not_a_flip():
    first = fake_record(rows=10, checksum="00000000000000aa", status="failed")
    assert flakes.flips(runs_of(first, copy.deepcopy(first), copy.deepcopy(first))) == []


def test_a_field_the_scenario_declares_is_spark_variation_and_others_still_flip():
    first = fake_record(rows=10, checksum="00000000000000aa")
    first["expected"]["varies"] = {"checksum": "uuid() by design"}
    second = copy.deepcopy(first)
    second["observed"]["checksum"] = "00000000000000bb"
    runs = runs_of(first, second)
    declared = flakes.declare(flakes.flips(runs), runs)
    assert declared[0]["spark_variation"] is True
    assert declared[0]["fields"][0]["spark_variation"] == "uuid() by design"
    assert "key" not in declared[0]["fields"][0] and "path" not in declared[0]["fields"][0]
    second["observed"]["rows"] = 11
    runs = runs_of(first, second)
    declared = flakes.declare(flakes.flips(runs), runs)
    assert declared[0]["spark_variation"] is False
    lines = flakes.summary_lines(declared, items=1, runs=2)
    assert lines[0] == "flake finder: 1 item(s) × 2 runs: 1 flipped"
    assert "    rows: run 1: 10; run 2: 11" in lines
    assert "    checksum (declared: uuid() by design): run 1: 00000000000000aa; run 2: 00000000000000bb" in lines


def test_plan_text_cut_at_a_different_place_and_renumbered_stages_do_not_flip():
    """The harness caps plan text; where the cap falls moves with the digits of the
    expression ids before it. Adaptive query stages are numbered in creation order."""
    first = fake_record(rows=10, checksum="00000000000000aa")
    second = copy.deepcopy(first)
    first["observed"]["initial"]["text"] = "ResultQueryStage 3\n+- ShuffleQueryStage 2\n   +- Project [k#12L, array(Ann,Bo... 90 more characters"
    second["observed"]["initial"]["text"] = "ResultQueryStage 4\n+- ShuffleQueryStage 3\n   +- Project [k#1234L, array(An... 93 more characters"
    assert flakes.flips(runs_of(first, second)) == []
    second["observed"]["initial"]["text"] = "ResultQueryStage 4\n+- BroadcastQueryStage 3\n   +- Project [k#1234L, array(An... 93 more characters"
    [flip] = flakes.flips(runs_of(first, second))
    assert flip["fields"][0]["field"] == "initial plan.text"
    assert "ShuffleQueryStage" in flip["fields"][0]["values"]["1"] and "BroadcastQueryStage" in flip["fields"][0]["values"]["2"]


def test_what_differs_per_jvm_and_per_worker_process_does_not_flip():
    first = fake_record(rows=10, checksum="00000000000000aa")
    second = copy.deepcopy(first)
    first["observed"]["initial"]["text"] = ("Project DataSourceV2Strategy$$Lambda$4741/0x00007f3d492aa308@ +- BatchScan "
                                            "harness_iceberg.scenario_23613.orders_5d07ce99[k#1]")
    second["observed"]["initial"]["text"] = ("Project DataSourceV2Strategy$$Lambda$5725/0x00007f6cfa74f108@ +- BatchScan "
                                             "harness_iceberg.scenario_23616.orders_5d07ce99[k#7]")
    assert flakes.flips(runs_of(first, second)) == []


def test_a_varying_final_plan_covers_the_as_written_strategy_of_the_cross_strategy_check():
    check = fake_record(rows=10, checksum="00000000000000aa")
    check.update(kind="agreement", case_id="c[inner-agree]")
    check["observed"] = {"agreement": [{"forced": "as written", "strategy": "BroadcastHashJoin", "build_side": "left",
                                        "rows": 10, "checksum": "aa"}], "strategies": ["BroadcastHashJoin (left)"]}
    other = copy.deepcopy(check)
    other["observed"]["agreement"][0]["build_side"] = "right"
    other["observed"]["strategies"] = ["BroadcastHashJoin (right)"]
    case = fake_record(rows=10, checksum="00000000000000aa")
    case["expected"]["varies"] = {"final_plan": "AQE re-plans by stage order"}
    runs = {**runs_of(check, other), **runs_of(case, copy.deepcopy(case))}
    [flip] = flakes.declare(flakes.flips(runs), runs)
    assert flip["case_id"] == "c[inner-agree]" and flip["spark_variation"] is True
    assert {f["field"] for f in flip["fields"]} == {"cross-strategy answers[0].build_side", "strategies[0]"}


def _costed(shuffle_bytes, written, build_side="right"):
    side = {"shuffle_bytes": shuffle_bytes, "shuffle_records": 100, "broadcast_bytes": 0, "partitions": 8,
            "coalesced_partitions": 0, "skew_splits": 0}
    cost = {"left": side, "right": dict(side), "spill_bytes": 0, "peak_memory": 1, "output_rows": 100,
            "not_reported": {}, "timings": {"sort_s": written / 1e6},
            "shown": {"left.shuffle_written_bytes": written}}
    return fake_record("c[inner]", "BroadcastHashJoin", build_side, rows=100, checksum="00000000000000aa", cost=cost)


def test_a_join_cost_flips_on_its_figures_not_on_what_is_only_shown():
    # compressed bytes depend on the order rows reach the shuffle writer (3.0.3: 194,568 and 194,484 B)
    assert flakes.flips(runs_of(_costed(4800, 194568), _costed(4800, 194484))) == []
    found = flakes.flips(runs_of(_costed(4800, 194568), _costed(4801, 194568)))
    assert [f["field"] for f in found[0]["fields"]] == ["cost.left.shuffle_bytes", "cost.right.shuffle_bytes"]


def test_a_cost_that_follows_a_declared_final_plan_is_spark_s_own_variation():
    first, second = _costed(4800, 1), _costed(0, 1, build_side="left")
    for record in (first, second):
        record["expected"]["varies"] = {"final_plan": "AQE re-plans by whichever stage finishes first"}
        record["observed"]["final"] = copy.deepcopy(record["observed"]["initial"])
    second["observed"]["initial"] = copy.deepcopy(first["observed"]["initial"])  # the same plan before it ran
    runs = runs_of(first, second)
    found = flakes.declare(flakes.flips(runs), runs)
    assert found and found[0]["spark_variation"] is True
