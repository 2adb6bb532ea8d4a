"""What the flake finder costs per run, against a normal run of the same items.

    python bench/bench_flakes.py [paths...] [--runs K]

Back to back on the same machine: a normal run of the selection (`--fresh`, its own
store, -n 2) and `python -m harness flakes` of it with K runs (no busy processes), then
the two again in the other order. Prints each wall time and the finder's time per run
over the normal run's: near 1.0 when the finder does the same work K times and nothing
more (one session per worker for all K runs, not K sessions).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["scenarios/hints", "scenarios/streaming"]


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}")
    return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=DEFAULT)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        normal = [sys.executable, "-m", "pytest", *args.paths, "-n", "2", "-q", "-p", "no:cacheprovider", "--fresh",
                  "--store", f"{tmp}/store", "--report-dir", f"{tmp}/normal"]
        finder = [sys.executable, "-m", "harness", "flakes", *args.paths, "--runs", str(args.runs),
                  "--report-dir", f"{tmp}/flakes"]
        times = {"normal": [], "finder": []}
        for order in (("normal", "finder"), ("finder", "normal")):
            for which in order:
                times[which].append(timed(normal if which == "normal" else finder))
                print(f"{which}: {times[which][-1]:.0f} s", flush=True)
    normal_s, finder_s = sum(times["normal"]) / 2, sum(times["finder"]) / 2
    print(f"{' '.join(args.paths)}: normal run {normal_s:.0f} s, flake finder ({args.runs} runs) {finder_s:.0f} s "
          f"= {finder_s / args.runs:.0f} s per run, {finder_s / args.runs / normal_s:.2f} × a normal run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
