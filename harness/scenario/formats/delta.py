"""Delta Lake tables of the session catalog: a catalog table of generated or literal rows,
derived, or statistics-only (a Delta log whose add actions carry each partition's size
and rows, and the statistics its catalog entry holds), partitioned by its columns and
never bucketed. Its rules on a declared table, checked at collection."""
from __future__ import annotations

import re

from harness.scenario.errors import Where
from harness.scenario.formats import parquet
from harness.scenario.formats.base import check_properties
from harness.scenario.tables import is_derived, is_stats_only


NAME = "delta"
# a derived table of this format is written once per worker as a catalog table
WRITES_DERIVED = True
# Delta table properties a scenario may set: how the log is kept and what it records,
# nothing that names a location or a class; each with the values it accepts. Set in the
# table's metadata (its first commit) for a statistics-only table, by ALTER TABLE ... SET
# TBLPROPERTIES after the rows are written for a table with rows.
PROPERTIES = {
    "delta.appendOnly": lambda v: str(v).lower() in ("true", "false"),
    "delta.dataSkippingNumIndexedCols": lambda v: re.fullmatch(r"-?[0-9]{1,4}", str(v)) is not None
    and -1 <= int(v) <= 1000,
    "delta.checkpointInterval": lambda v: str(v).isdigit() and 1 <= int(v) <= 1000,
}


def check(at: Where, where: tuple, name: str, table: dict, data: dict) -> None:
    _check_delta(at, where, table)
    if not is_derived(table):  # a derived table's columns are Spark's to say: checked when it is built
        parquet.check_catalog_layout(at, where, name, table, data)


def _check_delta(at: Where, where: tuple, table: dict) -> None:
    """A Delta table: a catalog table of generated or literal rows, or statistics-only (a
    Delta log), partitioned by its columns; never bucketed (Delta refuses it on every
    version, measured 3.0.3 - 4.2.1 with bench/delta_probe.py)."""
    if not is_derived(table) and not is_stats_only(table) and table.get("materialize") != "catalog":
        raise at.error(where + ("format",), "`format: delta` is for a catalog table of generated or literal rows: "
                       "add `materialize: catalog` (or give statistics only)")
    if "bucket_by" in table:
        raise at.error(where + ("bucket_by",), "Delta Lake does not bucket a table (it refuses `bucketBy` on "
                       "every Spark version); partition it, or leave the layout to a parquet table")
    if "analyze" in table:
        raise at.error(where + ("analyze",), "a Delta table is sized from its log (ANALYZE TABLE is not replayed)")
    if "partitions_omitted" in table:
        raise at.error(where + ("partitions_omitted",), "a Delta table's log lists every partition: leave "
                       "`partitions_omitted` out")
    for key in ("sort_by", "files_per_partition"):
        if key in table:
            raise at.error(where + (key,), f"`{key}` is an Iceberg table's; a Delta table is laid out by "
                           "`partition_by`")
    check_properties(at, where, table, PROPERTIES, " on a Delta table")
    if table.get("partition_values") == []:
        raise at.error(where + ("partition_values",), "a Delta table is sized by its log's add actions: one with no "
                       "partition has none to replay (leave `partition_values` out, or list them)")
    if is_stats_only(table):
        stats = table["stats"]
        if "size_bytes" not in stats:
            raise at.error(where + ("stats",), "a Delta table's log holds its size: add `size_bytes`")
        if stats.get("columns"):
            raise at.error(where + ("stats", "columns"), "a Delta table's column statistics are not replayed (Delta "
                           "sizes a scan from its log's file sizes): leave `columns` out")
