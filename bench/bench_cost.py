"""What recording a join's cost adds to a run (make bench-cost; issue 43: at most 5 %).

Runs the same selection (default: the shipped suite) with `--fresh`, once as is and once
with cost recording replaced by nothing (bench/cost_off.py), `--rounds` times with the
order alternating (as is first, then without first), and prints each wall time, the
overhead per round, and the seconds the runs' records say reading the metrics took
(`timings.cost_s`, summed over the executed cases).

    python bench/bench_cost.py [PATHS ...] [--rounds 2] [--workers 2]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fresh_runs import alternate, arguments, fresh_run  # noqa: E402


def run(paths: list[str], workers: str, cost: bool) -> tuple[float, float, int]:
    """(wall seconds, summed cost_s of its records, executed cases) of one fresh run."""
    wall, records = fresh_run(paths, workers, [] if cost else ["-p", "bench.cost_off"])
    executed = [r for r in records if (r.get("observed") or {}).get("executed")]
    return wall, sum((r.get("timings") or {}).get("cost_s", 0.0) for r in executed), len(executed)


def main() -> None:
    args = arguments(__doc__.splitlines()[0])

    def measure(cost: bool, number: int) -> tuple[float, str]:
        wall, cost_s, executed = run(args.paths, args.workers, cost)
        return wall, f" ({executed} executed cases; reading the metrics: {cost_s:.2f} s in all)" if cost else ""
    alternate("bench-cost", args.rounds, measure, ("cost recorded", "no cost recorded"))


if __name__ == "__main__":
    main()
