"""The upgrade diff between two versions' results."""
import json

from harness.cli import main
from harness.report import diff
from tests.conftest import fake_record


def record(case_id, strategy="BroadcastHashJoin", build="right", rows=10, checksum="00000000000000aa",
           warnings=(), error=None, status="passed"):
    return fake_record(case_id, strategy, build, rows=rows, checksum=checksum, warnings=warnings, error=error,
                       status=status)


def test_changes_are_grouped_by_kind():
    old = {"cases": [record("a"), record("b"), record("c"), record("d", warnings=["w1"]), record("gone"),
                     record("e")]}
    new = {"cases": [record("a", strategy="SortMergeJoin", build="none"), record("b", build="left"),
                     record("c", rows=11), record("d", warnings=["w2"]), record("e"), record("added")]}
    grouped = diff.diff_results(old, new)
    assert grouped["strategy"] == [("a", "initial: BroadcastHashJoin (build right) → SortMergeJoin")]
    assert grouped["build side"] == [("b", "initial: BroadcastHashJoin build right → build left")]
    assert grouped["result"] == [("c", "10 rows / 00000000000000aa → 11 rows / 00000000000000aa")]
    assert grouped["warnings"] == [("d", "+ w2; - w1")]
    assert [c for c, _ in grouped["only in one version"]] == ["added", "gone"]
    assert "e" not in {c for entries in grouped.values() for c, _ in entries}


def test_command_reads_report_dirs(tmp_path, capsys):
    for version, strategy in (("3.5.7", "SortMergeJoin"), ("4.3.0", "ShuffledHashJoin")):
        (tmp_path / version).mkdir()
        (tmp_path / version / "results.json").write_text(json.dumps({"cases": [record("x", strategy, "none")]}))
    assert main(["diff", "3.5.7", "4.3.0", "--report-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Spark 3.5.7 → 4.3.0: 1 case(s) differ" in out
    assert "x: initial: SortMergeJoin → ShuffledHashJoin" in out
    assert main(["diff", "3.5.7", "9.9.9", "--report-dir", str(tmp_path)]) == 2
    assert "no results for Spark 9.9.9" in capsys.readouterr().err


def test_a_known_bug_appearing_or_disappearing_is_a_change():
    bug = {"id": "SPARK-9", "affected": "<4.0"}
    old = {"cases": [{**record("a", status="known_bug"), "bug": bug}, {**record("b"), "bug": bug}]}
    new = {"cases": [{**record("a"), "bug": bug}, {**record("b", status="known_bug"), "bug": bug}]}
    grouped = diff.diff_results(old, new)
    assert grouped["known bug"] == [("a", "bug disappears: SPARK-9 (now passed)"), ("b", "bug appears: SPARK-9")]


def _joins(strategy, build="none", keys="List(k#1L)", condition=""):
    return [{"strategy": strategy, "build_side": build, "join_type": "Inner", "left_keys": keys,
             "right_keys": keys, "condition": condition, "null_aware": False, "skew": False, "tables": None}]


def test_a_static_plan_that_becomes_a_run_time_broadcast_is_listed():
    from harness.core.records import PlanView
    # 3.1: AQE off by default, the static sort-merge join is what ran; 4.x: AQE re-plans it
    old = fake_record("a", "SortMergeJoin", rows=5, checksum="00000000000000aa", adaptive=False,
                      final=PlanView(joins=_joins("SortMergeJoin")))
    new = fake_record("a", "SortMergeJoin", rows=5, checksum="00000000000000aa", adaptive=True,
                      final=PlanView(joins=_joins("BroadcastHashJoin", "right")))
    grouped = diff.diff_results({"cases": [old]}, {"cases": [new]})
    assert grouped["strategy"] == [("a", "final: SortMergeJoin → BroadcastHashJoin (build right)")]
    assert grouped["adaptive"] == [("a", "static → adaptive (AQE may re-plan at run time)")]
    # a plan-only case whose plan only became adaptive is listed too
    plan_old, plan_new = fake_record("b", "SortMergeJoin"), fake_record("b", "SortMergeJoin", adaptive=True)
    assert diff.diff_results({"cases": [plan_old]}, {"cases": [plan_new]})["adaptive"] == \
        [("b", "static → adaptive (AQE may re-plan at run time)")]


def test_a_changed_join_condition_is_a_change_and_its_printing_is_not():
    from harness.core.records import PlanView
    def case(keys, condition):
        return fake_record("a", "SortMergeJoin", initial=PlanView(joins=_joins("SortMergeJoin", keys=keys,
                                                                               condition=condition)))
    grouped = diff.diff_results({"cases": [case("List(k#1L, f(a#2, b#3))", "")]},
                                {"cases": [case("List(k#7L)", "(v#8 > 5)")]})
    assert grouped["condition"] == [("a", "2 equi-keys, no residual → 1 equi-key, a residual condition")]
    reprinted = diff.diff_results({"cases": [case("List((0 + (id#1L * 1)))", "(cast(x#2 as int) > 1)")]},
                                  {"cases": [case("List(id#9L)", "(x#3 > 1)")]})
    assert not any(reprinted.values())


def test_a_timed_out_or_lost_case_is_not_comparable():
    timed_out = fake_record("a", None, status="timeout", error={"class": "Timeout", "message": "cancelled"})
    lost = fake_record("b", None, status="error", error={"class": "WorkerLost", "message": "crashed"})
    grouped = diff.diff_results({"cases": [fake_record("a", "SortMergeJoin", rows=1, checksum="00000000000000aa"),
                                           fake_record("b", "BroadcastHashJoin")]},
                                {"cases": [timed_out, lost]})
    assert grouped["not comparable"] == [("a", "timed out on the new version (passed → timeout)"),
                                         ("b", "its worker process was lost on the new version (passed → error)")]
    assert not grouped["strategy"] and not grouped["error"]


def test_what_a_deployment_cannot_see_or_run_is_never_a_change():
    """Local mode against Spark Connect: a build side Connect cannot see, warnings it does
    not send, a case it cannot run, an expectation it cannot check."""
    local = [record("shj", strategy="ShuffledHashJoin", build="left"), record("w", warnings=["Hint x ignored"]),
             record("stats"), record("u")]
    connect = [record("shj", strategy="ShuffledHashJoin", build="unavailable"), record("w"),
               record("stats", strategy=None, rows=None, checksum=None, status="skipped"),
               record("u", status="unchecked")]
    connect[1]["observed"]["unavailable"] = ["warnings"]
    connect[2]["message"] = "not run through Spark Connect: statistics-only tables ..."
    connect[3]["message"] = "not checkable on this deployment: warnings"
    grouped = diff.diff_results({"cases": local}, {"cases": connect})
    assert grouped["unavailable"] == [("shj", "initial: ShuffledHashJoin build left → build unavailable")]
    assert grouped["not comparable"] == [("stats", "not run through Spark Connect on the new version (passed → skipped)")]
    assert not any(grouped[kind] for kind in ("build side", "warnings", "status", "strategy"))
    assert "0 case(s) differ" in diff.format_diff("4.3.0 local", "4.3.0 connect", {**grouped, "not comparable": []})
