"""Records in words: expectations, and why Spark chose what it chose."""
from harness.observe.describe import conf_bytes, expectation_words, why_lines


def test_expectations_in_words():
    assert expectation_words({"strategy": "BroadcastHashJoin", "build_side": "right", "plan": "final"}) == \
        "BroadcastHashJoin (build right), final plan"
    assert expectation_words({"plan": "initial", "error": {"class": "AnalysisException", "message": "x"}}) == \
        "error AnalysisException matching /x/"
    assert expectation_words({"plan": "initial", "rows": 1000, "warnings": {"absent": ["Hint"], "count": 1},
                              "estimates": {"left": {"max": 10}}}) == \
        "1,000 rows; no warning matching /Hint/; exactly 1 warning; left estimate ≤ 10 B"
    assert expectation_words({"plan": "initial"}) == "nothing (observed only)"


def test_why_lines_for_a_case_and_for_a_cross_strategy_check():
    case = {"kind": "case", "model": {"explanation": "rule 1 → BroadcastHashJoin", "agrees": False},
            "observed": {"estimates": [{"left": {"size_in_bytes": 36000000}, "right": {"size_in_bytes": 800}}],
                         "join_conf": {"spark.sql.autoBroadcastJoinThreshold": "-1"},
                         "conf": {"spark.sql.autoBroadcastJoinThreshold": "-1"}, "adaptive": False,
                         "warnings": ["Hint (strategy=broadcast) is not supported"]}}
    assert why_lines(case) == [
        "model: rule 1 → BroadcastHashJoin (Spark did otherwise: model drift)",
        "estimates: left 36,000,000 B, right 800 B; spark.sql.autoBroadcastJoinThreshold -1 (broadcasting disabled)",
        "configs: spark.sql.autoBroadcastJoinThreshold=-1",
        "static plan (AQE off or not applicable)",
        "warning: Hint (strategy=broadcast) is not supported"]
    check = {"kind": "agreement", "observed": {"agreement": [
        {"forced": "as written", "strategy": "SortMergeJoin", "build_side": "none", "rows": 4, "checksum": "ab"},
        {"forced": "BROADCAST@left", "strategy": "BroadcastHashJoin", "build_side": "left", "rows": 5, "checksum": "cd"},
        {"forced": "SHUFFLE_HASH@left", "error": "rejected: hint not applicable"}]}}
    assert why_lines(check) == ["as written: SortMergeJoin → 4 rows, checksum ab",
                                "BROADCAST@left: BroadcastHashJoin (build left) → 5 rows, checksum cd",
                                "SHUFFLE_HASH@left: rejected: hint not applicable"]
    assert conf_bytes("10485760b") == "10,485,760 B" and conf_bytes(None) == "unknown" and conf_bytes("10MB") == "10MB"
