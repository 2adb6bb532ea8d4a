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


def test_a_case_whose_package_or_engine_a_version_lacks_is_not_a_strategy_change():
    skipped = fake_record("a", None, status="skipped")
    skipped["message"] = "not available: comet publishes no jar for Spark 4.3 (it does for Spark 3.5, 4.1)"
    grouped = diff.diff_results({"cases": [fake_record("a", "BroadcastHashJoin")]}, {"cases": [skipped]})
    assert grouped["not comparable"] == [
        ("a", "needs a package or an engine jar that is not available on the new version (passed → skipped)")]
    assert not grouped["strategy"]


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


def _cost(left_bytes=1 << 20, right_bytes=100, partitions=200, spill=0):
    side = {"shuffle_bytes": left_bytes, "shuffle_records": 1000, "broadcast_bytes": 0, "partitions": partitions,
            "coalesced_partitions": 0, "skew_splits": 0}
    return {"left": side, "right": {**side, "shuffle_bytes": right_bytes}, "spill_bytes": spill,
            "peak_memory": 1 << 30, "output_rows": 10, "not_reported": {}, "timings": {"sort_s": 0.1}}


def costed(case_id, **cost):
    return fake_record(case_id, "SortMergeJoin", "none", rows=10, checksum="00000000000000aa", cost=_cost(**cost))


def test_a_cost_that_moved_beyond_the_threshold_is_a_change_and_noise_is_not():
    old = {"cases": [costed("doubled"), costed("small"), costed("tiny"), costed("spills"), costed("fewer")]}
    new = {"cases": [costed("doubled", left_bytes=(1 << 20) * 2 + 1024), costed("small", left_bytes=(1 << 20) + 1000),
                     costed("tiny", right_bytes=400), costed("spills", spill=1 << 30), costed("fewer", partitions=20)]}
    assert diff.diff_results(old, new)["cost"] == [
        ("doubled", "shuffle bytes left 1024.0 KiB → 2.0 MiB (+100 %)"),
        ("fewer", "partitions left 200 → 20 (-90 %)"), ("fewer", "partitions right 200 → 20 (-90 %)"),
        ("spills", "spill bytes 0.0 B → 1024.0 MiB")]   # +300 % of 300 B is under the 64 KiB floor
    loose = diff.diff_results(old, new, threshold=diff.CostThreshold(relative=1.5, floor_bytes=0))["cost"]
    # at 150 %, with no floor: a fourfold 300 B counts, a tenth of the partitions does not
    assert loose == [("spills", "spill bytes 0.0 B → 1024.0 MiB"), ("tiny", "shuffle bytes right 100.0 B → 400.0 B (+300 %)")]


def test_a_figure_one_version_does_not_report_is_no_change(tmp_path):
    old, new = costed("c"), costed("c", partitions=None)
    assert diff.diff_results({"cases": [old]}, {"cases": [new]})["cost"] == []
    assert diff.parse_threshold("35%", "1 MiB") == diff.CostThreshold(0.35, 1 << 20)
    for bad in (("lots", "1 MiB"), ("20%", "1 MB")):
        try:
            diff.parse_threshold(*bad)
        except ValueError as exc:
            assert str(exc).startswith("--cost-")
        else:
            raise AssertionError(bad)


def test_a_join_inside_a_subquery_that_changed_is_a_change_and_one_not_read_is_none():
    def with_subqueries(case_id, joins):
        found = record(case_id)
        if joins is not None:
            found["observed"]["initial"]["subqueries"] = [
                {"subquery": "scalar-subquery", "kind": "Subquery",
                 "joins": [{"strategy": s, "build_side": b, "join_type": t} for s, b, t in joins]}]
        return found
    old = {"cases": [with_subqueries("a", [("BroadcastHashJoin", "right", "Inner")]),
                     with_subqueries("b", [("BroadcastHashJoin", "right", "Inner")]),
                     with_subqueries("c", [("SortMergeJoin", "none", "Inner")])]}
    new = {"cases": [with_subqueries("a", [("SortMergeJoin", "none", "Inner")]),
                     with_subqueries("b", None),  # through Connect: not read
                     with_subqueries("c", [("SortMergeJoin", "none", "Inner")])]}
    grouped = diff.diff_results(old, new)
    assert grouped["subqueries"] == [("a", "initial: #1: BroadcastHashJoin (build right) · Inner → "
                                           "#1: SortMergeJoin · Inner")]


def chain(case_id, nodes, estimates=None, cost=None):
    """A record whose initial plan holds `nodes`: (strategy, build side, join type, tables)."""
    from harness.core.records import PlanView
    joins = [{"strategy": s, "build_side": b, "join_type": t, "left_keys": "List(k#1L)", "right_keys": "List(k#2L)",
              "condition": "", "null_aware": False, "skew": False, "tables": list(tables)} for s, b, t, tables in nodes]
    extra = {"estimates": [{"left": {"size_in_bytes": ls, "row_count": lr}, "right": {"size_in_bytes": rs, "row_count": rr}}
                           for ls, lr, rs, rr in estimates]} if estimates else {}
    return fake_record(case_id, status="observed", initial=PlanView(joins=joins), **extra)


BHJ, SMJ = ("BroadcastHashJoin", "right"), ("SortMergeJoin", "none")


def test_a_workload_diff_compares_every_join_node_its_type_and_the_join_order():
    top = (*BHJ, "Inner", ("a", "b", "c"))
    old = {"cases": [chain("q1", [top, (*BHJ, "Inner", ("a", "b"))]),
                     chain("q2", [top, (*BHJ, "LeftSemi", ("a", "c"))]),
                     chain("q3", [top, (*BHJ, "Inner", ("a", "b"))]),
                     chain("q4", [top, (*BHJ, "Inner", ("a", "b"))])]}
    new = {"cases": [chain("q1", [top, (*SMJ, "Inner", ("a", "b"))]),
                     chain("q2", [top, (*BHJ, "Inner", ("a", "c"))]),
                     chain("q3", [top, (*BHJ, "Inner", ("a", "c"))]),
                     chain("q4", [top, (*BHJ, "Inner", ("a", "b"))])]}
    grouped = diff.diff_results(old, new)
    assert grouped["strategy"] == [("q1", "initial join #2 (a+b): BroadcastHashJoin (build right) → SortMergeJoin")]
    assert grouped["join type"] == [("q2", "initial join #2 (a+c): LeftSemi → Inner")]
    assert grouped["join order"] == [("q3", "initial: 2 join(s): #1 a+b+c, #2 a+b → 2 join(s): #1 a+b+c, #2 a+c")]
    assert diff.kind_counts(grouped) == {"strategy": 1, "join order": 1, "join type": 1}
    largest, nodes = diff.workload_extras(old, new, grouped)
    assert list(nodes) == ["q1", "q2", "q3"] and largest == []
    assert nodes["q1"] == [("#1", "BroadcastHashJoin (build right) · Inner of a+b+c",
                            "BroadcastHashJoin (build right) · Inner of a+b+c", False),
                           ("#2", "BroadcastHashJoin (build right) · Inner of a+b", "SortMergeJoin · Inner of a+b", True)]
    text = diff.format_diff("3.5.9", "4.3.0", grouped, largest, nodes)
    assert "by kind: strategy 1 · join order 1 · join type 1" in text
    assert "q1: join nodes, 3.5.9 | 4.3.0\n" in text
    assert "  ≠   #2 BroadcastHashJoin (build right) · Inner of a+b   | SortMergeJoin · Inner of a+b" in text


def test_estimates_beyond_the_threshold_are_changes_and_the_largest_are_listed_first():
    nodes = [(*BHJ, "Inner", ("a", "b"))]
    old = {"cases": [chain(f"q{i}", nodes, estimates=[(10 << 30, 1000, 1 << 20, 100)]) for i in range(25)]}
    new = {"cases": [chain(f"q{i}", nodes, estimates=[(10 << 30, 1000, (1 << 20) * (i + 1), 100 + i)])
                     for i in range(25)]}
    grouped = diff.diff_results(old, new)
    # q0 is unchanged, q1's right side doubled: a change; a 20 % move under 64 KiB is not
    assert ("q1", "join #1 (a+b) right size 1024.0 KiB → 2.0 MiB (+100 %)") in grouped["estimates"]
    assert "q0" not in {case for case, _ in grouped["estimates"]}
    largest = diff.largest_changes(old, new)
    assert len(largest) == 20 and largest[0][0] == "q24" and largest[0][1].text == \
        "join #1 (a+b) right size 1024.0 KiB → 25.0 MiB (+2400 %)"
    assert [figure.magnitude for _, figure in largest] == sorted((f.magnitude for _, f in largest), reverse=True)
