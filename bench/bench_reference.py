"""What the reference answer (DuckDB, harness.observe.reference) adds to a run of the suite
(make bench-reference; issue 61: at most 10 % more wall time on 2 cores).

Runs the same selection (default: the shipped suite) with `--fresh`, once as is and once
with `--no-reference`, `--rounds` times with the order alternating, and prints each wall
time, the overhead per round, and what the reference did in the run with it: items
compared (agreeing, differing), not compared by reason, the seconds the case records say
it took (`timings.reference_s`). "on" is the default (the reference, and ternary
partitioning where it did not compare); "off" is `--no-reference` (neither): the suite as
it was before either existed.

    python bench/bench_reference.py [PATHS ...] [--rounds 2] [--workers 2]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.report.version_report import reference_counts  # noqa: E402


def run(paths: list[str], workers: str, reference: bool) -> tuple[float, dict, float]:
    """(wall seconds, the run's reference counts, summed reference_s of its case records)."""
    with tempfile.TemporaryDirectory() as tmp:
        flag = [] if reference else ["--no-reference"]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", *paths, "-n", workers, "-q", "-p", "no:cacheprovider",
                        *flag, "--fresh", "--report-dir", tmp, "--store", str(Path(tmp) / "store")],
                       cwd=ROOT, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - started
        records = json.loads(next(Path(tmp).glob("*/results.json")).read_text())["cases"]
    seconds = sum((r.get("timings") or {}).get("reference_s", 0.0) for r in records)
    return wall, reference_counts(records), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["scenarios"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", default="2")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    overheads = []
    for number in range(args.rounds):
        order = [True, False] if number % 2 == 0 else [False, True]
        walls = {}
        for reference in order:
            wall, counts, seconds = run(args.paths, args.workers, reference)
            walls[reference] = wall
            said = ""
            if reference:
                said = (f" ({counts['compared']} compared: {counts['agree']} agree, {counts['differ']} differ; "
                        f"{counts['not_compared']} not compared; {seconds:.1f} s in the case records)")
            print(f"[bench-reference] round {number + 1}, reference {'on' if reference else 'off'}: "
                  f"{wall:6.1f} s{said}", flush=True)
            if reference and number == 0:
                for why, n in counts["by_reason"].items():
                    print(f"[bench-reference]   not compared, {why}: {n}", flush=True)
        overheads.append((walls[True] - walls[False]) / walls[False])
        print(f"[bench-reference] round {number + 1} ({'on first' if order[0] else 'off first'}): "
              f"overhead {overheads[-1]:+.1%}", flush=True)
    print("[bench-reference] overhead per round: " + ", ".join(f"{o:+.1%}" for o in overheads))


if __name__ == "__main__":
    main()
