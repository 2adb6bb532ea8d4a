"""Spark's own parquet tables of the session catalog (the default format): rows written by
the DataFrame writer with the spec's bucketBy/sortBy/partitionBy, statistics-only tables
by injected statistics and sparse partition files (harness.spark.stats_only). Built into
every Spark: no package, no session config."""
from __future__ import annotations

from harness.spark.formats.base import session_table_exists
from harness.spark.stats_only import stats_only_table, with_layout

NAME = "parquet"
ANALYZABLE = True  # ANALYZE TABLE is the session catalog's
# A table of the session catalog stored this way (its provider, or its Hive serde's name
# holding the word) is captured as this format.
STORED_AS = "parquet"


def identifier(spark, name: str) -> str:
    return name


exists = session_table_exists


def write(spark, table: str, frame, spec: dict) -> None:
    with_layout(frame.write.format(NAME), spec).saveAsTable(table)


def write_stats_only(spark, table: str, spec: dict) -> None:
    stats_only_table(spark, table, spec, source=NAME)
