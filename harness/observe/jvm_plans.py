"""Read join strategies from Spark's plan objects (through Py4J), not from explain text.

The physical walk unwraps what hides children from a naive traversal:
AdaptiveSparkPlanExec (its current/final plan), *QueryStageExec (their plan),
ReusedExchangeExec (its child). Join nodes are reported in pre-order, which is the
order a person reads them top-down in `explain()`.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from harness.core.vocab import BUILD_SIDES, JOIN_OPERATORS, NO_JOIN, PLAN_TEXT_LIMIT, spark_version
from harness.observe import cost as costs
from harness.observe import filter_model, filter_sides
from harness.observe.plan_nodes import children as _children
from harness.observe.plan_nodes import kind as _kind
from harness.observe.plan_nodes import raw_kind as _raw_kind
from harness.observe.plan_nodes import safe_call as _safe_call
from harness.observe.plan_nodes import safe_str as _safe_str
from harness.observe.plan_nodes import unwrap_option as _unwrap_option
from harness.observe.plan_scans import (
    LEAF_SCANS,
    OTHER_TABLE_SCANS,
    batch_scan,
    file_scan,
    other_scan,
)
from harness.observe.plan_scans import engine_scan_original as _engine_scan_original
from harness.spark import engines


@dataclass
class JoinNode:
    strategy: str
    build_side: str            # left, right or none
    join_type: str             # Spark's name, e.g. LeftOuter, LeftAnti
    left_keys: str
    right_keys: str
    condition: str
    null_aware: bool = False
    skew: bool = False               # AQE split skewed partitions of this join
    tables: list | None = None       # catalog tables below it, when asked for
    shuffles: dict | None = None     # {"left": n, "right": n}: shuffle exchanges below each side
    # {"left": [scan, ...], "right": [...]}: the file scans below each side (`file_scan`)
    scans: dict | None = None
    # Under a native engine (harness.spark.engines): whether this join ran natively, and
    # for a join left to Spark, the engine's reasons for it and for the operators below
    # it down to the next join ("Operator: reason"); None without an engine.
    native: bool | None = None
    fallback: list | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _build_side(node, kind: str) -> str:
    if kind in ("CartesianProduct", "SortMergeJoin"):
        return "none"
    return BUILD_SIDES.get(_safe_str(lambda: node.buildSide()), "none")


def _join_node(node, kind: str) -> JoinNode:
    build = _build_side(node, kind)
    condition = _safe_str(lambda: node.condition())
    null_aware = _safe_str(lambda: node.isNullAwareAntiJoin()).lower() == "true"
    skew = kind in ("SortMergeJoin", "ShuffledHashJoin") and _safe_str(lambda: node.isSkewJoin()).lower() == "true"
    native = fallback = None
    if engines.engine_loaded(node):
        native = engines.is_native(_raw_kind(node))
        fallback = None if native else _fallback_below(node, kind)
    return JoinNode(
        strategy=kind,
        build_side=build,
        join_type=_safe_str(lambda: node.joinType()),
        left_keys=_safe_str(lambda: node.leftKeys()),
        right_keys=_safe_str(lambda: node.rightKeys()),
        condition=_unwrap_option(condition),
        null_aware=null_aware,
        skew=skew,
        native=native,
        fallback=fallback,
    )


# Where the join's own stage ends below it: what lies under an exchange ran in another stage.
STAGE_BOUNDARIES = ("Exchange", "BroadcastExchange", "ReusedExchange")


def _fallback_below(join, kind: str) -> list[str]:
    """The engine's reasons for leaving the join to Spark, and for the operators of the
    join's own stage below it (a scan, an expression, the exchanges that feed it): "Operator:
    reason", in plan order. Nothing below an exchange (another stage: a Comet shuffle may
    carry rows Spark produced) nor below another join (it has its own)."""
    found, stack = [], [(join, kind)]
    while stack:
        node, node_kind = stack.pop()
        found += [f"{_raw_kind(node)}: {reason}" for reason in engines.fallback_reasons(node)]
        if node is join or (node_kind not in JOIN_OPERATORS and node_kind not in STAGE_BOUNDARIES):
            stack.extend((child, _kind(child)) for child in reversed(_children(node, node_kind)))
    return list(dict.fromkeys(found))


def join_nodes(physical_plan, table_names: dict | None = None) -> list[JoinNode]:
    """Every join operator of a physical plan, pre-order, each with the shuffle exchanges
    below each of its sides (what bucketing or a reused partitioning saves). With
    `table_names` (catalog table → scenario name), each join also lists the tables below
    it: the join order."""
    found: list[JoinNode] = []

    def visit(node, record: bool = True) -> tuple[set, int, list]:
        """(tables, shuffle exchanges, file scans) of the subtree; `record` False: a cached
        relation's plan, whose tables count and whose joins and shuffles do not (they ran
        when the cache was built)."""
        kind = _kind(node)
        original = _engine_scan_original(node, kind)
        if original is not None:
            node, kind = original, _kind(original)
        simple = _safe_str(lambda: node.getClass().getSimpleName()) if kind.startswith(LEAF_SCANS) else ""
        if simple == "FileSourceScanExec":
            scan = file_scan(node, table_names)
            return ({scan["table"]} if table_names is not None and scan["table"] else set()), 0, [scan]
        if kind.startswith("BatchScan"):
            scan = batch_scan(node, table_names)
            return ({scan["table"]} if table_names is not None and scan["table"] else set()), 0, [scan]
        if simple in OTHER_TABLE_SCANS:
            scan = other_scan(node, OTHER_TABLE_SCANS[simple](node), table_names)
            return ({scan["table"]} if table_names is not None and scan["table"] else set()), 0, [scan]
        if simple == "InMemoryTableScanExec":  # a cached relation: the tables its cache was built from
            cached = _safe_call(lambda: node.relation().cachedPlan())
            return (visit(cached, record=False)[0] if cached is not None else set()), 0, []
        join = None
        if kind in JOIN_OPERATORS and record:
            join = _join_node(node, kind)
            found.append(join)
        below = [visit(child, record) for child in _children(node, kind)]
        if join is not None and len(below) == 2:
            join.shuffles = {"left": below[0][1], "right": below[1][1]}
            join.scans = {"left": below[0][2], "right": below[1][2]}
        tables = set().union(*[t for t, _, _ in below])
        if join is not None and table_names is not None:
            join.tables = sorted(tables)
        return (tables, sum(n for _, n, _ in below) + (1 if kind == SHUFFLE_EXCHANGE and record else 0),
                [scan for _, _, scans in below for scan in scans] if record else [])

    visit(physical_plan)
    return found


SUBQUERY_ID = re.compile(r"#\d+")


def subquery_joins(physical_plan, table_names: dict | None = None) -> list[dict]:
    """The joins inside the plan's subqueries, kept apart from the main plan's: for each
    subquery Spark plans apart (a scalar or IN subquery, a dynamic pruning subquery over a
    broadcast, one nested in another), in the order the plan reaches them (pre-order),
    `{"subquery": its name without expression ids, "kind": its operator, "joins": [...]}`;
    a subquery without a join is left out, and a reused one (ReusedSubquery) is the one it
    reuses."""
    if _holds_no_subquery(physical_plan):
        return []
    found, seen = [], set()
    stack = [physical_plan]
    while stack:
        node = stack.pop()
        kind = _kind(node)
        subqueries = node.subqueries()
        nested = []
        for i in range(subqueries.size()):
            subquery = subqueries.apply(i)
            sub_kind = _kind(subquery)
            if sub_kind == "ReusedSubquery" or subquery in seen:
                continue
            seen.add(subquery)
            body = _safe_call(subquery.child)
            if body is None:
                continue
            joins = join_nodes(body, table_names)
            if joins:
                name = SUBQUERY_ID.sub("", _safe_str(subquery.name)) or sub_kind
                found.append({"subquery": name, "kind": sub_kind, "joins": [j.to_dict() for j in joins]})
            nested.append(body)
        stack.extend(reversed(nested))
        stack.extend(reversed(_children(node, kind)))
    return found


# Leaves below which a tree goes on out of the reach of its root's subqueriesAll.
OPAQUE_LEAVES = ("AdaptiveSparkPlan", "ReusedExchange", "ReusedSubquery")


# Every join operator's name holds one of these (Spark's, and a native engine's
# CometBroadcastHashJoin, ...JoinExecTransformer): a plan text without them has no join.
JOIN_WORD = re.compile(r"Join|CartesianProduct")


def _holds_no_subquery(plan) -> bool:
    """Whether the plan holds no subquery with a join, in a few JVM calls where its root
    reaches its whole tree (an adaptive plan before it runs, a static plan): no plan of
    the root's subqueriesAll (nested ones included) names a join operator in its tree
    string — most plans hold no subquery, and a dynamic pruning subquery only a scan
    under a broadcast — and no leaf is a query stage or another wrapper. Walking every
    operator for them cost as much as reading the joins. False where that cannot be told
    so (then the plan is walked)."""
    texts = _subquery_texts(plan)
    return texts is not None and not any(JOIN_WORD.search(text) for text in texts)


# (the plan last read, whether it was final, its subqueries' texts): read once per plan
# and stage — an adaptive plan object is the one that runs, so it is read again once final.
_SUBQUERY_TEXTS: list = [None, None, None]


def _subquery_texts(plan) -> list[str] | None:
    """The tree strings of every subquery the plan's root reaches (subqueriesAll), where
    the root reaches its whole tree; None where it does not (a query stage or another
    wrapper among its leaves) or a text cannot be read."""
    adaptive = _kind(plan) == "AdaptiveSparkPlan"
    final = _safe_str(plan.isFinalPlan) if adaptive else ""
    if _SUBQUERY_TEXTS[0] is plan and _SUBQUERY_TEXTS[1] == final:
        return _SUBQUERY_TEXTS[2]
    root = plan.executedPlan() if adaptive else plan
    texts: list[str] | None = []
    try:
        subqueries = root.subqueriesAll()
        for i in range(subqueries.size()):
            text = _safe_str(subqueries.apply(i).treeString)
            if not text:  # unreadable: walked
                texts = None
                break
            texts.append(text)
        if texts is not None:
            leaves = root.collectLeaves()
            kinds = [_raw_kind(leaves.apply(i)) for i in range(leaves.size())]
            if any(kind.endswith("QueryStage") or kind in OPAQUE_LEAVES for kind in kinds):
                texts = None
    except Exception:  # a plan object without these (not a Spark plan)
        texts = None
    _SUBQUERY_TEXTS[:] = [plan, final, texts]
    return texts


# ShuffleExchangeExec's node name (a BroadcastExchange is not a shuffle)
SHUFFLE_EXCHANGE = "Exchange"


def top_join(physical_plan) -> dict:
    """Strategy and build side of the first join in pre-order (the one `join_nodes` lists
    first), read without walking the rest of the plan."""
    node = _first(physical_plan, lambda kind: kind in JOIN_OPERATORS)
    if node is None:
        return {"strategy": NO_JOIN, "build_side": "none"}
    kind = _kind(node)
    return {"strategy": kind, "build_side": _build_side(node, kind)}


def runtime_sides(final_plan) -> dict | None:
    """Run-time sizes AQE saw for the two inputs of the final plan's top join: for each
    side, the first shuffle query stage below it (data size and rows from the stage's
    statistics; partitions, non-empty partitions and the largest partition from its map
    output). None when the plan has no join or a side had no shuffle stage (a broadcast
    planned from the start: nothing for AQE to re-plan)."""
    top = _first(final_plan, lambda kind: kind in JOIN_OPERATORS)
    if top is None:
        return None
    kind = _kind(top)
    children = _children(top, kind)
    if len(children) != 2:
        return None
    sides = [_stage_stats(_first(child, lambda k: k == "ShuffleQueryStage")) for child in children]
    if None in sides:
        return None
    return {"left": sides[0], "right": sides[1]}


# How harness.observe.cost reads a JVM plan: this module's walk, the operators' own metrics.
def _cost_metrics(node) -> dict:
    """An operator's metrics under Spark's keys (a native engine's operator's translated)."""
    return engines.spark_metrics(_raw_kind(node), costs.metrics(node), node)


COST_WALK = costs.Walk(_kind, _children, _cost_metrics, costs.map_rdd)


def cost(final_plan, stages=None) -> dict | None:
    """What the top join of the plan that ran cost (harness.observe.cost)."""
    return costs.of(final_plan, COST_WALK, stages)


def _first(node, wanted):
    stack = [node]
    while stack:
        current = stack.pop()
        kind = _kind(current)
        if wanted(kind):
            return current
        stack.extend(reversed(_children(current, kind)))
    return None


def _stage_stats(stage) -> dict | None:
    if stage is None:
        return None
    stats = _safe_call(lambda: stage.getRuntimeStatistics())         # 3.2+
    if stats is None:
        computed = _safe_call(lambda: stage.computeStats())          # 3.0, 3.1
        stats = computed.get() if computed is not None and computed.isDefined() else None
    out = {"size_in_bytes": int(str(stats.sizeInBytes())) if stats is not None else None,
           "row_count": None, "partitions": None, "non_empty_partitions": None, "max_partition_bytes": None}
    if stats is not None:
        out["row_count"] = _row_count(stats)
    map_stats = _safe_call(lambda: stage.mapStats())
    if map_stats is not None and map_stats.isDefined():
        sizes = list(map_stats.get().bytesByPartitionId())
        out.update(partitions=len(sizes), non_empty_partitions=sum(1 for b in sizes if b > 0),
                   max_partition_bytes=max(sizes) if sizes else 0)
    return out


def operator_counts(physical_plan) -> dict[str, int]:
    """How often each operator occurs (class name without `Exec`), subqueries included."""
    counts: dict[str, int] = {}
    stack = [physical_plan]
    while stack:
        node = stack.pop()
        name = node.getClass().getSimpleName()
        name = engines.spark_class(name[:-4] if name.endswith("Exec") else name)
        counts[name] = counts.get(name, 0) + 1
        stack.extend(_children(node, _kind(node)))
        subqueries = node.subqueries()
        stack.extend(subqueries.apply(i) for i in range(subqueries.size()))
    return dict(sorted(counts.items()))


def current_plan(dataframe):
    """The physical plan Spark will run (before an action) or ran (after one)."""
    return dataframe._jdf.queryExecution().executedPlan()


# Executions keyed by the plan's canonical form can be shared (harness.spark.executions).
shares = True


def stream_plan(query):
    """The executed plan of a streaming query's last micro-batch."""
    return query._jsq.streamingQuery().lastExecution().executedPlan()


def ran_plan(dataframe):
    """The plan that ran, after an action: for AQE, its final plan."""
    return current_plan(dataframe)


def is_adaptive(plan) -> bool:
    return plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec"


def final_plan_reached(plan) -> bool:
    # isFinalPlan is private in AdaptiveSparkPlanExec; its node string shows it.
    return is_adaptive(plan) and "isFinalPlan=true" in jvm_text(plan, limit=200).split("\n", 1)[0]


def plan_text(plan) -> str:
    """Indented tree text for reports (the adaptive wrapper shows its current plan),
    capped: Faker pools are literals and would make it huge."""
    text = jvm_text(plan, limit=PLAN_TEXT_LIMIT + 1)
    return text if len(text) <= PLAN_TEXT_LIMIT else text[:PLAN_TEXT_LIMIT] + "\n... (truncated)"


# Py4J answers longer than its 8 KiB write buffer leave the JVM in two writes, and the
# second waits for the first's ACK, which Linux delays by 40 ms: every plan text cost
# 44 ms to receive (measured: 0.1 ms up to 8,000 characters, 41-44 ms from 8,200 on).
# Read in pieces that stay in one buffer as UTF-8 with escaped newlines (mostly ASCII:
# a piece that does not fit is only slower).
TEXT_PIECE = 3500


def jvm_text(obj, limit: int | None = None) -> str:
    """`obj.toString()`, built in the JVM and read in pieces; at most `limit` characters."""
    from pyspark import SparkContext

    jvm = SparkContext._jvm
    is_high_surrogate = _jvm_class(jvm, "java.lang.Character").isHighSurrogate
    builder = _jvm_class(jvm, "java.lang.StringBuilder")().append(obj)
    length = builder.length()  # UTF-16 units; Python counts code points
    pieces, start, read = [], 0, 0
    while start < length and (limit is None or read < limit):
        end = min(start + TEXT_PIECE, length)
        if end < length and is_high_surrogate(builder.charAt(end - 1)):
            end -= 1  # a character outside the BMP stays whole
        pieces.append(str(builder.substring(start, end)))
        read += len(pieces[-1])
        start = end
    text = "".join(pieces)
    return text if limit is None else text[:limit]


def join_estimates(dataframe, logical: bool = True) -> list[dict]:
    """sizeInBytes (and row count, when known) of each join's inputs in the optimized
    logical plan, pre-order. These are the numbers JoinSelection compares. The top join
    also carries what else JoinSelection reads (join type, hints, equi keys): the
    inputs of harness.observe.model."""
    out = []
    jvm = dataframe._sc._jvm  # DataFrame.sparkSession arrived in 3.3
    stack = [dataframe._jdf.queryExecution().optimizedPlan()]
    while stack:
        node = stack.pop()
        if _kind(node) == "Join":
            entry = {"left": _stats(node.left()), "right": _stats(node.right())}
            if logical and not out:
                entry["logical"] = _logical_join(jvm, node, _session_sizes(dataframe))
            out.append(entry)
        seq = node.children()
        stack.extend(reversed([seq.apply(i) for i in range(seq.size())]))
    return out


_HINT = re.compile(r"(left|right)Hint=\(strategy=(\w+)\)")


def _session_sizes(dataframe) -> tuple | None:
    """(spark.sql.defaultSizeInBytes: a relation without statistics, autoBroadcastJoinThreshold),
    what InjectRuntimeFilter sizes by; None before 3.3 (no runtime filters to read)."""
    version = _safe_str(lambda: dataframe._jdf.sparkSession().version())
    if version and spark_version(version) < spark_version(filter_model.SINCE):
        return None
    conf = _safe_call(lambda: dataframe._jdf.sparkSession().sessionState().conf())
    return (_safe_call(lambda: int(str(conf.defaultSizeInBytes()))),
            _safe_call(lambda: int(str(conf.autoBroadcastJoinThreshold()))))


def _logical_join(jvm, node, sizes: tuple | None = (None, None)) -> dict:
    """The logical join as JoinSelection sees it: type, strategy hints per side, whether
    ExtractEquiJoinKeys matches and its keys are orderable, and whether the single-column
    null-aware anti join pattern (3.1+) matches; and its sides as InjectRuntimeFilter reads
    them (harness.observe.filter_sides)."""
    hints: dict[str, list[str]] = {"left": [], "right": []}
    for side, name in _HINT.findall(_safe_str(lambda: node.hint())):
        hints[side].append(name.upper())
    equi = _safe_call(lambda: _jvm_class(jvm, f"{CATALYST}.planning.ExtractEquiJoinKeys").unapply(node))
    orderable = None
    if equi is not None and equi.isDefined():
        keys = equi.get()._2()
        orderable = _safe_call(lambda: bool(_jvm_class(jvm, f"{CATALYST}.expressions.RowOrdering").isOrderable(keys)))
    naaj = _safe_call(lambda: _jvm_class(jvm, f"{CATALYST}.planning.ExtractSingleColumnNullAwareAntiJoin")
                      .unapply(node).isDefined())
    matched = equi.get() if equi is not None and equi.isDefined() else None
    return {"join_type": _safe_str(lambda: node.joinType()), "hints": hints,
            "equi": matched is not None, "orderable": orderable, "null_aware_candidate": bool(naaj),
            "filter_sides": _safe_call(lambda: filter_sides.of_join(matched, node, *sizes)) if sizes else None}


CATALYST = "org.apache.spark.sql.catalyst"
_CLASSES: dict = {"jvm": None, "found": {}}


def _jvm_class(jvm, name: str):
    """A JVM class by its full name, looked up once per JVM (each package step of a
    lookup is a Py4J round trip). The JVM view is held, so a new JVM's is never taken
    for it."""
    if _CLASSES["jvm"] is not jvm:
        _CLASSES.update(jvm=jvm, found={})
    found = _CLASSES["found"]
    if name not in found:
        target = jvm
        for part in name.split("."):
            target = getattr(target, part)
        found[name] = target
    return found[name]


def _stats(node) -> dict:
    stats = node.stats()
    return {"size_in_bytes": int(str(stats.sizeInBytes())), "row_count": _row_count(stats)}


def _row_count(stats) -> int | None:
    """Statistics.rowCount: Scala's Option[BigInt], known only sometimes (CBO, run time)."""
    rows = _unwrap_option(_safe_str(lambda: stats.rowCount()))
    return int(rows) if rows else None
