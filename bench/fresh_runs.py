"""What the A/B benchmarks share (bench_cost.py, bench_reference.py): one fresh run of a
selection in its own report folder and store, and the rounds' alternating order."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def busy_cpu_seconds() -> float:
    """CPU seconds every core of the machine has spent busy since boot (/proc/stat: all but
    idle and iowait): the difference over a run is the CPU the run cost, whichever process
    (a JVM, a worker, DuckDB) spent it, on a machine nothing else runs on."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError):
        return 0.0
    busy = sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)
    return busy / os.sysconf("SC_CLK_TCK")


LAST_CPU: dict = {}  # the CPU seconds of the last fresh_run, for the benchmarks that print it


def fresh_run(paths: list[str], workers: str, extra: list[str]) -> tuple[float, list[dict]]:
    """(wall seconds, the run's records) of `pytest PATHS --fresh` with `extra` arguments."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        cpu_before = busy_cpu_seconds()
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", *paths, "-n", workers, "-q", "-p", "no:cacheprovider",
                        *extra, "--fresh", "--report-dir", tmp, "--store", str(Path(tmp) / "store")],
                       cwd=ROOT, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - started
        LAST_CPU["seconds"] = busy_cpu_seconds() - cpu_before
        results = next(Path(tmp).glob("*/results.json"))
        keep = os.environ.get("BENCH_KEEP")  # a folder: each run's results.json kept there, to compare item by item
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            (Path(keep) / f"{int(time.time())}{'-'.join(extra)}.json").write_text(results.read_text())
        return wall, json.loads(results.read_text())["cases"]


def orders(rounds: int) -> list[list[bool]]:
    """Each round's order of the two variants (True first, then False first, ...): a
    machine that warms up or tires does not favour one of them."""
    return [[True, False] if number % 2 == 0 else [False, True] for number in range(rounds)]


def arguments(description: str):
    """The A/B benchmarks' command line: PATHS, --rounds, --workers."""
    import argparse
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("paths", nargs="*", default=["scenarios"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", default="2")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return args


def alternate(name: str, rounds: int, measure, words: tuple[str, str]) -> list[float]:
    """Each round runs `measure(True)` and `measure(False)` (each gives its wall seconds and
    a note), in alternating order; prints each and the overhead of True over False."""
    overheads = []
    for number, order in enumerate(orders(rounds)):
        walls = {}
        for variant in order:
            walls[variant], note = measure(variant, number)
            print(f"[{name}] round {number + 1}, {words[0] if variant else words[1]}: {walls[variant]:6.1f} s{note}",
                  flush=True)
        overheads.append((walls[True] - walls[False]) / walls[False])
        print(f"[{name}] round {number + 1} ({words[0] if order[0] else words[1]} first): "
              f"overhead {overheads[-1]:+.1%}", flush=True)
    print(f"[{name}] overhead per round: " + ", ".join(f"{o:+.1%}" for o in overheads))
    return overheads
