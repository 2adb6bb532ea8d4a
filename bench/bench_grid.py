"""The harness against a plain PySpark script on a grid of executed cases (make bench-grid).

The grid: a 200,000-row fact and a 2,000-row dimension joined inner, left outer and full
outer, under 3 left × 3 right hint choices × AQE on/off × 2 broadcast thresholds = 108 cases, each executed for its row count, checksum and initial and final
plans. The plain script does exactly that, one case after another in one SparkSession
(spark.range + expressions for the data, hints through the DataFrame API, count and an
order-independent checksum, the plans from `queryExecution`), once with the JVM's
default flags and once with the harness' driver flags. The harness runs the same grid
as one scenario file with `pytest -n 2`, its cross-strategy checks included (one per
join type: six forced strategies each). Prints the three wall times and the ratios.
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

ROOT = Path(__file__).resolve().parent.parent
JOIN_TYPES = ["inner", "left_outer", "full_outer"]
HINTS = list(itertools.product([None, "MERGE", "SHUFFLE_HASH"], [None, "BROADCAST", "SHUFFLE_HASH"]))
CONFS = list(itertools.product(["true", "false"], ["10485760", "-1"]))

SCENARIO = """\
id: bench_grid
description: the speed grid of bench/bench_grid.py
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
join:
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

PLAIN = """\
import sys, time
from pyspark.sql import SparkSession, functions as F
flags = sys.argv[1]
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.driver.memory", "3g").config("spark.driver.extraJavaOptions", flags).getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
started = time.perf_counter()
names = [f"name{i}" for i in range(500)]
fact = spark.range(0, 200000, 1, 2).select((F.xxhash64("id", F.lit(1)) % 2000).alias("k"),
                                           (F.xxhash64("id", F.lit(2)) % 1000).alias("v"))
dim = spark.range(0, 2000, 1, 2).select(F.col("id").alias("k"),
                                        F.element_at(F.array(*map(F.lit, names)),
                                                     (F.abs(F.xxhash64("id")) % 500 + 1).cast("int")).alias("name"))
observed = []
for how in JOIN_TYPES:
    for hint in HINTS:
        for aqe, threshold in CONFS:
            spark.conf.set("spark.sql.adaptive.enabled", aqe)
            spark.conf.set("spark.sql.autoBroadcastJoinThreshold", threshold)
            left, right = fact.alias("l"), dim.alias("r")
            left = left.hint(hint[0]) if hint[0] else left
            right = right.hint(hint[1]) if hint[1] else right
            joined = left.join(right, F.col("l.k") == F.col("r.k"), how)
            renamed = joined.toDF(*[f"c{i}" for i in range(len(joined.columns))])
            frame = renamed.select(F.count(F.lit(1)).alias("rows"),
                                   F.sum(F.xxhash64(*renamed.columns).cast("decimal(38,0)")).alias("h"))
            initial = frame._jdf.queryExecution().executedPlan().toString()
            row = frame.collect()[0]
            final = frame._jdf.queryExecution().executedPlan().toString()
            observed.append((how, hint, aqe, threshold, row["rows"], str(row["h"]), len(initial), len(final)))
print(len(observed), round(time.perf_counter() - started, 1))
"""


def plain(flags: str) -> tuple[float, str]:
    script = f"JOIN_TYPES, HINTS, CONFS = {JOIN_TYPES!r}, {HINTS!r}, {CONFS!r}\n" + PLAIN
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script, flags], capture_output=True, text=True, check=True)
    return time.perf_counter() - started, done.stdout.strip().splitlines()[-1]


def harness(workdir: Path) -> tuple[float, dict]:
    path = workdir / "bench_grid.yaml"
    path.write_text(textwrap.dedent(SCENARIO))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", str(path), "-n", "2", "-q", "-p", "no:cacheprovider",
                    "--report-dir", str(workdir / "reports"), "--rootdir", str(ROOT)], cwd=ROOT,
                   capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    results = json.loads(next((workdir / "reports").glob("*/results.json")).read_text())
    return elapsed, results["summary"]


def main() -> None:
    from harness.core.options import RunOptions
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    cases = len(JOIN_TYPES) * len(HINTS) * len(CONFS)
    with tempfile.TemporaryDirectory() as tmp:
        harness_s, summary = harness(Path(tmp))
    default_s, default_out = plain("")
    flagged_s, flagged_out = plain(RunOptions.driver_jvm_flags)
    print(f"[bench-grid] {cases} executed cases (200k x 2k; inner, left outer, full outer)")
    print(f"[bench-grid] plain script, JVM defaults:      {default_s:6.1f} s  (cases, loop seconds: {default_out})")
    print(f"[bench-grid] plain script, the harness' flags: {flagged_s:6.1f} s  (cases, loop seconds: {flagged_out})")
    print(f"[bench-grid] harness, pytest -n 2, {summary['cases']} cases + {summary['agreement_checks']} "
          f"cross-strategy checks: {harness_s:6.1f} s  ({summary['by_status']})")
    print(f"[bench-grid] harness vs plain script: {default_s / harness_s:.2f}x (JVM defaults), "
          f"{flagged_s / harness_s:.2f}x (same flags)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
