"""Speed figures for the harness (run with `make bench`; not part of the timed tests).

Prints: session start, generated rows/s for a 5-column table with one Faker column,
plan-only cases per second after warm-up, the median time of a case that executes a
200k x 2k join with a checksum, the time of a stream-stream join fed in 6 steps (each
step's rows, watermark and state checked), and `capture` of 100 queries over 20 catalog
tables.

`python bench/bench.py streams` times only the stream join fed in 6 steps (run it from
two checkouts to compare them).
"""
from __future__ import annotations

import dataclasses
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from harness.check.runner import run_case  # noqa: E402
from harness.scenario.model import expand, load_scenario  # noqa: E402
from harness.spark import datagen, executions  # noqa: E402
from harness.spark.query import checksum_frame  # noqa: E402
from harness.spark.session import get_session  # noqa: E402

GEN_SPEC = {
    "rows": 5_000_000,
    "columns": {
        "id": {"sequence": {}},
        "k": {"key": {"cardinality": 100000}},
        "amount": {"uniform": {"min": 0, "max": 1000}, "type": "decimal(10,2)"},
        "day": {"uniform": {"min": "2020-01-01", "max": "2024-12-31"}, "type": "date"},
        "name": {"faker": {"provider": "name", "pool": 10000}},
    },
}

SCENARIO = """\
id: bench_{mode}
description: benchmark
tables:
  fact:
    rows: 200000
    columns:
      k: {{key: {{cardinality: 2000}}}}
      v: {{uniform: {{min: 0, max: 100}}}}
  dim:
    rows: 2000
    columns:
      k: {{sequence: {{}}}}
      name: {{faker: {{provider: name, pool: 500}}}}
join:
  left: fact
  right: dim
  on: [k]
matrix:
  join_type: [inner, left_outer, left_semi, left_anti]
  conf:
    spark.sql.adaptive.enabled: [true, false]
    spark.sql.autoBroadcastJoinThreshold: [10485760, -1]
expect:
  strategy: {strategy}
"""


def main() -> None:
    started = time.perf_counter()
    session = get_session()
    print(f"session start: {time.perf_counter() - started:.1f} s  (Spark {session.versions['spark']}, "
          f"Java {session.versions['java']}, {session.master})")
    if sys.argv[1:] == ["streams"]:
        with tempfile.TemporaryDirectory() as tmp:
            bench_stream_steps(session, Path(tmp) / "steps.yaml", rounds=5)
        return

    df = datagen.build_table(session.spark, 42, "bench", GEN_SPEC, session.workdir)
    checksum_frame(df).collect()  # warm-up (also builds the Faker pool)
    timings = []
    for _ in range(3):
        t = time.perf_counter()
        checksum_frame(datagen.build_table(session.spark, 42, "bench", GEN_SPEC, session.workdir)).collect()
        timings.append(time.perf_counter() - t)
    best = min(timings)
    cores = session.spark.sparkContext.defaultParallelism
    print(f"datagen: {GEN_SPEC['rows']:,} rows x 5 columns (1 Faker) in {best:.2f} s = "
          f"{GEN_SPEC['rows'] / best / 1e6:.2f} M rows/s on {cores} cores "
          f"({GEN_SPEC['rows'] / best / cores / 1e6:.2f} M rows/s per core)")

    with tempfile.TemporaryDirectory() as tmp:
        plan_path = Path(tmp) / "plan.yaml"
        plan_path.write_text(textwrap.dedent(SCENARIO.format(mode="plan", strategy="BroadcastHashJoin")))
        cases = expand(load_scenario(plan_path))
        for case in cases[:4]:
            run_case(case, session)  # warm-up
        everything = session.options
        for policy in ("all", "failed"):
            session.options = dataclasses.replace(everything, plan_text=policy)
            t = time.perf_counter()
            rounds = 3
            for _ in range(rounds):
                for case in cases:
                    run_case(case, session)
            elapsed = time.perf_counter() - t
            n = rounds * len(cases)
            print(f"plan-only cases, plan text for {policy} cases: {n} in {elapsed:.2f} s = {n / elapsed:.1f} cases/s")
        session.options = everything

        exec_path = Path(tmp) / "exec.yaml"
        exec_path.write_text(textwrap.dedent(SCENARIO.format(mode="exec", strategy="BroadcastHashJoin")
                                             .replace("expect:\n", "expect:\n  plan: final\n")))
        durations = [run_case(case, session).timings["total_s"] for case in expand(load_scenario(exec_path))]
        print(f"executed 200k x 2k join cases: median {statistics.median(durations):.2f} s "
              f"(min {min(durations):.2f}, max {max(durations):.2f}, n={len(durations)})")
        bench_stream_steps(session, Path(tmp) / "steps.yaml")
        bench_capture(session.spark, Path(tmp) / "captured")


def six_steps() -> str:
    """The shipped left outer step file fed in 6 steps instead: per step a view and its
    click an hour after the last, and a view without a click (out with NULLs a step later)."""
    data = yaml.safe_load((ROOT / "scenarios" / "streaming" / "stream_steps_left_outer.yaml").read_text())
    steps = []
    for i in range(6):
        hour = f"2024-01-01 {i:02d}"
        steps.append({"add": {"views": {"rows": [[2 * i, f"{hour}:00:00"], [2 * i + 1, f"{hour}:01:00"]]},
                              "clicks": {"rows": [[2 * i, f"{hour}:05:00"]]}},
                      "expect": {"new_row_count": 1 if i == 0 else 2}})
    data["stream"]["batches"] = steps
    data["id"], data["expect"] = "bench_steps", {"strategy": "StreamingSymmetricHashJoin"}
    return yaml.safe_dump(data, sort_keys=False)


def bench_stream_steps(session, path: Path, rounds: int = 3) -> None:
    path.write_text(six_steps())
    (case,) = expand(load_scenario(path))
    results = []
    for _ in range(rounds):
        executions.forget()  # each round streams again (a worker shares an identical stream's answer)
        results.append(run_case(case, session))
    verdicts = {r.status for r in results}
    durations = [r.timings["total_s"] for r in results]
    print(f"stream join fed in 6 steps: median {statistics.median(durations):.1f} s per case "
          f"(min {min(durations):.1f}, max {max(durations):.1f}, n={rounds}; verdicts {', '.join(sorted(verdicts))})")


def bench_capture(spark, out: Path, tables: int = 20, queries: int = 100) -> None:
    """`capture` of 100 queries joining 3-5 of 20 ANALYZEd catalog tables."""
    from harness import capture
    spark.sql("CREATE DATABASE IF NOT EXISTS bench_wh")
    for i in range(tables):
        spark.range(1000 * (i + 1)).selectExpr("id AS k", f"id % {i + 7} AS g{i}", "id * 2 AS v") \
            .write.mode("overwrite").saveAsTable(f"bench_wh.t{i}")
        spark.sql(f"ANALYZE TABLE bench_wh.t{i} COMPUTE STATISTICS FOR ALL COLUMNS")
    out.mkdir()
    texts = []
    for q in range(queries):
        chosen = [(q * 7 + j * 3) % tables for j in range(3 + q % 3)]
        chosen = list(dict.fromkeys(chosen))
        joins = " ".join(f"JOIN bench_wh.t{t} a{n} ON a0.k = a{n}.k" for n, t in enumerate(chosen[1:], start=1))
        texts.append(f"SELECT a0.v, count(*) AS n FROM bench_wh.t{chosen[0]} a0 {joins} WHERE a0.v > {q} GROUP BY a0.v")
    capture(texts[0], out / "warm.yaml", spark=spark)
    started = time.perf_counter()
    for q, text in enumerate(texts):
        capture(text, out / f"q{q}.yaml", spark=spark)
    elapsed = time.perf_counter() - started
    print(f"capture: {queries} queries over {tables} ANALYZEd tables in {elapsed:.1f} s "
          f"= {queries / elapsed:.1f} queries/s")


if __name__ == "__main__":
    main()
