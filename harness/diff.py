"""The upgrade diff: what changed for each case between two Spark versions' results.

`python -m harness diff 3.5.7 4.3.0` reads reports/<version>/results.json for both and
prints every case whose strategy, build side (initial or final plan), rows/checksum,
error or hint warnings differ, grouped by kind of change. Cases only one version ran
are listed too.
"""
from __future__ import annotations

import json

from .report import top_join, version_dir
from .vocab import describe_join

KINDS = ("known bug", "strategy", "build side", "result", "error", "warnings", "status", "only in one version")


def _plan(record: dict, which: str) -> tuple[str, str]:
    node = top_join(record, which)
    return (node["strategy"], node["build_side"]) if node else ("none", "none")


def case_changes(old: dict, new: dict) -> list[tuple[str, str]]:
    """(kind, text) for each way `new` differs from `old`, for one case."""
    changes = []
    for which in ("initial", "final"):
        if which == "final" and not (old["observed"].get("final") and new["observed"].get("final")):
            continue
        (s_old, b_old), (s_new, b_new) = _plan(old, which), _plan(new, which)
        if s_old != s_new:
            before = describe_join({"strategy": s_old, "build_side": b_old})
            after = describe_join({"strategy": s_new, "build_side": b_new})
            changes.append(("strategy", f"{which}: {before} → {after}"))
        elif b_old != b_new:
            changes.append(("build side", f"{which}: {s_old} build {b_old} → build {b_new}"))
    o_old, o_new = old["observed"], new["observed"]
    if o_old.get("executed") and o_new.get("executed") and \
            (o_old.get("rows"), o_old.get("checksum")) != (o_new.get("rows"), o_new.get("checksum")):
        changes.append(("result", f"{o_old.get('rows')} rows / {o_old.get('checksum')} → "
                                  f"{o_new.get('rows')} rows / {o_new.get('checksum')}"))
    e_old, e_new = (o_old.get("error") or {}).get("class"), (o_new.get("error") or {}).get("class")
    if e_old != e_new:
        changes.append(("error", f"{e_old or 'no error'} → {e_new or 'no error'}"))
    w_old, w_new = set(o_old.get("warnings") or []), set(o_new.get("warnings") or [])
    if w_old != w_new:
        parts = [f"+ {w}" for w in sorted(w_new - w_old)] + [f"- {w}" for w in sorted(w_old - w_new)]
        changes.append(("warnings", "; ".join(parts)))
    bug_id = (new.get("bug") or old.get("bug") or {}).get("id", "")
    if new["status"] == "known_bug" and old["status"] != "known_bug":
        changes.insert(0, ("known bug", f"bug appears: {bug_id}"))
    elif old["status"] == "known_bug" and new["status"] != "known_bug":
        changes.insert(0, ("known bug", f"bug disappears: {bug_id} (now {new['status']})"))
    # expectations scoped to one version (a captured query) leave the others `observed`:
    # with the same plans and results, that is no difference
    if old["status"] != new["status"] and not changes and {old["status"], new["status"]} != {"passed", "observed"}:
        changes.append(("status", f"{old['status']} → {new['status']}"))
    return changes


def diff_results(old: dict, new: dict) -> dict[str, list[tuple[str, str]]]:
    """kind → [(case id, text)], over all cases of two results.json documents."""
    old_cases = {c["case_id"]: c for c in old["cases"]}
    new_cases = {c["case_id"]: c for c in new["cases"]}
    grouped: dict[str, list[tuple[str, str]]] = {kind: [] for kind in KINDS}
    for case_id in sorted(old_cases.keys() | new_cases.keys()):
        if case_id not in old_cases or case_id not in new_cases:
            where = "new" if case_id in new_cases else "old"
            grouped["only in one version"].append((case_id, f"only in the {where} version's results"))
            continue
        for kind, text in case_changes(old_cases[case_id], new_cases[case_id]):
            grouped[kind].append((case_id, text))
    return grouped


def load_results(report_dir: str, version: str) -> dict:
    path = version_dir(report_dir, version) / "results.json"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no results for Spark {version} (run the suite on it first)")
    return json.loads(path.read_text(encoding="utf-8"))


def format_diff(old_version: str, new_version: str, grouped: dict) -> str:
    changed = {case for entries in grouped.values() for case, _ in entries}
    lines = [f"Spark {old_version} → {new_version}: {len(changed)} case(s) differ"]
    for kind in KINDS:
        if grouped[kind]:
            lines.append(f"\n{kind} ({len(grouped[kind])})")
            lines.extend(f"  {case}: {text}" for case, text in grouped[kind])
    return "\n".join(lines)


def main(old_version: str, new_version: str, report_dir: str = "reports") -> int:
    grouped = diff_results(load_results(report_dir, old_version), load_results(report_dir, new_version))
    print(format_diff(old_version, new_version, grouped))
    return 0
