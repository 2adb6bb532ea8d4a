"""The flake finder: `python -m harness flakes [paths] --runs K [--stress N]`.

Runs the selected items K times each in one pytest session (one SparkSession per worker,
as a normal run), the result store bypassed, optionally beside N busy processes, and
reports every item whose observation or verdict differs between its runs
(harness.report.flakes). Exit 1 when anything flipped, 0 when nothing did, 2 on bad
input; a verdict that is the same red on every run is not a flip. The report goes to
<report-dir>/<version>/ (default reports/flakes/), beside the normal runs', never into
them. Never a retry: every run counts.

The busy processes spin on one core each until the run ends; each also stops by itself
when the finder's process is gone or after MAX_STRESS_S, whatever happens.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness.core import project

MAX_RUNS = 100
MAX_STRESS_S = 6 * 3600
# One busy process: spins, checking once a second that its parent lives and that its
# time is not up, so none outlives the finder.
BUSY = ("import os, sys, time\n"
        "parent, end = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])\n"
        "while time.monotonic() < end:\n"
        "    tick = time.monotonic() + 1\n"
        "    while time.monotonic() < tick:\n"
        "        pass\n"
        "    if os.getppid() != parent:\n"
        "        break\n")


def problems(runs: int, stress: int, cores: int | None = None) -> list[str]:
    """Bad input, one line each."""
    cores = cores or os.cpu_count() or 1
    found = []
    if not 2 <= runs <= MAX_RUNS:
        found.append(f"--runs {runs}: between 2 and {MAX_RUNS} (a flip needs two runs to compare)")
    if stress < 0 or stress > 4 * cores:
        found.append(f"--stress {stress}: between 0 and {4 * cores} (4 × this machine's {cores} cores)")
    return found


def start_stress(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", BUSY, str(os.getpid()), str(MAX_STRESS_S)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(count)]


def stop_stress(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.kill()
    for process in processes:
        process.wait()


def main(paths: list[str], runs: int, stress: int, report_dir: str, workers: str, keyword: str | None,
         extra: list[str] | None = None) -> int:
    bad = problems(runs, stress)
    missing = [p for p in paths if not Path(p).exists()]
    bad += [f"{p}: no such file or folder" for p in missing]
    if bad:
        for line in bad:
            print(f"flakes: {line}", file=sys.stderr)
        return 2
    # the plugin by module: an environment of Spark 3.0 installs the harness without its entry point
    command = [sys.executable, "-m", "pytest", "-p", "no:join_harness", "-p", "harness.plugin",
               *(paths or [str(p) for p in project.find().scenario_paths()]), "-q", "-p", "no:cacheprovider",
               "--flake-runs", str(runs), "--report-dir", report_dir, "--no-merged-page", *(extra or [])]
    if workers != "0":
        command += ["-n", workers]
    if keyword:
        command += ["-k", keyword]
    env = {**os.environ, "HARNESS_FLAKE_STRESS": str(stress)}
    busy = start_stress(stress)
    try:
        done = subprocess.run(command, env=env)
    finally:
        stop_stress(busy)
    if done.returncode == 5:
        print(f"flakes: no item selected by {' '.join(paths or ['scenarios'])}"
              f"{f' -k {keyword!r}' if keyword else ''}", file=sys.stderr)
        return 2
    found = _flakes_of(str(version_report_dir(report_dir)))
    if found is None:
        print(f"flakes: the run wrote no results under {report_dir} (pytest exit {done.returncode})", file=sys.stderr)
        return 2
    return 1 if any(not flip["spark_variation"] for flip in found["flips"]) else 0


def version_report_dir(report_dir: str):
    """The run's report folder: under a native engine (HARNESS_ENGINE), REPORT_DIR/<engine>/."""
    from harness.report.version_report import engine_report_dir
    return engine_report_dir(report_dir, os.environ.get("HARNESS_ENGINE", ""))


def _flakes_of(report_dir: str) -> dict | None:
    from harness.report.version_report import installed_spark, version_dir
    try:
        results = json.loads((version_dir(report_dir, installed_spark()) / "results.json").read_text())
    except (OSError, ValueError):
        return None
    return results.get("flakes")
