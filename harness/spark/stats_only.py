"""Statistics-only tables: production sizes without the data.

An empty catalog table (parquet, or the format's of harness.spark.formats) is created in the worker's own catalog and the scenario's
statistics are injected into the session catalog as `CatalogStatistics` (size, row
count, per-column distinct/null counts, min/max, lengths and histograms) — the way Spark's own
plan-stability suites inject TPC-DS sf100 statistics into empty tables. Planning then
sees what an ANALYZEd table of that size shows: with CBO on, the column statistics drive
the estimates exactly as ANALYZE ... FOR ALL COLUMNS would.

Py4J hands a Scala BigInt back to Python as an int, so the BigInt-valued parts are never
returned: `CatalogColumnStat.fromMap` (the parser Spark uses for statistics stored as
table properties) builds each column's statistics and the `Option[BigInt]` counts, and
the table's statistics are constructed inside the JVM from those.
"""
from __future__ import annotations

from pathlib import Path

from harness.core.instants import utc_instant
from harness.core.text import quoted_identifier, string_literal
from harness.scenario.tables import DEFAULT_PARTITION_NAME, literal_schema, partition_text

# CatalogColumnStat's property names, and the version of that format (2 since Spark 2.4).
STAT_KEYS = {"distinct": "distinctCount", "nulls": "nullCount", "min": "min", "max": "max",
             "avg_len": "avgLen", "max_len": "maxLen"}
STATS_FORMAT_VERSION = "2"


def stats_only_table(spark, table_name: str, spec: dict, source: str = "parquet", options: dict | None = None):
    """The empty catalog table carrying the spec's statistics (created once per worker:
    its name holds a fingerprint of the spec), with its declared bucket spec and
    partition columns, and its partitions: a production layout replayed without its data."""
    if not spark._jsparkSession.catalog().tableExists(table_name):
        if spec.get("bucket_by") or spec.get("partition_by"):
            # the writer's own bucketBy/sortBy/partitionBy over no rows: no DDL text either
            writer = empty_frame(spark, spec).write.format(source).options(**(options or {}))
            with_layout(writer, spec).saveAsTable(table_name)
        else:
            # through the catalog API with a parsed schema: no DDL text is built from the file
            spark.catalog.createTable(table_name, source=source, schema=struct_type(spec), **(options or {}))
        if spec.get("partition_values"):
            add_partitions(spark, table_name, spec)
        if spec["stats"]:
            inject(spark, table_name, spec)
    return spark.table(table_name)


# A partition up to this size is one sparse file; a larger one a folder of such files.
SPARSE_FILE_BYTES = 1 << 40
# Under the table's folder, hidden from any listing of it (Spark skips names starting `_`).
PARTITION_STORE = "_partitions"


def add_partitions(spark, table_name: str, spec: dict) -> None:
    """Every listed partition registered by Spark's own `ALTER TABLE … ADD PARTITION …
    LOCATION` (its values as the catalog stores them), its location one file of the
    partition's size that occupies no disk (sparse: never written, never read: the cases
    are planned, not run). A plan that prunes partitions lists the kept locations (Spark
    lists a file as itself) and is sized by their length, as over the production table;
    one that does not is sized by the table's statistics. No folder per partition: a
    table of 10,000 partitions costs one folder's entries (264 KiB, not 40 MB)."""
    store = Path(table_location(spark, table_name)) / PARTITION_STORE
    store.mkdir(exist_ok=True)
    # A Hive metastore takes only a folder as a partition's location (capture's self-check
    # runs in the capturing session, often on one): there each partition is a folder of
    # its sparse file.
    in_folders = _catalog_kind(spark) == "hive"
    clauses = []
    for index, partition in enumerate(spec["partition_values"]):
        location = write_sparse_location(store / f"p{index:05d}", partition["size_bytes"], in_folders)
        values = ", ".join(f"{quoted_identifier(column)} = {string_literal(text)}"
                           for column, text in catalog_spec(spec["partition_by"], partition["values"]).items())
        clauses.append(f"PARTITION ({values}) LOCATION {string_literal(location.resolve().as_uri())}")
    spark.sql(f"ALTER TABLE {quoted_identifier(table_name)} ADD {' '.join(clauses)}")


def catalog_spec(columns: list[str], values: list) -> dict[str, str]:
    """A partition's values as Spark's catalog keeps them: text, the null partition under
    Hive's default partition name (what RECOVER PARTITIONS reads from a folder; the same
    on 3.0–4.3 for int, date, boolean and string columns, measured)."""
    texts = (partition_text(value) for value in values)
    return {column: DEFAULT_PARTITION_NAME if text in (None, "") else text for column, text in zip(columns, texts)}


def _catalog_kind(spark) -> str:
    try:
        return str(spark.conf.get("spark.sql.catalogImplementation", "in-memory"))
    except Exception:
        return "in-memory"


def write_sparse_location(path: Path, size: int, in_folder: bool = False) -> Path:
    """A file of `size` bytes holding no blocks on disk, or (over SPARSE_FILE_BYTES, or
    `in_folder`) a folder of such files adding up to it."""
    if size <= SPARSE_FILE_BYTES and not in_folder:
        _sparse_file(path, size)
        return path
    path.mkdir(exist_ok=True)
    for index, offset in enumerate(range(0, size, SPARSE_FILE_BYTES)):
        _sparse_file(path / f"part-{index:05d}.parquet", min(SPARSE_FILE_BYTES, size - offset))
    return path


def _sparse_file(path: Path, length: int) -> None:
    with open(path, "wb") as handle:
        handle.truncate(length)


def table_location(spark, table_name: str) -> str:
    state = spark._jsparkSession.sessionState()
    identifier = state.sqlParser().parseTableIdentifier(table_name)
    return str(state.catalog().getTableMetadata(identifier).location().getPath())


def with_layout(writer, spec: dict):
    """Spark's own bucketBy/sortBy/partitionBy for a catalog table's declared layout."""
    bucket = spec.get("bucket_by")
    if bucket:
        columns = bucket["columns"]
        writer = writer.bucketBy(bucket["buckets"], columns[0], *columns[1:])
        if bucket.get("sort_by"):
            writer = writer.sortBy(bucket["sort_by"][0], *bucket["sort_by"][1:])
    if spec.get("partition_by"):
        writer = writer.partitionBy(*spec["partition_by"])
    return writer


def spark_type(type_name: str) -> str:
    """A scenario type as Spark SQL names it (`long` is the file format's word for BIGINT)."""
    return "BIGINT" if type_name == "long" else type_name.upper()


def struct_type(spec: dict):
    """The table's schema, each type parsed by Spark's own type parser."""
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string
    return StructType([StructField(name, _parse_datatype_string("bigint" if type_name == "long" else type_name), True)
                       for name, (type_name, _) in literal_schema(spec).items()])


def empty_frame(spark, spec: dict):
    """The table's columns over no rows (a stand-in for the SQL checks)."""
    return spark.createDataFrame(spark.sparkContext.emptyRDD(), struct_type(spec))


def external_value(value, type_name: str) -> str:
    """A min/max as Spark writes it in its statistics properties."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if type_name == "timestamp":
        return utc_instant(value).strftime("%Y-%m-%d %H:%M:%S.%f")
    if type_name in ("int", "long", "bigint", "smallint", "short", "tinyint", "byte"):
        return str(int(value))
    return str(value)


def inject(spark, table_name: str, spec: dict) -> None:
    jvm = spark._jvm
    state = spark._jsparkSession.sessionState()
    identifier = state.sqlParser().parseTableIdentifier(table_name)
    stats, schema = spec["stats"], literal_schema(spec)
    column_stats = jvm.java.util.HashMap()
    for name, column in stats.get("columns", {}).items():
        properties = column_properties(spark, name, column, schema[name][0])
        column_stats.put(name, column_stat(jvm, table_name, name, properties))
    statistics = jvm_statistics(jvm, "org.apache.spark.sql.catalyst.catalog.CatalogStatistics", table_name,
                                stats["size_bytes"], stats.get("rows"), python_utils(jvm).toScalaMap(column_stats))
    state.catalog().alterTableStats(identifier, jvm.scala.Some(statistics))


def column_properties(spark, name: str, column: dict, type_name: str) -> dict:
    """A column's statistics as Spark stores them in table properties (what
    CatalogColumnStat.fromMap reads)."""
    properties = {f"{name}.{STAT_KEYS[key]}": external_value(value, type_name) if key in ("min", "max")
                  else str(value) for key, value in column.items() if key != "histogram"}
    if "histogram" in column:
        properties[f"{name}.histogram"] = serialized_histogram(spark, column["histogram"])
    return properties


def serialized_histogram(spark, histogram: dict) -> str:
    """A column's histogram as Spark stores it among its statistics properties: a
    `Histogram(height, bins)` built in the JVM, written by Spark's own HistogramSerializer
    (which CatalogColumnStat.fromMap reads back)."""
    logical = spark._jvm.org.apache.spark.sql.catalyst.plans.logical
    bins = spark.sparkContext._gateway.new_array(logical.HistogramBin, len(histogram["bins"]))
    for index, (lo, hi, distinct) in enumerate(histogram["bins"]):
        bins[index] = logical.HistogramBin(float(lo), float(hi), int(distinct))
    return str(logical.HistogramSerializer.serialize(logical.Histogram(float(histogram["height"]), bins)))


def python_utils(jvm):
    return jvm.org.apache.spark.api.python.PythonUtils


def column_stat(jvm, table_name: str, column: str, properties: dict):
    entries = jvm.java.util.HashMap()
    for key, value in {**properties, f"{column}.version": STATS_FORMAT_VERSION}.items():
        entries.put(key, value)
    parsed = jvm.org.apache.spark.sql.catalyst.catalog.CatalogColumnStat.fromMap(
        table_name, column, python_utils(jvm).toScalaMap(entries))
    if parsed.isEmpty():
        raise ValueError(f"Spark could not read the statistics of column '{column}'")
    return parsed.get()


def jvm_statistics(jvm, class_name: str, owner: str, size_bytes: int, rows: int | None, column_stats,
                   trailing: tuple = ()):
    """Spark's `Statistics` or `CatalogStatistics` (sizeInBytes, rowCount, column statistics,
    then the values of `trailing`'s calls where this version's constructor takes them — an
    argument an older Spark lacks is never asked for), constructed in the JVM:
    the BigInt size is unwrapped from its Option there and the Option[BigInt] row count
    never crosses Py4J."""
    arguments = jvm.java.util.ArrayList()
    size = big_option(jvm, owner, str(size_bytes))
    arguments.addAll(jvm.scala.collection.JavaConverters.seqAsJavaListConverter(size.toList()).asJava())
    arguments.add(big_option(jvm, owner, str(rows)) if rows is not None else jvm.scala.Option.empty())
    arguments.add(column_stats)
    by_arity = {c.getParameterCount(): c for c in jvm.java.lang.Class.forName(class_name).getConstructors()}
    arity = max(count for count in by_arity if count <= 3 + len(trailing))
    for value in trailing[:arity - 3]:
        arguments.add(value())
    return by_arity[arity].newInstance(arguments.toArray())


def big_option(jvm, table_name: str, digits: str):
    """Some(BigInt(digits)), made in the JVM."""
    return column_stat(jvm, table_name, "n", {"n.distinctCount": digits}).distinctCount()
