"""What the top join cost when it ran: the SQL metrics the Spark UI's SQL tab shows for
it, read from the operators of the plan that ran (for AQE its final plan) through Py4J.

Per side of the top join: the shuffle that fed it (the size of the rows it moved, and
their number), the
broadcast (the relation's data size) and the partitions the join read (after AQE's
coalescing). For the join's stage (the Stages tab): its tasks and the most rows one of
them read, from files and shuffles (a skewed key shows here). For the join: the spill of every sort, aggregate and join below and at it,
the peak memory of the operators of the join's own stage (its sorts and aggregates, a
shuffled hash join's build), AQE's coalesced partitions and skew splits. These are
deterministic for a given plan and data. Timings (build, broadcast, sort, shuffle write)
and the compressed bytes a shuffle wrote (which depend on the order rows reach it) are
kept apart: shown, never compared. A metric this Spark version does not report is
None and named in `not_reported`, never 0. A native engine's operators are read through
their engine's names for the same figures (harness.spark.engines: Comet's "Number of rows
produced", "Memory used by build-side", "Total spilled bytes"); a figure the engine does
not report is "not reported by <engine> <version>", and its operators that keep no
memory figure (Comet's sorts) add none to the peak.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from harness.core.vocab import JOIN_OPERATORS

# One operator's metrics as Scala prints its map (one Py4J call per operator):
# `Map(dataSize -> SQLMetric(id: 12, name: Some(data size), value: 4096), ...)`.
METRIC = re.compile(r"(\w+) -> SQLMetric\(id: (\d+), name: (?:Some\((.*?)\)|None), value: (-?\d+)\)")
SHUFFLE = "Exchange"                      # ShuffleExchangeExec's node name
BROADCAST = "BroadcastExchange"
SHUFFLE_READS = ("AQEShuffleRead", "CustomShuffleReader")   # 3.2+, 3.0-3.1
STAGE_OPERATORS = ("Sort", "HashAggregate", "ObjectHashAggregate", "SortAggregate")
# Operators that spill when memory runs short (a sort-merge join: the rows of one key it
# buffers), each reporting its spill as `spillSize` where the version has the metric
# (the sort-merge join's arrived in 3.3).
SPILLING = ("Sort", "HashAggregate", "SortMergeJoin")
SIDES = ("left", "right")
# Timings per operator kind: (metric, field, unit divisor to seconds).
TIMINGS = {BROADCAST: [("buildTime", "broadcast_build_s", 1e3), ("broadcastTime", "broadcast_send_s", 1e3),
                       ("collectTime", "broadcast_collect_s", 1e3)],
           SHUFFLE: [("shuffleWriteTime", "shuffle_write_s", 1e9)],
           "Sort": [("sortTime", "sort_s", 1e3)],
           "ShuffledHashJoin": [("buildTime", "hash_build_s", 1e3)]}


def metrics(node) -> dict[str, dict]:
    """{key: {"id": accumulator id, "name": UI name, "value": int}} of one operator; a
    value below 0 (a size or time no task set, 3.5+) is None."""
    try:
        text = str(node.metrics().toString())
    except Exception:  # an operator without metrics: each figure it would give is not reported
        return {}
    return {key: {"id": int(ident), "name": name, "value": int(value) if int(value) >= 0 else None}
            for key, ident, name, value in METRIC.findall(text)}


@dataclass(frozen=True)
class Walk:
    """How one kind of plan is read: an operator's name (`SortMergeJoin`), its inputs in
    plan order (query stages and reuses looked into), its metrics as `metrics` gives them,
    and the id of the RDD its shuffle's map side ran (None: not readable)."""
    kind: Callable
    children: Callable
    metrics: Callable
    map_rdd: Callable


def map_rdd(exchange) -> int | None:
    """The id of the RDD a JVM shuffle's map side ran (None: it never ran)."""
    try:
        return int(exchange.shuffleDependency().rdd().id())
    except Exception:  # a shuffle that never ran
        return None

WRAPPERS = ("ReusedExchange", "AdaptiveSparkPlan")


def _operators(root, stop, walk: Walk) -> list[tuple[str, object]]:
    """(kind, operator) below `root` in pre-order, root included, query-stage and reuse
    wrappers looked through; an operator for which `stop(kind)` holds is listed but not
    descended into (the root always is)."""
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        kind = walk.kind(node)
        if kind.endswith("QueryStage") or kind in WRAPPERS:
            below = walk.children(node, kind)
            if below:  # Connect's metrics give a reused exchange no input: listed, as a leaf
                stack.extend(reversed(below))
                continue
        found.append((kind, node))
        if node is root or not stop(kind):
            stack.extend(reversed(walk.children(node, kind)))
    return found


def _top_join(plan, walk: Walk) -> tuple[object, object]:
    """(the plan's top join, the shuffle nearest above it, or None): the first join in
    pre-order, as every reader of the plan finds it."""
    stack = [(plan, None)]
    while stack:
        node, above = stack.pop()
        kind = walk.kind(node)
        if kind in JOIN_OPERATORS:
            return node, above
        above = node if kind == SHUFFLE else above
        stack.extend((child, above) for child in reversed(walk.children(node, kind)))
    return None, None


def _in_stage(kind: str) -> bool:
    """Where the join's own stage ends below it: an exchange, or another join."""
    return kind in (SHUFFLE, BROADCAST) or kind in JOIN_OPERATORS


def _sum(values: list) -> int | None:
    return None if any(v is None for v in values) else sum(values)


class _Reading:
    def __init__(self):
        self.not_reported: dict[str, str] = {}
        self.timings: dict[str, float] = {}
        self.shown: dict[str, int] = {}   # figures shown, never compared

    def value(self, field: str, kind: str, found: dict, key: str) -> int | None:
        if key not in found:
            engine = getattr(found, "engine", "")  # a native engine's operator (harness.spark.engines)
            self.not_reported[field] = f"not reported by {engine}" if engine else \
                f"{kind} reports no `{key}` on this Spark version"
            return None
        if found[key]["value"] is None:
            self.not_reported[field] = f"{kind}'s `{key}` was set by no task"
        return found[key]["value"]

    def time(self, kind: str, found: dict) -> None:
        for key, field, divisor in TIMINGS.get(kind, []):
            if key in found and found[key]["value"] is not None:
                self.timings[field] = round(self.timings.get(field, 0.0) + found[key]["value"] / divisor, 4)


def _feeds(kind: str) -> bool:
    """Where what fed a side ends below it: a shuffle, or another join (a broadcast is
    looked through: under AQE it may broadcast a shuffle stage that ran first)."""
    return kind == SHUFFLE or kind in JOIN_OPERATORS


def _side(node, reading: _Reading, side: str, walk: Walk) -> dict:
    """What fed one side of the join: its shuffle or broadcast, and the partitions the
    join's tasks read (after AQE's coalescing and skew splits)."""
    out = {"shuffle_bytes": 0, "shuffle_records": 0, "broadcast_bytes": 0, "partitions": None,
           "coalesced_partitions": 0, "skew_splits": 0}
    if walk.kind(node) in JOIN_OPERATORS:
        return out  # another join's output, in the same stage: nothing read from a shuffle
    shuffled, read = None, None
    for kind, operator in _operators(node, _feeds, walk):
        if kind in JOIN_OPERATORS:
            continue  # a join below this side: its own inputs are its cost
        if kind == "ReusedExchange":  # reached only where the walk cannot look into it
            for field in ("shuffle_bytes", "shuffle_records", "broadcast_bytes", "partitions"):
                reading.not_reported[f"{side}.{field}"] = "the exchange this side reuses sends no metrics of its own"
            out.update(shuffle_bytes=None, shuffle_records=None, broadcast_bytes=None)
            return out
        found = walk.metrics(operator)
        reading.time(kind, found)
        if kind == SHUFFLE:
            # the rows' own size ("data size"): the compressed bytes written depend on the
            # order rows reach the writer (3.0.3: 194,568 and 194,484 B for one query)
            out["shuffle_bytes"] = _add(out["shuffle_bytes"], reading.value(f"{side}.shuffle_bytes", kind, found,
                                                                            "dataSize"))
            if found.get("shuffleBytesWritten", {}).get("value") is not None:
                key = f"{side}.shuffle_written_bytes"
                reading.shown[key] = reading.shown.get(key, 0) + found["shuffleBytesWritten"]["value"]
            out["shuffle_records"] = _add(out["shuffle_records"], reading.value(
                f"{side}.shuffle_records", kind, found, "shuffleRecordsWritten"))
            shuffled = shuffled or found
        elif kind == BROADCAST:
            out["broadcast_bytes"] = _add(out["broadcast_bytes"],
                                          reading.value(f"{side}.broadcast_bytes", kind, found, "dataSize"))
        elif kind in SHUFFLE_READS and read is None:
            read = (kind, found)
    if read is not None:  # AQE's read of the shuffle: what the join's tasks read
        kind, found = read
        out["partitions"] = reading.value(f"{side}.partitions", kind, found, "numPartitions")
        if "numPartitions" in found:
            # a read that reports metrics declares these only when it coalesced or split
            out["coalesced_partitions"] = (found.get("numCoalescedPartitions") or {"value": 0})["value"]
            out["skew_splits"] = (found.get("numSkewedSplits") or {"value": 0})["value"]
        else:  # 3.0's read reports no metrics at all
            out["coalesced_partitions"] = reading.value(f"{side}.coalesced_partitions", kind, found,
                                                        "numCoalescedPartitions")
            out["skew_splits"] = reading.value(f"{side}.skew_splits", kind, found, "numSkewedSplits")
    elif shuffled is not None:
        out["partitions"] = reading.value(f"{side}.partitions", SHUFFLE, shuffled, "numPartitions")
    return out  # partitions None: no shuffle feeds this side


def _add(total: int | None, value: int | None) -> int | None:
    return None if total is None or value is None else total + value


def of(plan, walk: Walk, stages=None) -> dict | None:
    """The cost of the plan's top join (None: the plan has no join). `stages`: the
    stages of the run (harness.spark.stages.RunStages), for the join stage's tasks."""
    join, above = _top_join(plan, walk)
    if join is None:
        return None
    kind = walk.kind(join)
    reading = _Reading()
    children = walk.children(join, kind)
    out: dict = {side: _side(child, reading, side, walk) for side, child in zip(SIDES, children)}
    joined = walk.metrics(join)
    reading.time(kind, joined)
    spill, peak = [], []
    for below_kind, operator in _operators(join, lambda kind: False, walk):
        found = joined if operator is join else walk.metrics(operator)
        if "spillSize" in found:
            spill.append(found["spillSize"]["value"] or 0)
        elif below_kind in SPILLING:  # it may have spilled, and this version does not say
            spill.append(reading.value("spill_bytes", below_kind, found, "spillSize"))
    for stage_kind, operator in _operators(join, _in_stage, walk):
        if stage_kind in STAGE_OPERATORS:
            found = walk.metrics(operator)
            reading.time(stage_kind, found)
            if getattr(found, "engine", "") and "peakMemory" not in found:
                # an engine's operator that keeps no memory figure (Comet's sorts): the peak
                # is the rest's, and the record says whose memory it leaves out
                reading.not_reported[f"peak_memory of {stage_kind}"] = f"not reported by {found.engine}: not counted"
                continue
            peak.append(reading.value("peak_memory", stage_kind, found, "peakMemory"))
    if kind == "ShuffledHashJoin":
        peak.append(reading.value("peak_memory", kind, joined, "buildDataSize"))
    elif "peakMemory" in joined:  # an engine's sort-merge join: the memory of its buffered side
        peak.append(joined["peakMemory"]["value"])
    out["spill_bytes"] = _sum(spill)
    out["peak_memory"] = _sum(peak)
    out["output_rows"] = reading.value("output_rows", kind, joined, "numOutputRows")
    out.update(_stage(stages, walk.map_rdd(above) if above is not None else None, reading))
    out["not_reported"] = reading.not_reported
    out["timings"] = reading.timings
    out["shown"] = reading.shown
    return out


def _stage(stages, rdd_id: int | None, reading: _Reading) -> dict:
    """The tasks of the join's stage: the map side of the shuffle above the join, else
    the run's result stage."""
    found = stages.tasks_of(rdd_id) if stages is not None else "the stages of the run were not read"
    if isinstance(found, str):
        for field in ("tasks", "max_task_rows"):
            reading.not_reported[field] = found
        return {"tasks": None, "max_task_rows": None}
    if found.max_task_rows is None:
        reading.not_reported["max_task_rows"] = f"stage {found.stage} kept no summary of its tasks"
    return {"tasks": found.tasks, "max_task_rows": found.max_task_rows}
