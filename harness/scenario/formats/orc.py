"""ORC tables of the session catalog (a Hive shop's tables): generated or literal rows
written as a catalog table, derived (written once per worker), or statistics-only (an
empty ORC table with injected statistics, its partitions registered at sparse files, as
a parquet one), bucketed by `bucket_by` and partitioned by `partition_by`, with vetted
ORC properties. Its rules on a declared table, checked at collection."""
from __future__ import annotations

from harness.scenario.errors import Where
from harness.scenario.formats import parquet
from harness.scenario.formats.base import check_properties
from harness.scenario.tables import is_derived, is_stats_only

NAME = "orc"
# a derived table of this format is written once per worker as a catalog table
WRITES_DERIVED = True
# ORC writer options kept as the table's storage properties: how files are compressed and
# cut, nothing that names a location, a key or a class. Values every Spark from 3.0 writes
# (ORC 1.5: no zstd or lz4 there).
PROPERTIES = {
    "orc.compress": lambda v: str(v).upper() in ("NONE", "ZLIB", "SNAPPY"),
    "orc.stripe.size": lambda v: str(v).isdigit() and (1 << 20) <= int(v) <= (1 << 30),
    "orc.row.index.stride": lambda v: str(v).isdigit() and 1000 <= int(v) <= 1_000_000,
}
# layout keys of other formats
OTHERS = {"sort_by": "an Iceberg table's sort order", "files_per_partition": "an Iceberg table's",
          "earlier_specs": "an Iceberg table's partition history"}


def check(at: Where, where: tuple, name: str, table: dict, data: dict) -> None:
    if not is_derived(table) and not is_stats_only(table) and table.get("materialize") != "catalog":
        raise at.error(where + ("format",), "`format: orc` is for a catalog table: add `materialize: catalog` "
                       f"(not `{table.get('materialize', 'lazy')}`), derive it, or give statistics only")
    for key, whose in OTHERS.items():
        if key in table:
            raise at.error(where + (key,), f"`{key}` is {whose}; an ORC table is laid out by `partition_by` and "
                           "`bucket_by` (with its `sort_by`)")
    check_properties(at, where, table, PROPERTIES, " on an ORC table")
    if not is_derived(table):  # a derived table's columns are Spark's to say: checked when it is built
        parquet.check_catalog_layout(at, where, name, table, data)
