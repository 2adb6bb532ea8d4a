"""The harness against a plain PySpark script on a grid of executed cases (make bench-grid).

The grid: a 200,000-row fact and a 2,000-row dimension joined inner, left outer and full
outer, under 3 left × 3 right hint choices × AQE on/off × 2 broadcast thresholds = 108 cases,
each executed for its row count, checksum and initial and final plans. The plain script does exactly that, one case after another in one SparkSession
(spark.range + expressions for the data, hints through the DataFrame API, count and an
order-independent checksum, the plans from `queryExecution`) with the JVM's default
flags (`--same-flags`: also with the harness's). The harness runs the same grid as one
scenario file with `pytest -n auto`, its cross-strategy checks included (one per join
type: six forced strategies each). Each part runs `--rounds` times (default 2), the
order alternating (harness then plain script, plain script then harness), so that
neither side always gets the warm page cache; prints each wall time and the ratios.

Bulk work, on its own line (part `bulk`; `all` runs both parts in one run): on the same rows, a band join
(`l.k BETWEEN r.k AND r.k + 1`, 400 million pairs compared) as a BroadcastNestedLoopJoin
for inner, left outer and full outer, as a CartesianProduct (inner, broadcast off), and a
skewed sort-merge join split by AQE (half the fact's rows on one key). A setting that
slows bulk throughput (the quick JIT) shows there and not in the short grid.

`--flags "..."` and `--workers N` (0: one process, `local[2]`) set the harness's driver
JVM flags and pytest-xdist workers, to compare settings on one commit.
"""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
JOIN_TYPES = ["inner", "left_outer", "full_outer"]
HINTS = list(itertools.product([None, "MERGE", "SHUFFLE_HASH"], [None, "BROADCAST", "SHUFFLE_HASH"]))
CONFS = list(itertools.product(["true", "false"], ["10485760", "-1"]))

TABLES = """\
seed: 11
tables:
  fact:
    rows: 200000
    columns:
      k: {key: {cardinality: 2000}}
      v: {uniform: {min: 0, max: 1000}}
  dim:
    rows: 2000
    columns:
      k: {sequence: {}}
      name: {faker: {provider: name, pool: 500}}
"""
SCENARIO = f"""\
id: bench_grid
description: the speed grid of bench/bench_grid.py
{TABLES}join:
  left: fact
  right: dim
  on: [k]
timeout: 600
matrix:
  join_type: [inner, left_outer, full_outer]
  left_hints: [[], MERGE, SHUFFLE_HASH]
  right_hints: [[], BROADCAST, SHUFFLE_HASH]
  conf:
    spark.sql.adaptive.enabled: [true, false]
    spark.sql.autoBroadcastJoinThreshold: [10485760, -1]
expect:
  plan: final
"""

BAND = "l.k >= r.k AND l.k <= r.k + 1"  # 400 million pairs compared, ~400,000 kept
BULK = {
    "bench_nested_loop": f"""\
id: bench_nested_loop
description: nested loops of bench/bench_grid.py
{TABLES}join: {{left: fact, right: dim, condition: "{BAND}"}}
timeout: 900
matrix:
  join_type: [inner, left_outer, full_outer]
expect:
  plan: final
""",
    "bench_cartesian": f"""\
id: bench_cartesian
description: the cartesian product of bench/bench_grid.py
{TABLES}join: {{left: fact, right: dim, condition: "{BAND}"}}
timeout: 900
spark_conf: {{spark.sql.autoBroadcastJoinThreshold: -1}}
expect:
  plan: final
  strategy: CartesianProduct
""",
    "bench_skew": f"""\
id: bench_skew
description: the AQE skew case of bench/bench_grid.py (half the fact's rows on one key)
{TABLES.replace("k: {key: {cardinality: 2000}}", "k: {key: {cardinality: 2000, hot_fraction: 0.5, hot_keys: 1}}")}\
join: {{left: fact, right: dim, on: [k]}}
spark_conf:
  spark.sql.adaptive.enabled: true
  spark.sql.autoBroadcastJoinThreshold: -1
  spark.sql.adaptive.autoBroadcastJoinThreshold: -1
  spark.sql.shuffle.partitions: 20
  spark.sql.adaptive.coalescePartitions.enabled: false
  spark.sql.adaptive.skewJoin.skewedPartitionFactor: 2
  spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes: 100000
  spark.sql.adaptive.advisoryPartitionSizeInBytes: 100000
expect:
  plan: final
  joins:
    - {{strategy: SortMergeJoin, skew: true}}
""",
}

PLAIN = """\
import sys, time
from pyspark.sql import SparkSession, functions as F
flags, part = sys.argv[1], sys.argv[2]
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.driver.memory", "3g").config("spark.driver.extraJavaOptions", flags).getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
started = time.perf_counter()
names = [f"name{i}" for i in range(500)]
fact = spark.range(0, 200000, 1, 2).select((F.xxhash64("id", F.lit(1)) % 2000).alias("k"),
                                           (F.xxhash64("id", F.lit(2)) % 1000).alias("v"))
hot = fact.select(F.when(F.col("v") < 500, F.lit(0)).otherwise(F.col("k")).alias("k"), "v")
dim = spark.range(0, 2000, 1, 2).select(F.col("id").alias("k"),
                                        F.element_at(F.array(*map(F.lit, names)),
                                                     (F.abs(F.xxhash64("id")) % 500 + 1).cast("int")).alias("name"))
observed = []
def observe(left, right, how, condition, confs):
    for key, value in confs.items():
        spark.conf.set(key, value)
    joined = left.join(right, condition(F.col("l.k"), F.col("r.k")), how)
    renamed = joined.toDF(*[f"c{i}" for i in range(len(joined.columns))])
    frame = renamed.select(F.count(F.lit(1)).alias("rows"),
                           F.sum(F.xxhash64(*renamed.columns).cast("decimal(38,0)")).alias("h"))
    initial = frame._jdf.queryExecution().executedPlan().toString()
    row = frame.collect()[0]
    final = frame._jdf.queryExecution().executedPlan().toString()
    observed.append((how, row["rows"], str(row["h"]), len(initial), len(final)))
    for key in confs:
        spark.conf.unset(key)
equal = lambda lk, rk: lk == rk
band = lambda lk, rk: (lk >= rk) & (lk <= rk + 1)
if part in ("grid", "all"):
    for how in JOIN_TYPES:
        for hint in HINTS:
            for aqe, threshold in CONFS:
                left, right = fact.alias("l"), dim.alias("r")
                left = left.hint(hint[0]) if hint[0] else left
                right = right.hint(hint[1]) if hint[1] else right
                observe(left, right, how, equal, {"spark.sql.adaptive.enabled": aqe,
                                                  "spark.sql.autoBroadcastJoinThreshold": threshold})
if part in ("bulk", "all"):
    for how in JOIN_TYPES:
        observe(fact.alias("l"), dim.alias("r"), how, band, {})
    observe(fact.alias("l"), dim.alias("r"), "inner", band, {"spark.sql.autoBroadcastJoinThreshold": "-1"})
    observe(hot.alias("l"), dim.alias("r"), "inner", equal, SKEW_CONFS)
print(len(observed), round(time.perf_counter() - started, 1))
"""
SKEW_CONFS = {key: str(value).lower() for key, value in
              yaml.safe_load(BULK["bench_skew"])["spark_conf"].items()}


def plain(flags: str, part: str) -> tuple[float, str]:
    script = (f"JOIN_TYPES, HINTS, CONFS, SKEW_CONFS = {JOIN_TYPES!r}, {HINTS!r}, {CONFS!r}, {SKEW_CONFS!r}\n"
              + PLAIN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script, flags, part], capture_output=True, text=True, check=True)
    return time.perf_counter() - started, done.stdout.strip().splitlines()[-1]


def harness(workdir: Path, files: dict, flags: str | None, workers: int) -> tuple[float, dict]:
    """The files as one pytest run of the harness, --fresh: its wall time and summary."""
    workdir.mkdir()
    for name, text in files.items():
        (workdir / f"{name}.yaml").write_text(textwrap.dedent(text))
    env = dict(os.environ)
    if flags is not None:
        env["HARNESS_DRIVER_JVM_FLAGS"] = flags
    started = time.perf_counter()
    paths = [str(workdir / f"{name}.yaml") for name in files]
    subprocess.run([sys.executable, "-m", "pytest", *paths, "-n", str(workers), "-q", "-p", "no:cacheprovider",
                    "--fresh", "--report-dir", str(workdir / "reports"), "--rootdir", str(ROOT)], cwd=ROOT,
                   capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    results = json.loads(next((workdir / "reports").glob("*/results.json")).read_text())
    return elapsed, results["summary"]


def harness_flags(files: dict) -> str:
    """The driver JVM flags the harness picks for these files (harness.scenario.workload)."""
    from harness.core.options import RunOptions
    from harness.scenario.model import expand, load_scenario
    from harness.check.expect import executes
    from harness.scenario.workload import prefers_optimising_jit
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        for name, text in files.items():
            path = Path(tmp) / f"{name}.yaml"
            path.write_text(textwrap.dedent(text))
            cases += expand(load_scenario(path))
    bulk = prefers_optimising_jit(cases, lambda case: executes(case.expect))
    return RunOptions.optimising_jit_flags if bulk else RunOptions.driver_jvm_flags


def main() -> None:
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flags", default=None, help="the harness's driver JVM flags (default: its own)")
    parser.add_argument("--workers", default="auto", help="pytest-xdist workers (0: one process; default: "
                                                           "the harness's own choice, as `make run`)")
    parser.add_argument("--parts", default="grid,bulk,all",
                        help="grid, bulk, all (both in one run), comma-separated")
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds per part, the order alternating: harness first, then the plain script "
                             "first (default: 2, both ways)")
    parser.add_argument("--same-flags", action="store_true",
                        help="also run the plain script with the harness's driver flags")
    parser.add_argument("--harness-only", action="store_true", help="leave the plain scripts out")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    parts = {"grid": {"bench_grid": SCENARIO}, "bulk": BULK, "all": {"bench_grid": SCENARIO, **BULK}}
    what = {"grid": f"{len(JOIN_TYPES) * len(HINTS) * len(CONFS)} executed cases (200k x 2k; inner, left outer, "
                    "full outer x hints x AQE x threshold)",
            "bulk": "5 executed bulk cases (band join: 3 nested loops and a cartesian product of 400M pairs; "
                    "an AQE skew split)"}
    what["all"] = f"both in one run: {what['grid']} and {what['bulk']}"
    for part in args.parts.split(","):
        flags = args.flags if args.flags is not None else harness_flags(parts[part])
        print(f"[bench-grid {part}] {what[part]}", flush=True)
        ratios = []
        for round_number in range(args.rounds):
            ratios.append(_round(part, parts[part], flags, args, plain_first=round_number % 2 == 1))
        if ratios and not args.harness_only:
            print(f"[bench-grid {part}] harness vs plain script (JVM defaults), per round: "
                  + ", ".join(f"{r:.2f}x" for r in ratios) + f"; lowest {min(ratios):.2f}x", flush=True)


def _round(part: str, files: dict, flags: str, args, plain_first: bool) -> float | None:
    """One harness run and one plain run, in this order or the other: harness/plain."""
    order = "plain script first" if plain_first else "harness first"
    timed = {}
    for runner in (["plain", "harness"] if plain_first else ["harness", "plain"]):
        if runner == "harness":
            with tempfile.TemporaryDirectory() as tmp:
                timed["harness"] = harness(Path(tmp) / part, files, args.flags, args.workers)
        elif not args.harness_only:
            timed["plain"] = plain("", part)
            if args.same_flags:
                timed["same flags"] = plain(flags, part)
    harness_s, summary = timed["harness"]
    print(f"[bench-grid {part}] ({order}) harness, pytest -n {args.workers}, flags {flags!r}, {summary['cases']} "
          f"cases + {summary['agreement_checks']} cross-strategy checks: {harness_s:6.1f} s  ({summary['by_status']})")
    if args.harness_only:
        return None
    for label in ("plain", "same flags"):
        if label in timed:
            seconds, out = timed[label]
            print(f"[bench-grid {part}] ({order}) plain script, "
                  f"{'JVM defaults' if label == 'plain' else 'the harness flags'}: {seconds:6.1f} s  "
                  f"(cases, loop seconds: {out}); ratio {seconds / harness_s:.2f}x", flush=True)
    return timed["plain"][0] / harness_s


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
