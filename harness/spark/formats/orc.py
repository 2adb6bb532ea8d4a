"""ORC tables of the session catalog: rows written by the DataFrame writer in ORC with the
spec's bucketBy/sortBy/partitionBy and vetted ORC options (kept as the table's storage
properties), statistics-only tables as parquet's (an empty ORC table, injected statistics,
partitions at sparse files: harness.spark.stats_only). Built into every Spark."""
from __future__ import annotations

from harness.spark.formats.base import session_table_exists
from harness.spark.stats_only import stats_only_table, with_layout

NAME = "orc"
ANALYZABLE = True  # ANALYZE TABLE is the session catalog's
STORED_AS = "orc"  # a datasource ORC table's provider; in a Hive table's serde (OrcSerde)
exists = session_table_exists


def identifier(spark, name: str) -> str:
    return name


def _options(spec: dict) -> dict:
    return {str(key): str(value) for key, value in (spec.get("properties") or {}).items()}


def write(spark, table: str, frame, spec: dict) -> None:
    with_layout(frame.write.format(NAME).options(**_options(spec)), spec).saveAsTable(table)


def write_stats_only(spark, table: str, spec: dict) -> None:
    stats_only_table(spark, table, spec, source=NAME, options=_options(spec))
