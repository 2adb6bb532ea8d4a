"""Are two runs' results the same? (python bench/compare_runs.py BASELINE_DIR NEW_DIR [VERSION ...])

For a speed change the answer must not move: for every version present in both report
folders, every record is compared on what Spark answered and how it planned — status,
rows, checksum, the initial and final join nodes (expression ids normalised), the
estimates, the warnings, the top join's cost where both runs recorded one (its timings
left out) and, for a cross-strategy check, each forced run's strategy, build side, rows,
checksum or error. Timings, messages' sharing notes and run dates are
not compared, nor a field the case's file declares as Spark's own variation (`expect:
{varies: {final_plan: why}}`, as the flake finder reads it): such a difference is counted
apart. Prints one line per version and the first differences; exit 1 on any other.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

EXPR_ID = re.compile(r"#\d+L?")


def _normalised(value) -> str:
    return EXPR_ID.sub("#", json.dumps(value, sort_keys=True))


def _joins(view: dict | None, fields: set | None):
    if view is None or view.get("joins") is None:
        return None
    return [{k: v for k, v in node.items() if fields is None or k in fields} for node in view["joins"]]


def _node_fields(record: dict) -> set:
    observed = record.get("observed") or {}
    return {key for view in ("initial", "final") for node in (_joins(observed.get(view), None) or []) for key in node}


# What each `varies` entry covers in a fingerprint (harness.report.flakes.DECLARABLE's
# places, in this file's terms): the fields, and for a cross-strategy check the keys of
# each forced run.
DECLARED = {"final_plan": ({"final", "strategies", "cost"}, {"strategy", "build_side"}),
            "checksum": ({"checksum"}, {"checksum"}), "rows": ({"rows"}, {"rows"}),
            "estimates": ({"estimates"}, set()), "warnings": ({"warnings"}, set())}


def _declared(varies: dict) -> tuple[set, set]:
    fields, run_keys = set(), set()
    for name in varies:
        covered = DECLARED.get(name, (set(), set()))
        fields |= covered[0]
        run_keys |= covered[1]
    return fields, run_keys


def fingerprint(record: dict, fields: set | None = None, varies: dict | None = None) -> dict:
    """What Spark answered and planned; join nodes on `fields` only (what both runs record:
    a field a later release added is not a difference); what `varies` declares left out."""
    observed = record.get("observed") or {}
    skip, skip_in_runs = _declared(varies or {})
    if record.get("kind") == "agreement":
        runs = [{**{k: run.get(k) for k in ("forced", "strategy", "build_side", "rows", "checksum")
                    if k not in skip_in_runs}, "error": bool(run.get("error"))}
                for run in observed.get("agreement", [])]
        found = {"status": record["status"], "runs": runs, "strategies": observed.get("strategies")}
        return {k: v for k, v in found.items() if k not in skip}
    error = observed.get("error") or {}
    found = {"status": record["status"], "rows": observed.get("rows"), "checksum": observed.get("checksum"),
             "initial": _normalised(_joins(observed.get("initial"), fields)),
             "final": _normalised(_joins(observed.get("final"), fields)),
             "estimates": _normalised(observed.get("estimates")), "warnings": observed.get("warnings"),
             "error": error.get("class"),
             "cost": {k: v for k, v in (observed.get("cost") or {}).items() if k not in ("timings", "shown")} or None}
    return {k: v for k, v in found.items() if k not in skip}


def _varies(records: dict) -> tuple[dict, dict]:
    """Each case's declared variation, and each scenario's per join type (a cross-strategy
    check has no expectations of its own: its scenario's cases' of that join type apply)."""
    by_case, by_join = {}, {}
    for case, record in records.items():
        varies = (record.get("expected") or {}).get("varies") or {}
        by_case[case] = varies
        by_join.setdefault((record.get("scenario_id"), record.get("join_type")), {}).update(varies)
    return by_case, by_join


def _differences(before: dict, after: dict) -> list[str]:
    return [f"{key} {before[key]!r} → {after.get(key)!r}"[:300] for key in before if before[key] != after.get(key)]


def compare(baseline: Path, new: Path) -> tuple[int, list[str], list[str]]:
    """(records compared, differences, differences in what the files declare varying)."""
    old = {r["case_id"]: r for r in json.loads(baseline.read_text())["cases"]}
    now = {r["case_id"]: r for r in json.loads(new.read_text())["cases"]}
    problems = [f"only in the baseline: {case}" for case in sorted(old.keys() - now.keys())]
    problems += [f"only in the new run: {case}" for case in sorted(now.keys() - old.keys())]
    declared = []
    by_case, by_join = _varies(now)
    for case in sorted(old.keys() & now.keys()):
        fields = _node_fields(old[case]) & _node_fields(now[case])
        varies = by_case[case] if now[case].get("kind") == "case" else \
            by_join[(now[case].get("scenario_id"), now[case].get("join_type"))]
        before, after = fingerprint(old[case], fields, varies), fingerprint(now[case], fields, varies)
        if "cost" not in (old[case].get("observed") or {}) or "cost" not in (now[case].get("observed") or {}):
            before.pop("cost", None), after.pop("cost", None)  # recorded since issue 43
        changed = _differences(before, after)
        if changed:
            problems.append(f"{case}: " + "; ".join(changed))
        elif varies and _differences(fingerprint(old[case], fields), fingerprint(now[case], fields)):
            declared.append(f"{case}: varies as its file declares ({'; '.join(varies.values())})")
    return len(old.keys() & now.keys()), problems, declared


def main(argv: list[str]) -> int:
    baseline, new, versions = Path(argv[0]), Path(argv[1]), argv[2:]
    versions = versions or sorted(p.name for p in new.iterdir() if (p / "results.json").exists()
                                  and (baseline / p.name / "results.json").exists())
    differ = 0
    for version in versions:
        if not (baseline / version / "results.json").exists():
            print(f"[compare] {version}: no baseline results in {baseline}")
            continue
        compared, problems, declared = compare(baseline / version / "results.json",
                                               new / version / "results.json")
        differ += len(problems)
        print(f"[compare] {version}: {compared} records compared, {len(problems)} differ"
              + (f", {len(declared)} vary as their files declare (Spark's own variation)" if declared else ""))
        for line in problems[:15] + declared[:15]:
            print(f"[compare]   {line}")
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
