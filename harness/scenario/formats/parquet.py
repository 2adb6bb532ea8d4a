"""Spark's own parquet tables of the session catalog (the default format): a generated or
literal table written as a catalog table, or statistics-only (injected statistics, its
partitions registered in the catalog at sparse files), bucketed by `bucket_by` and
partitioned by `partition_by`. Its rules on a declared table, checked at collection."""
from __future__ import annotations

from harness.scenario import confs
from harness.scenario.errors import Where, did_you_mean, excerpt
from harness.scenario.formats.base import check_partition_totals, partition_value_fits
from harness.scenario.tables import (
    catalog_partition_value_problem,
    column_type,
    is_derived,
    is_stats_only,
    partition_text,
)


NAME = "parquet"
# a derived table of this format is written once per worker as a catalog table
WRITES_DERIVED = False


def check(at: Where, where: tuple, name: str, table: dict, data: dict) -> None:
    """`bucket_by` and `partition_by` name columns of their table, on a catalog table; a
    statistics-only table's partitions listed, fitting and adding up."""
    if is_derived(table) and ("bucket_by" in table or "partition_by" in table):
        key = "partition_by" if "partition_by" in table else "bucket_by"
        raise at.error(where + (key,), "a derived table is laid out only as a table of a format that "
                       "writes it (e.g. `format: iceberg` or `format: delta`): its rows are then written once "
                       "per worker with that layout")
    check_catalog_layout(at, where, name, table, data)


def check_catalog_layout(at: Where, where: tuple, name: str, table: dict, data: dict) -> None:
    """The layout rules of a table of the session catalog (a Delta table's too)."""
    layout = {key: table[key] for key in ("bucket_by", "partition_by") if key in table}
    if not layout:
        return
    if table.get("materialize") != "catalog" and not is_stats_only(table):
        raise at.error(where + (next(iter(layout)),), "a bucketed or partitioned layout needs `materialize: "
                       "catalog` or a statistics-only table (a table in the catalog)")
    columns = list(table.get("columns") or table.get("schema") or {})
    named = []
    if "bucket_by" in layout:
        named += [(where + ("bucket_by", "columns", i), c) for i, c in enumerate(layout["bucket_by"]["columns"])]
        named += [(where + ("bucket_by", "sort_by", i), c)
                  for i, c in enumerate(layout["bucket_by"].get("sort_by", []))]
    named += [(where + ("partition_by", i), c) for i, c in enumerate(layout.get("partition_by", []))]
    for field_path, column in named:
        if column not in columns:
            raise at.error(field_path, f"'{column}' is not a column of table '{name}'{did_you_mean(column, columns)}")
    partition = set(layout.get("partition_by", []))
    if partition and partition >= set(columns):
        raise at.error(where + ("partition_by",), "a table cannot be partitioned by all of its columns")
    if partition & set(layout.get("bucket_by", {}).get("columns", [])):
        raise at.error(where + ("bucket_by", "columns"), "a bucket column cannot also be a partition column")
    if is_stats_only(table) and partition:
        if _PASSED_PARTITIONS.get(id(table)) is not table:
            _check_catalog_partitions(at, where, table)
            if len(_PASSED_PARTITIONS) >= 4096:
                _PASSED_PARTITIONS.clear()
            _PASSED_PARTITIONS[id(table)] = table
        _check_partitions_from_catalog(at, data)


# Tables whose partitions passed, by identity: a shared catalog's table (one object, read by
# every scenario of a workload) has its thousands of partitions checked once per process.
_PASSED_PARTITIONS: dict = {}


MANAGE_PARTITIONS = "spark.sql.hive.manageFilesourcePartitions"


def _check_partitions_from_catalog(at: Where, data: dict) -> None:
    """A statistics-only parquet table's partitions live in the catalog, their files in
    no folder of the table: with the catalog's partitions switched off Spark would list
    the table's folder instead and size a production table at 0 bytes."""
    for where, key, value in confs.settings(data):
        if key == MANAGE_PARTITIONS and str(value).lower() == "false":
            raise at.error(where, f"{MANAGE_PARTITIONS}=false lists a table's folder instead of its catalog "
                           "partitions: a statistics-only partitioned table has no data files to list")


def _check_catalog_partitions(at: Where, where: tuple, table: dict) -> None:
    """A statistics-only parquet table's partitions: every one listed with its values (of
    the partition columns' types) and its size, none twice, adding up to the table's
    statistics. Spark sizes a scan that prunes partitions by the files of the kept ones:
    a partition left out would weigh nothing there."""
    listed = table.get("partition_values")
    columns = table["partition_by"]
    if listed is None:
        raise at.error(where + ("partition_by",), "list the table's partitions in `partition_values` (each its "
                       "values and size_bytes; `[]` for a table with none): a plan that prunes them is sized by "
                       "the kept partitions alone")
    if not listed:
        return  # no partition yet: an unfiltered scan is sized by the statistics, a pruned one by no file
    stats, seen = table["stats"], set()
    for i, partition in enumerate(listed):
        at_partition = where + ("partition_values", i)
        values = partition["values"]
        if len(values) != len(columns):
            raise at.error(at_partition + ("values",), f"{len(values)} value(s) for the {len(columns)} column(s) "
                           "of partition_by")
        for j, (column, value) in enumerate(zip(columns, values)):
            type_name = column_type(table, column)
            problem = catalog_partition_value_problem(type_name, value)
            if problem is None and not partition_value_fits(value, type_name):
                problem = f"{excerpt(value)} is not a {type_name}"
            if problem:
                raise at.error(at_partition + ("values", j), problem)
        key = tuple(map(partition_text, values))
        if key in seen:
            raise at.error(at_partition + ("values",), "the same partition twice")
        seen.add(key)
        if "size_bytes" not in partition:
            raise at.error(at_partition, "a partition of a parquet table needs `size_bytes` (what Spark sizes a "
                           "pruned scan by)")
    if table.get("stale_stats"):
        if "size_bytes" not in stats:
            raise at.error(where + ("stale_stats",), "`stale_stats` says the table's statistics disagree with its "
                           "partitions: give the statistics (`stats.size_bytes`)")
        return  # Spark sizes an unfiltered scan by the statistics, a pruned one by the files
    check_partition_totals(at, where, listed, stats, table.get("partitions_omitted"))
