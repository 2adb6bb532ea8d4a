"""Run a command K times in a row beside N busy processes; exit 1 if any run failed.

    python bench/under_load.py --busy 2 --times 3 -- make unit

Each busy process keeps one core spinning (the flake finder's, harness.deploy.flakes)
for as long as the runs last. Prints each run's exit status and wall time: a test suite
that passes only on an idle machine fails here.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.deploy.flakes import start_stress, stop_stress  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=2)
    parser.add_argument("--times", type=int, default=3)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("a command to run, after --")
    busy = start_stress(args.busy)
    failed = 0
    try:
        for run in range(1, args.times + 1):
            started = time.perf_counter()
            code = subprocess.run(command).returncode
            print(f"under load ({args.busy} busy): run {run}/{args.times}: exit {code} in "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
            failed += code != 0
    finally:
        stop_stress(busy)
    print(f"under load ({args.busy} busy): {args.times - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
