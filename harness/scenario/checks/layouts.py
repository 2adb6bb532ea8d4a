"""Rules on a catalog table's layout: who may list partitions, then each table format's
own rules (harness.scenario.formats: parquet, Delta, Iceberg)."""
from __future__ import annotations

from harness.scenario.errors import Where
from harness.scenario.formats import check_known, iceberg, parquet, rules_of
from harness.scenario.tables import is_delta, is_iceberg, is_stats_only


def check_layouts(at: Where, data: dict) -> None:
    """Each table's layout, by its format's rules."""
    for name, table in data["tables"].items():
        where = ("tables", name)
        check_known(at, where, table)
        _check_partition_values_owner(at, where, table)
        rules = rules_of(table)
        if rules is parquet and any(key in table for key in iceberg.ONLY):
            key = next(key for key in iceberg.ONLY if key in table)
            raise at.error(where + (key,), f"`{key}` is an Iceberg table's: add `format: iceberg`")
        rules.check(at, where, name, table, data)


def _check_partition_values_owner(at: Where, where: tuple, table: dict) -> None:
    if "partition_values" in table and not is_stats_only(table):
        raise at.error(where + ("partition_values",), "`partition_values` lists a statistics-only table's "
                       "partitions (a table with rows has the partitions of its rows)")
    if "partition_values" in table and not table.get("partition_by"):
        raise at.error(where + ("partition_values",), "an unpartitioned table has no partition values: add "
                       "`partition_by`")
    if "earlier_specs" in table and not (is_iceberg(table) and is_stats_only(table) and table.get("partition_values")):
        raise at.error(where + ("earlier_specs",), "`earlier_specs` is a statistics-only Iceberg table's whose "
                       "`partition_values` name the spec each partition was written under")
    if not table.get("earlier_specs") and any("spec" in p for p in table.get("partition_values") or []):
        index = next(i for i, p in enumerate(table["partition_values"]) if "spec" in p)
        raise at.error(where + ("partition_values", index, "spec"), "`spec` names one of `earlier_specs`, which "
                       "this table does not list")
    if "stale_stats" in table and (is_iceberg(table) or is_delta(table) or not table.get("partition_values")):
        raise at.error(where + ("stale_stats",), "`stale_stats` is a statistics-only partitioned parquet table's "
                       "(a Delta table's catalog statistics are `catalog_stats`)")
    if "catalog_stats" in table and not (is_delta(table) and is_stats_only(table)):
        raise at.error(where + ("catalog_stats",), "`catalog_stats` is a statistics-only Delta table's (a parquet "
                       "table's catalog statistics are its `stats`)")
    if "partitions_omitted" in table and (is_iceberg(table) or not table.get("partition_values")):
        raise at.error(where + ("partitions_omitted",), "`partitions_omitted` counts the partitions a statistics-only "
                       "parquet table's `partition_values` leaves out")
