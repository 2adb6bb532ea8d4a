"""The reference for stream step files: the same steps in plain PySpark, no harness.

    python bench/stream_steps_plain.py FILE.yaml... [--out plain.json]

Per file: two parquet file sources, the join written to a memory sink in append mode,
the query running all along as a user runs it. Per step every side's rows are written
(one `df.write.parquet` each), then `processAllAvailable()` until every row written has
been read (it can return between two sources' files). Written while the query runs, two
sources' files land in one micro-batch only by luck (measured on 4.3.0, idle machine:
every two-sided step split over two), so the query runs on a 3-second processing-time
trigger and the files are written just after a trigger: a run where some step's rows
still took two data micro-batches is not the reference and is run again (at most 5
times; `attempts` says how many it took). Recorded per step: the rows it emitted, the
watermark, the join's state rows, the rows dropped as late, the micro-batches it ran. `bench/stream_steps_compare.py` compares this with a harness run's results.json.

Only what the shipped step files use: literal `rows`, `condition`, `type`, `watermarks`,
`stream.then.sql`; a column's type is its `type:` (default bigint).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

JOINS = {"inner": "inner", "left_outer": "left_outer", "right_outer": "right_outer",
         "full_outer": "full_outer", "left_semi": "left_semi", "left_anti": "left_anti"}


def field(obj, key):
    if isinstance(obj, dict):
        return obj.get(key)
    value = getattr(obj, key, None)
    return obj[key] if value is None else value


def schema_of(table: dict):
    return ", ".join(f"`{name}` {spec.get('type', 'bigint').replace('long', 'bigint')}"
                     for name, spec in table["columns"].items())


def literal(value, type_name: str) -> str:
    if value is None:
        return f"CAST(NULL AS {type_name})"
    if type_name == "timestamp":
        return f"TIMESTAMP '{value}'"
    if type_name == "string":
        return "'" + str(value).replace("'", "''") + "'"
    return f"CAST({value} AS {type_name})"


def step_frame(spark, table: dict, rows: list):
    types = [spec.get("type", "bigint").replace("long", "bigint") for spec in table["columns"].values()]
    names = list(table["columns"])
    if not rows:
        return spark.createDataFrame([], schema_of(table))
    values = ", ".join("(" + ", ".join(literal(v, t) for v, t in zip(row, types)) + ")" for row in rows)
    return spark.sql(f"SELECT * FROM VALUES {values} AS t({', '.join(names)})")


def plain_rows(rows) -> list:
    out = []
    for row in rows:
        out.append([v.strftime("%Y-%m-%d %H:%M:%S") if hasattr(v, "strftime") else v for v in row])
    return sorted(out, key=repr)


def run_file(spark, path: Path, work: Path) -> dict:
    from pyspark.sql import functions as F

    scenario = yaml.safe_load(path.read_text())
    stream, join = scenario["stream"], scenario["join"]
    root = Path(tempfile.mkdtemp(dir=work))
    streams, dirs = {}, {}
    for name, table in scenario["tables"].items():
        dirs[name] = root / name
        dirs[name].mkdir()
        frame = spark.readStream.schema(schema_of(table)).parquet(str(dirs[name]))
        mark = stream["watermarks"].get(name)
        streams[name] = frame.withWatermark(mark["column"], mark["delay"]) if mark else frame
    joined = streams[join["left"]].alias("l").join(streams[join["right"]].alias("r"),
                                                    F.expr(join["condition"]), JOINS[join.get("type", "inner")])
    if "then" in stream:
        joined.createOrReplaceTempView("joined")
        joined = spark.sql(stream["then"]["sql"])
    sink = f"plain_{path.stem.replace('-', '_')}"
    query = (joined.writeStream.format("memory").queryName(sink).outputMode("append")
             .trigger(processingTime="3 seconds")
             .option("checkpointLocation", str(root / "checkpoint")).start())
    steps, written, seen, before = [], 0, -1, []
    try:
        for step in stream["batches"]:
            for name, added in step["add"].items():
                step_frame(spark, scenario["tables"][name], added["rows"]).write.mode("append").parquet(str(dirs[name]))
                written += len(added["rows"])
            while True:
                query.processAllAvailable()
                if sum(int(field(p, "numInputRows")) for p in query.recentProgress) >= written:
                    break
                time.sleep(0.05)
            query.processAllAvailable()  # the batch without data that a moved watermark asks for
            progress = [p for p in query.recentProgress if int(field(p, "batchId")) > seen
                        and "addBatch" in (field(p, "durationMs") or {})]
            if progress:
                seen = int(field(progress[-1], "batchId"))
            joins = [field(p, "stateOperators") for p in progress]
            last = joins[-1][-1] if joins and joins[-1] else None
            dropped = [field(ops[-1], "numRowsDroppedByWatermark") for ops in joins if ops]
            now = plain_rows(spark.table(sink).collect())
            new = list(now)
            for row in before:
                new.remove(row)
            before = now
            watermark = (field(progress[-1], "eventTime") or {}).get("watermark") if progress else None
            steps.append({
                "new_rows": new,
                "watermark": watermark.replace("T", " ").split(".")[0] if watermark else None,
                "state_rows": int(field(last, "numRowsTotal")) if last is not None else None,
                "late_rows_dropped": sum(int(d) for d in dropped) if dropped and None not in dropped else None,
                "micro_batches": len(progress),
                "split": sum(1 for p in progress if int(field(p, "numInputRows")) > 0) > 1,
            })
    finally:
        query.stop()
        spark.catalog.dropTempView(sink)
        shutil.rmtree(root, ignore_errors=True)
    return {"id": scenario["id"], "steps": steps}


def run_atomic(spark, path: Path, work: Path, attempts: int = 5) -> dict:
    for attempt in range(1, attempts + 1):
        result = run_file(spark, path, work)
        if not any(step["split"] for step in result["steps"]):
            return {**result, "attempts": attempt}
    return {**result, "attempts": attempts, "unreliable": "a step split over two data micro-batches in every run"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="plain-streams-"))
    results = {"spark": spark.version, "files": []}
    try:
        for path in args.files:
            try:
                results["files"].append(run_atomic(spark, path, work))
            except Exception as error:  # a version that refuses the query: said, not fatal
                results["files"].append({"id": yaml.safe_load(path.read_text())["id"],
                                         "error": str(error).strip().splitlines()[0][:300]})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(results, indent=1)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
