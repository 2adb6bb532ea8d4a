"""Deterministic table generation with Spark expressions.

Every value is a pure function of (scenario seed, table, column, row id): each column
gets its own 63-bit seed from a stable hash, and a cell is derived from
xxhash64(id, column_seed). Nothing depends on the partition layout (no rand()), so the
same scenario gives the same rows on every run, partition count and Spark version.

Faker is used only to build each pool of distinct values once on the driver (cached on
disk); the pool is embedded as ONE string literal that Spark splits (constant-folded
once) and indexes by a hash of the row id.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import re
from functools import lru_cache
from pathlib import Path

from harness.core.files import atomic_write_text
from harness.core.instants import EPOCH, utc_instant
from harness.core.text import string_literal
from harness.scenario.checks.tables import HEAVY_PROVIDERS
from harness.scenario.model import stable_seed
from harness.scenario.tables import (
    iceberg_column_problems,
    is_literal,
    is_stats_only,
    literal_schema,
)
from harness.spark.formats import FormatUnavailable, format_of
from harness.spark.stats_only import empty_frame, spark_type

TWO_53 = 9007199254740992
POOL_SEPARATOR = "\u0001"
LOCAL_ROWS_LIMIT = 100_000


class DataGenError(ValueError):
    """A column spec that cannot be generated (reported against the scenario)."""


def cache_dir() -> Path:
    root = os.environ.get("HARNESS_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "spark-join-harness")
    return Path(root)


# --------------------------------------------------------------------------- SQL pieces

def _hash(column_seed: int, salt: int = 0) -> str:
    return f"xxhash64(id, {stable_seed(column_seed, salt)})"


def _unit(column_seed: int, salt: int) -> str:
    """A double in [0, 1) per row."""
    return f"(pmod({_hash(column_seed, salt)}, {TWO_53}) / {TWO_53}.0)"


def _below(column_seed: int, salt: int, n: int) -> str:
    """A long in [0, n) per row."""
    return f"pmod({_hash(column_seed, salt)}, {int(n)})"


# How a non-negative long becomes a value of each type, injectively.
_FROM_LONG = {
    "long": "{}", "bigint": "{}",
    "int": "CAST({} AS INT)",
    "double": "CAST({} AS DOUBLE)",
    "string": "concat('k', CAST({} AS STRING))",
    "boolean": "(pmod({}, 2) = 1)",
    "date": "date_add(DATE'2000-01-01', CAST({} AS INT))",
    "timestamp": "{}",  # see seconds_to_timestamp
}


def _timestamp_seconds_exists() -> bool:
    try:
        import pyspark
        return tuple(int(p) for p in pyspark.__version__.split(".")[:2]) >= (3, 1)
    except Exception:
        return True


TIMESTAMP_SECONDS = _timestamp_seconds_exists()


def seconds_to_timestamp(expr: str) -> str:
    """The instant `expr` seconds after the epoch. timestamp_seconds() arrived in 3.1; on
    3.0 a cast gives the same instant (4.x's ANSI mode rejects that cast, so it is only
    the fallback)."""
    return f"timestamp_seconds({expr})" if TIMESTAMP_SECONDS else f"CAST({expr} AS TIMESTAMP)"


def _typed_from_long(expr: str, type_name: str) -> str:
    t = type_name.replace(" ", "")
    if t == "timestamp":
        return seconds_to_timestamp(f"946684800 + {expr}")
    if t.startswith("decimal"):
        return f"CAST({expr} AS {t.upper()})"
    if t not in _FROM_LONG:
        raise DataGenError(f"unsupported type '{type_name}'")
    return _FROM_LONG[t].format(expr)


def _zipf_rank(column_seed: int, n: int, s: float) -> str:
    """Rank in [0, n) drawn from a bounded power law (continuous Zipf approximation):
    inverse CDF of p(x) ~ x^-s on [1, n+1)."""
    u = _unit(column_seed, 3)
    if abs(s - 1.0) < 1e-9:
        rank = f"floor(pow({n + 1}.0, {u}))"
    else:
        a = 1.0 - s
        rank = f"floor(pow(({(n + 1) ** a - 1.0!r}) * {u} + 1.0, {1.0 / a!r}))"
    return f"least(greatest(CAST({rank} AS BIGINT) - 1, 0), {n - 1})"


def _binned(column_seed: int, bins: list) -> tuple[str, str]:
    """The low end and width of the bin each row falls in: rows spread equally over the
    bins (as over an equi-height histogram's). `bins` are (low, width) pairs of numbers."""
    if len(bins) == 1:
        return repr(bins[0][0]), repr(bins[0][1])
    index = f"CAST({_below(column_seed, 6, len(bins))} + 1 AS INT)"
    lows = ", ".join(repr(low) for low, _ in bins)
    widths = ", ".join(repr(width) for _, width in bins)
    return f"element_at(array({lows}), {index})", f"element_at(array({widths}), {index})"


def _key_expr(spec: dict, column_seed: int) -> str:
    n = spec["cardinality"]
    if "bins" in spec:  # ranks spread equally over the bins, uniform within each
        low, width = _binned(column_seed, [(int(lo), int(hi) - int(lo) + 1) for lo, hi in spec["bins"]])
        rank = f"({low} + pmod({_hash(column_seed, 1)}, {width}))"
    elif "zipf" in spec:
        rank = _zipf_rank(column_seed, n, float(spec["zipf"]))
    elif "hot_fraction" in spec:
        hot = min(spec.get("hot_keys", 1), n)
        rank = (f"CASE WHEN {_unit(column_seed, 2)} < {float(spec['hot_fraction'])!r} "
                f"THEN {_below(column_seed, 4, hot)} ELSE {_below(column_seed, 1, n)} END")
    else:
        rank = _below(column_seed, 1, n)
    if spec.get("step", 1) != 1:
        rank = f"{rank} * {int(spec['step'])}"
    return f"({int(spec['start'])} + {rank})" if spec.get("start") else rank


def _parse_instant(text: str, type_name: str) -> int:
    """Days (date) or seconds (timestamp) since the epoch, UTC."""
    if type_name == "date":
        return (dt.date.fromisoformat(text[:10]) - dt.date(1970, 1, 1)).days
    return int((utc_instant(text) - EPOCH).total_seconds())


def _uniform_expr(spec: dict, type_name: str, column_seed: int) -> str:
    """Uniform over [min, max]; with `bins`, rows spread equally over the bins and uniform
    within each (the shape of an equi-height histogram)."""
    t = type_name.replace(" ", "")
    ranges = [tuple(pair) for pair in spec["bins"]] if spec.get("bins") else [(spec["min"], spec["max"])]
    if t in ("date", "timestamp"):
        try:
            instants = [(_parse_instant(str(lo), t), _parse_instant(str(hi), t)) for lo, hi in ranges]
        except ValueError as exc:
            raise DataGenError(f"uniform bounds are not ISO {t}s: {exc}") from None
        if any(lo > hi for lo, hi in instants):
            raise DataGenError("min is greater than max")
        low, width = _binned(column_seed, [(lo, hi - lo + 1) for lo, hi in instants])
        offset = _offset(column_seed, width, len(ranges))
        if t == "date":
            return f"date_add(DATE'1970-01-01', CAST({low} + {offset} AS INT))"
        return seconds_to_timestamp(f"{low} + {offset}")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for pair in ranges for v in pair):
        raise DataGenError(f"uniform bounds of a {t} column must be numbers")
    if t == "double":
        low, width = _binned(column_seed, [(float(lo), float(hi) - float(lo)) for lo, hi in ranges])
        return f"({low} + {_unit(column_seed, 1)} * {width})"
    if t.startswith("decimal"):
        scale = int(re.search(r",(\d+)\)", t).group(1))
        low, width = _binned(column_seed, [(round(lo * 10 ** scale), round(hi * 10 ** scale) - round(lo * 10 ** scale) + 1)
                                           for lo, hi in ranges])
        units = f"({low} + {_offset(column_seed, width, len(ranges))})"
        return f"CAST(CAST({units} AS DECIMAL(38,0)) / {10 ** scale} AS {t.upper()})"
    if t in ("int", "long", "bigint"):
        if any(v != int(v) for pair in ranges for v in pair):
            raise DataGenError(f"uniform bounds of a {t} column must be integers")
        low, width = _binned(column_seed, [(int(lo), int(hi) - int(lo) + 1) for lo, hi in ranges])
        value = f"({low} + {_offset(column_seed, width, len(ranges))})"
        return f"CAST({value} AS INT)" if t == "int" else value
    if t == "boolean":
        return f"({_unit(column_seed, 1)} < 0.5)"
    raise DataGenError(f"uniform does not make {t} values")


def _offset(column_seed: int, width: str, bins: int) -> str:
    """A long in [0, width): one bin's width is a number, several bins' a row's expression."""
    return _below(column_seed, 1, int(width)) if bins == 1 else f"pmod({_hash(column_seed, 1)}, {width})"


# --------------------------------------------------------------------------- Faker pools

FAKER_PIN = "40.54.0"  # keep equal to pyproject.toml: pools differ between Faker releases


def faker_version() -> str:
    """The installed Faker; without one (Python < 3.10 cannot install the pin, e.g. in a
    PySpark 3.2 environment) the pinned version, whose pools must then be in the cache."""
    try:
        import faker
    except ImportError:
        return FAKER_PIN
    return faker.VERSION


@lru_cache(maxsize=256)
def faker_pool(provider: str, locale: str, size: int, seed: int) -> tuple:
    """`size` values of a Faker provider, built once and cached on disk by
    (Faker version, locale, provider, size, seed)."""
    if provider in HEAVY_PROVIDERS or provider.startswith("_"):
        raise DataGenError(f"Faker provider '{provider}' is not allowed (it builds large payloads)")
    path = cache_dir() / "faker" / faker_version() / locale / f"{provider}-{size}-{seed}.json"
    if path.exists():
        try:
            return tuple(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            pass
    try:
        from faker import Faker
    except ImportError:
        raise DataGenError(f"Faker pool {provider}/{locale}/{size} is not cached and Faker is not installed here; "
                           f"run the scenario once where Faker {FAKER_PIN} is installed to fill {cache_dir()}") from None
    try:
        fake = Faker(locale)
    except AttributeError:
        raise DataGenError(f"unknown Faker locale '{locale}'") from None
    fake.seed_instance(seed)
    method = getattr(fake, provider, None)
    if method is None or not callable(method):
        raise DataGenError(f"unknown Faker provider '{provider}'")
    values = []
    for _ in range(size):
        try:
            value = method()
        except TypeError:
            raise DataGenError(f"Faker provider '{provider}' needs arguments; pick one that does not") from None
        text = value.isoformat() if hasattr(value, "isoformat") else str(value)
        if len(text) > 1000 or POOL_SEPARATOR in text:
            raise DataGenError(f"Faker provider '{provider}' gives values unsuitable for a column")
        values.append(text)
    atomic_write_text(path, json.dumps(values, ensure_ascii=False))
    return tuple(values)


# --------------------------------------------------------------------------- columns

def _literal_type(values: list) -> str:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "boolean"
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "long"
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "double"
    return "string"


def faker_pool_args(seed: int, table: str, name: str, spec: dict) -> tuple | None:
    """(provider, locale, size, seed) of a Faker column's pool, None for other columns."""
    if "faker" not in spec:
        return None
    fk = spec["faker"]
    return fk["provider"], fk.get("locale", "en_US"), fk.get("pool", 1000), stable_seed(seed, table, name) & 0x7FFFFFFF


def warm_faker_pools(scenarios) -> int:
    """Build every Faker pool these scenarios use into the disk cache (no Spark needed),
    so environments without Faker (Python < 3.10) can read them."""
    built = 0
    for scenario in scenarios:
        for table, spec in scenario.data["tables"].items():
            for name, column in spec.get("columns", {}).items():
                args = faker_pool_args(scenario.seed, table, name, column)
                if args:
                    faker_pool(*args)
                    built += 1
    return built


def column_expression(F, seed: int, table: str, name: str, spec: dict, stand_in: bool = False):
    """The Spark Column for one generated column (F is pyspark.sql.functions)."""
    column_seed = stable_seed(seed, table, name)
    type_name = spec.get("type")
    if "sequence" in spec:
        seq = spec["sequence"]
        col = F.expr(_typed_from_long(f"({seq.get('start', 0)} + id * {seq.get('step', 1)})", type_name or "long"))
        type_name = None
    elif "uniform" in spec:
        lo, hi = spec["uniform"]["min"], spec["uniform"]["max"]
        default = "double" if isinstance(lo, float) or isinstance(hi, float) else "long"
        col = F.expr(_uniform_expr(spec["uniform"], type_name or default, column_seed))
        type_name = None
    elif "key" in spec:
        col = F.expr(_typed_from_long(_key_expr(spec["key"], column_seed), type_name or "long"))
        type_name = None
    elif "faker" in spec and stand_in:  # the type without building the pool
        col = F.lit(None).cast("string")
    elif "faker" in spec:
        pool = faker_pool(*faker_pool_args(seed, table, name, spec))
        col = F.element_at(F.split(F.lit(POOL_SEPARATOR.join(pool)), POOL_SEPARATOR),
                           F.expr(f"CAST({_below(column_seed, 1, len(pool))} + 1 AS INT)"))
    elif "values" in spec:
        values = spec["values"]
        weights = spec.get("weights") or [1] * len(values)
        total = float(sum(weights))
        literal_type = _literal_type(values)
        u = F.expr(_unit(column_seed, 1))
        col, cumulative = None, 0.0
        for value, weight in zip(values[:-1], weights[:-1]):
            cumulative += weight / total
            lit = F.lit(value).cast(literal_type)
            col = F.when(u < F.lit(cumulative), lit) if col is None else col.when(u < F.lit(cumulative), lit)
        last = F.lit(values[-1]).cast(literal_type)
        col = last if col is None else col.otherwise(last)
    elif "expr" in spec:
        col = F.expr(spec["expr"])
    else:  # the schema's oneOf makes this unreachable for validated input
        raise DataGenError(f"column '{name}' has no generator")
    if spec.get("nulls"):
        col = F.when(F.expr(_unit(column_seed, 5)) < F.lit(float(spec["nulls"])), F.lit(None)).otherwise(col)
    if type_name:
        col = col.cast(type_name.replace("long", "bigint"))
    return col.alias(name)


def sql_literal(value, type_name: str) -> str:
    """One value of a literal table as Spark SQL, built here (never scenario text)."""
    sql_type = spark_type(type_name)
    if value is None:
        return f"CAST(NULL AS {sql_type})"
    if type_name == "boolean":
        return "TRUE" if value else "FALSE"
    if type_name == "string":
        return string_literal(value)
    if type_name in ("date", "timestamp"):
        instant = _parse_instant(str(value), type_name)  # ISO text, UTC: the same instant everywhere
        if type_name == "date":
            return f"date_add(DATE'1970-01-01', {instant})"
        return seconds_to_timestamp(str(instant))
    return f"CAST({value!r} AS {sql_type})"


def literal_table(spark, spec: dict):
    """Literal rows as Spark plans a small literal relation (a LocalRelation: estimate =
    rows x row width, as VALUES or Seq(...).toDF give)."""
    schema = literal_schema(spec)
    names = ", ".join(f"`{name}`" for name in schema)
    if not spec["values"]:
        nulls = ", ".join(sql_literal(None, t) for t, _ in schema.values())
        return spark.sql(f"SELECT * FROM VALUES ({nulls}) AS t({names}) WHERE false")
    rows = ", ".join("(" + ", ".join(sql_literal(v, t) for v, (t, _) in zip(row, schema.values())) + ")"
                     for row in spec["values"])
    return spark.sql(f"SELECT * FROM VALUES {rows} AS t({names})")


def default_partitions(rows: int) -> int:
    return max(2, min(200, math.ceil(rows / 2_000_000)))


def table_fingerprint(seed: int, name: str, spec: dict, data_conf: dict | None = None) -> str:
    """Names a generated table: its spec, and the configs that shape its values (a table
    made under one time zone or ANSI setting is never reused under another)."""
    payload = json.dumps({"seed": seed, "name": name, "spec": spec, "faker": faker_version(),
                          **({"conf": data_conf} if data_conf else {})}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


_TABLES: dict = {}
_TABLES_LIMIT = 512


def forget_tables() -> None:
    _TABLES.clear()


def build_table(spark, seed: int, name: str, spec: dict, workdir: Path, data_conf: dict | None = None):
    """The table as a DataFrame, materialised as the spec says (lazy by default), built
    while the case's configs are set. DataFrames are immutable plans, so all but `cached`
    ones are reused across cases with the same data-shaping configs (`data_conf`; a cache
    is dropped after each case, which would change a reused frame's estimate)."""
    if spec.get("materialize") == "cached":
        return _build_table(spark, seed, name, spec, workdir, data_conf)
    key = (id(spark), table_fingerprint(seed, name, spec, data_conf))
    if key not in _TABLES:
        if len(_TABLES) >= _TABLES_LIMIT:
            forget_tables()
        _TABLES[key] = _build_table(spark, seed, name, spec, workdir, data_conf)
    return _TABLES[key]


def catalog_table_name(seed: int, name: str, spec: dict, data_conf: dict | None = None) -> str:
    """A table in the worker's own warehouse; the fingerprint keeps scenarios apart."""
    return f"{name}_{table_fingerprint(seed, name, spec, data_conf)}".lower()


def _catalog_table(spark, table: str, df, analyze: str | None, spec: dict):
    """The table written once into the worker's catalog in its format (harness.spark.formats):
    the rows of `df` with the spec's layout, or, `df` None, a statistics-only table."""
    fmt = format_of(spec)
    if not fmt.exists(spark, table):
        try:
            if df is None:
                fmt.write_stats_only(spark, table, spec)
            else:
                fmt.write(spark, table, df, spec)
        except Exception:
            # Through Spark Connect the warehouse is the server's, shared by every worker's
            # session: another worker may have created the same table meanwhile (the same
            # fingerprint: the same rows).
            if not fmt.exists(spark, table):
                raise
            return spark.table(table)
        if analyze and fmt.ANALYZABLE:
            spark.sql(f"ANALYZE TABLE {table} COMPUTE STATISTICS" + (" FOR ALL COLUMNS" if analyze == "columns" else ""))
    return spark.table(table)


def catalog_identifier(spark, name: str, spec: dict) -> str:
    """The catalog identifier of a table of the spec's format (DataGenError when the
    session cannot hold that format)."""
    try:
        return format_of(spec).identifier(spark, name)
    except FormatUnavailable as exc:
        raise DataGenError(str(exc)) from None


def derived_lineage(specs: dict, name: str) -> dict:
    """What names a derived Iceberg table: its spec and those of every table declared
    before it (a derived table reads only tables declared above it), known without Spark."""
    names = list(specs)
    return {earlier: specs[earlier] for earlier in names[:names.index(name) + 1]}


def derived_catalog_name(seed: int, name: str, specs: dict, data_conf: dict | None) -> str:
    return catalog_table_name(seed, name, derived_lineage(specs, name), data_conf)


def derived_catalog_table(spark, seed: int, name: str, specs: dict, data_conf: dict, build):
    """A derived table's rows written once per worker into a table of its format (an
    Iceberg or a Delta table: harness.scenario.tables.written_derived): `build()`
    makes its frame, only when the table is not there yet. Named by `derived_lineage` of
    the file's `specs` and the configs that shape values."""
    key = (id(spark), derived_catalog_name(seed, name, specs, data_conf))
    if key in _TABLES:  # every run of a case asks again: the catalog is asked once per worker
        return _TABLES[key]
    spec = specs[name]
    table = catalog_identifier(spark, derived_catalog_name(seed, name, specs, data_conf), spec)
    if not format_of(spec).exists(spark, table):
        frame = build()
        _check_iceberg_columns(name, spec, {f.name: f.dataType.simpleString() for f in frame.schema.fields})
        _catalog_table(spark, table, frame, None, spec)
    if len(_TABLES) >= _TABLES_LIMIT:
        forget_tables()
    _TABLES[key] = spark.table(table)
    return _TABLES[key]


def _check_iceberg_columns(name: str, spec: dict, columns: dict) -> None:
    """A derived table's partition and sort columns, once Spark has said what its columns
    are (a generated table's were checked at collection: harness.scenario.checks)."""
    problems = iceberg_column_problems(spec, columns, lambda _: f"derived table '{name}' (its columns: "
                                                                f"{', '.join(columns)})")
    if problems:
        (field, index), message = problems[0]
        raise DataGenError(f"tables.{name}.{field}[{index}]: {message}")


def _build_table(spark, seed: int, name: str, spec: dict, workdir: Path | None, data_conf: dict | None = None):
    from pyspark.sql import functions as F

    if is_stats_only(spec):
        if workdir is None:  # a stand-in: the schema over no rows, no catalog table
            return empty_frame(spark, spec)
        table = catalog_identifier(spark, catalog_table_name(seed, name, spec, data_conf), spec)
        return _catalog_table(spark, table, None, None, spec)
    if is_literal(spec):
        df = literal_table(spark, spec)
        rows = len(spec["values"])
    else:
        rows = spec["rows"]
        partitions = spec.get("partitions", default_partitions(rows))
        stand_in = workdir is None
        columns = [column_expression(F, seed, name, col, col_spec, stand_in)
                   for col, col_spec in spec["columns"].items()]
        df = spark.range(0, rows, 1, partitions).select(*columns)
    if "filter" in spec:
        df = df.where(F.expr(spec["filter"]))
    mode = spec.get("materialize", "lazy")
    if mode == "cached":
        df = df.cache()
        df.count()
    elif mode == "parquet":
        target = workdir / "tables" / table_fingerprint(seed, name, spec, data_conf)
        if not target.exists():
            staging = target.with_name(target.name + f".tmp{os.getpid()}")
            df.write.mode("overwrite").parquet(str(staging))
            os.replace(staging, target)
        df = spark.read.parquet(str(target))
    elif mode == "catalog":
        table = catalog_identifier(spark, catalog_table_name(seed, name, spec, data_conf), spec)
        df = _catalog_table(spark, table, df, spec.get("analyze"), spec)
    elif mode == "local":
        if rows > LOCAL_ROWS_LIMIT:
            raise DataGenError(f"materialize: local holds the rows on the driver; at most {LOCAL_ROWS_LIMIT} rows")
        df = spark.createDataFrame(df.collect(), df.schema)
    return df


def stand_in_table(spark, seed: int, name: str, spec: dict):
    """The table's plan over zero rows: the same columns, types and expressions as the
    real one (Faker columns as typed NULLs: no pool is built), for checking scenario SQL
    against before anything runs."""
    return _build_table(spark, seed, name, {**spec, "rows": 0, "partitions": 1, "materialize": "lazy"}, None)
