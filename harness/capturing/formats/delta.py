"""A Delta Lake table as capture records it: a statistics-only Delta table with its
schema as Spark reads it and its current snapshot's partitions (each its size and live
record count, summed from the log's add actions: a job over the log, no data file read),
partition values read under their physical names where column mapping gave them one,
and the statistics its catalog entry holds where Spark sizes it by those."""
from __future__ import annotations

from harness.capturing.relations import (
    CaptureError,
    CapturedTable,
    identifier,
    partition_value,
    python_frame,
    scenario_type,
    seq_names,
    struct_fields,
)
from harness.core.text import one_line
from harness.scenario.tables import MAX_PARTITIONS

NAME = "delta"


def claims_entry(meta) -> bool:
    provider = meta.provider()
    return not provider.isEmpty() and str(provider.get()).lower() == NAME


def read_entry(spark, meta, relation) -> CapturedTable:
    """A Delta table as a statistics-only Delta table: its schema as Spark reads it, and
    its current snapshot's partitions, each its size and record count, summed from the
    log's add actions (a job over the log: no data file is read)."""
    database, table = identifier(meta)
    where = f"{database}.{table}"
    schema = {f.name(): scenario_type(database, table, f) for f in struct_fields(relation.schema())}
    location = str(meta.location().toString())
    try:
        snapshot = _delta_snapshot(spark, location)
        columns = seq_names(snapshot.metadata().partitionColumns())
        physical = _delta_physical_names(snapshot)
        files = python_frame(spark, snapshot.allFiles().toDF())
    except Exception as exc:
        raise CaptureError(f"the Delta log of {where} cannot be read ({one_line(str(exc))[:160]})") from None
    from pyspark.sql import functions as F
    # the log keys partition values by the column's physical name (column mapping)
    keys = [F.col("partitionValues").getItem(physical.get(c, c)).alias(f"v{i}") for i, c in enumerate(columns)]
    records = F.get_json_object("stats", "$.numRecords").cast("long")
    if "deletionVector" in files.columns:  # rows a deletion vector marks deleted are not the table's
        records = records - F.coalesce(F.col("deletionVector.cardinality"), F.lit(0)).cast("long")
    rows = files.groupBy(*keys).agg(F.sum("size").alias("size"), F.sum(records).alias("records"),
                                    F.count(F.when(records.isNull(), 1)).alias("unknown")) \
        .limit(MAX_PARTITIONS + 1).collect() if columns else \
        files.agg(F.sum("size").alias("size"), F.sum(records).alias("records"),
                  F.count(F.when(records.isNull(), 1)).alias("unknown")).collect()
    notes = []
    catalog_stats = _delta_catalog_stats(meta, where, notes)
    known_rows = all(row["unknown"] == 0 for row in rows)
    if not known_rows:
        notes.append(f"{where}: some of its files carry no record count: rows are left out")
    if not columns:
        size = int(rows[0]["size"] or 0)
        stats = {"size_bytes": size, **({"rows": int(rows[0]["records"] or 0)} if known_rows else {})}
        return CapturedTable(database, table, schema, stats, notes=notes, format="delta",
                             partitions={"catalog_stats": catalog_stats} if catalog_stats else None)
    if len(rows) > MAX_PARTITIONS:
        raise CaptureError(f"the Delta table {where} has more than {MAX_PARTITIONS:,} partitions, more than a "
                           "scenario holds")
    partitions = []
    for row in rows:
        values = [partition_value(row[f"v{i}"], schema.get(c, "string")) for i, c in enumerate(columns)]
        entry = {"values": values, "size_bytes": int(row["size"] or 0)}
        if known_rows:
            entry["rows"] = int(row["records"] or 0)
        partitions.append(entry)
    partitions.sort(key=lambda p: [(v is None, str(v)) for v in p["values"]])
    stats = {"size_bytes": sum(p["size_bytes"] for p in partitions)}
    if known_rows:
        stats["rows"] = sum(p["rows"] for p in partitions)
    return CapturedTable(database, table, schema, stats, notes=notes, format="delta",
                         partitions={"partition_by": columns, "partition_values": partitions,
                                     **({"catalog_stats": catalog_stats} if catalog_stats else {})})


def _delta_physical_names(snapshot) -> dict:
    """Column → its physical name in the log, where column mapping gave it one."""
    out = {}
    for field_ in struct_fields(snapshot.metadata().schema()):
        metadata = field_.metadata()
        if metadata.contains(DELTA_PHYSICAL_NAME):
            out[str(field_.name())] = str(metadata.getString(DELTA_PHYSICAL_NAME))
    return out


DELTA_PHYSICAL_NAME = "delta.columnMapping.physicalName"


def _delta_catalog_stats(meta, where: str, notes: list) -> dict | None:
    """The statistics a Delta table's catalog entry holds (a CREATE TABLE AS SELECT into a
    Hive metastore records them): Spark sizes every scan of the table by them, whatever
    its log holds and whatever the filter, so the replay carries them too."""
    if meta.stats().isEmpty():
        return None
    statistics = meta.stats().get()
    out = {"size_bytes": int(statistics.sizeInBytes())}
    if not statistics.rowCount().isEmpty():
        out["rows"] = int(statistics.rowCount().get())
    notes.append(f"{where}: its catalog entry holds statistics ({out['size_bytes']:,} bytes), which Spark sizes "
                 "every scan of it by, whatever its log holds and whatever the filter: replayed so (catalog_stats)")
    return out


def _delta_snapshot(spark, location: str):
    """The table's current snapshot: DeltaLog.update's parameters differ by release (one
    boolean in 0.8, then one or two Options more), all defaulted in Scala."""
    log = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, location)
    arity = max(m.getParameterCount() for m in log.getClass().getMethods() if m.getName() == "update")
    empty = spark._jvm.scala.Option.empty()
    return log.update(False, *([empty] * (arity - 1)))
