"""What every kind of captured table shares: the record capture makes of a table
(CapturedTable), its one-line error, and reading a relation of Spark's analysed plan
through Py4J — its catalog identifier, its schema as scenario types, its partition
values. The readers (harness.capturing.catalog for the session catalog's tables, the
modules of harness.capturing.formats for Delta and Iceberg) build on these."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness.core.text import one_line, quoted_identifier
from harness.scenario.schema import scenario_validator


SCALAR_TYPES = {"bigint": "long", "int": "int", "double": "double", "string": "string", "boolean": "boolean",
                "date": "date", "timestamp": "timestamp"}


class CaptureError(Exception):
    """One line: what could not be captured, and where."""


@dataclass
class CapturedTable:
    database: str
    table: str
    schema: dict                 # column → scenario type
    stats: dict                  # the scenario's `stats:`
    bucket_by: dict | None = None  # the table's bucket spec, as the scenario's `bucket_by:`
    partitions: dict | None = None  # its layout: `partition_by`, `partition_values`, and a format's own keys
    format: str | None = None       # a table format other than Spark's parquet tables (`orc`, `delta`, `iceberg`)
    grouped_partitions: bool = False  # its partitions may feed a storage-partitioned join (Iceberg's)
    analyzable: bool = True           # ANALYZE TABLE takes it (a table of the session catalog)
    reference: str = ""          # how the query's catalog names it (quoted parts)
    view_sql: str | None = None  # a view: its text (rewritten later)
    view_plan: object = None     # a temporary view made from a DataFrame: its plan (written as SQL later)
    notes: list = field(default_factory=list)
    name: str = ""               # the scenario's name for it
    cache: dict | None = None    # read through the session's cache: the statistics it reports
    read_as: str = ""            # the scenario table the query reads it as (a cached table's own derived table)

    @property
    def key(self) -> tuple[str, str]:
        return self.database.lower(), self.table.lower()

    @property
    def query_name(self) -> str:
        """The name the scenario's query reads it by."""
        return self.read_as or self.name


def identifier(meta) -> tuple[str, str]:
    identifier = meta.identifier()
    database = identifier.database()
    return (database.get() if not database.isEmpty() else "default"), identifier.table()


DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"


def partition_value(text, type_name: str):
    if text is None or text == DEFAULT_PARTITION_NAME:
        return None
    if type_name in ("int", "long", "bigint", "smallint", "short", "tinyint", "byte"):
        return int(text)
    if type_name == "boolean":
        return text.lower() == "true"
    return text


def seq_names(seq) -> list[str]:
    return [str(seq.apply(i)) for i in range(seq.size())]


def struct_fields(struct_type) -> list:
    fields = struct_type.fields()
    return [fields[i] for i in range(len(fields))]


def _stats_type_pattern():
    """The contract's pattern for a statistics-only column type (schemas/scenario.schema.json)."""
    return re.compile(scenario_validator().schema["$defs"]["spark_type"]["pattern"])


def scenario_type(database: str, table: str, field_) -> str:
    text = field_.dataType().simpleString()
    if text in SCALAR_TYPES:
        return SCALAR_TYPES[text]
    if _stats_type_pattern().match(text):
        return text
    raise CaptureError(f"{database}.{table}.{field_.name()} has type {text}, which a scenario cannot declare "
                       "(nested field names must be lower-case identifiers)")


RELATION_KINDS = ("LogicalRelation", "HiveTableRelation", "DataSourceV2Relation")


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


def python_frame(spark, jdf):
    """A Python DataFrame over a JVM one (PySpark before 3.3 wants the SQLContext)."""
    from pyspark.sql import DataFrame
    return DataFrame(jdf, getattr(spark, "_wrapped", None) or spark)
