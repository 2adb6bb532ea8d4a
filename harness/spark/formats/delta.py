"""Delta Lake tables for scenarios: Delta's Spark package for the running Spark (JVM
packages, harness.spark.jvm_packages), loaded with its session extension and catalog only
by runs that declare a Delta table; tables written from a scenario's rows with their
partition columns; and statistics-only Delta tables: a Delta log committed with one add
action per partition carrying its size and record count, and no data file, so Spark plans
the sizes, partition pruning and dynamic pruning it plans over the production table
(measured on every version with a Delta release: bench/delta_probe.py).
"""
from __future__ import annotations

import json
import uuid
from pathlib import Path

from harness.core.text import quoted_identifier
from harness.scenario.tables import literal_schema, partition_directory, partition_text
from harness.spark.formats.base import FormatUnavailable, current_database_folder, session_table_exists, spark_minor
from harness.spark.jvm_packages import Coordinate

DELTA = NAME = "delta"
ANALYZABLE = False  # sized from its log
EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
CATALOG_CLASS = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def _package(artifact: str, version: str, storage: bool = True) -> tuple[Coordinate, ...]:
    spark_jar = Coordinate("io.delta", artifact, version, marker="io/delta/sql/DeltaSparkSessionExtension.class")
    if not storage:  # before Delta 1.2 the log store lived in the one jar
        return (spark_jar,)
    return spark_jar, Coordinate("io.delta", "delta-storage", version, marker="io/delta/storage/LogStore.class")


# Spark minor → the Delta release the harness starts with it, each run here with
# bench/delta_probe.py on that Spark (2026-11-26). Spark 4.3 has no Delta release yet.
RUNTIMES = {
    "3.0": _package("delta-core_2.12", "0.8.0", storage=False),
    "3.1": _package("delta-core_2.12", "1.0.1", storage=False),
    "3.2": _package("delta-core_2.12", "2.0.2"),
    "3.3": _package("delta-core_2.12", "2.3.0"),
    "3.4": _package("delta-core_2.12", "2.4.0"),
    "3.5": _package("delta-spark_2.12", "3.3.2"),
    "4.0": _package("delta-spark_2.13", "4.0.1"),
    "4.1": _package("delta-spark_4.1_2.13", "4.4.0"),
    "4.2": _package("delta-spark_4.2_2.13", "4.4.0"),
}

# Why this process's session started without the Delta package its Spark has (one line).
problem: str | None = None


def runtime_for(spark_version: str) -> tuple[Coordinate, ...] | None:
    return RUNTIMES.get(spark_minor(spark_version))


def not_available(spark_version: str) -> str:
    return f"not available on Spark {spark_minor(spark_version)} (no Delta Lake release)"


def session_confs(jars: list[Path], workdir: Path = None) -> dict:
    """What a session needs to read and write Delta tables in its session catalog."""
    return {"spark.jars": ",".join(map(str, jars)), "spark.sql.extensions": EXTENSION,
            "spark.sql.catalog.spark_catalog": CATALOG_CLASS}


exists = session_table_exists


def identifier(spark, name: str) -> str:
    if not loaded(spark):
        raise FormatUnavailable(problem or "this worker's session started without Delta Lake (no file of the "
                                "run was seen to declare `format: delta` when it started)")
    return name


def loaded(spark) -> bool:
    try:
        return CATALOG_CLASS == spark.conf.get("spark.sql.catalog.spark_catalog", None)
    except Exception:
        return False


def write(spark, name: str, df, spec: dict) -> None:
    """The rows of `df` as a Delta table of the session catalog, partitioned by the spec's
    columns."""
    writer = df.write.format(DELTA)
    if spec.get("partition_by"):
        writer = writer.partitionBy(*spec["partition_by"])
    writer.saveAsTable(name)
    properties = _properties(spec)
    if properties:  # vetted keys and values (harness.scenario.formats.delta.PROPERTIES)
        listed = ", ".join(f"'{key}'='{value}'" for key, value in sorted(properties.items()))
        spark.sql(f"ALTER TABLE {quoted_identifier(name)} SET TBLPROPERTIES ({listed})")


def _properties(spec: dict) -> dict:
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in (spec.get("properties") or {}).items()}


# Delta's JSON schema names of the scenario's scalar types
_DELTA_TYPES = {"long": "long", "bigint": "long", "int": "integer", "integer": "integer", "smallint": "short",
                "short": "short", "tinyint": "byte", "byte": "byte", "double": "double", "float": "float",
                "string": "string", "boolean": "boolean", "date": "date", "timestamp": "timestamp"}


def delta_schema(spec: dict) -> dict:
    fields = []
    for column, (type_name, _) in literal_schema(spec).items():
        fields.append({"name": column, "type": _DELTA_TYPES.get(type_name, type_name), "nullable": True,
                       "metadata": {}})
    return {"type": "struct", "fields": fields}


def log_actions(spec: dict, table_id: str) -> list[dict]:
    """The first commit of a statistics-only Delta table: its protocol, its metadata and
    one add action per partition (or one for an unpartitioned table) with the partition's
    size and record count; the files are never written."""
    columns = spec.get("partition_by") or []
    stats = spec["stats"]
    partitions = spec.get("partition_values") or [{"values": [], "size_bytes": stats["size_bytes"],
                                                   **({"rows": stats["rows"]} if "rows" in stats else {})}]
    actions = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
               {"metaData": {"id": table_id, "format": {"provider": "parquet", "options": {}},
                             "schemaString": json.dumps(delta_schema(spec)), "partitionColumns": columns,
                             "configuration": _properties(spec), "createdTime": 0}}]
    for i, partition in enumerate(partitions):
        folder = partition_directory(columns, partition["values"])
        add = {"path": f"{folder + '/' if folder else ''}part-{i:05d}-statistics-only.parquet",
               "partitionValues": {c: partition_text(v) for c, v in zip(columns, partition["values"])},
               "size": partition["size_bytes"], "modificationTime": 0, "dataChange": True}
        if "rows" in partition:
            add["stats"] = json.dumps({"numRecords": partition["rows"]})
        actions.append({"add": add})
    return actions


def write_stats_only(spark, name: str, spec: dict) -> None:
    """A statistics-only Delta table: its log beside the current database's folder (the
    worker's warehouse, in its scratch folder, or the scratch database of capture's
    self-check), registered in the session catalog at that location."""
    location = current_database_folder(spark).parent / DELTA / name
    log = location / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    commit = log / "00000000000000000000.json"
    actions = log_actions(spec, str(uuid.uuid5(uuid.NAMESPACE_URL, name)))
    commit.write_text("\n".join(json.dumps(action) for action in actions) + "\n")
    spark.catalog.createTable(name, path=str(location), source=DELTA)
    if spec.get("catalog_stats"):  # what a CTAS into a metastore leaves on the entry: every scan's size
        from harness.spark.stats_only import inject
        inject(spark, name, {**spec, "stats": spec["catalog_stats"]})
