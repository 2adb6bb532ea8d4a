"""How the join nodes observed compare with those expected: strategy and build side of each
node and of the plan, operator counts, shuffles below each side, bucketed and key-
grouped scans, dynamic pruning, and whether a join ran under a native engine. One short
line per mismatch."""
from __future__ import annotations

from harness.check.compare_cost import within
from harness.core.records import BYTE_UNITS, UNAVAILABLE, Observation
from harness.core.vocab import describe_join, join_type_name
from harness.observe.runtime_filters import FILTER_WORDS, runtime_filter_words


def _node_matches(want: dict, got: dict) -> bool:
    return (want["strategy"] == got["strategy"]
            and want.get("join_type", join_type_name(got.get("join_type"))) == join_type_name(got.get("join_type"))
            and want.get("build_side", got["build_side"]) == got["build_side"]
            and want.get("skew", got.get("skew", False)) == got.get("skew", False)
            and want.get("native", got.get("native")) == got.get("native")
            and want.get("null_aware", got["null_aware"]) == got["null_aware"]
            and ("tables" not in want or want["tables"] == sorted(got.get("tables") or [])))


def compare_plan(expected: dict, joins: list[dict], which: str) -> list[str]:
    problems = []
    top = joins[0] if joins else None
    if "strategy" in expected:
        want = expected["strategy"]
        got = top["strategy"] if top else "none"
        if want != got:
            problems.append(f"{which} plan: expected {want}, observed {describe_join(top, tables=True)}")
    if "build_side" in expected and top is not None:
        if expected["build_side"] != top["build_side"] and ("strategy" not in expected or not problems):
            problems.append(f"{which} plan: expected build side {expected['build_side']}, observed {describe_join(top, tables=True)}")
    if "joins" in expected:
        want_nodes = expected["joins"]
        if len(want_nodes) != len(joins):
            problems.append(f"{which} plan: expected {len(want_nodes)} join(s), observed {len(joins)}: "
                            + ", ".join(describe_join(j, tables=True) for j in joins))
        else:
            for i, (want, got) in enumerate(zip(want_nodes, joins)):
                if not _node_matches(want, got):
                    typed = "join_type" in want
                    problems.append(f"{which} plan join #{i + 1}: expected {describe_join(want, join_type=typed, tables=True)}, "
                                    f"observed {describe_join(got, join_type=typed, tables=True)}")
    return problems


def compare_subqueries(expected: list[dict], observed: list[dict], which: str) -> list[str]:
    """The joins of each subquery that holds one, in the order the plan reaches them; a
    node named by its subquery, its place and its tables."""
    if len(expected) != len(observed):
        seen = "; ".join(f"{s['subquery']}: " + ", ".join(describe_join(j, tables=True) for j in s["joins"])
                         for s in observed) or "none"
        return [f"{which} plan: expected {len(expected)} subquery(ies) with joins, observed {len(observed)} ({seen})"]
    problems = []
    for place, (want, got) in enumerate(zip(expected, observed), start=1):
        where = f"{which} plan subquery #{place} ({got['subquery']})"
        if len(want["joins"]) != len(got["joins"]):
            problems.append(f"{where}: expected {len(want['joins'])} join(s), observed {len(got['joins'])}: "
                            + ", ".join(describe_join(j, tables=True) for j in got["joins"]))
            continue
        for i, (want_node, got_node) in enumerate(zip(want["joins"], got["joins"]), start=1):
            if not _node_matches(want_node, got_node):
                typed = "join_type" in want_node
                problems.append(f"{where} join #{i}: expected {describe_join(want_node, join_type=typed, tables=True)}, "
                                f"observed {describe_join(got_node, join_type=typed, tables=True)}")
    return problems


def compare_native(wanted: bool, joins: list[dict], which: str) -> list[str]:
    """Whether the top join ran natively under the run's engine (harness.spark.engines)."""
    top = joins[0] if joins else None
    if top is None:
        return [f"{which} plan: no join to run natively"]
    got = top.get("native")
    if got is None:
        return [f"native: this run has no native engine (run with --engine comet): {which} plan's "
                f"{top['strategy']} cannot be checked for it"]
    if got == wanted:
        return []
    if wanted:
        reasons = "; ".join(top.get("fallback") or []) or "the engine gave no reason"
        return [f"{which} plan: expected a native {top['strategy']}, Spark ran it ({reasons})"]
    return [f"{which} plan: expected {top['strategy']} left to Spark, it ran natively"]


def compare_operators(expected: dict, counts: dict) -> list[str]:
    problems = []
    for name, bounds in expected.items():
        seen = counts.get(name, 0)
        if not within(seen, bounds):
            problems.append(f"expected {bounds} {name} operator(s), observed {seen}")
    return problems


def final_build_side_unseen(observed: Observation) -> bool:
    view = observed.final
    return bool(view and view.joins and view.joins[0].get("build_side") == UNAVAILABLE)


def estimate_range(side: dict) -> tuple[int, int]:
    """The sizes an estimate can be: exact from the JVM; through Spark Connect, the printed
    value ± half its last decimal (`9.8 MiB`: 9.75 to 9.85 MiB)."""
    size, printed = side["size_in_bytes"], side.get("printed")
    step = BYTE_UNITS[printed.split(" ")[-1]] if printed else 1
    return size - step // 20, size + step // 20


def plan_names(plan_mode: str) -> list[str]:
    return {"initial": ["initial"], "final": ["final"], "both": ["initial", "final"]}[plan_mode]


def checked_views(expected: dict, observed: Observation) -> list:
    return [observed.checked_plan(which) for which in plan_names(expected.get("plan", "initial"))]


def compare_shuffles(expected: dict, joins: list[dict], which: str) -> list[str]:
    top = joins[0] if joins else None
    if top is None:
        return [f"{which} plan: no join to count the shuffles below"]
    got = top.get("shuffles") or {}
    return [f"{which} plan: expected {want} shuffle exchange(s) below the {side} side of "
            f"{describe_join(top)}, observed {got.get(side)}"
            for side, want in expected.items() if got.get(side) != want]


def _top_scans(joins: list[dict]) -> dict | None:
    return (joins[0].get("scans") if joins else None) or None


def _compare_side_scans(expected: dict, joins: list[dict], which: str, read_as: str) -> list[str]:
    """Whether every scan below each named side of the top join reads its table's layout:
    `bucketed` (a bucketed file table read as its buckets) or `key_grouped` (a V2 table
    reporting its partitioning: a storage-partitioned join)."""
    words = LAYOUT_READS[read_as]
    top = joins[0] if joins else None
    if top is None:
        return [f"{which} plan: no join whose sides' scans to check"]
    problems = []
    for side, want in expected.items():
        scans = [scan for scan in (top.get("scans") or {}).get(side) or [] if read_as in scan]
        if not scans:
            problems.append(f"{which} plan: no {words['scan']} below the {side} side of {describe_join(top)} "
                            f"to {words['read']} (expected {words['a'] if want else words['a_not']} scan)")
            continue
        got = all(scan[read_as] for scan in scans)
        if got != want:
            notes = "; ".join(sorted({f"{scan['table']}: Bucketed: {scan['bucket_note']}" for scan in scans
                                      if scan.get("bucket_note")}))
            problems.append(f"{which} plan: expected the {side} side of {describe_join(top)} to "
                            f"{words['read'] if want else words['read_not']}, observed "
                            f"{words['got'] if got else words['got_not']} scan(s)" + (f" ({notes})" if notes else ""))
    return problems


LAYOUT_READS = {
    "bucketed": {"scan": "file scan", "read": "read buckets", "read_not": "read plain files", "a": "a bucketed",
                 "a_not": "a plain", "got": "bucketed", "got_not": "not bucketed"},
    "key_grouped": {"scan": "V2 (Iceberg) scan", "read": "read its partitions as groups",
                    "read_not": "read ungrouped", "a": "a key-grouped", "a_not": "an ungrouped",
                    "got": "key-grouped", "got_not": "not key-grouped"},
}


def compare_bucketed_scan(expected: dict, joins: list[dict], which: str) -> list[str]:
    return _compare_side_scans(expected, joins, which, "bucketed")


def compare_key_grouped(expected: dict, joins: list[dict], which: str) -> list[str]:
    return _compare_side_scans(expected, joins, which, "key_grouped")


PRUNED = ("broadcast", "subquery")


# Before AQE has run, a pruning filter's fate is AQE's to decide: the join's broadcast when
# the join is (or becomes) a broadcast join, else a subquery of its own (`adaptive`) or
# dropped (`adaptive_reuse_only`: reuseBroadcastOnly).
ADAPTIVE = ("adaptive", "adaptive_reuse_only")


AQE_DECIDES = "(decided by AQE at run time)"


def _pruning_kinds(scans: list[dict], top: dict | None, side: str) -> list[str]:
    """The pruning of a table's scans below one side of the top join; a decision AQE has
    still to make is made here when the plan already fixes it: a broadcast hash join that
    builds the other side is the broadcast AQE reuses (it never turns a broadcast join
    back into a shuffled one)."""
    other = "right" if side == "left" else "left"
    reused = top is not None and top.get("strategy") == "BroadcastHashJoin" and top.get("build_side") == other
    return sorted({("broadcast" if reused and scan["pruning"] in ADAPTIVE else scan["pruning"]) for scan in scans})


def _table_pruning(table: str, joins: list[dict]) -> list[str]:
    """The pruning kinds of a table's scans below the top join (`_pruning_kinds`)."""
    scans, top = _top_scans(joins) or {}, joins[0] if joins else None
    return sorted({kind for side in ("left", "right")
                   for kind in _pruning_kinds([s for s in scans.get(side) or [] if s["table"] == table], top, side)})


def _undecided(kinds: list[str], want: dict) -> bool:
    """AQE may still drop the filter, or may still make the reuse the expectation asks about."""
    return ("adaptive_reuse_only" in kinds and not set(kinds) & set(PRUNED)) or \
        ("adaptive" in kinds and "reuses_broadcast" in want and "broadcast" not in kinds)


def undecided_pruning(expected: list[dict], joins: list[dict]) -> list[str]:
    """The tables whose expected pruning this (initial adaptive) plan leaves to AQE."""
    return [want["table"] for want in expected if _undecided(_table_pruning(want["table"], joins), want)]


def compare_pruning(expected: list[dict], joins: list[dict], which: str) -> list[str]:
    problems = []
    for want in expected:
        kinds = _table_pruning(want["table"], joins)
        if not kinds:
            problems.append(f"{which} plan: no scan of table {want['table']} below the top join to check its "
                            f"dynamic partition pruning")
            continue
        if _undecided(kinds, want):
            continue  # not checkable: said by not_checkable
        pruned = any(kind in PRUNED + ("adaptive",) for kind in kinds)
        said = ", ".join(PRUNING_WORDS[kind] for kind in kinds)
        if pruned != want["pruned"]:
            problems.append(f"{which} plan: expected {want['table']} {'' if want['pruned'] else 'not '}"
                            f"dynamically pruned, observed {said}")
        elif "reuses_broadcast" in want and pruned and ("broadcast" in kinds) != want["reuses_broadcast"]:
            problems.append(f"{which} plan: expected {want['table']}'s pruning filter "
                            f"{'to reuse' if want['reuses_broadcast'] else 'not to reuse'} the join's broadcast, "
                            f"observed {said}")
    return problems


PRUNING_WORDS = {"none": "no pruning filter", "broadcast": "a pruning filter on the join's broadcast",
                 "subquery": "a pruning filter with a subquery of its own",
                 "dropped": "a pruning filter Spark dropped (no broadcast to reuse)",
                 "adaptive": "a pruning filter AQE keeps at run time (on the join's broadcast if the join becomes "
                             "a broadcast join, else by a subquery of its own)",
                 "adaptive_reuse_only": "a pruning filter AQE decides at run time (kept on the join's broadcast if "
                                        "the join becomes a broadcast join, else dropped)"}


# The release whose optimizer first injects runtime filters (InjectRuntimeFilter).
RUNTIME_FILTERS_SINCE = "3.3.0"
def _filters_on(table: str, filters: list[dict]) -> list[dict]:
    return [f for f in filters if (f.get("table") or "").lower() == table.lower()]


def compare_runtime_filters(expected: list[dict], filters: list[dict], which: str) -> list[str]:
    """Each table's runtime filter as declared: the kind its scan gets (or none), and from
    which table it is built."""
    problems = []
    for want in expected:
        on_table = _filters_on(want["table"], filters)
        observed = "; ".join(runtime_filter_words(f) for f in on_table) or "none"
        if want["filter"] == "none":
            if on_table:
                problems.append(f"{which} plan: expected no runtime filter on {want['table']}'s scan, "
                                f"observed {observed}")
            continue
        matching = [f for f in on_table if f["kind"] == want["filter"] and
                    ("from" not in want or want["from"].lower() in [t.lower() for t in f.get("creation") or []])]
        if not matching:
            source = f" built from {want['from']}" if "from" in want else ""
            problems.append(f"{which} plan: expected {FILTER_WORDS[want['filter']]} on {want['table']}'s scan"
                            f"{source}, observed {observed}")
    return problems


def runtime_filters_wanted(expected: list[dict]) -> bool:
    """Whether the expectation asks for a filter somewhere (not only for none)."""
    return any(want["filter"] != "none" for want in expected)
