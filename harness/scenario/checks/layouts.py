"""Rules on a catalog table's layout: bucket and partition columns of the table, a
statistics-only table's partitions and their totals, and each table format's own rules
(Delta, Iceberg)."""
from __future__ import annotations

from harness.scenario import confs
from harness.scenario.checks.tables import INT_RANGES, literal_fits
from harness.scenario.errors import (
    Where,
    did_you_mean,
    excerpt,
)
from harness.scenario.tables import (
    DELTA_PROPERTIES,
    ICEBERG_PROPERTIES,
    MAX_PARTITIONS,
    bucket_combinations,
    catalog_partition_value_problem,
    column_type,
    iceberg_column_problems,
    is_delta,
    is_derived,
    is_iceberg,
    is_stats_only,
    parse_transform,
    partition_spec,
    partition_text,
    partition_value_problem,
)


# What a schema cannot say, one rule each, in the order a person fixes a file.
def check_layouts(at: Where, data: dict) -> None:
    """`bucket_by` and `partition_by` name columns of their table, on a catalog table."""
    for name, table in data["tables"].items():
        _check_partition_values_owner(at, ("tables", name), table)
        if is_delta(table):
            _check_delta(at, ("tables", name), table)
            if is_derived(table):  # its columns are Spark's to say: checked when it is built
                continue
        elif is_iceberg(table) or any(key in table for key in ICEBERG_ONLY):
            _check_iceberg_layout(at, ("tables", name), name, table)
            continue
        layout = {key: table[key] for key in ("bucket_by", "partition_by") if key in table}
        if not layout:
            continue
        where = ("tables", name)
        if is_derived(table):
            raise at.error(where + ("partition_by",), "a derived table is partitioned only as an Iceberg or Delta "
                           "table: add `format: iceberg` or `format: delta` (its rows are then written once per "
                           "worker with that layout)")
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
            _check_catalog_partitions(at, where, table)
            _check_partitions_from_catalog(at, data)


MANAGE_PARTITIONS = "spark.sql.hive.manageFilesourcePartitions"


def _check_partitions_from_catalog(at: Where, data: dict) -> None:
    """A statistics-only parquet table's partitions live in the catalog, their files in
    no folder of the table: with the catalog's partitions switched off Spark would list
    the table's folder instead and size a production table at 0 bytes."""
    for where, key, value in confs.settings(data):
        if key == MANAGE_PARTITIONS and str(value).lower() == "false":
            raise at.error(where, f"{MANAGE_PARTITIONS}=false lists a table's folder instead of its catalog "
                           "partitions: a statistics-only partitioned table has no data files to list")


def _check_properties(at: Where, where: tuple, table: dict, allowed: dict, on: str = "") -> None:
    """Only vetted table properties, each with a value the harness sets."""
    for key, value in (table.get("properties") or {}).items():
        if key not in allowed:
            raise at.error(where + ("properties", key), f"table property '{key}' may not be set from a scenario "
                           f"(allowed{on}: {', '.join(sorted(allowed))})")
        if not allowed[key](value):
            raise at.error(where + ("properties", key), f"{value!r} is not a value this harness sets for '{key}'")


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
    _check_properties(at, where, table, DELTA_PROPERTIES, " on a Delta table")
    if is_stats_only(table):
        stats = table["stats"]
        if "size_bytes" not in stats:
            raise at.error(where + ("stats",), "a Delta table's log holds its size: add `size_bytes`")
        if stats.get("columns"):
            raise at.error(where + ("stats", "columns"), "a Delta table's column statistics are not replayed (Delta "
                           "sizes a scan from its log's file sizes): leave `columns` out")


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


def _check_catalog_partitions(at: Where, where: tuple, table: dict) -> None:
    """A statistics-only parquet table's partitions: every one listed with its values (of
    the partition columns' types) and its size, none twice, adding up to the table's
    statistics. Spark sizes a scan that prunes partitions by the files of the kept ones:
    a partition left out would weigh nothing there."""
    listed = table.get("partition_values")
    columns = table["partition_by"]
    if not listed:
        raise at.error(where + ("partition_by",), "list the table's partitions in `partition_values` (each its "
                       "values and size_bytes): a plan that prunes them is sized by the kept partitions alone")
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
            if problem is None and not _partition_value_fits(value, type_name):
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
    _check_partition_totals(at, where, listed, stats, table.get("partitions_omitted"))


def _partition_value_fits(value, type_name: str) -> bool:
    """In range for an integer column; a real date for a date column."""
    if value is None or (type_name not in INT_RANGES and type_name != "date"):
        return True
    return literal_fits(partition_text(value) if type_name == "date" else value, type_name)


def _check_partition_totals(at: Where, where: tuple, listed: list, stats: dict, omitted: dict | None = None) -> None:
    """The partitions (listed, and those `partitions_omitted` counts) add up to the table:
    its size (when each partition has one) and its rows (when each has a count and the
    table has one)."""
    omitted = omitted or {}
    for key, what in (("size_bytes", "bytes"), ("rows", "rows")):
        if key not in stats or not all(key in p for p in listed) or (omitted and key not in omitted):
            continue
        total = sum(p[key] for p in listed) + omitted.get(key, 0)
        if total != stats[key]:
            held = "the partitions hold" if not omitted else "the listed and omitted partitions hold"
            raise at.error(where + ("partition_values",), f"{held} {total:,} {what}, stats.{key} says {stats[key]:,}")


ICEBERG_ONLY = ("sort_by", "files_per_partition", "properties")


def _check_iceberg_layout(at: Where, where: tuple, name: str, table: dict) -> None:
    """An Iceberg table: a catalog table of generated, literal or derived rows, its partition spec
    made of Iceberg's transforms over its own columns, its sort order over its columns,
    and only vetted table properties."""
    if not is_iceberg(table):
        key = next(key for key in ICEBERG_ONLY if key in table)
        raise at.error(where + (key,), f"`{key}` is an Iceberg table's: add `format: iceberg`")
    if not is_derived(table) and not is_stats_only(table) and table.get("materialize") != "catalog":
        raise at.error(where + ("format",), "`format: iceberg` is for a catalog table of generated or literal rows: "
                       "add `materialize: catalog`")
    if "analyze" in table:
        raise at.error(where + ("analyze",), "an Iceberg table keeps its own statistics (ANALYZE TABLE is "
                       "Spark's session catalog's)")
    if "bucket_by" in table:
        raise at.error(where + ("bucket_by",), "an Iceberg table is bucketed by its partition spec: write "
                       "`partition_by: [\"bucket(N, column)\"]`")
    for i, text in enumerate(table.get("partition_by") or []):
        try:
            parse_transform(text)
        except ValueError as exc:
            raise at.error(where + ("partition_by", i), str(exc)) from None
    if not is_derived(table):  # a derived table's columns are Spark's to say: checked when it is built
        names = list(table.get("columns") or table.get("schema") or {})
        typed = {column: column_type(table, column) for column in names}
        problems = iceberg_column_problems(table, typed, lambda c: f"table '{name}'{did_you_mean(c, names)}")
        if problems:
            field, message = problems[0]
            raise at.error(where + field, message)
    if is_stats_only(table):
        _check_iceberg_stats(at, where, table)
    _check_properties(at, where, table, ICEBERG_PROPERTIES)


def _check_iceberg_stats(at: Where, where: tuple, table: dict) -> None:
    """A statistics-only Iceberg table: sized by its row count (Iceberg estimates a scan
    from its files' record counts, not from catalog statistics), its partitions listed or
    all buckets of an all-bucket spec."""
    stats = table["stats"]
    if "rows" not in stats:
        raise at.error(where + ("stats",), "an Iceberg table is sized by its row count: add `rows` (Spark "
                       "estimates an Iceberg scan as rows x row width)")
    if stats.get("columns"):
        raise at.error(where + ("stats", "columns"), "an Iceberg table's column statistics are not replayed (Iceberg "
                       "reports row counts from its files' metadata): leave `columns` out")
    spec = partition_spec(table)
    listed = table.get("partition_values")
    if listed is None:
        if any(t.name != "bucket" for t in spec):
            raise at.error(where + ("partition_values",), "list the table's partitions: only an all-bucket partition "
                           "spec has them by default (every bucket)")
        if bucket_combinations(table) > MAX_PARTITIONS:
            raise at.error(where + ("partition_by",), f"{bucket_combinations(table):,} bucket combinations: a "
                           f"statistics-only Iceberg table has at most {MAX_PARTITIONS:,} partitions")
        return
    if not spec:
        raise at.error(where + ("partition_values",), "an unpartitioned table has no partition values: add "
                       "`partition_by`")
    earlier = _earlier_specs(at, where, table)
    seen = set()
    for i, partition in enumerate(listed):
        if "rows" not in partition:
            raise at.error(where + ("partition_values", i), "a partition of an Iceberg table needs `rows` (Spark "
                           "sizes an Iceberg scan by its files' record counts)")
        values = partition["values"]
        if "spec" in partition and partition["spec"] >= len(earlier):
            raise at.error(where + ("partition_values", i, "spec"), f"spec {partition['spec']} is not one of "
                           f"`earlier_specs` ({len(earlier)} listed)")
        fields, named = (earlier[partition["spec"]], f"earlier_specs[{partition['spec']}]") if "spec" in partition \
            else (spec, "partition_by")
        if len(values) != len(fields):
            raise at.error(where + ("partition_values", i, "values"), f"{len(values)} value(s) for the "
                           f"{len(fields)} field(s) of {named}")
        for j, (transform, value) in enumerate(zip(fields, values)):
            problem = partition_value_problem(transform, column_type(table, transform.column), value)
            if problem:
                raise at.error(where + ("partition_values", i, "values", j), problem)
        key = (partition.get("spec"), *map(partition_text, values))
        if key in seen:
            raise at.error(where + ("partition_values", i, "values"), "the same partition twice")
        seen.add(key)
    _check_partition_totals(at, where, listed, stats)


def _earlier_specs(at: Where, where: tuple, table: dict) -> list:
    """An evolved Iceberg table's earlier partition specs, each a list of Transforms over
    the table's columns."""
    out = []
    columns = list(table.get("schema") or {})
    for i, texts in enumerate(table.get("earlier_specs") or []):
        fields = []
        for j, text in enumerate(texts):
            try:
                transform = parse_transform(text)
            except ValueError as exc:
                raise at.error(where + ("earlier_specs", i, j), str(exc)) from None
            if transform.column not in columns:
                raise at.error(where + ("earlier_specs", i, j), f"'{transform.column}' is not a column of the "
                               f"table{did_you_mean(transform.column, columns)}")
            fields.append(transform)
        out.append(fields)
    return out
