"""Expectation resolution (version specifiers, matrix values) and comparison."""
import pytest

from harness.check import expect
from harness.core.options import deployment
from harness.core.records import Observation
from harness.scenario.model import expand, load_scenario
from tests.conftest import MINIMAL

VERSIONED = MINIMAL.replace("expect:", """matrix:
  join_type: [inner, left_outer]
expect:""") + """  overrides:
    - when: {spark: ">=3.5", join_type: left_outer}
      strategy: ShuffledHashJoin
      build_side: left
    - when: {spark: "<3.1"}
      strategy: SortMergeJoin
"""


def cases(write_scenario, text=VERSIONED):
    return {c.label: c for c in expand(load_scenario(write_scenario(text)))}


def test_version_specific_overrides(write_scenario):
    by_label = cases(write_scenario)
    left = by_label["left_outer"]
    assert expect.resolve(left, "3.5.7")["strategy"] == "ShuffledHashJoin"
    assert expect.resolve(left, "4.1.0.dev0")["build_side"] == "left"
    assert expect.resolve(left, "3.4.4") == {"strategy": "BroadcastHashJoin", "build_side": "right", "plan": "initial"}
    inner = by_label["inner"]
    assert expect.resolve(inner, "4.3.0")["strategy"] == "BroadcastHashJoin"
    old = expect.resolve(inner, "3.0.3")
    assert old["strategy"] == "SortMergeJoin" and "build_side" not in old


def observed(strategy="BroadcastHashJoin", build="right", **extra):
    node = {"strategy": strategy, "build_side": build}
    return Observation.from_json({
        "initial": {"joins": [node]}, "final": None, "rows": 10, "checksum": "00000000000000aa", "warnings": [],
        "estimates": [{"left": {"size_in_bytes": 800}, "right": {"size_in_bytes": 80}}], "error": None, **extra})


def test_compare_passes_and_fails_on_strategy_and_build_side():
    want = {"strategy": "BroadcastHashJoin", "build_side": "right", "plan": "initial"}
    assert expect.compare(want, observed()) == []
    assert expect.compare(want, observed(build="left")) == [
        "initial plan: expected build side right, observed BroadcastHashJoin (build left)"]
    assert "expected BroadcastHashJoin, observed SortMergeJoin" in expect.compare(want, observed("SortMergeJoin", "none"))[0]


def test_compare_rows_checksum_warnings_estimates():
    want = {"plan": "initial", "rows": 11, "checksum": "00000000000000aa", "warnings": ["overridden"],
            "estimates": {"right": {"max": 50}}}
    problems = expect.compare(want, observed())
    assert any("expected 11 rows" in p for p in problems)
    assert any("/overridden/" in p for p in problems)
    assert any("right estimate 80 B is above" in p for p in problems)
    assert not any("checksum" in p for p in problems)
    assert expect.compare({"plan": "initial", "warnings": []}, observed(warnings=["Hint x"])) == [
        "expected no hint warnings, observed: Hint x"]


def test_compare_errors():
    err = {"class": "AnalysisException", "java_class": "org.apache.spark.sql.AnalysisException",
           "message": "[UNSUPPORTED_FEATURE] nope"}
    assert expect.compare({"plan": "initial", "error": {"class": "AnalysisException", "message": "UNSUPPORTED"}},
                          observed(error=err)) == []
    assert expect.compare({"plan": "initial", "error": {"message": "other"}}, observed(error=err))
    assert expect.compare({"plan": "initial", "strategy": "BroadcastHashJoin"}, observed(error=err))[0].startswith(
        "unexpected error AnalysisException")
    assert "succeeded" in expect.compare({"plan": "initial", "error": {"class": "X"}}, observed())[0]


def test_result_rows_compare_order_independent():
    want = {"plan": "initial", "result_rows": [[2, "b"], [1, "a"], [None, "c"]]}
    got = observed(result_rows=expect.normalize_rows([(1, "a"), (None, "c"), (2, "b")]))
    assert expect.compare(want, got) == []
    got_bad = observed(result_rows=expect.normalize_rows([(1, "a"), (3, "c"), (2, "b")]))
    assert expect.compare(want, got_bad)


def _node(strategy, build="none", **extra):
    return {"strategy": strategy, "build_side": build, "join_type": "Inner", "left_keys": "", "right_keys": "",
            "condition": "", "null_aware": False, "skew": False, "tables": None, **extra}


def test_join_order_skew_and_null_aware_per_node():
    expected = {"plan": "initial", "joins": [
        expect._normalize_node({"strategy": "SMJ", "tables": ["VB", "s2", "s1"]}),
        expect._normalize_node({"strategy": "SMJ", "tables": ["vb", "s2"], "skew": True}),
    ]}
    joins = [_node("SortMergeJoin", tables=["s1", "s2", "vb"]), _node("SortMergeJoin", tables=["s2", "vb"], skew=True)]
    assert expect.compare(expected, Observation.from_json({"initial": {"joins": joins}})) == []
    joins[1] = _node("SortMergeJoin", tables=["b", "vb"], skew=True)
    [problem] = expect.compare(expected, Observation.from_json({"initial": {"joins": joins}}))
    assert problem == ("initial plan join #2: expected SortMergeJoin [skew] of s2+vb, "
                       "observed SortMergeJoin [skew] of b+vb")
    joins[1] = _node("SortMergeJoin", tables=["s2", "vb"])
    assert expect.compare(expected, Observation.from_json({"initial": {"joins": joins}}))
    naaj = {"plan": "initial", "joins": [{"strategy": "BroadcastHashJoin", "null_aware": True}]}
    assert expect.compare(naaj, Observation.from_json({"initial": {"joins": [_node("BroadcastHashJoin", "right", null_aware=True)]}})) == []
    assert expect.compare(naaj, Observation.from_json({"initial": {"joins": [_node("BroadcastHashJoin", "right")]}}))


def test_a_join_node_s_type_is_compared_by_spark_s_name_and_named_with_its_place_and_tables():
    expected = {"plan": "initial", "joins": [{"strategy": "BroadcastHashJoin", "join_type": "Inner", "tables": ["c", "o"]},
                                             {"strategy": "BroadcastHashJoin", "join_type": "ExistenceJoin"}]}
    joins = [_node("BroadcastHashJoin", "right", tables=["c", "o"]),
             _node("BroadcastHashJoin", "right", join_type="ExistenceJoin(exists#64)")]
    assert expect.compare(expected, Observation.from_json({"initial": {"joins": joins}})) == []
    joins[0] = _node("BroadcastHashJoin", "right", join_type="LeftOuter", tables=["c", "o"])
    [problem] = expect.compare(expected, Observation.from_json({"initial": {"joins": joins}}))
    assert problem == ("initial plan join #1: expected BroadcastHashJoin · Inner of c+o, observed BroadcastHashJoin "
                       "(build right) · LeftOuter of c+o")


def test_a_plan_of_more_than_sixteen_joins_is_asserted_node_by_node(write_scenario):
    nodes = "".join("    - {strategy: BroadcastHashJoin, join_type: Inner}\n" for _ in range(120))
    text = MINIMAL[:MINIMAL.index("expect:")] + "expect:\n  joins:\n" + nodes
    case = expand(load_scenario(write_scenario(text)))[0]
    assert len(expect.resolve(case, "4.3.0")["joins"]) == 120


def test_the_joins_of_each_subquery_are_compared_apart_from_the_main_plan_s():
    expected = {"plan": "initial", "subqueries": [{"joins": [{"strategy": "BroadcastHashJoin", "build_side": "right"}]}]}
    main = [_node("BroadcastHashJoin", "right", join_type="LeftSemi")]
    inside = [{"subquery": "scalar-subquery", "kind": "Subquery", "joins": [_node("BroadcastHashJoin", "right")]}]
    seen = Observation.from_json({"initial": {"joins": main, "subqueries": inside}})
    assert expect.compare(expected, seen) == []
    inside[0]["joins"] = [_node("SortMergeJoin")]
    [problem] = expect.compare(expected, Observation.from_json({"initial": {"joins": main, "subqueries": inside}}))
    assert problem == ("initial plan subquery #1 (scalar-subquery) join #1: expected BroadcastHashJoin (build right), "
                       "observed SortMergeJoin")
    [problem] = expect.compare(expected, Observation.from_json({"initial": {"joins": main, "subqueries": []}}))
    assert problem == "initial plan: expected 1 subquery(ies) with joins, observed 0 (none)"
    through_connect = Observation.from_json({"initial": {"joins": main}, "unavailable": ["subqueries"]})
    assert "subqueries" in expect.not_checkable(expected, through_connect)
    never_read = Observation.from_json({"initial": {"joins": main}})  # a stream's plan: its subqueries not read
    assert "subqueries" in expect.not_checkable(expected, never_read)
    assert "subqueries" not in expect.not_checkable(expected, seen)


def test_operator_counts_exact_and_bounded():
    counts = {"ReusedSubquery": 1, "Subquery": 1, "SortMergeJoin": 1}
    seen = Observation.from_json({"initial": {"joins": [], "operators": {}}, "final": {"joins": [], "operators": counts}})
    assert expect.compare({"plan": "final", "operators": {"ReusedSubquery": 1, "Subquery": {"min": 1}}}, seen) == []
    assert expect.compare({"plan": "final", "operators": {"ReusedSubquery": 0}}, seen) == \
        ["expected 0 ReusedSubquery operator(s), observed 1"]
    assert expect.compare({"plan": "final", "operators": {"Subquery": {"min": 2}}}, seen) == \
        ["expected {'min': 2} Subquery operator(s), observed 1"]
    # The initial plan is checked unless the expectation says final.
    assert expect.compare({"plan": "initial", "operators": {"Subquery": 1}}, seen) == \
        ["expected 1 Subquery operator(s), observed 0"]


def test_overrides_can_name_the_deployment(write_scenario):
    text = MINIMAL.replace("  build_side: right\n", "  build_side: right\n  overrides:\n"
                                                     "    - when: {deployment: cluster}\n"
                                                     "      strategy: SortMergeJoin\n")
    case = expand(load_scenario(write_scenario(text)))[0]
    assert expect.resolve(case, "4.3.0")["strategy"] == "BroadcastHashJoin"
    assert expect.resolve(case, "4.3.0", deployment("spark://10.0.0.1:7077"))["strategy"] == "SortMergeJoin"
    assert expect.resolve(case, "4.3.0", deployment("local[4]"))["strategy"] == "BroadcastHashJoin"


def test_base_expectations_scoped_to_versions_leave_others_observed(write_scenario):
    text = MINIMAL.replace("expect:\n", "expect:\n  spark: '>=3.5'\n")
    case = expand(load_scenario(write_scenario(text)))[0]
    assert expect.resolve(case, "4.3.0")["strategy"] == "BroadcastHashJoin"
    assert not expect.has_assertions(expect.resolve(case, "3.4.4"))


def test_a_known_bug_is_never_green(write_scenario, session):
    """Declared affected: a failure is known_bug; behaving correctly fails the declaration."""
    from harness.check.runner import run_case
    bug = "bug: {id: SPARK-1, url: 'https://issues.apache.org/jira/browse/SPARK-1', affected: '>=3.0'}\n"
    wrong = MINIMAL.replace("build_side: right", "build_side: left") + bug
    record = run_case(expand(load_scenario(write_scenario(wrong, "wrong.yaml")))[0], session)
    assert record.status == "known_bug"
    assert record.message.startswith("known bug SPARK-1 (affected >=3.0): initial plan: expected build side left")
    right = MINIMAL + bug
    record = run_case(expand(load_scenario(write_scenario(right, "right.yaml")))[0], session)
    assert record.status == "failed" and "declared affected by SPARK-1" in record.message
    elsewhere = wrong.replace("affected: '>=3.0'", "affected: '<3.0'")
    record = run_case(expand(load_scenario(write_scenario(elsewhere, "elsewhere.yaml")))[0], session)
    assert record.status == "failed" and not record.message.startswith("known bug")


def test_a_bug_may_concern_some_cases_only(write_scenario):
    text = MINIMAL.replace("expect:", "matrix:\n  join_type: [inner, left_outer]\nexpect:") + \
        "bug: {id: SPARK-2, affected: '>=3.0', when: {join_type: left_outer}}\n"
    inner, outer = expand(load_scenario(write_scenario(text)))
    assert expect.bug_in_force(inner, "4.3.0") is None
    assert expect.bug_in_force(outer, "4.3.0")["id"] == "SPARK-2"
    assert expect.bug_verdict(None, "failed", "m", "4.3.0") == ("failed", "m")
    assert expect.bug_verdict({"id": "SPARK-2", "affected": ">=3.0"}, "timeout", "m", "4.3.0") == ("timeout", "m")
    assert expect.bug_verdict({"id": "SPARK-2", "affected": ">=3.0"}, "passed", "", "4.3.0", case_item=False) == \
        ("passed", "")


def test_affected_must_be_a_version_specifier(write_scenario):
    import pytest

    from harness.scenario.errors import ScenarioError
    with pytest.raises(ScenarioError, match=r"bug.affected: '3.5.x and earlier' is not a PEP 440 version specifier"):
        load_scenario(write_scenario(MINIMAL + "bug: {id: SPARK-3, affected: 3.5.x and earlier}\n"))


def test_warnings_exact_count_and_absent_patterns():
    seen = observed(warnings=["Hint (strategy=broadcast) is not supported in the query: build left for left outer join.",
                              "Unrecognized hint: FOO(r)"])
    assert expect.compare({"plan": "initial", "warnings": {"count": 2, "match": ["build left"]}}, seen) == []
    assert expect.compare({"plan": "initial", "warnings": {"count": 1}}, seen) == [
        "expected 1 hint warning(s), observed 2: Hint (strategy=broadcast) is not supported in the query: "
        "build left for left outer join."]
    assert expect.compare({"plan": "initial", "warnings": {"absent": ["Unrecognized hint"]}}, seen) == [
        "a hint warning matches /Unrecognized hint/, which must be absent: Unrecognized hint: FOO(r)"]
    assert expect.compare({"plan": "initial", "warnings": {"absent": ["build right"]}}, seen) == []


def test_what_a_deployment_cannot_see_is_not_checkable_never_passed():
    """Through Spark Connect: hint warnings are unavailable, a final shuffled hash join's
    build side is unavailable, estimates are printed rounded."""
    gone = observed(warnings=None, unavailable=["warnings", "model"])
    want = {"plan": "initial", "strategy": "BroadcastHashJoin", "warnings": []}
    assert expect.not_checkable(want, gone) == ["warnings"]
    assert expect.compare(want, gone) == []  # left out of the comparison, not passed
    assert expect.not_checkable({"plan": "initial", "strategy": "SortMergeJoin"}, gone) == []
    assert expect.compare({"plan": "initial", "strategy": "SortMergeJoin"}, gone)  # the rest is still checked

    final = observed(unavailable=["warnings"], final={"joins": [{"strategy": "ShuffledHashJoin", "build_side": "unavailable"}]})
    want = {"plan": "final", "strategy": "ShuffledHashJoin", "build_side": "left"}
    assert expect.not_checkable(want, final) == ["build side (final plan)"]
    assert expect.compare(want, final) == []
    assert expect.compare({**want, "strategy": "SortMergeJoin"}, final)  # a wrong strategy still fails

    printed = observed(unavailable=["warnings"], estimates=[
        {"left": {"size_in_bytes": round(9.8 * 2 ** 20), "printed": "9.8 MiB"}, "right": {"size_in_bytes": 80, "printed": "80.0 B"}}])
    near = {"plan": "initial", "estimates": {"left": {"max": 10_250_000}}}  # inside 9.75-9.85 MiB
    assert expect.not_checkable(near, printed) == ["left estimate (printed 9.8 MiB)"]
    far = {"plan": "initial", "estimates": {"left": {"max": 9_000_000}, "right": {"min": 81}}}
    assert expect.not_checkable(far, printed) == []
    assert len(expect.compare(far, printed)) == 2


def test_whether_a_v2_scan_was_key_grouped_is_not_checkable_through_connect():
    node = {"strategy": "SortMergeJoin", "build_side": "none", "shuffles": {"left": 0, "right": 0},
            "scans": {"left": [{"table": "a", "bucketed": False}], "right": [{"table": "b", "bucketed": False}]}}
    gone = Observation.from_json({"initial": {"joins": [node]}, "unavailable": ["warnings", "key_grouped"]})
    want = {"plan": "initial", "strategy": "SortMergeJoin", "shuffles": {"left": 0, "right": 0},
            "key_grouped": {"left": True, "right": True}}
    assert expect.not_checkable(want, gone) == ["key_grouped"]
    assert expect.compare(want, gone) == []  # shuffles still checked:
    assert expect.compare({**want, "shuffles": {"left": 1, "right": 0}}, gone)
    seen = Observation.from_json({"initial": {"joins": [node]}})  # locally the missing grouping fails
    assert expect.compare(want, seen)


def test_no_final_plan_from_the_server_is_not_checkable():
    none = observed(unavailable=["warnings", "final"])
    assert expect.not_checkable({"plan": "both", "strategy": "BroadcastHashJoin"}, none) == ["final plan"]


def test_an_estimate_the_printed_plan_did_not_give_is_not_checkable():
    blank = observed(unavailable=["warnings"], estimates=[
        {"left": {"size_in_bytes": None, "row_count": None, "printed": None}, "right": {"size_in_bytes": 80}}])
    want = {"plan": "initial", "estimates": {"left": {"max": 100}}}
    assert expect.not_checkable(want, blank) == ["left estimate"]
    assert expect.compare(want, blank) == []


def test_shuffles_below_each_side_of_the_top_join():
    smj = {"strategy": "SortMergeJoin", "build_side": "none", "join_type": "Inner", "left_keys": "", "right_keys": "",
           "condition": "", "null_aware": False}
    seen = Observation.from_json({"initial": {"joins": [{**smj, "shuffles": {"left": 0, "right": 1}}]},
                                  "final": {"joins": [{**smj, "shuffles": {"left": 1, "right": 1}}]}})
    assert expect.compare({"plan": "initial", "shuffles": {"left": 0, "right": 1}}, seen) == []
    assert expect.compare({"plan": "final", "shuffles": {"left": 0}}, seen) == \
        ["final plan: expected 0 shuffle exchange(s) below the left side of SortMergeJoin, observed 1"]
    assert len(expect.compare({"plan": "both", "shuffles": {"left": 0, "right": 1}}, seen)) == 1
    # a plan read from printed text (Spark Connect) has no counts: not checkable, never passed
    printed = Observation.from_json({"initial": {"joins": [smj]}, "unavailable": ["warnings"]})
    assert expect.not_checkable({"plan": "initial", "shuffles": {"left": 0}}, printed) == ["shuffles"]


def _scan(table, bucketed=False, pruning="none", note=None):
    return {"table": table, "bucketed": bucketed, "bucket_note": note, "pruning": pruning}


def test_bucketed_scan_per_side_of_the_top_join():
    smj = {"strategy": "SortMergeJoin", "build_side": "none", "join_type": "Inner", "left_keys": "", "right_keys": "",
           "condition": "", "null_aware": False, "shuffles": {"left": 1, "right": 1}}
    seen = Observation.from_json({"initial": {"joins": [{**smj, "scans": {
        "left": [_scan("orders", note="false (disabled by query planner)")], "right": [_scan("payments")]}}]}})
    assert expect.compare({"plan": "initial", "bucketed_scan": {"left": False, "right": False}}, seen) == []
    assert expect.compare({"plan": "initial", "bucketed_scan": {"left": True}}, seen) == [
        "initial plan: expected the left side of SortMergeJoin to read buckets, observed not bucketed scan(s) "
        "(orders: Bucketed: false (disabled by query planner))"]
    nothing = Observation.from_json({"initial": {"joins": [{**smj, "scans": {"left": [], "right": []}}]}})
    assert "no file scan below the right side" in expect.compare({"plan": "initial", "bucketed_scan": {"right": False}},
                                                                  nothing)[0]


def test_dynamic_pruning_of_a_table_and_whether_it_reuses_the_broadcast():
    bhj = {"strategy": "BroadcastHashJoin", "build_side": "right", "join_type": "Inner", "left_keys": "",
           "right_keys": "", "condition": "", "null_aware": False}

    def plan(pruning):
        return Observation.from_json({"initial": {"joins": [{**bhj, "scans": {
            "left": [_scan("sales", pruning=pruning)], "right": [_scan("stores")]}}]}})
    on_broadcast = {"table": "sales", "pruned": True, "reuses_broadcast": True}
    assert expect.compare({"plan": "initial", "dynamic_pruning": [on_broadcast]}, plan("broadcast")) == []
    assert expect.compare({"plan": "initial", "dynamic_pruning": [on_broadcast]}, plan("subquery")) == [
        "initial plan: expected sales's pruning filter to reuse the join's broadcast, observed a pruning filter "
        "with a subquery of its own"]
    # a filter Spark planned and then replaced by `true` prunes nothing
    assert expect.compare({"plan": "initial", "dynamic_pruning": [{"table": "sales", "pruned": False}]},
                          plan("dropped")) == []
    assert expect.compare({"plan": "initial", "dynamic_pruning": [{"table": "stores", "pruned": True}]},
                          plan("broadcast")) == ["initial plan: expected stores dynamically pruned, observed no pruning filter"]
    # a final plan rebuilt from Spark Connect's metrics has no scan arguments: not checkable
    printed = Observation.from_json({"initial": {"joins": [bhj]}, "unavailable": ["warnings"]})
    assert expect.not_checkable({"plan": "initial", "dynamic_pruning": [on_broadcast]}, printed) == ["dynamic_pruning"]


def test_pruning_aqe_has_still_to_decide_is_judged_only_where_the_initial_plan_fixes_it():
    join = {"join_type": "Inner", "left_keys": "", "right_keys": "", "condition": "", "null_aware": False}

    def plan(strategy, build_side, pruning):
        return Observation.from_json({"initial": {"joins": [{**join, "strategy": strategy, "build_side": build_side,
                                                              "scans": {"left": [_scan("sales", pruning=pruning)],
                                                                        "right": [_scan("stores")]}}]}})
    reused = {"table": "sales", "pruned": True, "reuses_broadcast": True}
    # a broadcast hash join building the other side is the broadcast AQE reuses
    for kind in ("adaptive", "adaptive_reuse_only"):
        seen = plan("BroadcastHashJoin", "right", kind)
        assert expect.compare({"plan": "initial", "dynamic_pruning": [reused]}, seen) == []
        assert expect.not_checkable({"plan": "initial", "dynamic_pruning": [reused]}, seen) == []
    # a sort-merge join: AQE keeps an `adaptive` filter (pruned), but whether on a broadcast is its to decide
    smj = plan("SortMergeJoin", "none", "adaptive")
    assert expect.compare({"plan": "initial", "dynamic_pruning": [{"table": "sales", "pruned": False}]}, smj) == [
        "initial plan: expected sales not dynamically pruned, observed a pruning filter AQE keeps at run time (on "
        "the join's broadcast if the join becomes a broadcast join, else by a subquery of its own)"]
    assert expect.not_checkable({"plan": "initial", "dynamic_pruning": [{"table": "sales", "pruned": True}]}, smj) == []
    assert expect.not_checkable({"plan": "initial", "dynamic_pruning": [reused]}, smj) == [
        "dynamic_pruning of sales (decided by AQE at run time)"]
    assert expect.compare({"plan": "initial", "dynamic_pruning": [reused]}, smj) == []  # said as not checkable
    # reuse only: AQE may drop it, so even whether it prunes is not known before it runs
    only = plan("SortMergeJoin", "none", "adaptive_reuse_only")
    assert expect.not_checkable({"plan": "initial", "dynamic_pruning": [{"table": "sales", "pruned": False}]},
                                only) == ["dynamic_pruning of sales (decided by AQE at run time)"]


def test_a_single_dynamic_pruning_expectation_reads_as_a_list_and_names_a_table_of_the_file(write_scenario):
    from harness.scenario.errors import ScenarioError
    text = MINIMAL.replace("expect:", "expect:\n  dynamic_pruning: {table: a, pruned: false}")
    case = expand(load_scenario(write_scenario(text)))[0]
    assert expect.resolve(case, "4.3.0")["dynamic_pruning"] == [{"table": "a", "pruned": False}]
    with pytest.raises(ScenarioError, match=r"case.yaml:\d+: expect.dynamic_pruning.table: 'sales' is not a table of this file"):
        load_scenario(write_scenario(text.replace("table: a", "table: sales")))


def test_only_unobservable_warnings_leave_a_checked_case_passed_and_say_so(write_scenario):
    """Through Spark Connect: a case whose strategy and build side were checked and held,
    whose only unobservable expectation is its hint warnings, is passed with a note; an
    expectation on warnings alone checked nothing and stays unchecked."""
    from harness.check.runner import absent_session, judge_case
    from harness.core.records import WARNINGS_UNOBSERVED
    from harness.scenario.model import expand, load_scenario
    from tests.conftest import MINIMAL
    who = absent_session({"spark": "4.3.0", "java": "17", "python": "3.11"}, "sc://localhost:15002")
    seen = Observation.from_json({"initial": {"joins": [{"strategy": "BroadcastHashJoin", "build_side": "right"}]},
                                  "unavailable": ["warnings", "model"]})
    with_warnings = MINIMAL.replace("  build_side: right\n", "  build_side: right\n  warnings: []\n")
    case = expand(load_scenario(write_scenario(with_warnings)))[0]
    record = judge_case(case, who, seen, 0.1)
    assert (record.status, record.message) == ("passed", WARNINGS_UNOBSERVED)
    only = with_warnings.replace("  strategy: BroadcastHashJoin\n  build_side: right\n", "")
    record = judge_case(expand(load_scenario(write_scenario(only, "only.yaml")))[0], who, seen, 0.1)
    assert record.status == "unchecked" and "not checkable on this deployment: warnings" in record.message
    wrong = with_warnings.replace("build_side: right", "build_side: left")
    record = judge_case(expand(load_scenario(write_scenario(wrong, "wrong.yaml")))[0], who, seen, 0.1)
    assert record.status == "failed" and "not checkable on this deployment: warnings" in record.message


def _costed(cost=None, **given):
    side = {"shuffle_bytes": 3 << 20, "shuffle_records": 1000, "broadcast_bytes": 0, "partitions": 20,
            "coalesced_partitions": 0, "skew_splits": 0}
    found = {"left": dict(side), "right": {**side, "shuffle_bytes": 1 << 20, "partitions": None},
             "spill_bytes": 0, "peak_memory": 64 << 20, "output_rows": 1000,
             "not_reported": {"right.partitions": "CustomShuffleReader reports no `numPartitions` on this Spark version"},
             "timings": {"sort_s": 0.1}}
    return Observation(executed=True, rows=1000, cost=found if cost is None else cost, **given)


def test_cost_bounds_compare_each_side_both_sides_summed_and_the_join():
    within = {"plan": "initial", "cost": {"shuffle_bytes": {"left": {"max": 4 << 20}, "both": {"max": 4 << 20}},
                                          "spill_bytes": {"min": 0, "max": 0}}}
    assert expect.compare(within, _costed()) == []
    tight = {"plan": "initial", "cost": {"shuffle_bytes": {"left": {"max": 2 << 20}, "both": {"min": 5 << 20}},
                                         "peak_memory": {"max": 1 << 20}}}
    assert expect.compare(tight, _costed()) == [
        "cost: shuffle bytes left 3,145,728 B is above the expected maximum 2,097,152 B",
        "cost: shuffle bytes 4,194,304 B is below the expected minimum 5,242,880 B",
        "cost: peak memory 67,108,864 B is above the expected maximum 1,048,576 B"]


def test_a_cost_this_version_does_not_report_is_not_checkable_with_why():
    want = {"plan": "initial", "cost": {"partitions": {"right": {"max": 10}, "left": {"max": 10}}}}
    assert expect.not_checkable(want, _costed()) == [
        "cost partitions right (CustomShuffleReader reports no `numPartitions` on this Spark version)"]
    assert expect.compare(want, _costed()) == ["cost: partitions left 20 is above the expected maximum 10"]
    summed = {"plan": "initial", "cost": {"partitions": {"both": {"max": 100}}}}
    assert expect.compare(summed, _costed()) == [] and expect.not_checkable(summed, _costed())


def test_a_cost_through_connect_is_not_checkable_and_a_plan_without_join_fails():
    want = {"plan": "initial", "cost": {"spill_bytes": {"max": 0}}}
    gone = Observation(executed=True, rows=0, cost=None, unavailable=["cost"])
    assert expect.not_checkable(want, gone) == ["cost"] and expect.compare(want, gone) == []
    assert expect.compare(want, Observation(executed=True, rows=0, cost=None)) == [
        "cost: the plan that ran has no join to measure"]
