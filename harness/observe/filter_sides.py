"""What InjectRuntimeFilter (Spark 3.3+) reads of a join's two sides, read from the
optimized logical plan's objects (the inputs of harness.observe.filter_model), and what it
did there: whether a side carries a bloom filter on this join's own key.

Per side: its largest scan (a leaf's sizeInBytes; Spark's default size — no statistics —
counts as 0, as the rule counts it), whether it is a selective filter over a scan (through
projections; the filter's condition likely selective as Spark's `isLikelySelective` reads
it), and whether an aggregate, a window or a join below it shuffles anyway."""
from __future__ import annotations

# Spark's PredicateHelper.isLikelySelective: the expressions it takes to filter out rows.
LIKELY_SELECTIVE = ("EqualTo", "EqualNullSafe", "LessThan", "LessThanOrEqual", "GreaterThan", "GreaterThanOrEqual",
                    "In", "InSet", "StartsWith", "EndsWith", "Contains", "Like", "RLike", "ILike", "LikeAll",
                    "NotLikeAll", "LikeAny", "NotLikeAny")
# Operators below an application side that shuffle whatever the join does (probablyHasShuffle).
SHUFFLING = ("Aggregate", "Window", "Join")
MIGHT_CONTAIN = "BloomFilterMightContain"
DYNAMIC_PRUNING = "DynamicPruningSubquery"


def of_join(keys, join, default_size: int | None, threshold: int | None) -> dict:
    """{left: facts, right: facts} of a logical Join node (py4j), each facts a dict:
    `max_scan_bytes`, `selective_filter`, `shuffle_below`, `bloom_filter` (a bloom filter
    on one of this side's join keys), `dynamic_pruning` (a dynamic partition pruning filter
    on one); `keys`: ExtractEquiJoinKeys' match of it (a py4j tuple), or None (no equi
    keys: no side can get a filter); `threshold`: autoBroadcastJoinThreshold in bytes (a
    join below a side shuffles where neither of its sides fits)."""
    ids = {"left": _ids(keys._2()) if keys is not None else set(),
           "right": _ids(keys._3()) if keys is not None else set()}
    return {side: _side(getattr(join, side)(), default_size, ids[side], threshold) for side in ("left", "right")}


def _ids(keys) -> set:
    """The exprIds of the join keys that are plain attributes."""
    found = set()
    for i in range(keys.size()):
        key_id = _expr_id(keys.apply(i))
        if key_id is not None:
            found.add(key_id)
    return found


def _name(obj) -> str:
    try:
        return str(obj.getClass().getSimpleName()).rstrip("$")
    except Exception:  # noqa: BLE001 — a py4j object of another shape: nothing known of it
        return ""


def _children(obj) -> list:
    try:
        seq = obj.children()
        return [seq.apply(i) for i in range(seq.size())]
    except Exception:  # noqa: BLE001
        return []


def _nodes(plan):
    stack = [plan]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(_children(node)))


def _expr_id(expression) -> int | None:
    try:
        return int(expression.exprId().id())
    except Exception:  # noqa: BLE001 — not an attribute: its lineage is not followed
        return None


def _side(plan, default_size: int | None, key_ids: set, threshold: int | None) -> dict:
    sizes, shuffle_below, bloom, pruned = [], False, False, False
    for node in _nodes(plan):
        kind = _name(node)
        if not _children(node):
            size = int(str(node.stats().sizeInBytes()))
            sizes.append(0 if default_size is not None and size == default_size else size)
        elif kind == "Join":
            shuffle_below = shuffle_below or _probably_shuffles(node, threshold)
        elif kind in SHUFFLING:
            shuffle_below = True
        elif kind == "Filter":
            bloom = bloom or _on_key(node.condition(), MIGHT_CONTAIN, key_ids)
            pruned = pruned or _on_key(node.condition(), DYNAMIC_PRUNING, key_ids)
    return {"max_scan_bytes": max(sizes) if sizes else 0, "selective_filter": _selective_filter_over_scan(plan),
            "shuffle_below": shuffle_below, "bloom_filter": bloom, "dynamic_pruning": pruned}


def _probably_shuffles(join, threshold: int | None) -> bool:
    """isProbablyShuffleJoin: no broadcast hint, and neither side fits the threshold."""
    try:
        if "BROADCAST" in str(join.hint().toString()).upper():
            return False
        sizes = [int(str(getattr(join, side)().stats().sizeInBytes())) for side in ("left", "right")]
    except Exception:  # noqa: BLE001 — read as Spark's rule would be unsure: it shuffles
        return True
    return threshold is None or not any(0 <= size <= threshold for size in sizes)


def _selective_filter_over_scan(plan) -> bool:
    """Projections and filters down to one leaf, one filter likely selective."""
    selective, node = False, plan
    while True:
        kind, children = _name(node), _children(node)
        if not children:
            return selective
        if kind == "Filter":
            selective = selective or likely_selective(node.condition())
        elif kind != "Project":
            return False
        node = children[0]


def likely_selective(expression) -> bool:
    kind = _name(expression)
    if kind == "Not":
        return likely_selective(_children(expression)[0])
    if kind in ("And", "Or"):
        parts = [likely_selective(child) for child in _children(expression)]
        return any(parts) if kind == "And" else all(parts)
    return kind in LIKELY_SELECTIVE


def _on_key(condition, kind: str, key_ids: set) -> bool:
    """Whether a filter's condition holds a bloom filter (`might_contain(bloom filter,
    xxhash64(key))`) or a dynamic pruning subquery (`pruningKey`) on one of `key_ids`."""
    stack = [condition]
    while stack:
        expression = stack.pop()
        if _name(expression) == kind:
            if kind == MIGHT_CONTAIN:
                hashed = _children(expression)[1:2]
                key = (_children(hashed[0]) or [None])[0] if hashed else None
            else:
                key = _pruning_key(expression)
            if key is not None and _expr_id(key) in key_ids:
                return True
            continue
        stack.extend(_children(expression))
    return False


def _pruning_key(expression):
    try:
        return expression.pruningKey()
    except Exception:  # noqa: BLE001
        return None
