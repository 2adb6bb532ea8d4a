"""bench/compare_runs.py: what a speed change may not move, and Spark's declared variation."""
import importlib.util
import json
from pathlib import Path

SPEC = importlib.util.spec_from_file_location("compare_runs", Path(__file__).parents[2] / "bench" / "compare_runs.py")
compare_runs = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(compare_runs)

SMJ = [{"strategy": "SortMergeJoin", "build_side": "none", "left_keys": "List(k#1L)"}]
BHJ = [{"strategy": "BroadcastHashJoin", "build_side": "left", "left_keys": "List(k#7L)"}]


def _case(case_id, final, varies=None, join_type="inner", scenario="s"):
    return {"case_id": case_id, "kind": "case", "scenario_id": scenario, "join_type": join_type, "status": "passed",
            "expected": {"varies": varies} if varies else {},
            "observed": {"rows": 0, "checksum": "0", "initial": {"joins": SMJ}, "final": {"joins": final}}}


def _check(case_id, strategy, join_type="inner", scenario="s"):
    return {"case_id": case_id, "kind": "agreement", "scenario_id": scenario, "join_type": join_type,
            "status": "passed", "expected": {},
            "observed": {"agreement": [{"forced": "as written", "strategy": strategy, "rows": 0, "checksum": "0"}],
                         "strategies": [strategy]}}


def _write(folder: Path, records: list) -> Path:
    (folder / "4.3.0").mkdir(parents=True)
    (folder / "4.3.0" / "results.json").write_text(json.dumps({"cases": records}))
    return folder / "4.3.0" / "results.json"


def test_a_moved_final_plan_differs_unless_the_file_declares_it(tmp_path):
    why = {"final_plan": "AQE re-plans by whichever stage finishes first"}
    old = _write(tmp_path / "a", [_case("declared", SMJ, why), _case("plain", SMJ, scenario="t"),
                                  _check("declared-agree", "SortMergeJoin"), _check("other-agree", "SortMergeJoin",
                                                                                     join_type="left_semi")])
    new = _write(tmp_path / "b", [_case("declared", BHJ, why), _case("plain", BHJ, scenario="t"),
                                  _check("declared-agree", "BroadcastHashJoin"),
                                  _check("other-agree", "BroadcastHashJoin", join_type="left_semi")])
    compared, problems, declared = compare_runs.compare(old, new)
    assert compared == 4
    # the undeclared case and the check of a join type no case declares varying differ
    assert sorted(p.split(":")[0] for p in problems) == ["other-agree", "plain"]
    assert sorted(d.split(":")[0] for d in declared) == ["declared", "declared-agree"]


def test_a_declared_plan_does_not_hide_a_changed_answer(tmp_path):
    why = {"final_plan": "races"}
    old = _write(tmp_path / "a", [_case("c", SMJ, why)])
    moved = _case("c", BHJ, why)
    moved["observed"]["rows"] = 5
    new = _write(tmp_path / "b", [moved])
    _, problems, declared = compare_runs.compare(old, new)
    assert len(problems) == 1 and "rows 0 → 5" in problems[0] and not declared
    assert compare_runs.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1
