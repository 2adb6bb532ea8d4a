"""Are two runs' results the same? (python bench/compare_runs.py BASELINE_DIR NEW_DIR [VERSION ...])

For a speed change the answer must not move: for every version present in both report
folders, every record is compared on what Spark answered and how it planned — status,
rows, checksum, the initial and final join nodes (expression ids normalised), the
estimates, the warnings and, for a cross-strategy check, each forced run's strategy,
build side, rows, checksum or error. Timings, messages' sharing notes and run dates are
not compared. Prints one line per version and the first differences; exit 1 on any.
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


def fingerprint(record: dict, fields: set | None = None) -> dict:
    """What Spark answered and planned; join nodes on `fields` only (what both runs record:
    a field a later release added is not a difference)."""
    observed = record.get("observed") or {}
    if record.get("kind") == "agreement":
        runs = [{k: run.get(k) for k in ("forced", "strategy", "build_side", "rows", "checksum")}
                | {"error": bool(run.get("error"))} for run in observed.get("agreement", [])]
        return {"status": record["status"], "runs": runs, "strategies": observed.get("strategies")}
    error = observed.get("error") or {}
    return {"status": record["status"], "rows": observed.get("rows"), "checksum": observed.get("checksum"),
            "initial": _normalised(_joins(observed.get("initial"), fields)),
            "final": _normalised(_joins(observed.get("final"), fields)),
            "estimates": _normalised(observed.get("estimates")), "warnings": observed.get("warnings"),
            "error": error.get("class")}


def compare(baseline: Path, new: Path) -> tuple[int, int, list[str]]:
    old = {r["case_id"]: r for r in json.loads(baseline.read_text())["cases"]}
    now = {r["case_id"]: r for r in json.loads(new.read_text())["cases"]}
    problems = [f"only in the baseline: {case}" for case in sorted(old.keys() - now.keys())]
    problems += [f"only in the new run: {case}" for case in sorted(now.keys() - old.keys())]
    for case in sorted(old.keys() & now.keys()):
        fields = _node_fields(old[case]) & _node_fields(now[case])
        before, after = fingerprint(old[case], fields), fingerprint(now[case], fields)
        changed = [key for key in before if before[key] != after.get(key)]
        if changed:
            problems.append(f"{case}: " + "; ".join(f"{key} {before[key]!r} → {after.get(key)!r}"[:300]
                                                    for key in changed))
    return len(old.keys() & now.keys()), len(problems), problems


def main(argv: list[str]) -> int:
    baseline, new, versions = Path(argv[0]), Path(argv[1]), argv[2:]
    versions = versions or sorted(p.name for p in new.iterdir() if (p / "results.json").exists()
                                  and (baseline / p.name / "results.json").exists())
    differ = 0
    for version in versions:
        if not (baseline / version / "results.json").exists():
            print(f"[compare] {version}: no baseline results in {baseline}")
            continue
        compared, count, problems = compare(baseline / version / "results.json", new / version / "results.json")
        differ += count
        print(f"[compare] {version}: {compared} records compared, {count} differ")
        for line in problems[:15]:
            print(f"[compare]   {line}")
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
