"""harness.observe.filter_model: InjectRuntimeFilter's rules over the sides' facts (the
executed and statistics-only cases of scenarios/runtime_filters judge it against Spark)."""
from harness.core.vocab import APPLICATION_SIDE_THRESHOLD, BLOOM_ENABLED, CREATION_SIDE_THRESHOLD
from harness.observe import filter_model

FACT = {"max_scan_bytes": 20 * 1024 ** 3, "selective_filter": False, "shuffle_below": False, "bloom_filter": True}
DIM = {"max_scan_bytes": 50 * 1024 ** 2, "selective_filter": True, "shuffle_below": False, "bloom_filter": False}
ON = {BLOOM_ENABLED: "true", "spark.sql.autoBroadcastJoinThreshold": "-1"}


def _estimate(left=FACT, right=DIM, join_type="Inner", left_size=20 * 1024 ** 3, right_size=6 * 1024 ** 2):
    return {"left": {"size_in_bytes": left_size}, "right": {"size_in_bytes": right_size},
            "logical": {"join_type": join_type, "equi": True, "hints": {"left": [], "right": []},
                        "filter_sides": {"left": left, "right": right}}}


def test_a_big_fact_gets_a_filter_from_a_small_selective_dimension():
    predicted = filter_model.predict("4.3.0", ON, _estimate())
    assert predicted["left"] and not predicted["right"]
    assert predicted["why"].startswith("bloom filter on the left side from the right side: its largest scan "
                                       "21,474,836,480 B ≥ 10,737,418,240 B")
    assert filter_model.judge(predicted, _estimate()) == {"why": predicted["why"], "agrees": True, "observed": ["left"]}


def test_each_rule_that_stops_a_filter_is_said():
    off = filter_model.predict("3.3.4", {BLOOM_ENABLED: "false"}, _estimate())
    assert off == {"left": False, "right": False,
                   "why": f"bloom filters off ({BLOOM_ENABLED}=false)"}
    broadcast = filter_model.predict("4.3.0", {**ON, "spark.sql.autoBroadcastJoinThreshold": "10485760b"},
                                     _estimate())
    assert "not on the left side: a broadcast join with no shuffle below that side" in broadcast["why"]
    small = filter_model.predict("4.3.0", {**ON, APPLICATION_SIDE_THRESHOLD: "100GB"}, _estimate())
    assert "its largest scan 21,474,836,480 B < applicationSideScanSizeThreshold 107,374,182,400 B" in small["why"]
    big_dim = filter_model.predict("4.3.0", {**ON, CREATION_SIDE_THRESHOLD: "1MB"}, _estimate())
    assert "the right side 6,291,456 B > creationSideThreshold 1,048,576 B" in big_dim["why"]
    outer = filter_model.predict("4.3.0", ON, _estimate(join_type="LeftOuter"))
    assert "a LeftOuter join keeps the left side's unmatched rows" in outer["why"]
    assert not filter_model.judge(outer, _estimate())["agrees"]  # the plan holds one: drift, said


def test_nothing_is_modelled_before_3_3_or_for_the_in_subquery_variant():
    assert filter_model.predict("3.2.4", ON, _estimate()) is None
    semi = {BLOOM_ENABLED: "false", "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled": "true"}
    assert filter_model.predict("3.5.9", semi, _estimate()) is None
    assert filter_model.predict("4.3.0", ON, {**_estimate(), "logical": {"join_type": "Inner"}}) is None


def test_a_dynamic_pruning_filter_on_the_key_leaves_no_bloom_filter():
    pruned = filter_model.predict("4.3.0", ON, _estimate(left={**FACT, "dynamic_pruning": True, "bloom_filter": False}))
    assert pruned == {"left": False, "right": False,
                      "why": "dynamic partition pruning already filters the left side on this key"}
