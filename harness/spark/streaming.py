"""Stream-stream joins: the scenario's tables become file streams fed in micro-batches.

Each table is written as parquet into its own source directory and read back with
`readStream` (same schema), with the scenario's watermarks. The join is the same
DataFrame or SQL join as for tables, written to a memory sink in append mode and
driven with `processAllAvailable()` (works on every version, unlike availableNow).

Outer and semi joins only emit a row once the watermark has passed it. So after the
data, two "flush" micro-batches add one row per watermarked side whose event time lies
far past the data (30 and 60 days after the latest; other columns copied from a row
without NULLs, so that inferred `IS NOT NULL` filters keep it). The first moves the
watermark past every data row; the second runs a batch under that watermark, which
evicts the state and emits the outer rows. Output rows holding a flush row's event time
are removed from the result.
"""
from __future__ import annotations

import os
import shutil
import time
import uuid

from harness.scenario.model import Case
from harness.spark.query import build_query

FLUSH_DAYS = (30, 60)
STATE_PARTITIONS = 2


def _append(frames: list, staging_root, direct: bool = False) -> None:
    """Add a micro-batch to each source: `frames` is [(DataFrame, source dir, name)]. All
    are written to staging first and then moved in together, so that the file sources
    see only complete files and one micro-batch usually takes every source's new rows
    (written and moved one by one, each flush step took two batches). `direct`: written
    into the sources by Spark (through Spark Connect the files are the server's, out of
    this process's reach); each appears whole when its write commits."""
    if direct:
        for df, source_dir, _ in frames:
            df.write.mode("append").parquet(str(source_dir))
        return
    staged = []
    for df, source_dir, name in frames:
        staging_dir = staging_root / name
        df.write.mode("overwrite").parquet(str(staging_dir))
        staged.append((staging_dir, source_dir))
    for staging_dir, source_dir in staged:
        for name in sorted(os.listdir(staging_dir)):
            if name.endswith(".parquet"):
                os.replace(staging_dir / name, source_dir / f"{staging_dir.name}-{name}")
        shutil.rmtree(staging_dir, ignore_errors=True)


def _flush_template(df):
    """A row with no NULLs, to copy for flush rows. Spark infers `key IS NOT NULL` for
    join keys and pushes it below the watermark, so a NULL-key flush row would be dropped
    before it could move the watermark."""
    return df.dropna().limit(1).first()


def _flush_row(spark, df, template, column: str, latest: str, days: int):
    from pyspark.sql import functions as F

    event_time = F.expr(f"TIMESTAMP '{latest}' + INTERVAL {days} DAYS")

    def value(field):
        if field.name == column:
            return event_time
        return F.lit(None if template is None else template[field.name])
    fields = [value(f).cast(f.dataType).alias(f.name) for f in df.schema.fields]
    return spark.range(0, 1, 1, 1).select(*fields)


def _latest_event_time(tables: dict, watermarks: dict) -> str:
    from pyspark.sql import functions as F

    latest = [tables[name].agg(F.max(mark["column"]).cast("string")).first()[0]
              for name, mark in watermarks.items()]
    latest = [t for t in latest if t is not None]
    return max(latest) if latest else "1970-01-01 00:00:00"


def run_stream(session, scope, case: Case, tables: dict) -> dict:
    """Run the scenario's join over streams; returns the running query (its plan is read by
    the caller), the sink's rows
    as a DataFrame, and the number of micro-batches."""
    spark = session.spark
    direct = session.deployment == "connect"
    watermarks = case.scenario.data["stream"]["watermarks"]
    if "spark.sql.shuffle.partitions" not in case.spark_conf:
        # Each stateful partition keeps state stores on both sides: 200 of them make
        # every micro-batch take seconds on a laptop.
        scope.set_conf("spark.sql.shuffle.partitions", STATE_PARTITIONS)
    # The flush batches move the watermark and then evict: no empty batches needed.
    scope.set_conf("spark.sql.streaming.noDataMicroBatches.enabled", False)
    root = session.workdir / "streams" / uuid.uuid4().hex[:12]
    streams, sources = {}, {}
    for name in tables:
        sources[name] = root / "sources" / name
        sources[name].mkdir(parents=True)
    _append([(df, sources[name], f"{name}-0") for name, df in tables.items()], root / "staging", direct)
    for name, df in tables.items():
        stream = spark.readStream.schema(df.schema).parquet(str(sources[name]))
        if name in watermarks:
            stream = stream.withWatermark(watermarks[name]["column"], watermarks[name]["delay"])
        streams[name] = stream
    joined = build_query(spark, scope, case.join, streams)
    sink = f"stream_{uuid.uuid4().hex[:12]}"
    query = (joined.writeStream.format("memory").queryName(sink).outputMode("append")
             .option("checkpointLocation", str(root / "checkpoint")).start())
    scope.on_close(lambda: _stop(spark, query, sink, root))
    scope.on_timeout(query.stop)
    appended = sum(df.count() for df in tables.values())
    _drain(query, appended, scope)
    latest = _latest_event_time(tables, watermarks)
    templates = {name: _flush_template(tables[name]) for name in watermarks}
    for step, days in enumerate(FLUSH_DAYS, start=1):
        _append([(_flush_row(spark, tables[name], templates[name], mark["column"], latest, days), sources[name],
                  f"{name}-flush{step}") for name, mark in watermarks.items()], root / "staging", direct)
        appended += len(watermarks)
        _drain(query, appended, scope)
    batches = int(_progress(query.lastProgress, "batchId")) + 1 if query.lastProgress else 0
    return {"query": query, "result": _without_flush_rows(spark.table(sink), watermarks, latest), "batches": batches}


def _without_flush_rows(result, watermarks: dict, latest: str):
    """Drop output rows made of flush rows (they may match each other, or any row when
    the join has no time-range condition)."""
    columns = [m["column"] for m in watermarks.values() if m["column"] in result.columns]
    if not columns:
        return result
    cutoff = f"TIMESTAMP '{latest}' + INTERVAL {FLUSH_DAYS[0] - 1} DAYS"
    return result.where(" AND ".join(f"coalesce(`{c}` < {cutoff}, true)" for c in columns))


def _drain(query, appended: int, scope) -> None:
    """Process until every appended row has been read. `processAllAvailable` alone can
    return between two sources' files (it waits for what was listed when it looked)."""
    while True:
        query.processAllAvailable()
        read = sum(int(_progress(p, "numInputRows")) for p in query.recentProgress)
        if read >= appended:
            return
        scope.check_timeout()
        time.sleep(0.05)


def _progress(progress, key: str):
    """A progress field: PySpark 3.x gives dicts; through Spark Connect (4.x) item access
    answered None where the attribute holds the number."""
    value = getattr(progress, key, None)
    return progress[key] if value is None else value


def _stop(spark, query, sink: str, root) -> None:
    try:
        query.stop()
        deadline = time.monotonic() + 10
        while query.isActive and time.monotonic() < deadline:
            time.sleep(0.05)
        spark.catalog.dropTempView(sink)
    except Exception:
        pass
    shutil.rmtree(root, ignore_errors=True)

