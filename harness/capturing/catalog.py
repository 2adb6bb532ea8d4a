"""The tables a captured query reads, as the catalog knows them: found in Spark's analysed
plan (through views), each with its schema and its catalog statistics, read through
Py4J, never as DDL text. The session catalog's tables (parquet, ORC and Hive tables Spark
reads as files, partitioned and bucketed) are read here; a table of a format that keeps
its own metadata (Delta, Iceberg) by its module of harness.capturing.formats.
What harness.capturing.to_scenario writes as statistics-only tables."""
from __future__ import annotations

import os
import re
import urllib.parse

from harness.capturing.caches import (
    CacheLookup,
    cache_note,
    cached_name,
    fragment_note,
    reads_one_relation,
    stripped,
)
from harness.capturing.formats import entry_reader, relation_reader
from harness.capturing.relations import (
    CaptureError,
    SCALAR_TYPES,
    CapturedTable,
    identifier,
    partition_value,
    relation_key,
    scenario_type,
    seq_names,
    struct_fields,
)
from harness.core.text import one_line
from harness.scenario.tables import CATALOG_PARTITION_TYPES, MAX_PARTITIONS, stats_bound_kind
from harness.spark.formats import catalog_format


STAT_PROPERTIES = (("distinct", "distinctCount"), ("nulls", "nullCount"), ("avg_len", "avgLen"),
                   ("max_len", "maxLen"))


def _children(node) -> list:
    out = []
    for seq in (node.children(), node.subqueries()):
        out.extend(seq.apply(i) for i in range(seq.size()))
    return out


def read_relations(spark, analysed, where: str = "") -> list[CapturedTable]:
    """The catalog tables and permanent views under an analysed plan, views first-seen
    order kept so that a view comes after the tables it reads; a table or view read
    through the session's cache carries what its cache reports (harness.capturing.caches)."""
    found: dict = {}
    try:
        _visit(spark, analysed, found, CacheLookup(spark))
    except CaptureError as exc:
        raise CaptureError(f"{where}: {exc}" if where else str(exc)) from None
    return list(found.values())


def catalog_table(spark, name: str) -> CapturedTable:
    """One catalog table's schema and statistics, as capture records them."""
    return read_relations(spark, spark.table(name)._jdf.queryExecution().analyzed())[0]


def _visit(spark, node, found: dict, caches: CacheLookup) -> None:
    cached = caches.relation(node)
    if cached is not None:
        _visit_cached(spark, node, found, cached)
        return
    _visit_node(spark, node, found, caches)


def _visit_cached(spark, node, found: dict, cached) -> None:
    """A part of the plan Spark reads from its cache: the table or view it is, with the
    cache's statistics; operators over tables (a cached DataFrame the query repeats) are
    replayed uncached, said in a note."""
    inner = stripped(node)
    below: dict = {}
    try:
        _visit_node(spark, inner, below, CacheLookup.none(spark))
    except CaptureError as exc:
        raise CaptureError(f"{cached_name(inner, cached)}: {exc}") from None
    for key, table in below.items():
        found.setdefault(key, table)
    if not below:
        return
    if reads_one_relation(inner):
        target = found[_read_key(inner)]
        if target.cache is None:  # a table read twice (a self-join) is noted once
            target.cache = cache_sizes(spark, cached)
            target.notes.append(cache_note(f"{target.database}.{target.table}", cached, target.cache))
        return
    first = found[next(iter(below))]
    first.notes.append(fragment_note([".".join(key) for key in below], cached))


def cache_sizes(spark, relation) -> dict:
    """The statistics the cached relation reports, as a scenario's `{cache: {...}}`: its
    size, its row count where it has one, and the column statistics it carries."""
    statistics = relation.computeStats()
    out = {"size_bytes": int(str(statistics.sizeInBytes()))}
    if not statistics.rowCount().isEmpty():
        out["rows"] = int(str(statistics.rowCount().get()))
    columns = {}
    attribute_stats = statistics.attributeStats()
    output = relation.output()
    for index in range(output.size()):
        attribute = output.apply(index)
        found = attribute_stats.get(attribute)
        if found.isEmpty():
            continue
        name, data_type = str(attribute.name()), attribute.dataType()
        type_name = SCALAR_TYPES.get(str(data_type.simpleString()), str(data_type.simpleString()))
        spec = column_spec(spark, found.get().toCatalogColumnStat(name, data_type), name, type_name)
        if spec:
            columns[name] = spec
    if columns and "rows" in out:
        out["columns"] = columns
    return out


def _read_key(node) -> tuple[str, str]:
    """The key of the table or view a relation or View node reads."""
    if node.getClass().getSimpleName() == "View":
        database, table = identifier(node.desc())
        return database.lower(), table.lower()
    database, table = relation_key(node)
    return database.lower(), table.lower()


def _visit_node(spark, node, found: dict, caches: CacheLookup) -> None:
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
            _visit(spark, child, found, caches)
        if _is_temp_view(node) and meta.viewText().isEmpty():  # made from a DataFrame
            database, table = identifier(meta)
            found.setdefault((database.lower(), table.lower()),
                             CapturedTable(database, table, {}, {}, view_sql="", view_plan=node.child()))
            return
        view = _view(meta)
        found.setdefault(view.key, view)
        return
    reader = relation_reader(node) if kind == "DataSourceV2Relation" else None
    if reader is not None:
        try:
            table = reader.read_relation(spark, node)
        except CaptureError:
            raise
        except Exception as exc:  # a metadata table, a changelog: not a table of rows with a spec
            raise CaptureError(f"it reads the {reader.NAME.capitalize()} relation {one_line(str(node.table().name()))[:120]}, "
                               f"whose metadata capture cannot read ({one_line(str(exc))[:160]})") from None
        found.setdefault(table.key, table)
        return
    if kind in ("LogicalRDD", "ExternalRDD", "LocalRelation", "Range", "DataSourceV2Relation", "StreamingRelation",
                "StreamingRelationV2"):
        raise CaptureError(f"it reads a {kind}, not a catalog table: capture reads tables from the catalog "
                           "(data made in Python, spark.range or a file read has no statistics to replay)")
    for child in _children(node):
        _visit(spark, child, found, caches)


def _is_temp_view(view) -> bool:
    """Spark 3.0's View nodes are permanent views only (no isTempView)."""
    try:
        return bool(view.isTempView())
    except Exception:
        return False


def _view(meta) -> CapturedTable:
    database, table = identifier(meta)
    text = meta.viewText()
    if text.isEmpty():
        raise CaptureError(f"view {database}.{table} has no SQL text to replay")
    return CapturedTable(database, table, {}, {}, view_sql=text.get())


def _table(spark, meta, relation) -> CapturedTable:
    database, table = identifier(meta)
    reader = entry_reader(meta)
    if reader is not None:  # its schema and partitions live in its own metadata, not in the catalog entry
        return reader.read_entry(spark, meta, relation)
    schema = {f.name(): scenario_type(database, table, f) for f in struct_fields(meta.schema())}
    stats = meta.stats()
    stored_as, notes = _stored_as(meta, f"{database}.{table}")
    columns = seq_names(meta.partitionColumnNames())
    if columns:
        partitions = catalog_partitions(spark, meta, schema, columns, notes)
        if partitions is not None:
            table_stats = _stats(spark, stats.get(), schema) if not stats.isEmpty() else {}
            stale = _stale_stats(table_stats, partitions, f"{database}.{table}", notes)
            kept, omitted = kept_partitions(partitions, f"{database}.{table}", notes)
            layout = {"partition_by": columns, "partition_values": kept,
                      **({"partitions_omitted": omitted} if omitted else {}),
                      **({"stale_stats": True} if stale else {})}
            return CapturedTable(database, table, schema, table_stats, _bucket_by(meta), notes=notes, format=stored_as,
                                 partitions=layout)
    if stats.isEmpty():
        size = int(relation.stats().sizeInBytes())
        notes.append(f"{database}.{table} has no catalog statistics: size_bytes is {_size_source(spark, size)}; "
                     "ANALYZE TABLE it (or capture --analyze) for row counts and column statistics")
        return CapturedTable(database, table, schema, {"size_bytes": size}, _bucket_by(meta), notes=notes,
                             format=stored_as)
    return CapturedTable(database, table, schema, _stats(spark, stats.get(), schema), _bucket_by(meta), notes=notes,
                         format=stored_as)


def _size_source(spark, size: int) -> str:
    """Where Spark's size of a table without statistics came from, in words: its default
    for a relation it cannot size (a Hive serde table read without
    spark.sql.statistics.fallBackToHdfs), else its files."""
    default = spark._jsparkSession.sessionState().conf().defaultSizeInBytes()
    if size == int(str(default)):
        return (f"Spark's default for a table it cannot size (spark.sql.defaultSizeInBytes, {size:,} B: never "
                "under a broadcast threshold; spark.sql.statistics.fallBackToHdfs sizes a Hive table from its files)")
    return "Spark's estimate from its files"


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
        values = [partition_value(texts[column], schema[column]) for column in columns]
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


# Hive's storage formats by their input format (what `STORED AS` names).
HIVE_STORAGE = {"TextInputFormat": "TEXTFILE", "SequenceFileInputFormat": "SEQUENCEFILE",
                "RCFileInputFormat": "RCFILE", "AvroContainerInputFormat": "AVRO"}


def _stored_as(meta, where: str) -> tuple[str | None, list]:
    """(the table's format where it is not parquet and the harness has it, notes): a table
    stored in a format the harness cannot write is replayed as a parquet table, said, with
    where its size came from."""
    provider = "" if meta.provider().isEmpty() else str(meta.provider().get()).lower()
    serde = _safe_text(lambda: meta.storage().serde().get())
    fmt = catalog_format(provider, serde.lower())
    if fmt is not None:
        return (None if fmt.NAME == "parquet" else fmt.NAME), []
    if provider in ("", "hive") and not serde:
        return None, []
    if provider == "hive":
        input_format = _safe_text(lambda: meta.storage().inputFormat().get()).rsplit(".", 1)[-1]
        stored = f"a Hive serde table stored as {HIVE_STORAGE.get(input_format, input_format or 'an unknown format')} " \
                 f"({serde.rsplit('.', 1)[-1]})"
    else:
        stored = f"stored as {provider}"
    sized = ", sized by its catalog statistics" if not meta.stats().isEmpty() else ""
    return None, [f"{where} is {stored}{sized}: replayed as a statistics-only parquet table of the same sizes "
                  "and layout (its scans print Parquet)"]


def _safe_text(fn) -> str:
    try:
        return str(fn())
    except Exception:
        return ""


def _bucket_by(meta) -> dict | None:
    """The table's bucket spec (what lets a join skip its shuffle), replayed on the
    statistics-only table."""
    spec = meta.bucketSpec()
    if spec.isEmpty():
        return None
    spec = spec.get()
    bucket_by = {"columns": seq_names(spec.bucketColumnNames()), "buckets": int(spec.numBuckets())}
    sort_by = seq_names(spec.sortColumnNames())
    return {**bucket_by, "sort_by": sort_by} if sort_by else bucket_by


def _stats(spark, statistics, schema: dict) -> dict:
    """A `stats:` from CatalogStatistics (Py4J gives its BigInts as ints)."""
    out = {"size_bytes": int(statistics.sizeInBytes())}
    if not statistics.rowCount().isEmpty():
        out["rows"] = int(statistics.rowCount().get())
    columns = {}
    for name, type_name in schema.items():
        column = statistics.colStats().get(name)
        if column.isEmpty() or "rows" not in out:
            continue
        spec = column_spec(spark, column.get(), name, type_name)
        if spec:
            columns[name] = spec
    if columns:
        out["columns"] = columns
    return out


def column_spec(spark, column, name: str, type_name: str) -> dict:
    """A column's `stats.columns` entry from Spark's CatalogColumnStat: counts, lengths,
    min/max of its type, and its histogram."""
    converters = spark._jvm.scala.collection.JavaConverters
    properties = dict(converters.mapAsJavaMapConverter(column.toMap(name)).asJava())
    spec = {key: int(properties[f"{name}.{prop}"]) for key, prop in STAT_PROPERTIES if f"{name}.{prop}" in properties}
    for bound in ("min", "max"):
        text = properties.get(f"{name}.{bound}")
        if text is not None and stats_bound_kind(type_name) is not None:
            spec[bound] = _bound(text, type_name)
    histogram = column.histogram()
    if not histogram.isEmpty():
        spec["histogram"] = _histogram(spark, histogram.get())
    return spec


_BIN = re.compile(r"HistogramBin\(([^,()]+),([^,()]+),(-?\d+)\)")


def _histogram(spark, histogram) -> dict:
    """A column's equi-height histogram (what CBO's filter estimates read, with
    spark.sql.statistics.histogram.enabled at ANALYZE): its height and each bin's bounds
    and distinct count, as Spark keeps them. The bins come back in one call, as text
    (Java's Double.toString reads back as the same double)."""
    text = str(spark._jvm.scala.runtime.ScalaRunTime.stringOf(histogram.bins()))
    bins = [[float(lo), float(hi), int(distinct)] for lo, hi, distinct in _BIN.findall(text)]
    return {"height": float(histogram.height()), "bins": bins}


def _bound(text: str, type_name: str):
    if stats_bound_kind(type_name) is int:
        return int(text)
    if type_name == "boolean":
        return text == "true"
    if type_name in ("date", "timestamp"):
        return text
    return float(text)
