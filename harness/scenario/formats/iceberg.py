"""Iceberg tables of the worker's Iceberg catalog: generated, literal, derived or
statistics-only (data files known to the metadata only, each partition's rows, of every
spec rows were written under), with a partition spec of Iceberg transforms, a sort
order, files per partition and vetted properties. Its rules on a declared table, checked
at collection."""
from __future__ import annotations

from harness.scenario.errors import Where, did_you_mean
from harness.scenario.formats.base import check_partition_totals, check_properties
from harness.scenario.tables import (
    MAX_PARTITIONS,
    bucket_combinations,
    column_type,
    iceberg_column_problems,
    is_derived,
    is_iceberg,
    is_stats_only,
    literal_fits,
    parse_transform,
    partition_spec,
    partition_text,
    partition_value_problem,
    stats_bound_kind,
)


NAME = "iceberg"
# a derived table of this format is written once per worker as a catalog table
WRITES_DERIVED = True
# Table properties a scenario may set: how data is laid out and split, nothing that names
# a location, a catalog, an IO or a class. Each with the values it accepts.
PROPERTIES = {
    "format-version": lambda v: str(v) in ("1", "2"),
    "read.split.target-size": lambda v: str(v).isdigit() and 1024 <= int(v) <= 2**40,
    "read.split.open-file-cost": lambda v: str(v).isdigit() and int(v) <= 2**40,
    "read.split.planning-lookback": lambda v: str(v).isdigit() and 1 <= int(v) <= 1000,
    "write.target-file-size-bytes": lambda v: str(v).isdigit() and 1024 <= int(v) <= 2**40,
    "write.parquet.compression-codec": lambda v: str(v) in ("zstd", "snappy", "gzip", "uncompressed"),
    "write.distribution-mode": lambda v: str(v) in ("none", "hash", "range"),
}
# what only an Iceberg table declares
ONLY = ("sort_by", "files_per_partition", "properties", "data_files")


def check(at: Where, where: tuple, name: str, table: dict, data: dict) -> None:
    _check_iceberg_layout(at, where, name, table)


def _check_iceberg_layout(at: Where, where: tuple, name: str, table: dict) -> None:
    """An Iceberg table: a catalog table of generated, literal or derived rows, its partition spec
    made of Iceberg's transforms over its own columns, its sort order over its columns,
    and only vetted table properties."""
    if not is_iceberg(table):
        key = next(key for key in ONLY if key in table)
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
    check_properties(at, where, table, PROPERTIES)


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
    if listed == []:
        raise at.error(where + ("partition_values",), "an Iceberg table is sized by its files' record counts: one "
                       "with no partition has no rows to replay (leave `partition_values` out, or list them)")
    _check_data_files(at, where, table, listed)
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
    check_partition_totals(at, where, listed, stats)


# the data files a statistics-only Iceberg table lists at most, over all its partitions
MAX_DATA_FILES = 10000


def _check_data_files(at: Where, where: tuple, table: dict, listed: list | None) -> None:
    """Data files listed where they belong (the table's own on an unpartitioned table, a
    partition's on a partitioned one), at most MAX_DATA_FILES, their rows adding up to what
    holds them, their bounds over the table's columns, of each column's type, lower ≤ upper."""
    if table.get("data_files") and partition_spec(table):
        raise at.error(where + ("data_files",), "a partitioned table lists its data files under each partition of "
                       "`partition_values`")
    places = [((), table["data_files"], table["stats"]["rows"], "stats.rows")] if table.get("data_files") else []
    places += [(("partition_values", i), p["data_files"], p.get("rows"), f"partition_values[{i}].rows")
               for i, p in enumerate(listed or []) if p.get("data_files")]
    if sum(len(files) for _, files, _, _ in places) > MAX_DATA_FILES:
        raise at.error(where + ("partition_values",), f"more than {MAX_DATA_FILES:,} data files: a statistics-only "
                       "Iceberg table lists at most that many")
    columns = list(table.get("schema") or {})
    for place, files, rows, named in places:
        if rows is not None and sum(f["rows"] for f in files) != rows:
            raise at.error(where + place + ("data_files",), f"the files hold {sum(f['rows'] for f in files):,} rows, "
                           f"{named} says {rows:,}")
        for i, data_file in enumerate(files):
            for column, metrics in (data_file.get("columns") or {}).items():
                at_column = where + place + ("data_files", i, "columns", column)
                if column not in columns:
                    raise at.error(at_column, f"'{column}' is not a column of the table{did_you_mean(column, columns)}")
                _check_bounds(at, at_column, metrics, column_type(table, column), data_file["rows"])


def _check_bounds(at: Where, where: tuple, metrics: dict, type_name: str, rows: int) -> None:
    if metrics.get("nulls", 0) > rows:
        raise at.error(where + ("nulls",), f"more nulls than the file's {rows:,} rows")
    kind = str if type_name == "string" else stats_bound_kind(type_name)
    for bound in ("lower", "upper"):
        if bound not in metrics:
            continue
        value = metrics[bound]
        if kind is None:
            raise at.error(where + (bound,), f"the bounds of a {type_name} column are not replayed")
        if not isinstance(value, kind) or (isinstance(value, bool) and type_name != "boolean") \
                or (kind is not str and not literal_fits(value, type_name)):
            raise at.error(where + (bound,), f"{value!r} is not a {type_name}")
    lower, upper = metrics.get("lower"), metrics.get("upper")
    if lower is not None and upper is not None and type_name not in ("timestamp", "boolean") and lower > upper:
        raise at.error(where + ("lower",), f"lower bound {lower!r} is above upper bound {upper!r}")


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
