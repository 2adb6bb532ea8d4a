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
    assert expectation_words({"plan": "initial", "columns": [["a", "int"], ["n", "bigint"]]}) == "columns a int, n bigint"


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


def _join(strategy, shuffles, left, right, build="none"):
    return {"joins": [{"strategy": strategy, "build_side": build, "shuffles": shuffles,
                       "scans": {"left": left, "right": right}}]}


def _scan(table, bucketed, note=None):
    return {"table": table, "bucketed": bucketed, "bucket_note": note, "pruning": "none"}


def test_why_each_side_of_the_join_is_or_is_not_shuffled():
    from harness.observe.describe import shuffle_words
    bucketed = _join("SortMergeJoin", {"left": 0, "right": 1}, [_scan("orders", True, "true")],
                     [_scan("customers", False)])
    assert shuffle_words({"initial": bucketed}) == (
        "shuffles: left none: orders read as buckets, already partitioned as the join needs; "
        "right 1 exchange below: customers not read as buckets")
    planner = _join("SortMergeJoin", {"left": 1, "right": 1}, [_scan("orders", False, "false (disabled by query planner)")],
                    [_scan("payments", False)])
    assert "left 1 exchange below: bucketed but not read as buckets (orders: Bucketed: false (disabled by query planner))" \
        in shuffle_words({"initial": planner})
    mismatched = _join("SortMergeJoin", {"left": 2, "right": 1}, [_scan("orders", True, "true")], [])
    assert "left 2 exchanges below although orders is read as buckets" in shuffle_words({"initial": mismatched})
    broadcast = _join("BroadcastHashJoin", {"left": 0, "right": 0}, [], [], build="right")
    assert shuffle_words({"initial": broadcast, "final": broadcast}) == (
        "shuffles: left streamed: none (the join needs no shuffle); right broadcast: none (the join needs no shuffle)")
    # a plan read from printed metrics has no counts: nothing said
    assert shuffle_words({"initial": {"joins": [{"strategy": "SortMergeJoin", "shuffles": None}]}}) == ""


def _v2_scan(table, grouped, values=None, partial=False):
    return {**_scan(table, False), "key_grouped": grouped, "partition_values": values, "partially_clustered": partial}


def test_why_a_side_read_from_iceberg_is_or_is_not_shuffled():
    from harness.observe.describe import shuffle_words
    spj = _join("SortMergeJoin", {"left": 0, "right": 0}, [_v2_scan("orders", True, 8, True)],
                [_v2_scan("customers", True, 8)])
    assert shuffle_words({"initial": spj}) == (
        "shuffles: left none: orders grouped by its partitions (storage-partitioned join; 8 partition values pushed; "
        "partially clustered); right none: customers grouped by its partitions (storage-partitioned join; "
        "8 partition values pushed)")
    off = {"spark.sql.sources.v2.bucketing.enabled": "false", "spark.sql.iceberg.planning.preserve-data-grouping": None}
    ungrouped = _join("SortMergeJoin", {"left": 1, "right": 1}, [_v2_scan("orders", False)], [_v2_scan("customers", False)])
    assert "left 1 exchange below: orders not grouped by its partitions (off: spark.sql.sources.v2.bucketing.enabled; " \
           "unset or not on this version: spark.sql.iceberg.planning.preserve-data-grouping)" in \
           shuffle_words({"initial": ungrouped, "join_conf": off})
    absent = {"spark.sql.sources.v2.bucketing.pushPartValues.enabled": None,
              "spark.sql.requireAllClusterKeysForCoPartition": "true"}
    incompatible = _join("SortMergeJoin", {"left": 1, "right": 1}, [_v2_scan("orders", True)], [_v2_scan("targets", True)])
    words = shuffle_words({"initial": incompatible, "join_conf": absent})
    assert "left 1 exchange below although orders is grouped by its partitions: the two sides' partitionings are " \
           "not compatible" in words
    assert "unset or not on this version: spark.sql.sources.v2.bucketing.pushPartValues.enabled" in words


def test_under_an_engine_the_page_says_where_the_join_ran_why_and_spark_s_own_answer():
    from harness.observe.describe import engine_lines
    observed = {"initial": {"joins": [{"strategy": "BroadcastHashJoin", "native": False,
                                       "fallback": ["Range: Range is not supported"]}]},
                "rows": 5, "checksum": "00aa",
                "engine_reference": {"rows": 5, "checksum": "00ab", "source": "this session, comet off"}}
    assert engine_lines(observed) == [
        "engine: BroadcastHashJoin ran in Spark", "engine left it to Spark: Range: Range is not supported",
        "Spark's own answer (this session, comet off): 5 rows, checksum 00ab — DIFFERENT"]
    assert engine_lines({"initial": {"joins": [{"strategy": "SortMergeJoin", "native": None}]}}) == []


def test_the_joins_inside_subqueries_are_said_one_line_per_subquery():
    from harness.observe.describe import why_lines
    node = {"strategy": "BroadcastHashJoin", "build_side": "right", "join_type": "Inner", "tables": ["b", "c"]}
    record = {"observed": {"initial": {"joins": [], "subqueries": [
        {"subquery": "scalar-subquery", "kind": "Subquery", "joins": [node]}]}}}
    assert "subquery #1 (scalar-subquery): BroadcastHashJoin (build right) · Inner of b+c" in why_lines(record)
