"""A table format's declarative part: its rules on a declared table, checked at collection,
one module per format (parquet, delta, iceberg), chosen in one place (`rules_of`). The
Spark part of each format (its jars, configs, writing and statistics-only tables) is
harness.spark.formats'; its capture, harness.capturing's."""
from __future__ import annotations

from harness.scenario.formats import delta, iceberg, parquet


FORMATS = {module.NAME: module for module in (parquet, iceberg, delta)}


def rules_of(table: dict):
    """The one place a declared table's format is chosen."""
    return FORMATS[table.get("format", parquet.NAME)]
