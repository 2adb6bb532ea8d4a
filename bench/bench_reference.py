"""What the reference answer (DuckDB, harness.observe.reference) adds to a run of the suite
(make bench-reference; issue 61: at most 10 % more wall time on 2 cores).

Runs the same selection (default: the shipped suite) with `--fresh`, once as is and once
with `--no-reference`, `--rounds` times with the order alternating, and prints each wall
time, the overhead per round, and what the reference did in the run with it: items
compared (agreeing, differing), not compared by reason, the seconds the case records say
it took (the records' `timings.reference_s`; the partitions items' `total_s`). "on" is the
default (the reference, and the ternary-partitioning items); "off" is `--no-reference`
(neither): the suite as it was before either existed.

    python bench/bench_reference.py [PATHS ...] [--rounds 2] [--workers 2]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fresh_runs import LAST_CPU, alternate, arguments, fresh_run  # noqa: E402

from harness.report.version_report import reference_counts  # noqa: E402


def run(paths: list[str], workers: str, reference: bool) -> tuple[float, dict, dict]:
    """(wall seconds, the run's reference counts, seconds the records say each oracle took:
    the reference in cases and in checks, the partitions items)."""
    wall, records = fresh_run(paths, workers, [] if reference else ["--no-reference"])
    seconds = {"cases' reference": 0.0, "checks' reference": 0.0, "partitions items": 0.0}
    for record in records:
        timings = record.get("timings") or {}
        if record.get("kind") == "partitions":
            seconds["partitions items"] += timings.get("total_s", 0.0)
            continue
        owner = "cases'" if record.get("kind") == "case" else "checks'"
        seconds[f"{owner} reference"] += timings.get("reference_s", 0.0)
    return wall, reference_counts(records), seconds


def main() -> None:
    args = arguments(__doc__.splitlines()[0])

    def measure(reference: bool, number: int) -> tuple[float, str]:
        wall, counts, seconds = run(args.paths, args.workers, reference)
        cpu = f" ({LAST_CPU.get('seconds', 0.0):.1f} CPU s on the machine)"
        if not reference:
            return wall, cpu
        reasons = "".join(f"\n[bench-reference]   not compared, {why}: {n}" for why, n in counts["by_reason"].items())
        return wall, cpu + (f" ({counts['compared']} compared: {counts['agree']} agree, {counts['differ']} differ; "
                      f"{counts['not_compared']} not compared; seconds in the records: "
                      + ", ".join(f"{who} {n:.1f}" for who, n in seconds.items()) + ")"
                      + (reasons if number == 0 else ""))
    alternate("bench-reference", args.rounds, measure, ("reference on", "reference off"))


if __name__ == "__main__":
    main()
