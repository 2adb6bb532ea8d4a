"""Stream-stream joins: the scenario's tables become streams fed in micro-batches.

Every table's rows go through ONE parquet file source, one file per step: the source's
schema holds a side number and each table's columns under positional names, and each
table is read back as the rows of its side, renamed to its own columns, with the
scenario's watermarks. A step's file appears whole with one rename, so the micro-batch
that reads it reads every side's rows of that step, whatever the machine's load (with a
source per table, a busy machine let one micro-batch take one side's rows and the next
the other's: the state rows and watermarks of a step depended on timing). The join is
the same DataFrame or SQL join as for tables, written to a memory sink in append mode
and driven with `processAllAvailable()` (works on every version, unlike availableNow).

With `stream.batches` the rows are added step by step instead (`_run_steps`): each step
runs one micro-batch with its rows, then the one without data that Spark runs when the
watermark moved (it evicts state and emits outer rows), and what the step emitted, the
watermark, the state rows and the rows dropped as late are read from the sink and the
query's progress. The result is whatever the sink holds at the end.

Without steps, outer and semi joins only emit a row once the watermark has passed it. So after the
data, two "flush" micro-batches add one row per watermarked side whose event time lies
far past the data (30 and 60 days after the latest; other columns copied from a row
without NULLs, so that inferred `IS NOT NULL` filters keep it). The first moves the
watermark past every data row; the second runs a batch under that watermark, which
evicts the state and emits the outer rows. Output rows holding a flush row's event time
are removed from the result.
"""
from __future__ import annotations

import os
import re
import shutil
import time
import uuid

from harness.core.rows import normalize_rows
from harness.scenario.model import Case
from harness.spark.query import build_query

FLUSH_DAYS = (30, 60)
STATE_PARTITIONS = 2


SIDE = "__side"


class Source:
    """The one file source every table's stream reads: its schema, directory and how a
    table's rows are written into it and read back out of it."""

    def __init__(self, tables: dict, directory, staging, direct: bool):
        from pyspark.sql.types import IntegerType, StructField, StructType

        self.names = list(tables)
        self.fields = {name: df.schema.fields for name, df in tables.items()}
        self.schema = StructType([StructField(SIDE, IntegerType())] + [
            StructField(_column(side, j), f.dataType) for side, name in enumerate(self.names)
            for j, f in enumerate(self.fields[name])])
        self.directory, self.staging, self.direct = directory, staging, direct
        self.files = 0

    def stream_of(self, stream, name: str):
        """One table's rows of the combined stream, under its own column names."""
        from pyspark.sql import functions as F

        side = self.names.index(name)
        return stream.where(F.col(SIDE) == side).select(
            *[F.col(_column(side, j)).alias(f.name) for j, f in enumerate(self.fields[name])])

    def append(self, frames: dict) -> None:
        """Add one micro-batch's rows, `frames` {table: DataFrame}, as one file: written to
        staging and moved in with one rename, so a listing sees all of it or none.
        `direct`: written into the source by Spark (through Spark Connect the files are
        the server's, out of this process's reach); one task's one file appears whole
        when the write commits."""
        from functools import reduce

        from pyspark.sql import functions as F

        parts = []
        for name, df in frames.items():
            side = self.names.index(name)
            # renamed by position: no column name is parsed
            mine = [_column(side, j) for j in range(len(self.fields[name]))]
            parts.append(df.toDF(*mine).select(F.lit(side).alias(SIDE), *[
                (F.col(field.name) if field.name in mine else F.lit(None)).cast(field.dataType)
                .alias(field.name) for field in self.schema.fields[1:]]))
        # One partition, so one file: Spark writes one (empty) file for no rows too.
        batch = reduce(lambda a, b: a.unionByName(b), parts).coalesce(1)
        if self.direct:
            batch.write.mode("append").parquet(str(self.directory))
            self.files += 1
            return
        staging_dir = self.staging / f"batch-{self.files + 1:05d}"
        batch.write.mode("overwrite").parquet(str(staging_dir))
        written = sorted(name for name in os.listdir(staging_dir) if name.endswith(".parquet"))
        if len(written) != 1:
            raise RuntimeError(f"a micro-batch was written as {len(written)} files, not one: its rows would not "
                               f"appear together")
        self.files += 1
        os.replace(staging_dir / written[0], self.directory / f"batch-{self.files:05d}-{written[0]}")
        shutil.rmtree(staging_dir, ignore_errors=True)


def _column(side: int, position: int) -> str:
    """A table's column in the combined source: by position, so no table's names (nor
    two tables with a column of the same name and different types) can collide."""
    return f"__s{side}_c{position}"


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
    steps = case.scenario.data["stream"].get("batches")
    if "spark.sql.shuffle.partitions" not in case.spark_conf:
        # Each stateful partition keeps state stores on both sides: 200 of them make
        # every micro-batch take seconds on a laptop.
        scope.set_conf("spark.sql.shuffle.partitions", STATE_PARTITIONS)
    if steps:
        # every step's progress is read back: more than the 100 Spark keeps by default
        scope.set_conf("spark.sql.streaming.numRecentProgressUpdates", 10 * MAX_STEPS)
    else:
        # The flush batches move the watermark and then evict: no empty batches needed.
        scope.set_conf("spark.sql.streaming.noDataMicroBatches.enabled", False)
    root = session.workdir / "streams" / uuid.uuid4().hex[:12]
    (root / "source").mkdir(parents=True)
    source = Source(tables, root / "source", root / "staging", direct)
    if not steps:
        source.append(tables)
    combined = spark.readStream.schema(source.schema).parquet(str(source.directory))
    streams = {}
    for name in tables:
        stream = source.stream_of(combined, name)
        if name in watermarks:
            stream = stream.withWatermark(watermarks[name]["column"], watermarks[name]["delay"])
        streams[name] = stream
    joined = build_query(spark, scope, case.join, streams)
    sink = f"stream_{uuid.uuid4().hex[:12]}"
    query = (joined.writeStream.format("memory").queryName(sink).outputMode("append")
             .option("checkpointLocation", str(root / "checkpoint")).start())
    scope.on_close(lambda: _stop(spark, query, sink, root))
    scope.on_timeout(query.stop)
    if steps:
        observed = _run_steps(spark, scope, case, query, tables, source, sink)
        return {"query": query, "result": spark.table(sink), "batches": _batches_run(query), "steps": observed}
    _drain(query, source, scope)
    latest = _latest_event_time(tables, watermarks)
    templates = {name: _flush_template(tables[name]) for name in watermarks}
    for step, days in enumerate(FLUSH_DAYS, start=1):
        source.append({name: _flush_row(spark, tables[name], templates[name], mark["column"], latest, days)
                       for name, mark in watermarks.items()})
        _drain(query, source, scope)
    return {"query": query, "result": _without_flush_rows(spark.table(sink), watermarks, latest),
            "batches": _batches_run(query),
            "steps": None}


MAX_STEPS = 100  # the schema's bound on `stream.batches`


def _step_rows(spark, table, added: dict):
    """The rows a step adds to one stream: a filter over the table, or literal rows cast
    to the table's schema (built as VALUES from the file's values, never its text)."""
    from pyspark.sql import functions as F

    from harness.spark.datagen import sql_literal
    if "where" in added:
        return table.where(F.expr(added["where"]))
    fields = table.schema.fields
    if not added["rows"]:
        return table.limit(0)
    values = ", ".join("(" + ", ".join(sql_literal(v, _type_name(f)) for v, f in zip(row, fields)) + ")"
                       for row in added["rows"])
    names = ", ".join(f"`{f.name}`" for f in fields)
    frame = spark.sql(f"SELECT * FROM VALUES {values} AS t({names})")
    return frame.select(*[F.col(f"`{f.name}`").cast(f.dataType).alias(f.name) for f in fields])


def _type_name(field) -> str:
    """The scenario's word for a column's Spark type (what `sql_literal` writes)."""
    name = field.dataType.simpleString()
    return {"bigint": "long"}.get(name, name)


def _run_steps(spark, scope, case, query, tables: dict, source: Source, sink: str) -> list[dict]:
    """Feed the declared steps one by one; per step, what it added, emitted and left."""
    steps = case.scenario.data["stream"]["batches"]
    want_rows = any("new_rows" in (step.get("expect") or {}) for step in steps)
    seen_batch, before, observed = -1, ([] if want_rows else 0), []
    for i, step in enumerate(steps):
        frames = {name: _step_rows(spark, tables[name], added) for name, added in step["add"].items()}
        # literal rows are counted in the file; a `where` by Spark (one job)
        counts = {name: len(added["rows"]) if "rows" in added else frames[name].count()
                  for name, added in step["add"].items()}
        source.append(frames)
        _drain(query, source, scope)
        progress = [p for p in _executed(query) if int(_progress(p, "batchId")) > seen_batch]
        if progress:
            seen_batch = int(_progress(progress[-1], "batchId"))
        record = {"added": counts, "micro_batches": len(progress), **_step_progress(progress, observed)}
        sink_rows = spark.table(sink)
        if want_rows:
            now = normalize_rows(sink_rows.collect())
            record["new_rows"] = _new_rows(before, now)
            record["emitted"] = len(now) - len(before)
            before = now
        else:
            now = sink_rows.count()
            record["emitted"], before = now - before, now
        observed.append(record)
    return observed


def _new_rows(before: list, now: list) -> list:
    """The rows of `now` not in `before`, as multisets (a sink in append mode only grows)."""
    from collections import Counter
    remaining = Counter(map(repr, before))
    new = []
    for row in now:
        key = repr(row)
        if remaining[key]:
            remaining[key] -= 1
        else:
            new.append(row)
    return new


def _step_progress(progress: list, earlier: list) -> dict:
    """The watermark and state rows after a step (the last micro-batch's), and the rows
    dropped as late over its micro-batches (None where this Spark does not report it:
    before 3.1). A step that ran no micro-batch leaves them as the step before."""
    if not progress:
        last = earlier[-1] if earlier else {}
        return {"watermark": last.get("watermark"), "state_rows": last.get("state_rows"), "late_rows_dropped": 0
                if last.get("late_rows_dropped") is not None else None}
    joins = [_join_operator(_field(p, "stateOperators") or []) for p in progress]
    dropped = [_field(join, "numRowsDroppedByWatermark") for join in joins if join is not None]
    watermark = (_field(progress[-1], "eventTime") or {}).get("watermark")
    return {"watermark": _utc_text(watermark),
            "state_rows": int(_field(joins[-1], "numRowsTotal")) if joins[-1] is not None else None,
            "late_rows_dropped": sum(int(n) for n in dropped) if dropped and None not in dropped else None}


def _join_operator(operators: list):
    """The join's entry among a micro-batch's stateful operators: by name where Spark
    reports one, else the last (they are listed from the top of the plan down, and a
    `stream.then` operator sits above the join: measured on 3.0.3 … 4.3.0, the state rows
    read are the join's)."""
    named = [op for op in operators if _field(op, "operatorName") == "symmetricHashJoin"]
    return named[0] if named else (operators[-1] if operators else None)


def _field(obj, key: str):
    """A progress field from a dict (PySpark 3.x) or a progress object (4.x)."""
    if isinstance(obj, dict):
        return obj.get(key)
    value = getattr(obj, key, None)
    if value is None:
        try:
            value = obj[key]
        except (KeyError, TypeError, IndexError):
            return None
    return value


def _utc_text(iso: str | None) -> str | None:
    """`2024-01-01T00:20:00.000Z` (how progress reports a watermark) → `2024-01-01 00:20:00`."""
    if not iso:
        return None
    return iso.replace("T", " ").split(".")[0].rstrip("Z")


def _without_flush_rows(result, watermarks: dict, latest: str):
    """Drop output rows made of flush rows (they may match each other, or any row when
    the join has no time-range condition)."""
    columns = [m["column"] for m in watermarks.values() if m["column"] in result.columns]
    if not columns:
        return result
    cutoff = f"TIMESTAMP '{latest}' + INTERVAL {FLUSH_DAYS[0] - 1} DAYS"
    return result.where(" AND ".join(f"coalesce(`{c}` < {cutoff}, true)" for c in columns))


def _drain(query, source: Source, scope) -> None:
    """Process until the source's every file has been read, and then until the query
    has nothing left to run. `processAllAvailable` can return on a look at the source made
    before the newest file was in place; and once the file is read, the micro-batch
    without data that a moved watermark asks for may still be to come: the last call
    returns only after a trigger that found nothing to run, which began after it."""
    while True:
        query.processAllAvailable()
        if _files_read(query) >= source.files:
            break
        scope.check_timeout()
        time.sleep(0.05)
    query.processAllAvailable()


def _executed(query) -> list:
    """The progress of the micro-batches that ran. An idle trigger reports progress too
    (at query start, and every 10 s without data): with the same batch id as the next
    batch and no time spent adding a batch. How many there are depends on the clock."""
    return [p for p in query.recentProgress if "addBatch" in (_field(p, "durationMs") or {})]


def _batches_run(query) -> int:
    executed = _executed(query)
    return int(_progress(executed[-1], "batchId")) + 1 if executed else 0


def _files_read(query) -> int:
    """How many of the source's files the query has read: the file source's offset is
    its listing log's batch, one for each listing that found new files, and each file
    appears whole (the rows Spark reports read count a source once per scan of it: here
    once per table)."""
    read = 0
    for progress in _executed(query):
        for source in _field(progress, "sources") or []:
            # a dict (3.x), JSON text (4.x), or a dict's Python text (4.0's classic progress)
            found = LOG_OFFSET.search(str(_field(source, "endOffset")))
            if found:
                read = max(read, int(found.group(1)) + 1)
    return read


LOG_OFFSET = re.compile(r"""["']?logOffset["']?\s*[:=]\s*(\d+)""")


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
    _await_idle(spark, 10)
    shutil.rmtree(root, ignore_errors=True)


def _await_idle(spark, wait_s: float) -> None:
    """Until no stage runs (bounded): a stopped query's cancelled task may still be
    committing its state store in local mode, and would write its folder again after it
    was removed (seen once in a unit run on 4.3.0: CANNOT_COMMIT, then a stream folder
    left behind). One case at a time runs on a worker's session: any stage is its own."""
    try:
        tracker = spark.sparkContext._jsc.sc().statusTracker()
    except Exception:  # through Spark Connect: no context here, and the server's files are its own
        return

    def running() -> bool:
        # a cancelled task leaves its stage's accounting at once, and runs on until it
        # checks its interrupt: the executors' running tasks say when it has ended
        infos = tracker.getExecutorInfos()
        return bool(len(tracker.getActiveStageIds()) or sum(infos[i].numRunningTasks() for i in range(len(infos))))

    deadline = time.monotonic() + wait_s
    while running() and time.monotonic() < deadline:
        time.sleep(0.05)

