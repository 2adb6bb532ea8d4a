"""The upgrade diff: what changed for each case between two Spark versions' results.

`python -m harness diff 3.5.7 4.3.0` reads reports/<version>/results.json for both and
prints every case whose strategy or build side (initial plan, or the plan that ran: the
final adaptive plan or a static plan), adaptivity, join condition's shape, rows/checksum,
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
from harness.report.version_report import top_join, version_dir

# Not a change: something one side's deployment could not see (Spark Connect).
UNSEEN = "unavailable"

KINDS = ("not comparable", "known bug", "strategy", "build side", "subqueries", "adaptive", "condition", "result",
         "error",
         "warnings", "cost", "status", "only in one version", UNSEEN)
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


def _cost_changes(old: tuple, new: tuple, threshold: CostThreshold) -> list[tuple[str, str]]:
    from harness.core.text import bytes_text
    changes = []
    for (key, words), before, after in zip(COST_FIGURES, old, new):
        if before is None or after is None or before == after:
            continue
        field = key.rpartition(".")[2]
        size = field in COST_SIZES
        if size and abs(after - before) < threshold.floor_bytes:
            continue
        if before and abs(after - before) / before < threshold.relative:
            continue
        shown = bytes_text if size else (lambda n: f"{n:,}")
        change = f" ({(after - before) / before:+.0%})".replace("%", " %") if before else ""
        changes.append(("cost", f"{words} {shown(before)} → {shown(after)}{change}"))
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
                subqueries=_subquery_joins(record))


def case_changes(old: dict, new: dict, threshold: CostThreshold = CostThreshold()) -> list[tuple[str, str]]:
    """(kind, text) for each way `new` differs from `old`, for one case."""
    return list(face_changes(face(old), face(new), threshold))


@functools.lru_cache(maxsize=65536)
def face_changes(old: Face, new: Face, threshold: CostThreshold = CostThreshold()) -> tuple[tuple[str, str], ...]:
    if old.incomparable or new.incomparable:
        side = "old" if old.incomparable else "new"
        why = old.incomparable or new.incomparable
        return (("not comparable", f"{why} on the {side} version ({old.status} → {new.status})"),)
    changes = _plan_changes(old, new)
    if None not in (old.subqueries, new.subqueries) and old.subqueries != new.subqueries:
        changes.append(("subqueries", f"initial: {_describe_subqueries(old.subqueries)} → "
                                      f"{_describe_subqueries(new.subqueries)}"))
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
    if old.cost and new.cost:
        changes += _cost_changes(old.cost, new.cost, threshold)
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

    def face_of(record: dict) -> Face:
        if id(record) not in faces:
            faces[id(record)] = face(record)
        return faces[id(record)]

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


def load_results(report_dir: str, version: str) -> dict:
    path = version_dir(report_dir, version) / "results.json"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no results for Spark {version} (run the suite on it first)")
    return json.loads(path.read_text(encoding="utf-8"))


def format_diff(old_version: str, new_version: str, grouped: dict) -> str:
    changed = {case for kind, entries in grouped.items() if kind != UNSEEN for case, _ in entries}
    lines = [f"Spark {old_version} → {new_version}: {len(changed)} case(s) differ"]
    for kind in KINDS:
        if grouped[kind]:
            lines.append(f"\n{kind} ({len(grouped[kind])})")
            lines.extend(f"  {case}: {text}" for case, text in grouped[kind])
    return "\n".join(lines)


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
    grouped = diff_results(load_results(report_dir, old_version), load_results(report_dir, new_version),
                           threshold=threshold)
    print(format_diff(old_version, new_version, grouped))
    failing = [kind for kind in fail_on if grouped[kind]]
    if failing:
        print(f"\nfailing: changes of kind {', '.join(failing)} (--fail-on)")
        return 1
    return 0
