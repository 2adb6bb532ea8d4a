"""harness.observe.model: JoinSelection's rules on hand-built inputs (no Spark), boundaries included."""
import pytest

from harness.core.records import Observation
from harness.observe.model import (
    BHJ,
    BNLJ,
    CP,
    SHJ,
    SMJ,
    JoinInputs,
    Settings,
    evaluate,
    parse_bytes,
    predict,
    predict_final,
)

MB10 = 10 * 1024 * 1024


def equi(join_type="Inner", left=10**9, right=10**9, **kw):
    return JoinInputs(join_type=join_type, equi=True, left_size=left, right_size=right, **kw)


def non_equi(join_type="Inner", left=10**9, right=10**9, **kw):
    return JoinInputs(join_type=join_type, equi=False, left_size=left, right_size=right, orderable=None, **kw)


def outcome(inputs, version="4.3.0", **settings):
    p = predict(inputs, Settings(**settings), version)
    return p.strategy, p.build_side


def test_explanation_reads_like_the_rule():
    p = predict(equi(right=52_000), Settings(), "4.3.0")
    assert p.explanation == ("equi-join · no hint · rule 1: right estimate 52,000 B ≤ autoBroadcastJoinThreshold "
                             "10,485,760 B → BroadcastHashJoin, build right")


@pytest.mark.parametrize("size, expected", [(MB10, (BHJ, "right")), (MB10 + 1, (SMJ, "none"))])
def test_estimate_equal_to_the_threshold_broadcasts(size, expected):
    assert outcome(equi(right=size)) == expected


def test_threshold_minus_one_disables_broadcast_even_for_empty_inputs():
    p = predict(equi(left=0, right=0), Settings(broadcast_threshold=-1), "4.3.0")
    assert (p.strategy, p.build_side) == (SMJ, "none")
    assert "autoBroadcastJoinThreshold -1 disables broadcasting" in p.explanation


def test_both_sides_fit_the_smaller_is_built_and_a_tie_builds_right():
    assert outcome(equi(left=100, right=200)) == (BHJ, "left")
    assert outcome(equi(left=100, right=100)) == (BHJ, "right")


@pytest.mark.parametrize("left, expected", [(3_000, (SHJ, "left")), (3_001, (SMJ, "none"))])
def test_shuffle_hash_needs_exactly_three_times_smaller(left, expected):
    inputs = equi(left=left, right=9_000)
    assert outcome(inputs, broadcast_threshold=1_000, prefer_sort_merge=False) == expected


def test_shuffle_hash_local_map_bound_is_strict():
    # size < threshold × partitions: equal is too big.
    inputs = equi(left=1_000 * 200, right=10**9)
    assert outcome(inputs, broadcast_threshold=1_000, prefer_sort_merge=False) == (SMJ, "none")
    inputs = equi(left=1_000 * 200 - 1, right=10**9)
    assert outcome(inputs, broadcast_threshold=1_000, prefer_sort_merge=False) == (SHJ, "left")


def test_prefer_sort_merge_skips_shuffle_hash():
    p = predict(equi(left=3_000, right=9_000), Settings(broadcast_threshold=1_000), "4.3.0")
    assert p.strategy == SMJ and "preferSortMergeJoin=true skips shuffle hash" in p.explanation


def test_broadcast_hint_on_the_outer_side_is_ignored():
    p = predict(equi("LeftOuter", left_hints=["BROADCAST"]), Settings(), "4.3.0")
    assert (p.strategy, p.build_side) == (SMJ, "none")
    assert "BROADCAST hint on left ignored: a left outer join cannot build left" in p.explanation
    assert "no hint applies → no-hint rules" in p.explanation


def test_both_sides_hinted_the_smaller_estimate_wins():
    inputs = equi(left=5_000, right=9_000, left_hints=["BROADCAST"], right_hints=["BROADCAST"])
    assert outcome(inputs) == (BHJ, "left")
    inputs = equi(left=5_000, right=9_000, left_hints=["SHUFFLE_HASH"], right_hints=["SHUFFLE_HASH"])
    assert outcome(inputs) == (SHJ, "left")


def test_hint_priority_broadcast_over_merge_over_shuffle_hash():
    assert outcome(equi(left_hints=["MERGE"], right_hints=["BROADCAST"])) == (BHJ, "right")
    assert outcome(equi(left_hints=["SHUFFLE_HASH"], right_hints=["MERGE"])) == (SMJ, "none")
    assert outcome(equi(left_hints=["SHUFFLE_REPLICATE_NL"])) == (CP, "none")
    assert outcome(equi("LeftOuter", left_hints=["SHUFFLE_REPLICATE_NL"])) == (SMJ, "none")


def test_full_outer_shuffle_hash_from_3_1():  # SPARK-32399
    inputs = equi("FullOuter", left_hints=["SHUFFLE_HASH"])
    assert outcome(inputs, "3.0.3") == (SMJ, "none")
    assert outcome(inputs, "3.1.3") == (SHJ, "left")


def test_outer_side_shuffle_hash_build_from_3_5():  # SPARK-36612
    inputs = equi("LeftOuter", left=3_000, right=10**6)
    assert outcome(inputs, "3.4.4", broadcast_threshold=1_000, prefer_sort_merge=False) == (SMJ, "none")
    assert outcome(inputs, "3.5.0", broadcast_threshold=1_000, prefer_sort_merge=False) == (SHJ, "left")


def test_shuffle_hash_factor_is_a_config_from_3_3():  # SPARK-36898
    inputs = equi(left=5_000, right=10_000)
    kw = dict(broadcast_threshold=1_000, prefer_sort_merge=False, shuffle_hash_factor=2)
    assert outcome(inputs, "3.2.4", **kw) == (SMJ, "none")
    assert outcome(inputs, "3.3.4", **kw) == (SHJ, "left")


def test_unorderable_keys_fall_to_cartesian_or_nested_loop():
    assert outcome(equi(orderable=False)) == (CP, "none")
    assert outcome(equi("LeftOuter", left=5, right=9, orderable=False), broadcast_threshold=-1) == (BNLJ, "left")


def test_non_equi_builds_whichever_side_fits_whatever_the_join_type():
    assert outcome(non_equi("LeftOuter", left=100)) == (BNLJ, "left")
    assert outcome(non_equi("LeftOuter")) == (BNLJ, "right")      # last resort
    assert outcome(non_equi("RightOuter")) == (BNLJ, "left")
    assert outcome(non_equi("Inner")) == (CP, "none")
    assert outcome(non_equi("FullOuter", left=100, right=50)) == (BNLJ, "right")


def test_null_aware_anti_join_from_3_1():  # SPARK-32290
    inputs = non_equi("LeftAnti", right=800, null_aware_candidate=True)
    p = predict(inputs, Settings(), "3.1.3")
    assert (p.strategy, p.build_side, p.null_aware) == (BHJ, "right", True)
    assert outcome(inputs, "3.0.3") == (BNLJ, "right")


def test_settings_parse_sparks_strings_and_version_defaults():
    s = Settings.from_conf({"spark.sql.autoBroadcastJoinThreshold": "10485760b",
                            "spark.sql.join.preferSortMergeJoin": "false", "spark.sql.shuffle.partitions": "8"}, "3.1.3")
    assert (s.broadcast_threshold, s.prefer_sort_merge, s.shuffle_partitions, s.adaptive) == (MB10, False, 8, False)
    assert Settings.from_conf({}, "3.2.4").adaptive is True  # SPARK-33679
    assert [parse_bytes(v) for v in ("-1", "10m", "10MB", "2k", "512")] == [-1, MB10, MB10, 2048, 512]
    s = Settings.from_conf({"spark.sql.shuffle.partitions": "200", "spark.sql.adaptive.enabled": "true",
                            "spark.sql.adaptive.coalescePartitions.initialPartitionNum": "50"}, "4.3.0")
    assert s.shuffle_partitions == 50


def test_evaluate_marks_drift_against_the_observed_plan():
    observed = {"adaptive": False, "error": None,
                "estimates": [{"left": {"size_in_bytes": 10**9}, "right": {"size_in_bytes": 800},
                               "logical": {"join_type": "Inner", "equi": True, "orderable": True,
                                           "hints": {"left": [], "right": []}}}],
                "initial": {"joins": [{"strategy": SMJ, "build_side": "none"}]}, "join_conf": {}}
    verdict = evaluate(Observation.from_json(observed), "4.3.0")
    assert verdict["strategy"] == BHJ and verdict["drift"] and not verdict["agrees"]
    observed["initial"]["joins"] = [{"strategy": BHJ, "build_side": "right"}]
    assert evaluate(Observation.from_json(observed), "4.3.0")["agrees"]
    observed["estimates"], observed["initial"]["joins"] = [], []
    assert evaluate(Observation.from_json(observed), "4.3.0")["strategy"] == "none"  # the optimizer removed the join


def _runtime(left_size, right_size, right_parts=(50, 3), max_partition=1_000):
    def side(size, parts):
        return {"size_in_bytes": size, "row_count": None, "partitions": parts[0],
                "non_empty_partitions": parts[1], "max_partition_bytes": max_partition}
    return {"left": side(left_size, (50, 50)), "right": side(right_size, right_parts)}


def test_aqe_converts_to_broadcast_with_run_time_sizes():
    inputs = equi(left=10**9, right=10**9)
    initial = predict(inputs, Settings(), "4.3.0")
    final, why = predict_final(initial, inputs, Settings(), _runtime(10**9, 4_800, right_parts=(50, 50)), "4.3.0")
    assert (initial.strategy, final.strategy, final.build_side) == (SMJ, BHJ, "right")
    assert why.startswith("AQE re-plans with run-time sizes")


def test_aqe_demotes_a_sparse_side_inner_only_from_3_3():  # SPARK-37193
    runtime = _runtime(10**9, 4_800)  # right: 3 of 50 partitions non-empty
    for join_type, version, expected in (("Inner", "4.3.0", SMJ), ("LeftOuter", "4.3.0", BHJ),
                                         ("LeftOuter", "3.2.4", SMJ)):
        inputs = equi(join_type)
        final, why = predict_final(predict(inputs, Settings(), version), inputs, Settings(), runtime, version)
        assert final.strategy == expected, (join_type, version, why)
    assert "AQE demotes broadcast of right: non-empty partitions 3/50 < 0.2" in why


def test_aqe_adaptive_threshold_from_3_2():  # SPARK-35264
    inputs = equi()
    settings = Settings(adaptive_threshold=-1)
    runtime = _runtime(10**9, 4_800, right_parts=(50, 50))
    assert predict_final(predict(inputs, settings, "3.2.4"), inputs, settings, runtime, "3.2.4")[0].strategy == SMJ
    assert predict_final(predict(inputs, settings, "3.1.3"), inputs, settings, runtime, "3.1.3")[0].strategy == BHJ


def test_aqe_local_map_shuffle_hash_from_3_2():  # SPARK-35282
    inputs = equi()
    settings = Settings(broadcast_threshold=-1, local_map_threshold=64 * 1024 * 1024)
    runtime = _runtime(10**9, 4_800, right_parts=(50, 50))
    final, _ = predict_final(predict(inputs, settings, "4.3.0"), inputs, settings, runtime, "4.3.0")
    assert (final.strategy, final.build_side) == (SHJ, "right")
    assert predict_final(predict(inputs, settings, "3.1.3"), inputs, settings, runtime, "3.1.3")[0].strategy == SMJ


def test_aqe_without_run_time_sizes_says_so():
    inputs = equi()
    final, why = predict_final(predict(inputs, Settings(), "4.3.0"), inputs, Settings(), None, "4.3.0")
    assert final is None and why.startswith("not predicted")
    final, why = predict_final(predict(inputs, Settings(adaptive=False), "4.3.0"), inputs, Settings(adaptive=False),
                               None, "4.3.0")
    assert final.strategy == SMJ and why == "AQE off: the final plan is the initial plan"


def test_aqe_with_an_empty_side_before_3_2_is_not_guessed():
    inputs = equi()
    runtime = _runtime(32_000, 0, right_parts=(200, 0))
    runtime["right"]["row_count"] = 0
    final, why = predict_final(predict(inputs, Settings(), "3.1.3"), inputs, Settings(), runtime, "3.1.3")
    assert final is None and "the right side is empty at run time" in why


def test_aqe_null_aware_anti_join_is_not_guessed():  # SPARK-32573: depends on NULL keys it cannot see
    inputs = non_equi("LeftAnti", right=800, null_aware_candidate=True)
    initial = predict(inputs, Settings(), "3.5.0")
    final, why = predict_final(initial, inputs, Settings(), None, "3.5.0")
    assert final is None and "SPARK-32573" in why


def test_aqe_keeps_a_cartesian_product_with_no_shuffle_below():
    inputs = non_equi("Inner")
    initial = predict(inputs, Settings(), "4.3.0")
    final, why = predict_final(initial, inputs, Settings(), None, "4.3.0")
    assert (initial.strategy, final.strategy) == (CP, CP) and "no run-time size" in why
