"""The Spark SQL configs a scenario may set, each with the type of value it takes.

A scenario file is untrusted: it may only set runtime SQL configs of the families that
decide or affect a join (join selection, AQE, CBO and statistics, codegen, shuffle,
caching, ANSI, time zone). Everything else is refused when the file is loaded: static
configs (which make a per-case restore fail half-way), catalog plugins
(`spark.sql.catalog.*`, which stay loaded for later scenarios), class names the session
would load, file access switches. Values are checked for their type here too, so a
threshold written as `not-a-number` is a one-line error at collection, not a run-time
failure.
"""
from __future__ import annotations

import difflib
import math
import re

BOOL, INT, BYTES, NUMBER, TIMEZONE, RULES = "boolean", "integer", "bytes", "number", "time zone", "rule list"

_BYTES_TEXT = re.compile(r"^-?[0-9]+\s*([kmgtp]i?b?|b)?$", re.IGNORECASE)
_TIMEZONE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*|[+-]\d{1,2}(?::\d{2})?)$")
_RULES = re.compile(r"^[A-Za-z0-9_.$]+(?:\s*,\s*[A-Za-z0-9_.$]+)*$")


def _enum(*values: str) -> tuple:
    return ("one of",) + values


ALLOWED: dict[str, object] = {
    # join selection
    "spark.sql.autoBroadcastJoinThreshold": BYTES,
    "spark.sql.join.preferSortMergeJoin": BOOL,
    "spark.sql.shuffledHashJoinFactor": INT,
    "spark.sql.crossJoin.enabled": BOOL,
    "spark.sql.optimizeNullAwareAntiJoin": BOOL,
    "spark.sql.join.forceApplyShuffledHashJoin": BOOL,
    "spark.sql.broadcastTimeout": INT,
    "spark.sql.defaultSizeInBytes": BYTES,
    "spark.sql.requireAllClusterKeysForCoPartition": BOOL,
    "spark.sql.requireAllClusterKeysForDistribution": BOOL,
    "spark.sql.sources.bucketing.enabled": BOOL,
    "spark.sql.bucketing.coalesceBucketsInJoin.enabled": BOOL,
    "spark.sql.sortMergeJoinExec.buffer.in.memory.threshold": INT,
    "spark.sql.sortMergeJoinExec.buffer.spill.threshold": INT,
    "spark.sql.cartesianProductExec.buffer.in.memory.threshold": INT,
    "spark.sql.cartesianProductExec.buffer.spill.threshold": INT,
    # adaptive query execution
    "spark.sql.adaptive.enabled": BOOL,
    "spark.sql.adaptive.forceApply": BOOL,
    "spark.sql.adaptive.autoBroadcastJoinThreshold": BYTES,
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": BYTES,
    "spark.sql.adaptive.coalescePartitions.enabled": BOOL,
    "spark.sql.adaptive.coalescePartitions.parallelismFirst": BOOL,
    "spark.sql.adaptive.coalescePartitions.minPartitionSize": BYTES,
    "spark.sql.adaptive.coalescePartitions.minPartitionNum": INT,
    "spark.sql.adaptive.coalescePartitions.initialPartitionNum": INT,
    "spark.sql.adaptive.localShuffleReader.enabled": BOOL,
    "spark.sql.adaptive.skewJoin.enabled": BOOL,
    "spark.sql.adaptive.skewJoin.skewedPartitionFactor": NUMBER,
    "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": BYTES,
    "spark.sql.adaptive.forceOptimizeSkewedJoin": BOOL,
    "spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin": NUMBER,
    "spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold": BYTES,
    "spark.sql.adaptive.optimizeSkewsInRebalancePartitions.enabled": BOOL,
    "spark.sql.adaptive.optimizer.excludedRules": RULES,
    # CBO and statistics
    "spark.sql.cbo.enabled": BOOL,
    "spark.sql.cbo.planStats.enabled": BOOL,
    "spark.sql.cbo.joinReorder.enabled": BOOL,
    "spark.sql.cbo.joinReorder.dp.threshold": INT,
    "spark.sql.cbo.joinReorder.card.weight": NUMBER,
    "spark.sql.cbo.joinReorder.dp.star.filter": BOOL,
    "spark.sql.cbo.starSchemaDetection": BOOL,
    "spark.sql.cbo.starJoinFTRatio": NUMBER,
    "spark.sql.statistics.histogram.enabled": BOOL,
    "spark.sql.statistics.histogram.numBins": INT,
    "spark.sql.statistics.fallBackToHdfs": BOOL,
    # optimizer and execution
    "spark.sql.optimizer.excludedRules": RULES,
    "spark.sql.optimizer.dynamicPartitionPruning.enabled": BOOL,
    "spark.sql.optimizer.runtime.bloomFilter.enabled": BOOL,
    "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled": BOOL,
    "spark.sql.execution.reuseSubquery": BOOL,
    "spark.sql.exchange.reuse": BOOL,
    "spark.sql.execution.removeRedundantSorts": BOOL,
    "spark.sql.execution.removeRedundantProjects": BOOL,
    "spark.sql.execution.replaceHashWithSortAgg": BOOL,
    "spark.sql.subexpressionElimination.enabled": BOOL,
    "spark.sql.inMemoryColumnarStorage.compressed": BOOL,
    "spark.sql.inMemoryColumnarStorage.batchSize": INT,
    "spark.sql.inMemoryColumnarStorage.partitionPruning": BOOL,
    "spark.sql.files.maxPartitionBytes": BYTES,
    "spark.sql.files.openCostInBytes": BYTES,
    "spark.sql.leafNodeDefaultParallelism": INT,
    # codegen
    "spark.sql.codegen.wholeStage": BOOL,
    "spark.sql.codegen.fallback": BOOL,
    "spark.sql.codegen.factoryMode": _enum("FALLBACK", "CODEGEN_ONLY", "NO_CODEGEN"),
    "spark.sql.codegen.maxFields": INT,
    "spark.sql.codegen.hugeMethodLimit": INT,
    "spark.sql.codegen.splitConsumeFuncByOperator": BOOL,
    "spark.sql.codegen.aggregate.map.twolevel.enabled": BOOL,
    # shuffle
    "spark.sql.shuffle.partitions": INT,
    # semantics (these also shape generated data: see DATA_CONFS)
    "spark.sql.ansi.enabled": BOOL,
    "spark.sql.storeAssignmentPolicy": _enum("ANSI", "LEGACY", "STRICT"),
    "spark.sql.session.timeZone": TIMEZONE,
    "spark.sql.caseSensitive": BOOL,
    "spark.sql.legacy.timeParserPolicy": _enum("EXCEPTION", "LEGACY", "CORRECTED"),
}

# Configs under which a table's generated values (or their analysis) can differ: tables
# are generated while they are set, and cached per worker by their values.
DATA_CONFS = ("spark.sql.session.timeZone", "spark.sql.ansi.enabled", "spark.sql.storeAssignmentPolicy",
              "spark.sql.caseSensitive", "spark.sql.legacy.timeParserPolicy")

MAX_INT = (1 << 31) - 1


class ConfError(ValueError):
    """A config a scenario may not set, or a value of the wrong type (one line)."""


def check(key: str, value) -> None:
    """Raise ConfError unless a scenario may set `key` to `value`."""
    kind = ALLOWED.get(key)
    if kind is None:
        close = difflib.get_close_matches(key, list(ALLOWED), n=1, cutoff=0.85)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ConfError(f"'{key}' is not a config a scenario may set{hint}; "
                        "see README 'Security model' for the allowed ones")
    if isinstance(value, dict):  # {estimate_of: side, times, plus}: a size in bytes
        if kind != BYTES:
            raise ConfError(f"'{key}' takes a {_describe(kind)}; only sizes in bytes may be given as estimate_of")
        return
    if not _fits(kind, value):
        raise ConfError(f"'{key}' takes a {_describe(kind)}, not {value!r}")


def _fits(kind, value) -> bool:
    if kind == BOOL:
        return isinstance(value, bool) or (isinstance(value, str) and value.lower() in ("true", "false"))
    if isinstance(value, bool):
        return False
    if kind == INT:
        return _as_int(value) is not None and -1 <= _as_int(value) <= MAX_INT
    if kind == BYTES:
        if isinstance(value, int):
            return -1 <= value < (1 << 63)
        return isinstance(value, str) and bool(_BYTES_TEXT.match(value.strip())) and len(value) < 40
    if kind == NUMBER:
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                return False
        return isinstance(value, (int, float)) and math.isfinite(value)
    if kind == TIMEZONE:
        return isinstance(value, str) and len(value) < 64 and bool(_TIMEZONE.match(value))
    if kind == RULES:
        return isinstance(value, str) and len(value) < 2000 and bool(_RULES.match(value))
    return isinstance(value, str) and value.upper() in kind[1:]


def _as_int(value):
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,12}", value.strip()):
        return int(value)
    return None


def _describe(kind) -> str:
    if isinstance(kind, tuple):
        return "value " + "/".join(kind[1:])
    return {BOOL: "boolean (true/false)", INT: "whole number", BYTES: "size in bytes (e.g. 10485760 or '10MB')",
            NUMBER: "number", TIMEZONE: "time zone id (e.g. UTC, Europe/Paris, +02:00)",
            RULES: "comma-separated list of optimizer rule names"}[kind]


def data_conf(conf: dict) -> dict:
    """The configs of `conf` that shape generated data, as text."""
    return {key: str(conf[key]).lower() if isinstance(conf[key], bool) else str(conf[key])
            for key in DATA_CONFS if key in conf}
