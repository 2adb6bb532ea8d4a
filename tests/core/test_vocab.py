"""harness.core.vocab: one way to say a join node, one version order."""
from harness.core.vocab import (
    describe_join,
    normalize_strategy,
    spark_version,
    version_sort_key,
)


def test_a_join_node_in_words():
    node = {"strategy": "BroadcastHashJoin", "build_side": "right", "join_type": "LeftOuter", "tables": ["a", "b"]}
    assert describe_join(node) == "BroadcastHashJoin (build right)"
    assert describe_join(node, join_type=True, tables=True) == "BroadcastHashJoin (build right) · LeftOuter of a+b"
    assert describe_join({"strategy": "SortMergeJoin", "build_side": "none", "skew": True}) == "SortMergeJoin [skew]"
    assert describe_join(None) == "no join"


def test_versions_and_names():
    assert sorted(["4.3.0", "cluster", "3.10.0", "3.5.7"], key=version_sort_key) == ["3.5.7", "3.10.0", "4.3.0", "cluster"]
    assert spark_version("3.5.1-SNAPSHOT") == spark_version("3.5.1") and str(spark_version("x")) == "0"
    assert normalize_strategy("SMJ") == "SortMergeJoin"
