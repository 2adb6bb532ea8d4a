"""The tables a captured query reads, as the catalog knows them: found in Spark's analysed
plan (through views), each with its schema and its catalog statistics, read through
Py4J, never as DDL text. What harness.capturing.to_scenario writes as statistics-only
tables."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness.core.text import one_line
from harness.scenario.schema import scenario_validator
from harness.scenario.tables import stats_bound_kind

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
        table = _table(spark, meta, node)
        found.setdefault(table.key, table)
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
    schema = {f.name(): _type(database, table, f) for f in _fields(meta.schema())}
    stats = meta.stats()
    notes = []
    partitions = _names(meta.partitionColumnNames())
    if partitions:
        notes.append(f"{database}.{table} is partitioned by {', '.join(partitions)}: not replayed (a statistics-only "
                     "table cannot be partitioned: its statistics would be lost once a plan filters on a partition "
                     "column), so plans that prune its partitions may differ")
    if stats.isEmpty():
        size = int(relation.stats().sizeInBytes())
        notes.append(f"{database}.{table} has no catalog statistics: size_bytes is Spark's estimate from its "
                     "files; ANALYZE TABLE it (or capture --analyze) for row counts and column statistics")
        return CapturedTable(database, table, schema, {"size_bytes": size}, _bucket_by(meta), notes=notes)
    return CapturedTable(database, table, schema, _stats(spark, stats.get(), schema), _bucket_by(meta), notes=notes)


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
