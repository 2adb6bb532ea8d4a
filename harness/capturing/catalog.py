"""The tables a captured query reads, as the catalog knows them: found in Spark's analysed
plan (through views), each with its schema and its catalog statistics, read through
Py4J, never as DDL text; an Iceberg table with its row count, partition spec, partitions,
sort order and layout properties from its own metadata. What harness.capturing.to_scenario
writes as statistics-only tables."""
from __future__ import annotations

import datetime as dt
import os
import re
import urllib.parse
from dataclasses import dataclass, field

from harness.core.text import one_line, quoted_identifier
from harness.scenario.schema import scenario_validator
from harness.scenario.tables import (
    CATALOG_PARTITION_TYPES,
    ICEBERG_PROPERTIES,
    MAX_PARTITIONS,
    Transform,
    bucket_combinations,
    partition_value_problem,
    stats_bound_kind,
)

SCALAR_TYPES = {"bigint": "long", "int": "int", "double": "double", "string": "string", "boolean": "boolean",
                "date": "date", "timestamp": "timestamp"}
STAT_PROPERTIES = (("distinct", "distinctCount"), ("nulls", "nullCount"), ("avg_len", "avgLen"),
                   ("max_len", "maxLen"))


class CaptureError(Exception):
    """One line: what could not be captured, and where."""


@dataclass
class CapturedTable:
    database: str
    table: str
    schema: dict                 # column → scenario type
    stats: dict                  # the scenario's `stats:`
    bucket_by: dict | None = None  # the table's bucket spec, as the scenario's `bucket_by:`
    partitions: dict | None = None  # a partitioned catalog table's `partition_by` and `partition_values`
    format: str | None = None       # a table format other than Spark's parquet tables (`delta`)
    iceberg: dict | None = None  # an Iceberg table's `format`, partition spec, partitions, sort order, properties
    reference: str = ""          # how the query's catalog names it (quoted parts)
    view_sql: str | None = None  # a view: its text (rewritten later)
    view_plan: object = None     # a temporary view made from a DataFrame: its plan (written as SQL later)
    notes: list = field(default_factory=list)
    name: str = ""               # the scenario's name for it

    @property
    def key(self) -> tuple[str, str]:
        return self.database.lower(), self.table.lower()


# --------------------------------------------------------------------------- the plan

def _children(node) -> list:
    out = []
    for seq in (node.children(), node.subqueries()):
        out.extend(seq.apply(i) for i in range(seq.size()))
    return out


def read_relations(spark, analysed, where: str = "") -> list[CapturedTable]:
    """The catalog tables and permanent views under an analysed plan, views first-seen
    order kept so that a view comes after the tables it reads."""
    found: dict = {}
    try:
        _visit(spark, analysed, found)
    except CaptureError as exc:
        raise CaptureError(f"{where}: {exc}" if where else str(exc)) from None
    return list(found.values())


def catalog_table(spark, name: str) -> CapturedTable:
    """One catalog table's schema and statistics, as capture records them."""
    return read_relations(spark, spark.table(name)._jdf.queryExecution().analyzed())[0]


def _visit(spark, node, found: dict) -> None:
    kind = node.getClass().getSimpleName()
    if kind in ("LogicalRelation", "HiveTableRelation"):
        meta = node.tableMeta() if kind == "HiveTableRelation" else node.catalogTable()
        if kind == "LogicalRelation":
            if meta.isEmpty():
                raise CaptureError(f"it reads files that are not a catalog table ({one_line(str(node))[:120]})")
            meta = meta.get()
        database, name = identifier(meta)
        if (database.lower(), name.lower()) not in found:  # a table read twice is captured once
            found[(database.lower(), name.lower())] = _table(spark, meta, node)
        return
    if kind == "View":
        meta = node.desc()
        for child in _children(node):
            _visit(spark, child, found)
        if _is_temp_view(node) and meta.viewText().isEmpty():  # made from a DataFrame
            database, table = identifier(meta)
            found.setdefault((database.lower(), table.lower()),
                             CapturedTable(database, table, {}, {}, view_sql="", view_plan=node.child()))
            return
        view = _view(meta)
        found.setdefault(view.key, view)
        return
    if kind == "DataSourceV2Relation" and _is_iceberg(node):
        try:
            table = _iceberg_table(spark, node)
        except CaptureError:
            raise
        except Exception as exc:  # a metadata table, a changelog: not a table of rows with a spec
            raise CaptureError(f"it reads the Iceberg relation {one_line(str(node.table().name()))[:120]}, whose "
                               f"metadata capture cannot read ({one_line(str(exc))[:160]})") from None
        found.setdefault(table.key, table)
        return
    if kind in ("LogicalRDD", "ExternalRDD", "LocalRelation", "Range", "DataSourceV2Relation", "StreamingRelation",
                "StreamingRelationV2"):
        raise CaptureError(f"it reads a {kind}, not a catalog table: capture reads tables from the catalog "
                           "(data made in Python, spark.range or a file read has no statistics to replay)")
    for child in _children(node):
        _visit(spark, child, found)


def _is_temp_view(view) -> bool:
    """Spark 3.0's View nodes are permanent views only (no isTempView)."""
    try:
        return bool(view.isTempView())
    except Exception:
        return False


def identifier(meta) -> tuple[str, str]:
    identifier = meta.identifier()
    database = identifier.database()
    return (database.get() if not database.isEmpty() else "default"), identifier.table()


def _view(meta) -> CapturedTable:
    database, table = identifier(meta)
    text = meta.viewText()
    if text.isEmpty():
        raise CaptureError(f"view {database}.{table} has no SQL text to replay")
    return CapturedTable(database, table, {}, {}, view_sql=text.get())


def _table(spark, meta, relation) -> CapturedTable:
    database, table = identifier(meta)
    provider = meta.provider()
    if not provider.isEmpty() and str(provider.get()).lower() == "delta":
        # its schema and partitions live in its log, not in the catalog entry
        return _delta_table(spark, meta, relation)
    schema = {f.name(): _type(database, table, f) for f in _fields(meta.schema())}
    stats = meta.stats()
    notes = _format_notes(meta, f"{database}.{table}")
    columns = _names(meta.partitionColumnNames())
    if columns:
        partitions = catalog_partitions(spark, meta, schema, columns, notes)
        if partitions is not None:
            table_stats = _stats(spark, stats.get(), schema) if not stats.isEmpty() else {}
            stale = _stale_stats(table_stats, partitions, f"{database}.{table}", notes)
            kept, omitted = kept_partitions(partitions, f"{database}.{table}", notes)
            layout = {"partition_by": columns, "partition_values": kept,
                      **({"partitions_omitted": omitted} if omitted else {}),
                      **({"stale_stats": True} if stale else {})}
            return CapturedTable(database, table, schema, table_stats, _bucket_by(meta), notes=notes,
                                 partitions=layout)
    if stats.isEmpty():
        size = int(relation.stats().sizeInBytes())
        notes.append(f"{database}.{table} has no catalog statistics: size_bytes is Spark's estimate from its "
                     "files; ANALYZE TABLE it (or capture --analyze) for row counts and column statistics")
        return CapturedTable(database, table, schema, {"size_bytes": size}, _bucket_by(meta), notes=notes)
    return CapturedTable(database, table, schema, _stats(spark, stats.get(), schema), _bucket_by(meta), notes=notes)


# ---------------------------------------------------------------- Delta Lake tables

def _delta_table(spark, meta, relation) -> CapturedTable:
    """A Delta table as a statistics-only Delta table: its schema as Spark reads it, and
    its current snapshot's partitions, each its size and record count, summed from the
    log's add actions (a job over the log: no data file is read)."""
    database, table = identifier(meta)
    where = f"{database}.{table}"
    schema = {f.name(): _type(database, table, f) for f in _fields(relation.schema())}
    location = str(meta.location().toString())
    try:
        snapshot = _delta_snapshot(spark, location)
        columns = _names(snapshot.metadata().partitionColumns())
        physical = _delta_physical_names(snapshot)
        files = _frame(spark, snapshot.allFiles().toDF())
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
        values = [_partition_value(row[f"v{i}"], schema.get(c, "string")) for i, c in enumerate(columns)]
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
    for field_ in _fields(snapshot.metadata().schema()):
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


def _frame(spark, jdf):
    """A Python DataFrame over a JVM one (PySpark before 3.3 wants the SQLContext)."""
    from pyspark.sql import DataFrame
    return DataFrame(jdf, getattr(spark, "_wrapped", None) or spark)


# ---------------------------------------------------------------- partitioned catalog tables

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"


def catalog_partitions(spark, meta, schema: dict, columns: list[str], notes: list) -> list | None:
    """Every partition of a partitioned catalog table: its values, its size as Spark sizes
    a scan that keeps it (the length of its data files, hidden files left out, as Spark's
    file index lists them; the partition's catalog statistics where its files cannot be
    listed) and its rows where the partition was ANALYZEd. Metadata only: no file is read.
    None, with a note, when the partitions cannot be replayed."""
    where = ".".join(identifier(meta))
    for column in columns:
        if schema.get(column) not in CATALOG_PARTITION_TYPES:
            notes.append(f"{where} is partitioned by {column} ({schema.get(column)}), whose partitions a scenario "
                         "cannot replay (int, long, string, date or boolean columns): replayed unpartitioned, so "
                         "plans that prune its partitions may differ")
            return None
    state = spark._jsparkSession.sessionState()
    listed = state.catalog().listPartitions(meta.identifier(), spark._jvm.scala.Option.empty())
    count = listed.size()
    if count == 0:
        notes.append(f"{where} has no partitions: replayed unpartitioned")
        return None
    hadoop = spark._jsparkSession.sessionState().newHadoopConf()
    converters = spark._jvm.scala.collection.JavaConverters
    out = []
    for i in range(count):
        partition = listed.apply(i)
        # Map.get per column: iterating a Java map through Py4J ends on an exception, ~10 ms each
        spec = converters.mapAsJavaMapConverter(partition.spec()).asJava()
        texts = {column: spec.get(column) for column in columns}
        values = [_partition_value(texts[column], schema[column]) for column in columns]
        stats = None if partition.stats().isEmpty() else partition.stats().get()
        size = _listed_size(spark, hadoop, str(partition.location().toString()))
        if size == GONE:
            notes.append(f"{where}: the folder of partition {texts} is gone: Spark lists no file in it and sizes it "
                         "0 bytes; replayed so")
            size = 0
        if size is None and stats is not None:
            size = int(stats.sizeInBytes())
        if size is None:
            notes.append(f"{where}: the files of partition {texts} cannot be listed and it has no statistics: "
                         "replayed unpartitioned")
            return None
        entry = {"values": values, "size_bytes": size}
        if stats is not None and not stats.rowCount().isEmpty():
            entry["rows"] = int(stats.rowCount().get())
        out.append(entry)
    if not all("rows" in p for p in out):
        for p in out:
            p.pop("rows", None)
    return sorted(out, key=lambda p: [(v is None, str(v)) for v in p["values"]])


def kept_partitions(partitions: list, where: str, notes: list) -> tuple[list, dict | None]:
    """At most MAX_PARTITIONS partitions, the largest (ties: in value order), and what the
    others hold (`partitions_omitted`): the table's totals stay its own."""
    if len(partitions) <= MAX_PARTITIONS:
        return partitions, None
    ranked = sorted(range(len(partitions)), key=lambda i: -partitions[i]["size_bytes"])
    kept_at = set(ranked[:MAX_PARTITIONS])
    kept = [p for i, p in enumerate(partitions) if i in kept_at]
    left = [p for i, p in enumerate(partitions) if i not in kept_at]
    omitted = {"count": len(left), "size_bytes": sum(p["size_bytes"] for p in left)}
    if all("rows" in p for p in left):
        omitted["rows"] = sum(p["rows"] for p in left)
    notes.append(f"{where} has {len(partitions):,} partitions, more than the {MAX_PARTITIONS:,} a scenario holds: "
                 f"the {MAX_PARTITIONS:,} largest are replayed; the other {len(left):,} ({omitted['size_bytes']:,} "
                 "bytes) count in the table's statistics (partitions_omitted) but weigh nothing in a plan that "
                 "prunes partitions")
    return kept, omitted


def _partition_value(text, type_name: str):
    if text is None or text == DEFAULT_PARTITION_NAME:
        return None
    if type_name in ("int", "long", "bigint", "smallint", "short", "tinyint", "byte"):
        return int(text)
    if type_name == "boolean":
        return text.lower() == "true"
    return text


def _hidden(name: str) -> bool:
    """A file Spark's file index leaves out (InMemoryFileIndex.shouldFilterOutPathName)."""
    if name.startswith(("_common_metadata", "_metadata")):
        return False
    return (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")


# A partition whose location does not exist (deleted outside Spark): its file index
# lists nothing there, a scan keeping it weighs 0 bytes.
GONE = -1


def _listed_size(spark, hadoop, location: str) -> int | None:
    """The length of a partition's data files, as Spark's file index counts them (hidden
    files left out, folders below listed, files written there outside Spark included);
    GONE when the location does not exist; None when it cannot be listed. A local folder
    is listed from Python (a Py4J call per file costs more than the listing)."""
    try:
        if location.startswith("file:"):
            local = urllib.parse.unquote(urllib.parse.urlparse(location).path)
            return _local_size(local) if os.path.exists(local) else GONE
        path = spark._jvm.org.apache.hadoop.fs.Path(location)
        fs = path.getFileSystem(hadoop)
        if not fs.exists(path):
            return GONE
        total, folders = 0, [path]
        while folders:
            for status in fs.listStatus(folders.pop()):
                name = status.getPath().getName()
                if _hidden(name):
                    continue
                if status.isDirectory():
                    folders.append(status.getPath())
                else:
                    total += int(status.getLen())
        return total
    except Exception:
        return None


def _local_size(folder: str) -> int:
    if os.path.isfile(folder):  # a location may be one file: Spark's listing of it is that file
        return 0 if _hidden(os.path.basename(folder)) else os.path.getsize(folder)
    total, folders = 0, [folder]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if _hidden(entry.name):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                else:
                    total += entry.stat().st_size
    return total


def _stale_stats(stats: dict, partitions: list, where: str, notes: list) -> bool:
    """Whether the table's catalog statistics disagree with its partitions' files (taken
    before files were written, or removed): Spark sizes a scan of every partition by the
    statistics and a scan that prunes by the kept partitions' files, so both are replayed
    as they are (`stale_stats`), said in a note. None at all (never ANALYZEd) stay none,
    as Spark then sizes a scan of every partition by spark.sql.defaultSizeInBytes.
    Partition row counts that do not add up to the table's are left out (Spark plans
    with the table's; a partition's own count only feeds the synthetic twin)."""
    if not stats:
        notes.append(f"{where} was never ANALYZEd: replayed so (a scan of all its partitions is sized by "
                     "spark.sql.defaultSizeInBytes, one that prunes by the kept partitions' files)")
        return False
    total = sum(p["size_bytes"] for p in partitions)
    stale = stats["size_bytes"] != total
    if stale:
        notes.append(f"{where}: its catalog statistics say {stats['size_bytes']:,} bytes, its partitions' files "
                     f"{total:,}: replayed as they are (stale_stats), as Spark sizes them: a scan of every "
                     "partition by the statistics, one that prunes by the kept partitions' files")
    rows = [p.get("rows") for p in partitions]
    if "rows" in stats and None not in rows and sum(rows) != stats["rows"]:
        notes.append(f"{where}: its partitions' row counts add up to {sum(rows):,}, its statistics say "
                     f"{stats['rows']:,}: the partitions' row counts are left out")
        for p in partitions:
            p.pop("rows", None)
    return stale


# Spark's data source providers a statistics-only table replays as parquet (the same
# sizes and layout; the scan prints another format)
_REPLAYED_AS_PARQUET = ("orc", "hive")


def _format_notes(meta, where: str) -> list:
    """A table stored in another format than parquet is replayed as a parquet table:
    said, never silent."""
    provider = "" if meta.provider().isEmpty() else str(meta.provider().get()).lower()
    serde = _safe_text(lambda: meta.storage().serde().get()).lower()
    stored = "orc" if provider == "orc" or "orc" in serde else \
        "parquet" if provider == "parquet" or "parquet" in serde else provider
    if stored in ("parquet", ""):
        return []
    return [f"{where} is stored as {stored.upper() if stored == 'orc' else stored}: replayed as a statistics-only "
            "parquet table of the same sizes and layout (its scans print Parquet)"]


def _safe_text(fn) -> str:
    try:
        return str(fn())
    except Exception:
        return ""


def _names(seq) -> list[str]:
    return [str(seq.apply(i)) for i in range(seq.size())]


def _bucket_by(meta) -> dict | None:
    """The table's bucket spec (what lets a join skip its shuffle), replayed on the
    statistics-only table."""
    spec = meta.bucketSpec()
    if spec.isEmpty():
        return None
    spec = spec.get()
    bucket_by = {"columns": _names(spec.bucketColumnNames()), "buckets": int(spec.numBuckets())}
    sort_by = _names(spec.sortColumnNames())
    return {**bucket_by, "sort_by": sort_by} if sort_by else bucket_by


def _fields(struct_type) -> list:
    fields = struct_type.fields()
    return [fields[i] for i in range(len(fields))]


def _stats_type_pattern():
    """The contract's pattern for a statistics-only column type (schemas/scenario.schema.json)."""
    return re.compile(scenario_validator().schema["$defs"]["spark_type"]["pattern"])


def _type(database: str, table: str, field_) -> str:
    text = field_.dataType().simpleString()
    if text in SCALAR_TYPES:
        return SCALAR_TYPES[text]
    if _stats_type_pattern().match(text):
        return text
    raise CaptureError(f"{database}.{table}.{field_.name()} has type {text}, which a scenario cannot declare "
                       "(nested field names must be lower-case identifiers)")


def _stats(spark, statistics, schema: dict) -> dict:
    """A `stats:` from CatalogStatistics (Py4J gives its BigInts as ints)."""
    out = {"size_bytes": int(statistics.sizeInBytes())}
    if not statistics.rowCount().isEmpty():
        out["rows"] = int(statistics.rowCount().get())
    columns = {}
    converters = spark._jvm.scala.collection.JavaConverters
    for name, type_name in schema.items():
        column = statistics.colStats().get(name)
        if column.isEmpty() or "rows" not in out:
            continue
        properties = dict(converters.mapAsJavaMapConverter(column.get().toMap(name)).asJava())
        spec = {key: int(properties[f"{name}.{prop}"]) for key, prop in STAT_PROPERTIES
                if f"{name}.{prop}" in properties}
        for bound in ("min", "max"):
            text = properties.get(f"{name}.{bound}")
            if text is not None and stats_bound_kind(type_name) is not None:
                spec[bound] = _bound(text, type_name)
        if spec:
            columns[name] = spec
    if columns:
        out["columns"] = columns
    return out


def _bound(text: str, type_name: str):
    if stats_bound_kind(type_name) is int:
        return int(text)
    if type_name == "boolean":
        return text == "true"
    if type_name in ("date", "timestamp"):
        return text
    return float(text)


# --------------------------------------------------------------------------- Iceberg tables

RELATION_KINDS = ("LogicalRelation", "HiveTableRelation", "DataSourceV2Relation")
# Iceberg's transform names (Transform.toString) → the scenario's partition_by form
_ICEBERG_TRANSFORMS = {"year": "years", "month": "months", "day": "days", "hour": "hours"}


def _is_iceberg(relation) -> bool:
    return str(relation.table().getClass().getName()).startswith("org.apache.iceberg.")


def _is_metadata_table(table) -> bool:
    """One of Iceberg's metadata tables (`t.snapshots`, `t.files`, ...): a BaseMetadataTable."""
    cls = table.getClass()
    while cls is not None:
        if str(cls.getName()) == "org.apache.iceberg.BaseMetadataTable":
            return True
        cls = cls.getSuperclass()
    return False


def relation_key(node) -> tuple[str, str]:
    """(database, table) of a catalog relation of the analysed plan: a V2 table's last
    namespace part stands for its database."""
    if node.getClass().getSimpleName() == "DataSourceV2Relation":
        _, namespace, name = v2_identifier(node)
        return (namespace[-1] if namespace else "default"), name
    meta = node.tableMeta() if node.getClass().getSimpleName() == "HiveTableRelation" else node.catalogTable().get()
    return identifier(meta)


def relation_reference(node) -> str:
    """The relation's name as a query writes it, every part quoted."""
    if node.getClass().getSimpleName() == "DataSourceV2Relation":
        catalog, namespace, name = v2_identifier(node)
        parts = ([catalog] if catalog else []) + namespace + [name]
    else:
        parts = list(relation_key(node))
    return ".".join(map(quoted_identifier, parts))


def v2_identifier(relation) -> tuple[str | None, list[str], str]:
    """(catalog, namespace parts, name) of a V2 relation."""
    if relation.identifier().isEmpty():
        raise CaptureError(f"it reads {one_line(str(relation.table().name()))[:120]} by path, not as a catalog table")
    ident = relation.identifier().get()
    namespace = [str(part) for part in ident.namespace()]
    catalog = None if relation.catalog().isEmpty() else str(relation.catalog().get().name())
    return catalog, namespace, str(ident.name())


def _iceberg_table(spark, relation) -> CapturedTable:
    """An Iceberg table as a statistics-only Iceberg table: its schema, its current
    snapshot's row count and size, and its layout (harness.spark.iceberg replays it as
    data files known to the metadata only)."""
    _, namespace, name = v2_identifier(relation)
    database = namespace[-1] if namespace else "default"
    table = relation.table().table()  # org.apache.iceberg.Table
    if _is_metadata_table(table):
        raise CaptureError(f"it reads Iceberg's metadata table {'.'.join(namespace + [name])}: capture reads "
                           "tables of rows")
    schema = {f.name(): _type(database, name, f) for f in _fields(relation.schema())}
    snapshot = table.currentSnapshot()
    summary = dict(snapshot.summary()) if snapshot is not None else {}
    stats = {"rows": int(summary.get("total-records", 0)), "size_bytes": int(summary.get("total-files-size", 0))}
    layout, notes = {"format": "iceberg"}, []
    where = f"{database}.{name}"
    spec = _iceberg_spec(table, schema, where, notes)
    if spec:
        partitions, earlier = _iceberg_partitions(spark, relation, table, spec, schema, where, notes)
        if partitions is not None or all(f.transform.name == "bucket" for f in spec) and \
                bucket_combinations({"partition_by": [f.text for f in spec]}) <= MAX_PARTITIONS:
            layout["partition_by"] = [f.text for f in spec]
            if earlier:
                layout["earlier_specs"] = earlier
            if partitions is not None:
                layout["partition_values"] = partitions
                stats["rows"] = sum(p["rows"] for p in partitions)
    order = _iceberg_sort_order(table, where, notes)
    if order:
        layout["sort_by"] = order
    properties = {str(k): str(v) for k, v in dict(table.properties()).items()
                  if k in ICEBERG_PROPERTIES and ICEBERG_PROPERTIES[k](str(v))}
    if properties:
        layout["properties"] = properties
    captured = CapturedTable(database, name, schema, stats, iceberg=layout, notes=notes)
    captured.reference = relation_reference(relation)
    return captured


@dataclass(frozen=True)
class SpecField:
    """A partition field: its transform, as the scenario writes it (`text`), and its name
    in Iceberg's partitions table (`name`)."""
    transform: Transform
    text: str
    name: str


def _iceberg_spec(table, schema: dict, where: str, notes: list) -> list:
    """The current partition spec as Transforms, or [] (with a note) when a field is one
    a scenario cannot declare."""
    return _spec_fields(table, table.spec(), schema, where, notes) or []


def _spec_fields(table, part_spec, schema: dict, where: str, notes: list) -> list | None:
    """A partition spec's fields, or None (with a note) when one is a field a scenario
    cannot declare."""
    fields = []
    for part in part_spec.fields():
        column = str(table.schema().findColumnName(part.sourceId()))
        transform = str(part.transform().toString())
        base, _, rest = transform.partition("[")
        width = int(rest.rstrip("]")) if rest else None
        if base == "identity":
            fields.append(SpecField(Transform("identity", column), column, str(part.name())))
        elif base in ("bucket", "truncate") and width is not None:
            fields.append(SpecField(Transform(base, column, width), f"{base}({width}, {column})", str(part.name())))
        elif base in _ICEBERG_TRANSFORMS:
            name = _ICEBERG_TRANSFORMS[base]
            fields.append(SpecField(Transform(name, column), f"{name}({column})", str(part.name())))
        else:
            notes.append(f"{where} is partitioned by {transform}({column}), which a scenario cannot declare: its "
                         "partition layout is not replayed, so a storage-partitioned join over it may plan otherwise")
            return None
        if column not in schema:
            notes.append(f"{where} is partitioned on the nested field {column}: its partition layout is not replayed")
            return None
    return fields


def _iceberg_partitions(spark, relation, table, spec: list, schema: dict, where: str,
                        notes: list) -> tuple[list | None, list]:
    """Each partition's values and rows, from the table's `partitions` metadata table, of
    every spec rows were written under: a partition of an earlier spec carries `spec`, its
    index among the earlier specs (returned second, oldest first, as the scenario writes
    them). None (with a note) when there are too many or a value or an earlier spec
    cannot be written."""
    partitions = spark.table(relation_reference(relation) + ".`partitions`")
    current = int(table.spec().specId())
    if "spec_id" not in partitions.columns:  # before Iceberg 1.2: the current spec's only
        rows = [(current, row) for row in partitions.select("partition", "record_count")
                .limit(MAX_PARTITIONS + 1).collect()]
    else:
        rows = [(int(row["spec_id"]), row) for row in partitions.groupBy("spec_id", "partition")
                .agg({"record_count": "sum"}).withColumnRenamed("sum(record_count)", "record_count")
                .limit(MAX_PARTITIONS + 1).collect()]
    if not rows:
        notes.append(f"{where} has no rows: its partitions are replayed only if its spec is all buckets")
        return None, []
    if len(rows) > MAX_PARTITIONS:
        kept = "every bucket, rows spread evenly" if all(f.transform.name == "bucket" for f in spec) else \
            "unpartitioned"
        notes.append(f"{where} has more than {MAX_PARTITIONS:,} partitions: replayed as {kept}")
        return None, []
    earlier_ids = sorted({spec_id for spec_id, _ in rows if spec_id != current})
    if len(earlier_ids) > MAX_EARLIER_SPECS:
        notes.append(f"{where} holds rows written under {len(earlier_ids)} earlier partition specs, more than the "
                     f"{MAX_EARLIER_SPECS} a scenario holds: its partition layout is not replayed")
        return None, []
    fields_of = {current: spec}
    for spec_id in earlier_ids:
        fields_of[spec_id] = _spec_fields(table, table.specs().get(spec_id), schema, where, notes)
        if fields_of[spec_id] is None:
            return None, []
    out = []
    for spec_id, row in rows:
        values = []
        for spec_field in fields_of[spec_id]:
            value = row["partition"][spec_field.name]
            value = value.isoformat() if isinstance(value, dt.date) else value
            transform = spec_field.transform
            problem = partition_value_problem(transform, schema.get(transform.column), value)
            if problem:
                notes.append(f"{where}: a partition value of {spec_field.text} cannot be replayed ({problem}): "
                             "its partition layout is not replayed")
                return None, []
            values.append(value)
        entry = {"values": values, "rows": int(row["record_count"])}
        if spec_id != current:
            entry["spec"] = earlier_ids.index(spec_id)
        out.append(entry)
    if earlier_ids:
        notes.append(f"{where}: rows were written under {len(earlier_ids)} earlier partition spec(s): replayed as "
                     "the table's history made them (earlier_specs: each spec's partitions appended under it, then "
                     "the spec evolved)")
    earlier = [[f.text for f in fields_of[spec_id]] for spec_id in earlier_ids]
    return sorted(out, key=lambda p: (p.get("spec", len(earlier)), [(v is None, str(v)) for v in p["values"]])), \
        earlier


# the earlier partition specs a statistics-only Iceberg table declares at most (schema)
MAX_EARLIER_SPECS = 8


def _iceberg_sort_order(table, where: str, notes: list) -> list[str]:
    order = []
    for part in table.sortOrder().fields():
        column = str(table.schema().findColumnName(part.sourceId()))
        if str(part.transform().toString()) != "identity":
            notes.append(f"{where}'s sort order by {part.transform()}({column}) is not replayed")
            return []
        order.append(column if str(part.direction()) == "ASC" else f"{column} desc")
    return order
