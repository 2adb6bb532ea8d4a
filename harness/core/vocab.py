"""Spark's join vocabulary, defined once: join types, strategy hints, physical join
operators and their short names, build sides, and how a Spark version is read and
sorted. Every other module takes these names from here."""
from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

# Every spelling Spark accepts for a join type, mapped to one canonical name.
JOIN_TYPES = {
    "inner": "inner", "cross": "cross",
    "outer": "full_outer", "full": "full_outer", "fullouter": "full_outer", "full_outer": "full_outer",
    "left": "left_outer", "leftouter": "left_outer", "left_outer": "left_outer",
    "right": "right_outer", "rightouter": "right_outer", "right_outer": "right_outer",
    "semi": "left_semi", "leftsemi": "left_semi", "left_semi": "left_semi",
    "anti": "left_anti", "leftanti": "left_anti", "left_anti": "left_anti",
}
# The SQL keyword of each canonical join type.
SQL_JOIN = {"inner": "JOIN", "cross": "CROSS JOIN", "left_outer": "LEFT OUTER JOIN",
            "right_outer": "RIGHT OUTER JOIN", "full_outer": "FULL OUTER JOIN",
            "left_semi": "LEFT SEMI JOIN", "left_anti": "LEFT ANTI JOIN"}
# `stream.then`: the query after a stream join, kept in the case's join under this key and
# reading the join's output as this view.
THEN, THEN_VIEW = "then", "joined"

# Spark's logical JoinType names (as the plan prints them), in words.
LOGICAL_JOIN_NAMES = {"Inner": "an inner join", "Cross": "a cross join", "LeftOuter": "a left outer join",
                      "RightOuter": "a right outer join", "FullOuter": "a full outer join",
                      "LeftSemi": "a left semi join", "LeftAnti": "a left anti join"}

# Strategy hint aliases (Spark's JoinStrategyHint.hintAliases), upper-cased, and the
# strategy each names, as the plan prints it (`leftHint=(strategy=broadcast)`).
STRATEGY_HINTS = {
    "BROADCAST": "broadcast", "BROADCASTJOIN": "broadcast", "MAPJOIN": "broadcast",
    "MERGE": "merge", "SHUFFLE_MERGE": "merge", "MERGEJOIN": "merge",
    "SHUFFLE_HASH": "shuffle_hash",
    "SHUFFLE_REPLICATE_NL": "shuffle_replicate_nl",
}
# One spelling per hinted strategy: what the join-selection model reads.
HINTED_STRATEGIES = ("BROADCAST", "MERGE", "SHUFFLE_HASH", "SHUFFLE_REPLICATE_NL")

# Physical join operators (class name without `Exec`) and every short name a scenario
# may use for them.
JOIN_OPERATORS = ("BroadcastHashJoin", "ShuffledHashJoin", "SortMergeJoin", "BroadcastNestedLoopJoin",
                  "CartesianProduct", "StreamingSymmetricHashJoin")
STRATEGY_NAMES = {
    "BroadcastHashJoin": "BroadcastHashJoin", "BHJ": "BroadcastHashJoin", "broadcast_hash": "BroadcastHashJoin",
    "ShuffledHashJoin": "ShuffledHashJoin", "SHJ": "ShuffledHashJoin", "shuffle_hash": "ShuffledHashJoin",
    "SortMergeJoin": "SortMergeJoin", "SMJ": "SortMergeJoin", "sort_merge": "SortMergeJoin",
    "BroadcastNestedLoopJoin": "BroadcastNestedLoopJoin", "BNLJ": "BroadcastNestedLoopJoin",
    "BNL": "BroadcastNestedLoopJoin", "broadcast_nested_loop": "BroadcastNestedLoopJoin",
    "CartesianProduct": "CartesianProduct", "CP": "CartesianProduct", "cartesian": "CartesianProduct",
    "StreamingSymmetricHashJoin": "StreamingSymmetricHashJoin",
    "streaming_symmetric_hash": "StreamingSymmetricHashJoin",
    "none": "none", "predicted": "predicted",
}
NO_JOIN = "none"
NESTED_LOOP_OPERATORS = ("CartesianProduct", "BroadcastNestedLoopJoin")

BUILD_SIDES = {"left": "left", "right": "right", "none": "none", "BuildLeft": "left", "BuildRight": "right"}


def normalize_strategy(name: str | None) -> str | None:
    return None if name is None else STRATEGY_NAMES[name]


def normalize_build_side(name: str | None) -> str | None:
    return None if name is None else BUILD_SIDES[name]


def join_type_name(text: str | None) -> str:
    """Spark's join type without its arguments: `ExistenceJoin(exists#12)` → ExistenceJoin."""
    return (text or "").split("(")[0]


def written_join_node(node: dict) -> dict:
    """An observed join node as `expect.joins` holds it (what capture and accept write):
    strategy, build side, join type in Spark's name, and the tables below it, sorted."""
    return {"strategy": node["strategy"], "build_side": node["build_side"],
            **({"join_type": join_type_name(node["join_type"])} if node.get("join_type") else {}),
            **({"tables": sorted(node["tables"])} if node.get("tables") else {})}


def describe_join(node: dict | None, *, join_type: bool = False, tables: bool = False) -> str:
    """A join node in words, the one way every report says it: `SortMergeJoin`,
    `BroadcastHashJoin (build right)`, optionally `· LeftOuter of fact+dim`; `no join`."""
    if node is None:
        return "no join"
    text = node["strategy"] + (f" (build {node['build_side']})" if node.get("build_side", "none") != "none" else "")
    if node.get("skew"):
        text += " [skew]"
    if node.get("null_aware"):
        text += " [null-aware]"
    if node.get("native") is not None:  # under a native engine
        text += " [native]" if node["native"] else " [in Spark]"
    if join_type and node.get("join_type"):
        text += f" · {join_type_name(node['join_type'])}"
    if tables and node.get("tables"):
        text += " of " + "+".join(node["tables"])
    return text


def spark_version(text: str) -> Version:
    """A Spark version as a comparable release: "4.1.0.dev1" and "3.5.1-SNAPSHOT" compare
    as their release; text without a version as 0."""
    match = re.match(r"\d+(\.\d+){0,2}", str(text))
    return Version(match.group(0) if match else "0")


def version_sort_key(text: str):
    """Versions first, oldest first; other labels (e.g. "cluster") after them by name."""
    try:
        return (0, Version(text))
    except InvalidVersion:
        return (1, text)

# The longest plan text kept (the session tells Spark the same, so it never builds longer
# strings; both plan readers cut at it).
PLAN_TEXT_LIMIT = 20_000


# The configs a storage-partitioned join of V2 (Iceberg) tables depends on, in the order
# Spark and Iceberg added them; recorded with the join's other configs for Iceberg cases.
V2_BUCKETING = "spark.sql.sources.v2.bucketing.enabled"
PRESERVE_GROUPING = "spark.sql.iceberg.planning.preserve-data-grouping"
SPJ_CONFS = (V2_BUCKETING, PRESERVE_GROUPING, "spark.sql.sources.v2.bucketing.pushPartValues.enabled",
             "spark.sql.requireAllClusterKeysForCoPartition",
             "spark.sql.sources.v2.bucketing.partiallyClusteredDistribution.enabled",
             "spark.sql.sources.v2.bucketing.allowJoinKeysSubsetOfPartitionKeys.enabled",
             "spark.sql.sources.v2.bucketing.shuffle.enabled")

# The configs InjectRuntimeFilter reads (3.3+; the semi-join reduction's removed in 4.0.0):
# recorded with every case, so a case without a filter says which of them ruled it out.
BLOOM_ENABLED = "spark.sql.optimizer.runtime.bloomFilter.enabled"
APPLICATION_SIDE_THRESHOLD = "spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold"
CREATION_SIDE_THRESHOLD = "spark.sql.optimizer.runtime.bloomFilter.creationSideThreshold"
SEMI_JOIN_REDUCTION = "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled"
RUNTIME_FILTER_CONFS = (BLOOM_ENABLED, APPLICATION_SIDE_THRESHOLD, CREATION_SIDE_THRESHOLD,
                        "spark.sql.optimizer.runtimeFilter.number.threshold", SEMI_JOIN_REDUCTION)

# `expect: {cost: …}` (harness.observe.cost): the fields that are sizes (bytes, or text
# such as `2 MiB`), and those measured per side of the top join.
COST_SIZES = ("shuffle_bytes", "broadcast_bytes", "spill_bytes", "peak_memory")
COST_SIDE_FIELDS = ("shuffle_bytes", "shuffle_records", "broadcast_bytes", "partitions", "coalesced_partitions",
                    "skew_splits")
