"""What recording a join's cost adds to a run (make bench-cost; issue 43: at most 5 %).

Runs the same selection (default: the shipped suite) with `--fresh`, once as is and once
with cost recording replaced by nothing (bench/cost_off.py), `--rounds` times with the
order alternating (as is first, then without first), and prints each wall time, the
overhead per round, and the seconds the runs' records say reading the metrics took
(`timings.cost_s`, summed over the executed cases).

    python bench/bench_cost.py [PATHS ...] [--rounds 2] [--workers 2]
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


def run(paths: list[str], workers: str, cost: bool) -> tuple[float, float, int]:
    """(wall seconds, summed cost_s of its records, executed cases) of one fresh run."""
    with tempfile.TemporaryDirectory() as tmp:
        plugin = [] if cost else ["-p", "bench.cost_off"]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", *paths, "-n", workers, "-q", "-p", "no:cacheprovider",
                        *plugin, "--fresh", "--report-dir", tmp, "--store", str(Path(tmp) / "store")],
                       cwd=ROOT, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - started
        records = json.loads(next(Path(tmp).glob("*/results.json")).read_text())["cases"]
    executed = [r for r in records if (r.get("observed") or {}).get("executed")]
    return wall, sum((r.get("timings") or {}).get("cost_s", 0.0) for r in executed), len(executed)


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
        for cost in order:
            wall, cost_s, executed = run(args.paths, args.workers, cost)
            walls[cost] = wall
            print(f"[bench-cost] round {number + 1}, {'cost recorded' if cost else 'no cost recorded'}: "
                  f"{wall:6.1f} s" + (f" ({executed} executed cases; reading the metrics: {cost_s:.2f} s in all)"
                                      if cost else ""), flush=True)
        overheads.append((walls[True] - walls[False]) / walls[False])
        print(f"[bench-cost] round {number + 1} ({'recorded first' if order[0] else 'unrecorded first'}): "
              f"overhead {overheads[-1]:+.1%}", flush=True)
    print("[bench-cost] overhead per round: " + ", ".join(f"{o:+.1%}" for o in overheads))


if __name__ == "__main__":
    main()
