"""Reading the runtime filters of a plan (harness.observe.runtime_filters says what they
are): bloom filters from the JVM's plan objects (here) or from a printed plan (Spark
Connect: harness.observe.printed_plans), IN-subquery filters from the join nodes already
read. `read` is the one entry: the runner's plan views and capture both use it."""
from __future__ import annotations

from harness.core.vocab import JOIN_OPERATORS, SEMI_JOIN_REDUCTION
from harness.observe.jvm_plans import SUBQUERY_ID, _subquery_texts
from harness.observe.plan_nodes import children as _children
from harness.observe.plan_nodes import kind as _kind
from harness.observe.plan_nodes import safe_call as _safe_call
from harness.observe.plan_nodes import safe_str as _safe_str
from harness.observe.plan_nodes import unwrap_option as _unwrap_option
from harness.observe.plan_scans import batch_scan
from harness.observe.plan_scans import engine_scan_original as _engine_scan_original
from harness.observe.printed_plans import PrintedPlan
from harness.observe.printed_plans import runtime_filters as printed_bloom_filters
from harness.observe.runtime_filters import in_subquery_filters
from harness.spark import engines


def read(plan, joins: list[dict], table_names: dict | None = None, final: bool = False,
         semi_join_reduction: bool = False) -> list[dict] | None:
    """Every runtime filter of a plan — its bloom filters, then, where the session has
    semi-join reduction on (`semi_join_reduction`: the only way Spark injects one), the
    IN-subquery filters among `joins` (its join nodes as dicts: a query's own semi join
    whose key a file named like Spark's alias is never taken for one where it is off);
    None where the plan's filters cannot be read (a final plan rebuilt from Spark
    Connect's metrics holds no arguments)."""
    reader = printed_bloom_filters if isinstance(plan, PrintedPlan) else jvm_bloom_filters
    blooms = reader(plan, table_names, final=final)
    if blooms is None:
        return None
    return blooms + (in_subquery_filters(joins) if semi_join_reduction else [])


def semi_join_reduction_on(conf_value) -> bool:
    """Whether the session injects IN-subquery runtime filters (`conf_value`: key → value)."""
    return str(conf_value(SEMI_JOIN_REDUCTION)).strip().lower() == "true"


# The creation side's aggregate of a bloom filter (InjectRuntimeFilter, 3.3+), as every
# plan's text names it: a plan without it has no bloom filter.
BLOOM_AGGREGATE = "bloom_filter_agg"
MIGHT_CONTAIN = "might_contain("  # how the filter's condition prints it: only such a Filter is walked
SCAN_KINDS = ("Scan ", "BatchScan", "InMemoryTableScan", "HiveTableScan", "LocalTableScan", "Range")


def jvm_bloom_filters(physical_plan, table_names: dict | None = None, final: bool = False) -> list[dict]:
    """The runtime filters of a plan (InjectRuntimeFilter, 3.3+: a filter one side of a
    shuffled join gets at run time from the other side's keys), in the order the plan
    reaches them: for each, `kind` (`bloom_filter`: `might_contain` over a bloom filter
    aggregated in a scalar subquery), `table` (the application side: the scan it filters),
    `key` (its column), `creation` (the tables the filter is built from) and
    `creation_key`; in a final adaptive plan also `ran` (whether its subquery was
    computed). Where no subquery of the plan aggregates a bloom filter (read from the
    subqueries' texts, as jvm_plans' `_holds_no_subquery`), nothing is walked."""
    if _no_subquery_text_holds(physical_plan, BLOOM_AGGREGATE):
        return []
    found, stack = [], [physical_plan]
    while stack:
        node = stack.pop()
        kind = _kind(node)
        if kind == "Filter" and MIGHT_CONTAIN in _safe_str(lambda: node.condition().toString()):
            for might_contain in _expressions_named(_safe_call(node.condition), "BloomFilterMightContain"):
                found.append(_bloom_filter(node, might_contain, table_names, final))
        stack.extend(reversed(_children(node, kind)))
    return found


def _bloom_filter(filter_node, might_contain, table_names: dict | None, final: bool) -> dict:
    subquery = _safe_call(lambda: might_contain.left().plan())   # SubqueryExec over the creation side
    scans = _scans_below(subquery) if subquery is not None else []
    applied = next(iter(_scans_below(filter_node, stop_at_joins=True)), None)
    out = {"kind": "bloom_filter", "table": _scan_table(applied, table_names) if applied is not None else None,
           "key": _column_of(_safe_call(lambda: might_contain.right().children().apply(0))),
           "creation": sorted({t for t in (_scan_table(scan, table_names) for scan in scans) if t}),
           "creation_key": _creation_key(subquery) if subquery is not None else None}
    if final:
        out["ran"] = _subquery_ran(subquery)
    return out


def _no_subquery_text_holds(plan, word: str) -> bool:
    """True where the plan's root reaches its whole tree and no subquery of it names
    `word` in its tree string (`_subquery_texts`): nothing to walk for."""
    texts = _subquery_texts(plan)
    return texts is not None and not any(word in text for text in texts)


def _expressions_named(expression, class_name: str) -> list:
    """The expressions of a tree (an expression's, through its children) of that class."""
    found, stack = [], [expression] if expression is not None else []
    while stack:
        current = stack.pop()
        if _safe_str(lambda: current.getClass().getSimpleName()) == class_name:
            found.append(current)
        children = _safe_call(current.children)
        stack.extend(children.apply(i) for i in range(children.size() if children is not None else 0))
    return found


def _scans_below(node, stop_at_joins: bool = False) -> list:
    """The scans of a subtree, pre-order (below a join too, unless `stop_at_joins`)."""
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        kind = _kind(current)
        if kind.startswith(SCAN_KINDS) or kind.startswith(engines.SCAN_PREFIXES):
            found.append(current)
            continue
        if stop_at_joins and kind in JOIN_OPERATORS:
            continue
        stack.extend(reversed(_children(current, kind)))
    return found


def _scan_table(scan, table_names: dict | None) -> str | None:
    """The table a scan reads, by the scenario's name where it has one."""
    kind = _kind(scan)
    original = _engine_scan_original(scan, kind)
    if original is not None:
        scan, kind = original, _kind(original)
    if kind.startswith("BatchScan"):
        return batch_scan(scan, table_names)["table"]
    table = (_safe_str(lambda: scan.tableIdentifier().get().table())                      # a file scan
             or _safe_str(lambda: scan.relation().tableMeta().identifier().table())        # a Hive table
             or _unwrap_option(_safe_str(lambda: scan.relation().cacheBuilder().tableName())))  # a cached one
    table = table.rsplit(".", 1)[-1].strip("`") if table else ""
    return (table_names or {}).get(table, table) or None


def _column_of(expression) -> str | None:
    """An expression's column name (an attribute's), else its SQL without expression ids."""
    if expression is None:
        return None
    name = _safe_str(expression.name) if _safe_str(lambda: expression.getClass().getSimpleName()) == \
        "AttributeReference" else ""
    return name or SUBQUERY_ID.sub("", _safe_str(expression.sql)) or None


def _creation_key(subquery) -> str | None:
    """The column the bloom filter is aggregated over: `bloom_filter_agg(xxhash64(key))`."""
    stack = [subquery]
    while stack:
        node = stack.pop()
        kind = _kind(node)
        if kind.endswith("Aggregate"):
            expressions = _safe_call(node.aggregateExpressions)
            for i in range(expressions.size() if expressions is not None else 0):
                for agg in _expressions_named(expressions.apply(i), "BloomFilterAggregate"):
                    return _column_of(_safe_call(lambda: agg.child().children().apply(0)))
        stack.extend(reversed(_children(node, kind)))
    return None


def _subquery_ran(subquery) -> bool | None:
    """Whether a subquery's result was computed (its `dataSize` metric, set when it is)."""
    metric = _safe_call(lambda: subquery.metrics().get("dataSize"))
    if metric is None or not metric.isDefined():
        return None
    return int(metric.get().value()) > 0
