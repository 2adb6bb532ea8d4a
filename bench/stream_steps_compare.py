"""A harness run's stream steps against the plain PySpark reference of the same files.

    python bench/stream_steps_compare.py PLAIN.json RESULTS.json [RESULTS.json ...]

PLAIN.json from `bench/stream_steps_plain.py`, RESULTS.json a harness run's results on
the same Spark version. Per scenario and step: the rows emitted, the watermark, the state
rows, the rows dropped as late and the micro-batches run. Prints every difference and
exits 1 when there is one (or when a file has no reference or no harness record).
"""
from __future__ import annotations

import json
import sys

FIELDS = ("watermark", "state_rows", "late_rows_dropped", "micro_batches")


def value_key(value):
    """The harness keeps numbers as floats and timestamps as text (harness.core.rows)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None if value is None else str(value).replace("T", " ")


def rows_key(rows) -> list:
    return sorted(repr([value_key(v) for v in row]) for row in rows or [])


def harness_steps(results: dict) -> dict:
    steps = {}
    for case in results["cases"]:
        observed = case.get("observed") or {}
        if observed.get("stream_steps") and case.get("kind", "case") == "case":
            steps[case["scenario_id"]] = observed["stream_steps"]
    return steps


def compare(plain: dict, results: dict) -> list[str]:
    problems, ours = [], harness_steps(results)
    for reference in plain["files"]:
        name = reference["id"]
        if "error" in reference or reference.get("unreliable"):
            print(f"{name}: no reference on {plain['spark']} ({reference.get('error') or reference['unreliable']})")
            continue
        if name not in ours:
            problems.append(f"{name}: no harness record of its steps")
            continue
        for i, (want, got) in enumerate(zip(reference["steps"], ours[name]), start=1):
            if "new_rows" in got and rows_key(want["new_rows"]) != rows_key(got["new_rows"]):
                problems.append(f"{name} step {i}: rows {want['new_rows']} (plain) vs {got['new_rows']} (harness)")
            if len(want["new_rows"]) != got["emitted"]:
                problems.append(f"{name} step {i}: {len(want['new_rows'])} rows out (plain) vs {got['emitted']}")
            for key in FIELDS:
                if want[key] != got.get(key):
                    problems.append(f"{name} step {i}: {key} {want[key]} (plain) vs {got.get(key)} (harness)")
        if len(reference["steps"]) != len(ours[name]):
            problems.append(f"{name}: {len(reference['steps'])} steps (plain) vs {len(ours[name])} (harness)")
    return problems


def main(argv: list[str]) -> int:
    plain = json.load(open(argv[0]))
    failed = False
    for path in argv[1:]:
        results = json.load(open(path))
        problems = compare(plain, results)
        compared = sum(1 for f in plain["files"] if "steps" in f and not f.get("unreliable"))
        print(f"{path}: {compared} file(s) compared on Spark {plain['spark']}, {len(problems)} difference(s)")
        for line in problems:
            print("  " + line)
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
