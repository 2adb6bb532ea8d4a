"""What a scenario's tables and hints are: the kind of a table (generated, literal, derived,
statistics-only), its columns and types as the file declares them, and hints as written."""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from harness.core.instants import utc_instant

DERIVED_SOURCES = ("from", "sql", "join")


def is_literal(table: dict) -> bool:
    """A table given as literal rows with a schema (not generated)."""
    return "values" in table


def is_derived(table: dict) -> bool:
    """A table made from other tables of the scenario (a query, a join, or steps)."""
    return any(key in table for key in DERIVED_SOURCES)


def is_stats_only(table: dict) -> bool:
    """An empty catalog table with injected statistics: production sizes without data."""
    return "stats" in table


def literal_schema(table: dict) -> dict:
    """column → (type, nullable) of a literal table."""
    out = {}
    for name, spec in table["schema"].items():
        if isinstance(spec, dict):
            out[name] = (spec["type"], bool(spec.get("nullable", False)))
        else:
            out[name] = (spec.rstrip("?"), spec.endswith("?"))
    return out


def table_columns(table: dict) -> list[str] | None:
    """The columns, where the file says them (a derived table's are Spark's to tell)."""
    if is_derived(table):
        return None
    return list(table["schema"] if "schema" in table else table["columns"])


def column_type(table: dict, column: str) -> str | None:
    if is_derived(table):
        return None
    if "schema" in table:
        return literal_schema(table).get(column, (None, False))[0]
    spec = table["columns"].get(column)
    return None if spec is None else spec.get("type")


def table_rows(table: dict) -> int | None:
    """Rows as declared (before any filter); None where only Spark can count them."""
    if is_literal(table):
        return len(table["values"])
    if is_derived(table):
        return None
    if is_stats_only(table):
        return table["stats"].get("rows")
    return table["rows"]


def derived_inputs(table: dict) -> list[str]:
    """The tables a derived table names in its file (`from`, `join`); a `sql` table's
    inputs are read from Spark's parse of the query (harness.spark.derived)."""
    if "from" in table:
        return [table["from"]]
    if "join" in table:
        return list(dict.fromkeys([table["join"]["left"], table["join"]["right"]]))
    return []


def hint_name(hint) -> str:
    """A hint as written: a bare name, or `{name: X, unknown: true}`."""
    return hint["name"] if isinstance(hint, dict) else hint


def as_hint_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


_STAT_KINDS = {"int": int, "long": int, "bigint": int, "smallint": int, "short": int, "tinyint": int, "byte": int,
               "double": (int, float), "float": (int, float), "real": (int, float), "boolean": bool,
               "date": str, "timestamp": str}


def stats_bound_kind(type_name: str):
    """The Python kind of a column's min/max statistics, None where Spark keeps none
    (strings, binary, nested types)."""
    if type_name.startswith("decimal"):
        return (int, float)
    return _STAT_KINDS.get(type_name)


def supports_histogram(type_name: str) -> bool:
    """Whether ANALYZE keeps a histogram of a column of this type (with
    spark.sql.statistics.histogram.enabled): numeric, decimal, date and timestamp columns,
    not booleans or strings (measured on 3.0.3 and 4.3.0)."""
    return stats_bound_kind(type_name) not in (None, bool)


# ---------------------------------------------------------------- Iceberg layouts

ICEBERG = "iceberg"
# Iceberg's partition transforms: the name, whether it takes a width, and the column types
# it applies to (None: any column Iceberg can bucket).
_TIME = ("date", "timestamp")
TRANSFORMS = {"identity": (False, None), "bucket": (True, None), "truncate": (True, ("int", "long", "bigint", "string")),
              "years": (False, _TIME), "months": (False, _TIME), "days": (False, _TIME), "hours": (False, ("timestamp",))}
UNBUCKETABLE = ("double", "float", "boolean")
MAX_WIDTH = 100_000
_TRANSFORM = re.compile(r"^(?P<fn>[A-Za-z_][A-Za-z0-9_]*)\((?P<args>[^()]*)\)$")
_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


@dataclass(frozen=True)
class Transform:
    """One field of an Iceberg partition spec."""
    name: str
    column: str
    width: int | None = None

    def sql(self) -> str:
        if self.name == "identity":
            return f"`{self.column}`"
        inner = f"{self.width}, `{self.column}`" if self.width is not None else f"`{self.column}`"
        return f"{self.name}({inner})"


def parse_transform(text: str) -> Transform:
    """`col`, `bucket(8, col)`, `days(ts)` ... as a Transform; ValueError saying what is wrong."""
    text = text.strip()
    if _COLUMN.match(text):
        return Transform("identity", text)
    found = _TRANSFORM.match(text)
    if not found:
        raise ValueError(f"'{text}' is not a column or a transform like bucket(8, col)")
    name, args = found.group("fn").lower(), [a.strip() for a in found.group("args").split(",")]
    if name not in TRANSFORMS or name == "identity":
        known = ", ".join(["a column", "bucket(N, col)", "truncate(W, col)", "years(col)", "months(col)",
                           "days(col)", "hours(col)"])
        raise ValueError(f"unknown transform '{name}' (Iceberg's: {known})")
    takes_width = TRANSFORMS[name][0]
    if len(args) != (2 if takes_width else 1) or not _COLUMN.match(args[-1]):
        shape = f"{name}(N, column)" if takes_width else f"{name}(column)"
        raise ValueError(f"'{text}': write it as {shape}")
    if not takes_width:
        return Transform(name, args[0])
    if not re.fullmatch(r"-?[0-9]{1,9}", args[0]):
        raise ValueError(f"'{text}': the {'bucket count' if name == 'bucket' else 'width'} must be a whole number")
    width = int(args[0])
    if not 1 <= width <= MAX_WIDTH:
        raise ValueError(f"'{text}': the {'bucket count' if name == 'bucket' else 'width'} must be 1 – {MAX_WIDTH:,}")
    return Transform(name, args[1], width)


def transform_fits(transform: Transform, type_name: str | None) -> bool:
    """Whether Iceberg applies the transform to a column of that type (unknown: yes)."""
    if type_name is None:
        return True
    allowed = TRANSFORMS[transform.name][1]
    if transform.name == "bucket":
        return type_name not in UNBUCKETABLE
    if transform.name == "truncate" and type_name.startswith("decimal"):
        return True
    return allowed is None or type_name in allowed


def is_iceberg(table: dict) -> bool:
    return table.get("format") == ICEBERG


def uses_iceberg(data: dict) -> bool:
    """The scenario reads an Iceberg table (its cases need the Iceberg runtime)."""
    return any(is_iceberg(spec) for spec in (data.get("tables") or {}).values())


def partition_spec(table: dict) -> list[Transform]:
    return [parse_transform(text) for text in table.get("partition_by") or []]


def sort_order(table: dict) -> list[tuple[str, bool]]:
    """(column, ascending) of an Iceberg table's sort order."""
    out = []
    for text in table.get("sort_by") or []:
        column, _, direction = text.partition(" ")
        out.append((column, direction != "desc"))
    return out


def iceberg_column_problems(table: dict, columns: dict, hint) -> list[tuple[tuple, str]]:
    """(field path, message) for each partition or sort column of an Iceberg table that is
    not among `columns` (name → type; None: unknown), or whose type its transform does not
    take. `hint(column)` names the table in the message about a missing column. One rule for a file's
    tables (at collection) and a derived table's (once Spark has said its columns)."""
    problems = []
    for i, transform in enumerate(partition_spec(table)):
        if transform.column not in columns:
            problems.append((("partition_by", i), f"'{transform.column}' is not a column of "
                                                  f"{hint(transform.column)}"))
        elif not transform_fits(transform, columns[transform.column]):
            problems.append((("partition_by", i), f"Iceberg's {transform.name} transform does not apply to column "
                                                  f"'{transform.column}' of type {columns[transform.column]}"))
    for i, (column, _) in enumerate(sort_order(table)):
        if column not in columns:
            problems.append((("sort_by", i), f"'{column}' is not a column of {hint(column)}"))
    return problems


# ---- a statistics-only Iceberg table's partitions (harness.spark.formats.iceberg writes them as
# files that exist in its metadata only)

MAX_PARTITIONS = 10_000
_INTEGRAL = ("int", "integer", "long", "bigint", "smallint", "short", "tinyint", "byte")
_ISO_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


def _value_kind(transform: Transform, type_name: str | None) -> str | None:
    """What a partition value of the transform is, as Iceberg's partitions table shows it:
    int, date, string or boolean; None: not one a scenario can write."""
    if transform.name in ("bucket", "years", "months", "hours"):
        return "int"
    if transform.name == "days":
        return "date"
    base = (type_name or "long").rstrip("?")
    if base in _INTEGRAL:
        return "int"
    return base if base in ("string", "date", "boolean") else None


def partition_value_problem(transform: Transform, type_name: str | None, value) -> str | None:
    """Why `value` cannot be a partition value of the transform over a column of that type
    (None: it can). A null is a null partition."""
    if value is None:
        return None
    kind = _value_kind(transform, type_name)
    if kind is None:
        return f"partition values of a {type_name} column cannot be replayed (int, long, string, date or boolean)"
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{transform.name}({transform.column}) takes a whole number, not {value!r}"
        if transform.name == "bucket" and not 0 <= value < transform.width:
            return f"bucket {value} is not one of bucket({transform.width}, {transform.column})'s 0 – {transform.width - 1}"
        if abs(value) > 2 ** 63 - 1:
            return f"{value} is out of range"
        return None
    if kind == "date":
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            return None
        return None if isinstance(value, str) and _ISO_DATE.match(value) else \
            f"{transform.name}({transform.column}) takes a date (YYYY-MM-DD), not {value!r}"
    if kind == "boolean":
        return None if isinstance(value, bool) else f"a boolean partition value is true or false, not {value!r}"
    if not isinstance(value, str) or len(value) > 1000:
        return f"a string partition value (at most 1,000 characters), not {value!r}"[:200]
    return None


def partition_text(value) -> str | None:
    """A partition value as Iceberg's partition strings write it (null: None)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def default_partitions(table: dict) -> list[dict] | None:
    """A statistics-only Iceberg table's partitions when the file lists none: every bucket
    (and every combination of buckets) with the rows spread evenly; None when a transform
    other than bucket needs its values listed."""
    spec = partition_spec(table)
    if any(t.name != "bucket" for t in spec):
        return None
    combinations = [[]]
    for transform in spec:
        combinations = [c + [b] for c in combinations for b in range(transform.width)]
    rows = table["stats"]["rows"]
    share, extra = divmod(rows, len(combinations))
    return [{"values": values, "rows": share + (1 if i < extra else 0)} for i, values in enumerate(combinations)]


def bucket_combinations(table: dict) -> int:
    count = 1
    for transform in partition_spec(table):
        count *= transform.width or 1
    return count


DELTA = "delta"

def is_delta(table: dict) -> bool:
    return table.get("format") == DELTA


def uses_delta(data: dict) -> bool:
    """The scenario reads a Delta table (its cases need Delta Lake's package)."""
    return any(is_delta(spec) for spec in (data.get("tables") or {}).values())


def declared_format_names(data: dict) -> set[str]:
    """The table formats a loaded scenario declares (parquet where none is said)."""
    return {spec.get("format", "parquet") for spec in (data.get("tables") or {}).values()}


_DECLARATION = re.compile(rb"format\s*:\s*[\"']?([A-Za-z0-9_]+)")


def declared_formats(paths) -> tuple[str, ...]:
    """The table formats any scenario file under `paths` (files or folders) may declare:
    read before the session starts, which loads a format's JVM package only for a run that
    declares it. A mention that is no declaration costs only the package's start."""
    from pathlib import Path
    found = set()
    for path in map(Path, paths):
        files = [path] if path.is_file() else [*path.rglob("*.yaml"), *path.rglob("*.yml")] if path.is_dir() else []
        for file in files:
            try:
                found.update(word.decode().lower() for word in _DECLARATION.findall(file.read_bytes()))
            except OSError:
                continue
    return tuple(sorted(found))


def declares_format(paths, format_name: str) -> bool:
    return format_name in declared_formats(paths)


# ---- sizes as a file writes them: a whole number of bytes, or `40 GiB`

SIZE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50}
_SIZE = re.compile(r"^\s*(?P<number>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[A-Za-z]+)\s*$")
MAX_BYTES = 2 ** 63 - 1


def byte_size(value) -> int:
    """Bytes from a whole number or a text like `40 GiB` / `1.5 TiB` (binary units, as
    Spark prints sizes); ValueError saying what is wrong."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size")
    if isinstance(value, int):
        size = value
    else:
        found = _SIZE.match(str(value))
        if not found or found.group("unit") not in SIZE_UNITS:
            raise ValueError(f"{str(value)[:40]!r} is not a size: write a whole number of bytes or a number and "
                             f"one of {', '.join(SIZE_UNITS)} (e.g. '40 GiB')")
        number, unit = found.group("number"), SIZE_UNITS[found.group("unit")]
        whole, _, fraction = number.partition(".")
        size = int(whole) * unit + (int(fraction) * unit) // (10 ** len(fraction)) if fraction else int(whole) * unit
    if not 0 <= size <= MAX_BYTES:
        raise ValueError(f"{value!r} is out of range (0 to {MAX_BYTES:,} bytes)")
    return size


# ---- a statistics-only catalog (parquet) table's partitions: registered in the catalog,
# each directory holding sparse files of its size (harness.spark.stats_only)

CATALOG_PARTITION_TYPES = ("int", "long", "bigint", "smallint", "short", "tinyint", "byte", "string", "date",
                           "boolean")


DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"
# Spark's ExternalCatalogUtils.escapePathName: the characters written %XX in a partition
# folder's name (control characters are refused at collection).
_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(1, 32)}


def escape_path_name(text: str) -> str:
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in text)


def partition_folder(column: str, value) -> str:
    """One level of a partition's folder, as Spark names it (the null partition: Hive's
    default partition name)."""
    text = partition_text(value)
    return f"{escape_path_name(column)}={DEFAULT_PARTITION_NAME if text in (None, '') else escape_path_name(text)}"


def partition_directory(columns: list[str], values: list) -> str:
    """A partition's folder under its table."""
    return "/".join(partition_folder(column, value) for column, value in zip(columns, values))


def catalog_partition_value_problem(type_name: str | None, value) -> str | None:
    """Why `value` cannot be a partition value of a catalog table's column of that type
    (None: it can; a null is the null partition)."""
    if value is None:
        return None
    base = (type_name or "").rstrip("?")
    if base not in CATALOG_PARTITION_TYPES:
        return f"partitions of a {base} column cannot be replayed (int, long, string, date or boolean columns)"
    if base == "string":
        if not isinstance(value, str) or not 1 <= len(value) <= 1000:
            return f"a string partition value (1 to 1,000 characters), not {value!r}"[:200]
        if any(ord(ch) < 32 for ch in value):
            return "a partition value cannot hold control characters"
        if value == DEFAULT_PARTITION_NAME:
            return f"{DEFAULT_PARTITION_NAME} is Hive's name for the null partition: write null"
        return None
    return partition_value_problem(Transform("identity", "c"), base, value)


INT_RANGES = {"int": 31, "long": 63, "bigint": 63, "smallint": 15, "short": 15, "tinyint": 7, "byte": 7}


def literal_fits(value, type_name: str) -> bool:
    """In range for an integer type; an ISO date or timestamp Spark reads as one."""
    if type_name in INT_RANGES:
        return -(1 << INT_RANGES[type_name]) <= value < (1 << INT_RANGES[type_name])
    try:
        if type_name == "date":
            dt.date.fromisoformat(value[:10])
            return len(value) == 10
        if type_name == "timestamp":
            utc_instant(value)
    except ValueError:
        return False
    return True
