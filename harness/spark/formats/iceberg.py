"""Iceberg tables for scenarios: the Iceberg Spark runtime of the running Spark (a JVM
package, harness.spark.jvm_packages); the
worker's Iceberg catalog on a warehouse in its scratch folder; and tables written there
from a scenario's rows with a partition spec of Iceberg transforms, a sort order and a
number of files per partition.

The catalog is Iceberg's `SparkCatalog` alone: no session extensions (no `CALL`, no
Iceberg SQL syntax), so scenario SQL parses and plans as it does without Iceberg.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path

from harness.core.instants import EPOCH, utc_instant
from harness.core.text import quoted_identifier
from harness.scenario.tables import (
    default_partitions,
    parse_transform,
    partition_spec,
    partition_text,
    sort_order,
)
from harness.spark.formats.base import FormatUnavailable, spark_minor, v2_table_exists
from harness.spark.jvm_packages import Coordinate
from harness.spark.stats_only import struct_type

CATALOG = "harness_iceberg"
NAMESPACE = "scenario"
CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"


def _runtime(spark_minor: str, scala: str, version: str) -> Coordinate:
    return Coordinate("org.apache.iceberg", f"iceberg-spark-runtime-{spark_minor}_{scala}", version,
                      marker="org/apache/iceberg/spark/SparkCatalog.class")


# Spark minor → the Iceberg Spark runtime the harness starts with it: the newest served by
# Maven Central for that minor, each run here with scenarios/iceberg on that Spark. Spark
# 4.2 and 4.3 have no Iceberg runtime yet; Spark before 3.3 has no storage-partitioned join.
RUNTIMES = {
    "3.3": _runtime("3.3", "2.12", "1.6.1"),
    "3.4": _runtime("3.4", "2.12", "1.5.2"),
    "3.5": _runtime("3.5", "2.12", "1.10.0"),
    "4.0": _runtime("4.0", "2.13", "1.10.1"),
    "4.1": _runtime("4.1", "2.13", "1.12.0"),
}


# Why this process's session started without the runtime its Spark has (one line), said
# by every case that needs an Iceberg table.
problem: str | None = None


NAME = "iceberg"
ANALYZABLE = False  # ANALYZE TABLE is the session catalog's; Iceberg keeps its own statistics
exists = v2_table_exists


def runtime_for(spark_version: str) -> tuple[Coordinate, ...] | None:
    runtime = RUNTIMES.get(spark_minor(spark_version))
    return (runtime,) if runtime else None


def not_available(spark_version: str) -> str:
    return f"not available on Spark {spark_minor(spark_version)} (no Iceberg runtime)"


def session_confs(jars: list[Path], workdir: Path) -> dict:
    """What a session needs to read and write the worker's Iceberg tables (its warehouse in
    the worker's scratch folder)."""
    warehouse = workdir / "iceberg"
    return {"spark.jars": ",".join(map(str, jars)),
            f"spark.sql.catalog.{CATALOG}": CATALOG_CLASS,
            f"spark.sql.catalog.{CATALOG}.type": "hadoop",
            f"spark.sql.catalog.{CATALOG}.warehouse": str(warehouse)}


def identifier(spark, name: str) -> str:
    try:
        ready = spark.conf.get(f"spark.sql.catalog.{CATALOG}", None)
    except Exception:
        ready = None
    if not ready:
        raise FormatUnavailable(problem or "this worker's session started without the Iceberg runtime (no "
                                "file of the run was seen to declare `format: iceberg` when it started)")
    return table_name(name)


def table_name(catalog_name: str) -> str:
    """The table in this process's own namespace. Through Spark Connect every worker's
    session shares the server's catalog, and an Iceberg table is visible as soon as it is
    created, before its rows are committed: a worker must never read another's table
    while that one writes it."""
    return f"{CATALOG}.{NAMESPACE}_{os.getpid()}.{catalog_name}"


def _create(spark, name: str, schema, spec: dict, properties: dict) -> None:
    """CREATE TABLE with the spec's partition transforms and the given properties: the
    columns from a parsed schema, the transforms and properties checked at collection. A
    derived table's column names are Spark's answer to the file's SQL: each is quoted,
    and a type whose text could carry more than a type (a struct's field names) must be
    plain identifiers throughout."""
    columns = ", ".join(f"{quoted_identifier(field.name)} {_type_text(field)}" for field in schema.fields)
    spec_sql = ", ".join(transform.sql() for transform in partition_spec(spec))
    props_sql = ", ".join(f"'{k}'='{v}'" for k, v in sorted(properties.items()))
    spark.sql(f"CREATE TABLE {name} ({columns}) USING iceberg"
              + (f" PARTITIONED BY ({spec_sql})" if spec_sql else "")
              + (f" TBLPROPERTIES ({props_sql})" if props_sql else ""))


_PLAIN_TYPE = re.compile(r"^[A-Za-z0-9_<>:,()]+$")


def _type_text(field) -> str:
    text = field.dataType.simpleString()
    if not _PLAIN_TYPE.match(text):
        raise ValueError(f"column {field.name!r} has type {text[:80]!r}, whose field names an Iceberg table written "
                         "by the harness cannot carry (letters, digits and _ only)")
    return text


def write(spark, name: str, df, spec: dict) -> None:
    """The table `name` (catalog, namespace, table) created with the spec's partition
    transforms, sort order and properties, and the rows of `df` appended: each partition
    in `files_per_partition` data files (rows spread over that many tasks, each writing
    its share of every partition), in sort order within each file."""
    properties = _properties(spec)
    files = spec.get("files_per_partition", 1)
    # Rows are arranged here, not by Iceberg's write distribution: the files per partition
    # then follow the file, whatever the runtime's defaults.
    properties.update({"write.distribution-mode": "none", "write.spark.fanout.enabled": "true"})
    _create(spark, name, df.schema, spec, properties)
    try:
        order = sort_order(spec)
        if order:
            _set_sort_order(spark, name, order)
        from pyspark.sql import functions as F
        arranged = df.repartition(files)
        if order:
            arranged = arranged.sortWithinPartitions(*[F.col(c).asc() if up else F.col(c).desc() for c, up in order])
        arranged.writeTo(name).append()
    except Exception:
        # a table created but not filled is never left for a later case to read as written
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        raise


def _set_sort_order(spark, name: str, order: list) -> None:
    """The table's declared sort order, through Iceberg's API (its SQL for it needs the
    session extensions, which the harness does not load)."""
    jvm = spark.sparkContext._jvm
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    replace = table.replaceSortOrder()
    for column, ascending in order:
        # the (Term, NullOrder) overloads: Py4J does not find the interface's default (String) ones
        term = jvm.org.apache.iceberg.expressions.Expressions.ref(column)
        if ascending:
            replace = replace.asc(term, jvm.org.apache.iceberg.NullOrder.NULLS_FIRST)
        else:
            replace = replace.desc(term, jvm.org.apache.iceberg.NullOrder.NULLS_LAST)
    replace.commit()


def _properties(spec: dict) -> dict:
    return {str(k): str(v) for k, v in (spec.get("properties") or {}).items()}


# A file that exists in the table's metadata only is never read (statistics-only cases
# are planned, not run), and Iceberg sizes a scan from its files' record counts, not their
# byte sizes: a size above this would only make scan planning split it into more pieces.
PHANTOM_FILE_BYTES_LIMIT = 512 * 1024 * 1024


def write_stats_only(spark, name: str, spec: dict) -> None:
    """A statistics-only Iceberg table: created with the spec's partition transforms, sort
    order and properties, and one data file per partition committed to its metadata with
    that partition's values and row count, and no bytes on disk. Spark then plans over it
    what it plans over the production table: the same partitions for a storage-partitioned
    join, the same row counts for its size estimates. A table whose spec evolved
    (`earlier_specs`) is made as its history made it: created with the oldest spec, each
    spec's partitions appended under it, then the spec evolved to the next."""
    specs = [*(spec.get("earlier_specs") or []), spec.get("partition_by") or []]
    _create(spark, name, struct_type(spec), {**spec, "partition_by": specs[0]}, _properties(spec))
    try:
        order = sort_order(spec)
        if order:
            _set_sort_order(spark, name, order)
        partitions = spec.get("partition_values") or default_partitions(spec) or []
        if spec.get("data_files"):  # an unpartitioned table's own files
            partitions = [{**partitions[0], "data_files": spec["data_files"]}]
        for index, fields in enumerate(specs):
            if index:
                _evolve_spec(spark, name, specs[index - 1], fields)
            current = index == len(specs) - 1
            _append_phantom_files(spark, name, spec, [p for p in partitions if p.get("spec") == (None if current else index)],
                                  f"spec{index}-" if len(specs) > 1 else "")
    except Exception:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        raise


def _evolve_spec(spark, name: str, before: list[str], after: list[str]) -> None:
    """The table's partition spec from `before` to `after`, through Iceberg's API (its SQL
    for it needs the session extensions, which the harness does not load)."""
    jvm = spark.sparkContext._jvm
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    old, new = [parse_transform(t) for t in before], [parse_transform(t) for t in after]
    update = table.updateSpec()
    for transform in old:
        if transform not in new:
            update = update.removeField(_term(jvm, transform))
    for transform in new:
        if transform not in old:
            update = update.addField(_term(jvm, transform))
    update.commit()


def _term(jvm, transform):
    """An Iceberg partition term for a Transform."""
    expressions = jvm.org.apache.iceberg.expressions.Expressions
    if transform.name == "identity":
        return expressions.ref(transform.column)
    if transform.name in ("bucket", "truncate"):
        return getattr(expressions, transform.name)(transform.column, transform.width)
    return getattr(expressions, transform.name[:-1])(transform.column)  # years → year, ...


def _append_phantom_files(spark, name: str, spec: dict, partitions: list, prefix: str = "") -> None:
    """Each partition's data files committed to the table's metadata, no bytes on disk: the
    files it lists (`data_files`: each its rows, length and column bounds, which Iceberg's
    scan planning reads to skip files a filter excludes), else one file of its rows."""
    if not partitions:
        return
    jvm = spark.sparkContext._jvm
    api = jvm.org.apache.iceberg
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    partition_spec_ = table.spec()
    partition_type = partition_spec_.partitionType()
    fields = partition_type.fields()
    total_rows = max(1, spec["stats"]["rows"])
    total_bytes = spec["stats"].get("size_bytes", 0)
    append = table.newAppend()
    for i, partition in enumerate(partitions):
        data = None
        if partition["values"]:
            data = api.PartitionData(partition_type)
            for j, value in enumerate(partition["values"]):
                text = partition_text(value)
                # Iceberg's own parser of partition strings gives each value its Java type
                data.set(j, None if text is None else
                         api.types.Conversions.fromPartitionString(fields.get(j).type(), text))
        listed = partition.get("data_files")
        for j, data_file in enumerate(listed or [{"rows": partition["rows"]}]):
            rows = data_file["rows"]
            size = data_file.get("size_bytes", total_bytes * rows // total_rows)
            builder = (api.DataFiles.builder(partition_spec_)
                       .withPath(f"{table.location()}/data/statistics-only-{prefix}{i:05d}"
                                 f"{f'-{j:05d}' if listed else ''}.parquet")
                       .withFormat("PARQUET"))
            if data_file.get("columns"):
                builder = builder.withMetrics(_metrics(spark, table.schema(), data_file))
            builder = builder.withRecordCount(rows).withFileSizeInBytes(max(1, min(PHANTOM_FILE_BYTES_LIMIT, size)))
            if data is not None:
                builder = builder.withPartition(data)
            append.appendFile(builder.build())
    append.commit()


def _metrics(spark, schema, data_file: dict):
    """A data file's column metrics as Iceberg keeps them: lower and upper bounds in its
    single-value serialisation (Literal.toByteBuffer), value and null counts. Counts go in
    as Longs through Jackson (Py4J hands a small whole number to Java as an Integer, which
    a Map<Integer, Long> of Iceberg's cannot hold)."""
    jvm = spark.sparkContext._jvm
    lower, upper = jvm.java.util.HashMap(), jvm.java.util.HashMap()
    values, nulls = {}, {}
    for column, metrics in data_file["columns"].items():
        field = schema.findField(column)
        field_id = int(field.fieldId())
        for bound, bounds in (("lower", lower), ("upper", upper)):
            if bound in metrics:
                bounds.put(field_id, _literal(jvm, field.type(), metrics[bound]).toByteBuffer())
        values[str(field_id)] = data_file["rows"]
        if "nulls" in metrics:
            nulls[str(field_id)] = metrics["nulls"]
    return jvm.org.apache.iceberg.Metrics(None, None, _long_map(jvm, values), _long_map(jvm, nulls) if nulls else None,
                                          None, lower, upper)


def _literal(jvm, iceberg_type, value):
    """An Iceberg Literal of the column's type from a scenario value (whole numbers and
    floats as themselves, dates, decimals and strings from text, timestamps through their
    microseconds since the epoch, as Iceberg keeps them)."""
    literal = jvm.org.apache.iceberg.expressions.Literal
    type_id = str(iceberg_type.typeId())
    if type_id == "TIMESTAMP":
        micros = (utc_instant(value) - EPOCH) // dt.timedelta(microseconds=1)
        # a whole number reaches Java as an Integer when it fits one: through long either way
        return literal.of(micros).to(jvm.org.apache.iceberg.types.Types.LongType.get()).to(iceberg_type)
    if isinstance(value, bool) or type_id in ("STRING", "DATE", "DECIMAL", "UUID"):
        return literal.of(value if isinstance(value, bool) else str(value)).to(iceberg_type)
    return literal.of(value).to(iceberg_type)


def _long_map(jvm, counts: dict):
    """A java.util.HashMap<Integer, Long> read by Jackson from JSON text."""
    mapper, map_type = _long_map_reader(jvm)
    return mapper.readValue(json.dumps(counts), map_type)


_READERS: dict = {}


def _long_map_reader(jvm) -> tuple:
    """(Jackson's ObjectMapper, the HashMap<Integer, Long> type), made once per JVM: every
    data file of a table reads two maps."""
    if _READERS.get("jvm") is not jvm:  # a new session's JVM: a reader of its own
        mapper = jvm.com.fasterxml.jackson.databind.ObjectMapper()
        for_name = jvm.java.lang.Class.forName
        _READERS.update(jvm=jvm, reader=(mapper, mapper.getTypeFactory().constructMapType(
            for_name("java.util.HashMap"), for_name("java.lang.Integer"), for_name("java.lang.Long"))))
    return _READERS["reader"]
