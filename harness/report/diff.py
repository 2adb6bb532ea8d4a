"""The upgrade diff: what changed for each case between two Spark versions' results.

`python -m harness diff 3.5.7 4.3.0` reads reports/<version>/results.json for both and
prints every case whose strategy or build side (initial plan, or the plan that ran: the
final adaptive plan or a static plan), runtime filters, adaptivity, join condition's shape, rows/checksum,
error or hint warnings differ, or whose top join cost moved beyond a threshold (bytes
shuffled or broadcast, spill, peak memory, records, partitions: ±20 % and, for sizes, at
least 64 KiB by default), grouped by kind of change. A case that timed out or whose
worker was lost on either version is "not comparable", never a change. Cases only one
version ran are listed too.
"""
from __future__ import annotations

import functools
import json
from typing import NamedTuple

from harness.core.records import NOT_AVAILABLE, NOT_CHECKABLE, NOT_RUN, UNAVAILABLE
from harness.core.vocab import COST_SIDE_FIELDS, COST_SIZES, describe_join, join_type_name
from harness.observe.runtime_filters import runtime_filter_words
from harness.report.version_report import top_join, version_dir

# Not a change: something one side's deployment could not see (Spark Connect).
UNSEEN = "unavailable"

KINDS = ("not comparable", "known bug", "strategy", "build side", "join order", "join type", "subqueries", "adaptive",
         "runtime filter", "condition", "result", "error", "warnings", "estimates", "cost", "status", "only in one version", UNSEEN)
# The kinds a change of plan shows in: a case with one of them gets its join nodes side by side.
PLAN_KINDS = ("strategy", "build side", "join order", "join type", "subqueries", "runtime filter")
NOT_COMPARABLE = {"timeout": "timed out", "WorkerLost": "its worker process was lost",
                  NOT_AVAILABLE: "needs a package or an engine jar that is not available"}


def _plan(record: dict, which: str) -> tuple[str, str]:
    node = top_join(record, which)
    return (node["strategy"], node["build_side"]) if node else ("none", "none")


def _ran_plan(record: dict) -> str | None:
    """Which plan ran: the final adaptive plan, or the initial one of a static plan
    (Spark runs a static plan as planned); None when nothing says (adaptive, not run)."""
    observed = record["observed"]
    if observed.get("final"):
        return "final"
    return None if observed.get("adaptive") else "initial"


def incomparable(record: dict) -> str:
    """Why a record cannot be compared: a timed-out or lost case did not finish, so the
    absence of a final plan, rows or error says nothing about Spark."""
    if record["status"] == "timeout":
        return NOT_COMPARABLE["timeout"]
    if record["status"] == "skipped" and record["message"].startswith(NOT_RUN):
        return NOT_RUN
    if record["status"] == "skipped" and record["message"].startswith(NOT_AVAILABLE):
        return NOT_COMPARABLE[NOT_AVAILABLE]
    if (record["observed"].get("error") or {}).get("class") == "WorkerLost":
        return NOT_COMPARABLE["WorkerLost"]
    return ""


def _condition_shape(record: dict) -> tuple | None:
    """What the top join evaluates, in terms that print alike on every version: the
    number of equi-join keys, whether a residual condition remains, null-aware or not.
    (The text of keys and conditions changes with constant folding and printing
    between versions for the same condition, so it is not compared.)"""
    node = top_join(record, "initial")
    if node is None or node["strategy"] == "StreamingSymmetricHashJoin":
        return None
    keys = node.get("left_keys") or ""
    count = 0 if keys in ("", "List()") else keys.count(",") + 1 - _commas_inside(keys)
    return count, bool(node.get("condition")), bool(node.get("null_aware"))


def _commas_inside(keys: str) -> int:
    """Commas inside parentheses of `List(a, f(b, c))`: not key separators."""
    depth, inside = 0, 0
    for char in keys[len("List("):-1] if keys.startswith("List(") else keys:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth > 0:
            inside += 1
    return inside


def _describe_shape(shape: tuple) -> str:
    keys, residual, null_aware = shape
    words = [f"{keys} equi-key{'s' if keys != 1 else ''}", "a residual condition" if residual else "no residual"]
    if null_aware:
        words.append("null-aware")
    return ", ".join(words)


class CostThreshold(NamedTuple):
    """How far a cost figure must move to be a change: both the relative change and, for
    a size, the bytes (a 1 KiB shuffle that doubles is noise to an upgrade)."""
    relative: float = 0.20
    floor_bytes: int = 64 << 10


# The deterministic figures of a join's cost (harness.observe.cost), in the diff's words.
COST_FIGURES = [(f"{side}.{field}", f"{field.replace('_', ' ')} {side}") for field in COST_SIDE_FIELDS
                for side in ("left", "right")] + [(field, field.replace("_", " "))
                                                  for field in ("spill_bytes", "peak_memory", "output_rows",
                                                                "tasks", "max_task_rows")]


def _cost_figures(cost: dict | None) -> tuple | None:
    if not cost:
        return None
    figures = []
    for key, _ in COST_FIGURES:
        side, _, field = key.rpartition(".")
        figures.append((cost.get(side) or {}).get(field) if side else cost.get(field))
    return tuple(figures)


class Figure(NamedTuple):
    """A number of a case that moved beyond the threshold: an estimate or a cost figure."""
    kind: str       # estimates or cost
    words: str      # what it is, e.g. `join #2 right size` or `bytes shuffled left`
    before: int
    after: int
    size: bool      # bytes (else a count)

    @property
    def text(self) -> str:
        from harness.core.text import bytes_text
        shown = bytes_text if self.size else (lambda n: f"{n:,}")
        change = f" ({(self.after - self.before) / self.before:+.0%})".replace("%", " %") if self.before else ""
        return f"{self.words} {shown(self.before)} → {shown(self.after)}{change}"

    @property
    def magnitude(self) -> float:
        """How far it moved, either way: ×10 and ÷10 weigh the same."""
        low, high = sorted((abs(self.before), abs(self.after)))
        return high / max(low, 1)  # from 0, as from 1: 0 → 1 partition is no large change


def _moved(before, after, size: bool, threshold: CostThreshold) -> bool:
    if before is None or after is None or before == after:
        return False
    if size and abs(after - before) < threshold.floor_bytes:
        return False
    return not (before and abs(after - before) / before < threshold.relative)


def _cost_changes(old: tuple, new: tuple, threshold: CostThreshold) -> list[Figure]:
    changes = []
    for (key, words), before, after in zip(COST_FIGURES, old, new):
        size = key.rpartition(".")[2] in COST_SIZES
        if _moved(before, after, size, threshold):
            changes.append(Figure("cost", words, before, after, size))
    return changes


def _estimate_changes(old: Face, new: Face, threshold: CostThreshold) -> list[Figure]:
    """The planner's size and row estimates of each join's sides (what JoinSelection
    compares), where both plans have the same joins."""
    if old.estimates is None or new.estimates is None or len(old.estimates) != len(new.estimates) \
            or _order_changed(old.nodes, new.nodes):
        return []
    changes = []
    for i, (before, after) in enumerate(zip(old.estimates, new.estimates), start=1):
        where = f"join #{i}" + _tables_words(old.nodes[i - 1] if old.nodes and len(old.nodes) >= i else None)
        for index, (side, what, size) in enumerate((("left", "size", True), ("left", "rows", False),
                                                   ("right", "size", True), ("right", "rows", False))):
            if _moved(before[index], after[index], size, threshold):
                changes.append(Figure("estimates", f"{where} {side} {what}", before[index], after[index], size))
    return changes


class Face(NamedTuple):
    """What the diff reads of one record, computed once: a matrix page compares every
    version with every other, and records that look alike compare alike (memoised)."""
    incomparable: str
    status: str
    deployment_limit: bool
    initial: tuple[str, str]
    ran: tuple[str, tuple[str, str]] | None  # (which plan ran, its top join)
    adaptive: bool
    shape: tuple | None
    result: tuple | None  # (rows, checksum) of an executed case
    error: str | None
    warnings: frozenset
    warnings_unseen: bool
    bug_id: str
    cost: tuple | None = None  # the join's deterministic cost figures (COST_FIGURES)
    # the joins inside the initial plan's subqueries: per subquery, (strategy, build side,
    # join type) of each node; None where they were not read (through Connect)
    subqueries: tuple | None = None
    # every join node of the initial plan, top first: (strategy, build side, join type, tables or None)
    nodes: tuple = ()
    # per join of the optimized plan: (left size, left rows, right size, right rows); None unread
    estimates: tuple | None = None
    # the initial plan's runtime filters: (kind, table, key, creation tables) each; None unread
    runtime_filters: tuple | None = None


def _subquery_joins(record: dict) -> tuple | None:
    found = (record["observed"].get("initial") or {}).get("subqueries")
    if found is None:  # not read: through Connect, or by a release before subqueries were
        return None
    return tuple(tuple((j["strategy"], j["build_side"], join_type_name(j.get("join_type"))) for j in s["joins"])
                 for s in found or [])


def _describe_subqueries(found: tuple) -> str:
    return "; ".join(f"#{i}: " + ", ".join(describe_join({"strategy": s, "build_side": b, "join_type": t},
                                                          join_type=True) for s, b, t in joins)
                     for i, joins in enumerate(found, start=1)) or "no join in a subquery"


def face(record: dict) -> Face:
    observed = record["observed"]
    ran = _ran_plan(record)
    return Face(incomparable=incomparable(record), status=record["status"],
                deployment_limit=_deployment_limit(record), initial=_plan(record, "initial"),
                ran=(ran, _plan(record, ran)) if ran else None, adaptive=bool(observed.get("adaptive")),
                shape=_condition_shape(record),
                result=(observed.get("rows"), observed.get("checksum")) if observed.get("executed") else None,
                error=(observed.get("error") or {}).get("class"), warnings=frozenset(observed.get("warnings") or []),
                warnings_unseen="warnings" in (observed.get("unavailable") or []),
                bug_id=(record.get("bug") or {}).get("id", ""), cost=_cost_figures(observed.get("cost")),
                subqueries=_subquery_joins(record), nodes=_nodes(record),
                estimates=_estimates(observed.get("estimates")), runtime_filters=_runtime_filters(record))


def _runtime_filters(record: dict) -> tuple | None:
    found = (record["observed"].get("initial") or {}).get("runtime_filters")
    if found is None:  # not read: through Connect, or by a release of the harness before they were
        return None
    return tuple(sorted((f["kind"], f.get("table") or "", f.get("key") or "", tuple(f.get("creation") or []))
                        for f in found))


def _filter_words(found: tuple) -> str:
    kind, table, key, creation = found
    return runtime_filter_words({"kind": kind, "table": table or None, "key": key or None, "creation": list(creation)})


def _runtime_filter_changes(old: tuple, new: tuple) -> list[tuple[str, str]]:
    """Per filtered table (the application side): a filter that appeared, disappeared, or
    changed kind, key or creation side."""
    changes = []
    for table in sorted({f[1] for f in old} | {f[1] for f in new}):
        before = [f for f in old if f[1] == table]
        after = [f for f in new if f[1] == table]
        if before == after:
            continue
        if not before:
            changes.append(("runtime filter", "initial: appeared: " + "; ".join(map(_filter_words, after))))
        elif not after:
            changes.append(("runtime filter", "initial: disappeared: " + "; ".join(map(_filter_words, before))))
        else:
            changes.append(("runtime filter", "initial: " + "; ".join(map(_filter_words, before)) + " → " +
                            "; ".join(map(_filter_words, after))))
    return changes


def _nodes(record: dict) -> tuple:
    joins = (record["observed"].get("initial") or {}).get("joins") or []
    return tuple((j["strategy"], j["build_side"], join_type_name(j.get("join_type")),
                  tuple(sorted(j["tables"])) if j.get("tables") else None) for j in joins)


def _estimates(estimates: list | None) -> tuple | None:
    if estimates is None:
        return None
    return tuple((e["left"].get("size_in_bytes"), e["left"].get("row_count"),
                  e["right"].get("size_in_bytes"), e["right"].get("row_count")) for e in estimates)


def _tables_words(node: tuple | None) -> str:
    return f" ({'+'.join(node[3])})" if node and node[3] else ""


def _order_changed(old: tuple, new: tuple) -> bool:
    return len(old) != len(new) or any(o[3] != n[3] for o, n in zip(old, new))


def _order_words(nodes: tuple) -> str:
    if not nodes:
        return "no join"
    return f"{len(nodes)} join(s): " + ", ".join(f"#{i} {'+'.join(n[3]) if n[3] else '?'}"
                                                 for i, n in enumerate(nodes, start=1))


def _node_changes(old: Face, new: Face) -> list[tuple[str, str]]:
    """Below the top join (whose strategy and build side _plan_changes compares): each
    node's strategy and build side, every node's join type, and the join order (the
    tables under each node, top first)."""
    if _order_changed(old.nodes, new.nodes):
        if len(old.nodes) <= 1 and len(new.nodes) <= 1 and (not old.nodes or not new.nodes or old.nodes[0][3] is None):
            return []  # one join or none: the strategy says it
        return [("join order", f"initial: {_order_words(old.nodes)} → {_order_words(new.nodes)}")]
    changes = []
    for i, (o, n) in enumerate(zip(old.nodes, new.nodes), start=1):
        where = f"initial join #{i}{_tables_words(o)}"
        if i > 1 and o[0] != n[0]:
            changes.append(("strategy", f"{where}: {describe_join(dict(zip(('strategy', 'build_side'), o)))} → "
                                        f"{describe_join(dict(zip(('strategy', 'build_side'), n)))}"))
        elif i > 1 and o[1] != n[1] and UNAVAILABLE not in (o[1], n[1]):
            changes.append(("build side", f"{where}: {o[0]} build {o[1]} → build {n[1]}"))
        if o[2] != n[2] and o[2] and n[2]:
            changes.append(("join type", f"{where}: {o[2]} → {n[2]}"))
    return changes


def case_changes(old: dict, new: dict, threshold: CostThreshold = CostThreshold()) -> list[tuple[str, str]]:
    """(kind, text) for each way `new` differs from `old`, for one case."""
    return list(face_changes(face(old), face(new), threshold))


@functools.lru_cache(maxsize=65536)
def face_changes(old: Face, new: Face, threshold: CostThreshold = CostThreshold()) -> tuple[tuple[str, str], ...]:
    if old.incomparable or new.incomparable:
        side = "old" if old.incomparable else "new"
        why = old.incomparable or new.incomparable
        return (("not comparable", f"{why} on the {side} version ({old.status} → {new.status})"),)
    changes = _plan_changes(old, new) + _node_changes(old, new)
    if None not in (old.subqueries, new.subqueries) and old.subqueries != new.subqueries:
        changes.append(("subqueries", f"initial: {_describe_subqueries(old.subqueries)} → "
                                      f"{_describe_subqueries(new.subqueries)}"))
    if None not in (old.runtime_filters, new.runtime_filters) and old.runtime_filters != new.runtime_filters:
        changes += _runtime_filter_changes(old.runtime_filters, new.runtime_filters)
    if old.adaptive != new.adaptive:
        words = {True: "adaptive (AQE may re-plan at run time)", False: "static"}
        changes.append(("adaptive", f"{words[old.adaptive]} → {words[new.adaptive]}"))
    if None not in (old.shape, new.shape) and old.shape != new.shape and old.initial[0] == new.initial[0]:
        changes.append(("condition", f"{_describe_shape(old.shape)} → {_describe_shape(new.shape)}"))
    if old.result and new.result and old.result != new.result:
        changes.append(("result", f"{old.result[0]} rows / {old.result[1]} → {new.result[0]} rows / {new.result[1]}"))
    if old.error != new.error:
        changes.append(("error", f"{old.error or 'no error'} → {new.error or 'no error'}"))
    if old.warnings != new.warnings and not (old.warnings_unseen or new.warnings_unseen):
        parts = [f"+ {w}" for w in sorted(new.warnings - old.warnings)] + \
                [f"- {w}" for w in sorted(old.warnings - new.warnings)]
        changes.append(("warnings", "; ".join(parts)))
    changes += [(figure.kind, figure.text) for figure in _figures(old, new, threshold)]
    bug_id = new.bug_id or old.bug_id
    if new.status == "known_bug" and old.status != "known_bug":
        changes.insert(0, ("known bug", f"bug appears: {bug_id}"))
    elif old.status == "known_bug" and new.status != "known_bug":
        changes.insert(0, ("known bug", f"bug disappears: {bug_id} (now {new.status})"))
    # expectations scoped to one version (a captured query) leave the others `observed`:
    # with the same plans and results, that is no difference
    if old.status != new.status and not changes and {old.status, new.status} != {"passed", "observed"} \
            and not (old.deployment_limit or new.deployment_limit):
        changes.append(("status", f"{old.status} → {new.status}"))
    return tuple(changes)


@functools.lru_cache(maxsize=65536)
def _figures(old: Face, new: Face, threshold: CostThreshold) -> tuple:
    costs = _cost_changes(old.cost, new.cost, threshold) if old.cost and new.cost else []
    return tuple(_estimate_changes(old, new, threshold) + costs)


def _deployment_limit(record: dict) -> bool:
    """`unchecked` only because its deployment could not see an expectation's subject."""
    return record["status"] == "unchecked" and record["message"].startswith(NOT_CHECKABLE)


def _plan_changes(old: Face, new: Face) -> list[tuple[str, str]]:
    """The initial plans compared, then the plans that ran: a static sort-merge join that
    becomes a run-time broadcast under AQE is a change even where the initial plans agree."""
    changes = []
    pairs = [("initial", old.initial, new.initial)]
    if old.ran and new.ran and (old.ran[0], new.ran[0]) != ("initial", "initial"):
        pairs.append(("final", old.ran[1], new.ran[1]))
    for label, (s_old, b_old), (s_new, b_new) in pairs:
        if s_old != s_new:
            before = describe_join({"strategy": s_old, "build_side": b_old})
            after = describe_join({"strategy": s_new, "build_side": b_new})
            changes.append(("strategy", f"{label}: {before} → {after}"))
        elif UNAVAILABLE in (b_old, b_new):
            changes.append((UNSEEN, f"{label}: {s_old} build {b_old} → build {b_new}"))
        elif b_old != b_new:
            changes.append(("build side", f"{label}: {s_old} build {b_old} → build {b_new}"))
    return changes


def diff_results(old: dict, new: dict, faces: dict | None = None,
                 threshold: CostThreshold = CostThreshold()) -> dict[str, list[tuple[str, str]]]:
    """kind → [(case id, text)], over all cases of two results.json documents; `faces`
    (id of a record → its Face) spares a caller comparing many pairs recomputing them."""
    faces = {} if faces is None else faces
    face_of = functools.partial(_face_of, faces)
    old_cases = {c["case_id"]: c for c in old["cases"]}
    new_cases = {c["case_id"]: c for c in new["cases"]}
    grouped: dict[str, list[tuple[str, str]]] = {kind: [] for kind in KINDS}
    for case_id in sorted(old_cases.keys() | new_cases.keys()):
        if case_id not in old_cases or case_id not in new_cases:
            where = "new" if case_id in new_cases else "old"
            grouped["only in one version"].append((case_id, f"only in the {where} version's results"))
            continue
        for kind, text in face_changes(face_of(old_cases[case_id]), face_of(new_cases[case_id]), threshold):
            grouped[kind].append((case_id, text))
    return grouped


def _face_of(faces: dict, record: dict) -> Face:
    """A record's Face, computed once per record (`faces`: id of a record → its Face)."""
    if id(record) not in faces:
        faces[id(record)] = face(record)
    return faces[id(record)]


def load_results(report_dir: str, version: str) -> dict:
    path = version_dir(report_dir, version) / "results.json"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no results for Spark {version} (run the suite on it first)")
    return json.loads(path.read_text(encoding="utf-8"))


def kind_counts(grouped: dict) -> dict[str, int]:
    """kind → how many cases changed in that way (a case may count under several)."""
    return {kind: len({case for case, _ in grouped[kind]}) for kind in KINDS if grouped[kind]}


def largest_changes(old: dict, new: dict, faces: dict | None = None, threshold: CostThreshold = CostThreshold(),
                    limit: int = 20) -> list[tuple[str, Figure]]:
    """The estimates and cost figures that moved furthest (either way), with their case."""
    faces = {} if faces is None else faces
    old_cases = {c["case_id"]: c for c in old["cases"]}
    moved = []
    for record in new["cases"]:
        before = old_cases.get(record["case_id"])
        if before is None:
            continue
        old_face, new_face = _face_of(faces, before), _face_of(faces, record)
        if old_face.incomparable or new_face.incomparable:
            continue
        moved += [(record["case_id"], figure) for figure in _figures(old_face, new_face, threshold)]
    moved.sort(key=lambda item: (-item[1].magnitude, item[0], item[1].words))
    return moved[:limit]


def side_by_side(old: dict, new: dict, faces: dict | None = None) -> list[tuple[str, str, str, bool]]:
    """The join nodes of both initial plans, row by row: (place, before, after, differs)."""
    faces = {} if faces is None else faces
    before, after = _face_of(faces, old).nodes, _face_of(faces, new).nodes
    rows = []
    for i in range(max(len(before), len(after))):
        texts = [describe_join(dict(zip(("strategy", "build_side", "join_type", "tables"), nodes[i])),
                               join_type=True, tables=True) if i < len(nodes) else "—" for nodes in (before, after)]
        rows.append((f"#{i + 1}", texts[0], texts[1], texts[0] != texts[1]))
    return rows


def plan_changed_cases(grouped: dict) -> list[str]:
    return sorted({case for kind in PLAN_KINDS for case, _ in grouped.get(kind, [])})


def format_diff(old_version: str, new_version: str, grouped: dict, largest: list | None = None,
                nodes: dict | None = None, shown_nodes: int = 30) -> str:
    """The diff in the terminal: cases by kind with counts; with a workload's extras, the
    largest estimate and cost changes and each changed plan's join nodes side by side."""
    changed = {case for kind, entries in grouped.items() if kind != UNSEEN for case, _ in entries}
    lines = [f"Spark {old_version} → {new_version}: {len(changed)} case(s) differ"]
    counts = kind_counts(grouped)
    if counts:
        lines.append("by kind: " + " · ".join(f"{kind} {count}" for kind, count in counts.items()))
    for kind in KINDS:
        if grouped[kind]:
            lines.append(f"\n{kind} ({len(grouped[kind])})")
            lines.extend(f"  {case}: {text}" for case, text in grouped[kind])
    if largest:
        lines.append(f"\nlargest estimate and cost changes ({len(largest)})")
        lines.extend(f"  {case}: {figure.kind}: {figure.text}" for case, figure in largest)
    for case in list(nodes or {})[:shown_nodes]:
        rows = nodes[case]
        width = max(len(row[1]) for row in rows)
        lines.append(f"\n{case}: join nodes, {old_version} | {new_version}")
        lines.extend(f"  {'≠' if differs else ' '} {place:>4} {before:<{width}} | {after}"
                     for place, before, after, differs in rows)
    if nodes and len(nodes) > shown_nodes:
        lines.append(f"\n… and {len(nodes) - shown_nodes} more changed plans (summary.md lists them all)")
    return "\n".join(lines)


def workload_extras(old: dict, new: dict, grouped: dict, threshold: CostThreshold = CostThreshold(),
                    faces: dict | None = None) -> tuple[list, dict]:
    """(the 20 largest estimate and cost changes, case id → its join nodes side by side,
    for each case whose plan changed)."""
    faces = {} if faces is None else faces
    old_cases = {c["case_id"]: c for c in old["cases"]}
    new_cases = {c["case_id"]: c for c in new["cases"]}
    nodes = {case: side_by_side(old_cases[case], new_cases[case], faces) for case in plan_changed_cases(grouped)
             if case in old_cases and case in new_cases}
    return largest_changes(old, new, faces, threshold), {case: rows for case, rows in nodes.items() if rows}


def parse_kinds(text: str) -> tuple[str, ...]:
    """`strategy,build side` → the kinds a CI job fails on (ValueError names an unknown one)."""
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"--fail-on: unknown kind {unknown[0]!r}; kinds: {', '.join(KINDS)}")
    return kinds


def parse_threshold(relative: str, floor: str) -> CostThreshold:
    """`20%` and `64 KiB` → a CostThreshold (ValueError names what is wrong)."""
    from harness.scenario.tables import byte_size
    text = relative.strip().rstrip("%").strip()
    try:
        percent = float(text)
    except ValueError:
        raise ValueError(f"--cost-threshold: {relative!r} is not a percentage (e.g. 20%)") from None
    if not 0 <= percent <= 10000:
        raise ValueError(f"--cost-threshold: {relative!r} is out of range (0% to 10000%)")
    try:
        floor_bytes = byte_size(int(floor) if floor.strip().isdigit() else floor)
    except ValueError as exc:
        raise ValueError(f"--cost-floor: {exc}") from None
    return CostThreshold(percent / 100, floor_bytes)


def main(old_version: str, new_version: str, report_dir: str = "reports", fail_on: tuple[str, ...] = (),
         threshold: CostThreshold = CostThreshold()) -> int:
    """0, or 1 when a case changed in one of the `fail_on` kinds (for a CI job)."""
    old, new = load_results(report_dir, old_version), load_results(report_dir, new_version)
    faces: dict = {}
    grouped = diff_results(old, new, faces, threshold=threshold)
    largest, nodes = workload_extras(old, new, grouped, threshold, faces)
    print(format_diff(old_version, new_version, grouped, largest, nodes))
    failing = [kind for kind in fail_on if grouped[kind]]
    if failing:
        print(f"\nfailing: changes of kind {', '.join(failing)} (--fail-on)")
        return 1
    return 0
