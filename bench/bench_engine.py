"""The shipped suite under a native engine against the plain run of the same Spark version
(make bench-engine; issue 44): both ways on this machine in one run, the order
alternating per round, each run `--fresh` into a folder of its own.

Prints each run's wall time, and per case that both ran (the case item, not its
cross-strategy check) the median and the total of its time, and how many cases took
longer under the engine. `--spark` names a version the engine publishes a jar for (3.5,
4.1); its matrix environment is built if missing.

    python bench/bench_engine.py [PATHS ...] [--spark 4.1.4] [--engine comet] [--rounds 1] [--workers 2]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ["-p", "no:join_harness", "-p", "harness.plugin"]  # also where no entry point is installed


def run(python: Path, env: dict, paths: list[str], workers: str, engine: str | None) -> tuple[float, dict]:
    """(wall seconds, case id → total seconds) of one fresh run."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        subprocess.run([str(python), "-m", "pytest", *PLUGIN, *paths, "-n", workers, "-q", "-p", "no:cacheprovider",
                        *(["--engine", engine] if engine else []), "--fresh", "--report-dir", tmp,
                        "--store", str(Path(tmp) / "store")], cwd=ROOT, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - started
        found = next(Path(tmp).rglob("results.json"))
        records = json.loads(found.read_text())["cases"]
    return wall, {r["case_id"]: r["timings"]["total_s"] for r in records
                  if r.get("kind") == "case" and r["status"] != "skipped"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["scenarios"])
    parser.add_argument("--engine", default="comet")
    parser.add_argument("--spark", default="4.1.4")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--workers", default="2")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from harness.deploy.matrix import ensure_env, java_home, needs_java11
    python = ensure_env(args.spark, lambda message: print(f"[bench-engine] {message}", flush=True))
    if python is None:
        sys.exit(f"[bench-engine] no environment for Spark {args.spark}")
    env = dict(os.environ, PYSPARK_PYTHON=str(python),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    if needs_java11(args.spark):
        env["JAVA_HOME"] = java_home(python) or ""
    for number in range(args.rounds):
        order = [None, args.engine] if number % 2 == 0 else [args.engine, None]
        results = {}
        for engine in order:
            results[engine] = run(python, env, args.paths, args.workers, engine)
            print(f"[bench-engine] round {number + 1}, {engine or 'plain'}: {results[engine][0]:6.1f} s wall, "
                  f"{len(results[engine][1])} cases", flush=True)
        plain, native = results[None][1], results[args.engine][1]
        both = sorted(set(plain) & set(native))
        if not both:
            print(f"[bench-engine] round {number + 1}: no case ran both ways (is there a {args.engine} jar for "
                  "this Spark?)")
            continue
        slower = sum(1 for case in both if native[case] > plain[case])
        print(f"[bench-engine] round {number + 1} ({order[0] or 'plain'} first), {len(both)} cases both ways: "
              f"per case median {statistics.median(plain[c] for c in both):.3f} s plain, "
              f"{statistics.median(native[c] for c in both):.3f} s {args.engine}; in all "
              f"{sum(plain[c] for c in both):.1f} s plain, {sum(native[c] for c in both):.1f} s {args.engine}; "
              f"{slower} slower under {args.engine}", flush=True)


if __name__ == "__main__":
    main()
