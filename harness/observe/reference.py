"""The same query answered by an independent engine, DuckDB, in this process: fed the very
rows Spark built (through Arrow, never a second generator), the query translated from
Spark's SQL by sqlglot, the answer typed by Spark's own output schema and compared with
Spark's answer as a multiset.

A rewrite bug of Spark's optimizer happens before strategy selection, so every strategy
Spark can apply gives the same wrong rows and the cross-strategy check agrees with
itself; an engine that shares none of Spark's code does not.

What it records is an observation (Observation.reference, a dict):
  {engine, compared: true, agrees: true, rows, checksum, how}
  {engine, compared: true, agrees: false, rows, spark_rows, only_spark, only_reference, ...}
  {engine, compared: false, why}   where the engines' semantics differ, or nothing could run
A translation that fails, a reference that errors or times out, an input too large to hand
over: never the case's error, never a failed verdict — `compared: false` with why."""
from __future__ import annotations

import json
import logging
import threading
from collections import Counter

from harness.core.text import one_line
from harness.observe import spark_hash, spark_meaning

ENGINE = "DuckDB"
# Rows handed over (all inputs of a query together) and rows of an answer compared row by
# row: above either, the case says so and is not compared.
MAX_INPUT_ROWS = 1_000_000
MAX_INPUT_BYTES = 256 << 20
MAX_ANSWER_ROWS = 1_000_000
TIMEOUT_S = 60.0
SHOWN_ROWS = 5
FLOAT_TOLERANCE = 1e-9


class NotCompared(Exception):
    """Why the reference does not answer this query (a line for the record), and the
    expression that cost the comparison where one did (harness.observe.reference_gate)."""

    def __init__(self, why: str, expression: str | None = None):
        super().__init__(why)
        self.expression = expression


def gate_refusal(spark, query_sql: str, nodes: list):
    """Why a query of these analysed nodes is not compared (None: it is): an operator or
    expression not verified for this Spark version, ANSI mode and session time zone, or
    a function written in a way no verified template was."""
    from harness.observe import reference_gate as gate
    verified = gate.verified_list()
    version = spark.version
    gate.warn_missing_once(verified, spark._jvm, version)
    ansi = str(spark.conf.get("spark.sql.ansi.enabled", "false")).lower() == "true"
    zone = spark.conf.get("spark.sql.session.timeZone")
    return gate.first_refusal(nodes, verified, version, ansi, zone) or \
        gate.unverified_spelling(query_sql, verified.spellings(version, ansi, zone))


# --------------------------------------------------------------------------- the engine

class _Engine:
    """One DuckDB connection per process (a pytest-xdist worker): one thread, bounded
    memory, no file, network or extension access (a translated query reads only the Arrow
    tables registered for it; DuckDB refuses to turn access back on while it runs); the
    tables of the scenario at hand registered by name."""

    def __init__(self):
        import duckdb
        self.version = duckdb.__version__
        self.con = duckdb.connect(config={"threads": 1, "memory_limit": "2GB", "enable_external_access": False,
                                          "autoinstall_known_extensions": False,
                                          "autoload_known_extensions": False})
        self.registered: set[str] = set()

    @property
    def name(self) -> str:
        return f"{ENGINE} {self.version}"

    def use_tables(self, arrow_tables: dict) -> None:
        for name in self.registered - set(arrow_tables):
            self.con.unregister(name)
        for name, table in arrow_tables.items():
            self.con.register(name, table)
        self.registered = set(arrow_tables)

    def run(self, sql: str, timeout_s: float):
        """The query's rows as an Arrow table, cut at `timeout_s`."""
        timer = threading.Timer(timeout_s, self.con.interrupt)
        timer.start()
        try:
            relation = self.con.sql(sql)
            return _to_arrow(relation)
        except Exception as exc:
            if "INTERRUPT" in str(exc).upper():
                raise NotCompared(f"the reference took over {timeout_s:g} s") from None
            raise
        finally:
            timer.cancel()

    def columns(self, sql: str) -> list[str]:
        return list(self.con.sql(sql).columns)


def _to_arrow(relation):
    for method in ("to_arrow_table", "arrow", "fetch_arrow_table"):  # DuckDB 2.x, 1.x
        if hasattr(relation, method):
            result = getattr(relation, method)()
            return result.read_all() if hasattr(result, "read_all") else result
    raise NotCompared("this DuckDB returns no Arrow table")


_ENGINE: list = []


def engine() -> _Engine:
    if not _ENGINE:
        _ENGINE.append(_Engine())
    return _ENGINE[0]


def available() -> str | None:
    """None when the reference can run here, else why not."""
    try:
        import duckdb  # noqa: F401
        import pyarrow  # noqa: F401
        import sqlglot  # noqa: F401
    except ImportError as exc:  # missing, or there and refusing to load (a pyarrow for another numpy)
        return f"{exc.name or 'a module it needs'} cannot be imported here: {_first_line(exc)}"
    return None


# --------------------------------------------------------------------------- translation

def translate(spark_sql: str) -> str:
    """Spark SQL as DuckDB SQL (sqlglot). Hints only choose a strategy: they are left out.
    `CROSS JOIN ... ON` (an inner join to Spark) is written as the inner join it is. Anything
    else sqlglot cannot write for DuckDB is not translated at all."""
    import sqlglot
    from sqlglot import exp
    logging.getLogger("sqlglot").setLevel(logging.CRITICAL)
    try:
        trees = sqlglot.parse(spark_sql, read="spark")
    except Exception as exc:
        raise NotCompared(f"sqlglot cannot read the query: {_first_line(exc)}") from None
    if len(trees) != 1 or trees[0] is None:
        raise NotCompared("the query is not one statement")
    tree = trees[0]
    for hint in list(tree.find_all(exp.Hint)):
        hint.pop()
    for join in tree.find_all(exp.Join):
        if join.args.get("kind", "").upper() == "CROSS" and join.args.get("on") is not None:
            join.set("kind", None)
    spark_meaning.rewrite(tree)
    try:
        return tree.sql(dialect="duckdb", unsupported_level=sqlglot.ErrorLevel.RAISE)
    except Exception as exc:
        raise NotCompared(f"sqlglot cannot translate the query: {_first_line(exc)}") from None


def referenced_tables(duck_sql: str) -> set[str]:
    """The table names a translated query reads (CTE names excluded), lower case."""
    import sqlglot
    from sqlglot import exp
    tree = sqlglot.parse_one(duck_sql, read="duckdb")
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return {table.name.lower() for table in tree.find_all(exp.Table)} - ctes


def _first_line(exc: Exception) -> str:
    return one_line(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)[:300]


# --------------------------------------------------------------------------- Spark's typing

def duck_type(spark_type: str) -> str:
    """The DuckDB type a Spark column's values are compared in (Spark's simpleString)."""
    simple = {"int": "INTEGER", "bigint": "BIGINT", "smallint": "SMALLINT", "tinyint": "TINYINT",
              "double": "DOUBLE", "float": "FLOAT", "string": "VARCHAR", "date": "DATE", "boolean": "BOOLEAN",
              "timestamp": "TIMESTAMPTZ", "timestamp_ntz": "TIMESTAMP", "binary": "BLOB", "void": "INTEGER"}
    if spark_type in simple:
        return simple[spark_type]
    if spark_type.startswith("decimal("):
        return spark_type.upper()
    if spark_type.startswith(("varchar(", "char(")):
        return "VARCHAR"
    if "collate" in spark_type:
        raise NotCompared(f"a column of collated type {spark_type} (collations differ between the engines)")
    raise NotCompared(f"a column of type {spark_type} (not compared between the engines)")


def typed_sql(duck_sql: str, spark_types: list[str], limit: int) -> str:
    """The translated query with each column cast to Spark's type, by position."""
    names = [f"c{i}" for i in range(len(spark_types))]
    casts = ", ".join(f"CAST({name} AS {duck_type(kind)}) AS {name}" for name, kind in zip(names, spark_types))
    return f"SELECT {casts} FROM ({duck_sql}) AS reference_answer({', '.join(names)}) LIMIT {limit + 1}"


# --------------------------------------------------------------------------- inputs

_ARROW_INPUTS: dict = {}   # (scenario key..., table) → its rows as Arrow
_INPUT_ROWS: dict = {}     # (scenario key..., table) → its rows (MAX_INPUT_ROWS + 1: more)


def arrow_inputs(key: tuple, frames: dict, names: set[str], known_rows: dict | None = None) -> dict:
    """The rows of each table the query reads, as Arrow, moved once per scenario, data
    configs and table (kept for the scenario at hand only: memory stays bounded). Inputs
    over the bound are refused before a row of them is moved; `known_rows` (table → its
    exact rows, from the file) spares counting them."""
    for cache in (_ARROW_INPUTS, _INPUT_ROWS):
        if cache and next(iter(cache))[:-1] != key:
            cache.clear()
    by_lower = {name.lower(): name for name in frames}
    missing = sorted(names - set(by_lower))
    if missing:
        raise NotCompared(f"the query reads {', '.join(missing)}, which is not a table of the file")
    entries = {lower: key + (lower,) for lower in sorted(names)}
    known = {name.lower(): rows for name, rows in (known_rows or {}).items()}
    for lower, entry in entries.items():
        if entry not in _INPUT_ROWS:
            _INPUT_ROWS[entry] = min(known[lower], MAX_INPUT_ROWS + 1) if lower in known else \
                rows_at_most(frames[by_lower[lower]], MAX_INPUT_ROWS)
    total_rows = sum(_INPUT_ROWS[entry] for entry in entries.values())
    if total_rows > MAX_INPUT_ROWS:
        raise NotCompared(f"inputs over the bound handed to the reference (over {MAX_INPUT_ROWS:,} rows)")
    out, total_bytes = {}, 0
    for lower, entry in entries.items():
        if entry not in _ARROW_INPUTS:
            _ARROW_INPUTS[entry] = arrow_of(frames[by_lower[lower]])
        out[lower] = _ARROW_INPUTS[entry]
        total_bytes += out[lower].nbytes
        if total_bytes > MAX_INPUT_BYTES:
            raise NotCompared(f"inputs over the bound handed to the reference ({total_bytes:,} B > "
                              f"{MAX_INPUT_BYTES:,} B)")
    return out


def rows_at_most(frame, bound: int) -> int:
    """At most how many rows the frame holds, and `bound + 1` where that is over `bound`:
    the plan's own bound where it has one under `bound` (a generated range, literal rows:
    no job), else counted by Spark with a limit just past `bound` (no row moved)."""
    try:
        most = frame._jdf.queryExecution().optimizedPlan().maxRows()
        if most.isDefined() and most.get() <= bound:
            return int(most.get())
    except Exception:  # Spark Connect, or a plan without the method: count
        pass
    return int(frame.limit(bound + 1).count())


def arrow_of(frame):
    """A frame's rows as an Arrow table: Spark's own Arrow collection, or, where that fails
    (Spark 3.0's leaks 16 KB of Arrow memory and throws: measured on 3.0.3), the rows
    collected and typed by Spark's Arrow schema."""
    import pyarrow as pa
    try:
        batches = frame._collect_as_arrow()
    except Exception:
        schema = _arrow_schema(frame)
        rows = frame.collect()
        try:
            return pa.Table.from_arrays([pa.array([row[i] for row in rows], type=field.type)
                                         for i, field in enumerate(schema)], schema=schema)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise NotCompared(f"Spark's rows do not convert to Arrow: {_first_line(exc)}") from None
    return pa.Table.from_batches(batches, schema=None if batches else _arrow_schema(frame))


def _arrow_schema(frame):
    """The Arrow schema of a frame with no rows (Spark sends no batch, so no schema)."""
    try:
        from pyspark.sql.pandas.types import to_arrow_schema
        return to_arrow_schema(frame.schema)
    except Exception:
        raise NotCompared("an input with no rows whose schema Arrow cannot express") from None


# --------------------------------------------------------------------------- comparing

def _values(column) -> list:
    """A column's values in Python; a date or timestamp past what Python's calendar holds
    (year 10000, before year 1: Spark computes them) as its days or microseconds since the
    epoch, both engines' alike."""
    try:
        return column.to_pylist()
    except (OverflowError, ValueError):
        import pyarrow as pa
        width = pa.int32() if pa.types.is_date32(column.type) else pa.int64()
        return column.cast(width).to_pylist()


def _value_key(value):
    if isinstance(value, float):
        if value != value:
            return ("nan",)
        if value == 0:
            return 0.0
        return float(f"{value:.9g}")
    return value


def _row_key(row: tuple) -> tuple:
    return tuple(_value_key(v) for v in row)


def _close(a: tuple, b: tuple) -> bool:
    import math
    for x, y in zip(a, b):
        if isinstance(x, float) and isinstance(y, float):
            if (x != x and y != y) or math.isclose(x, y, rel_tol=FLOAT_TOLERANCE, abs_tol=FLOAT_TOLERANCE):
                continue
            return False
        if x != y:
            return False
    return len(a) == len(b)


def row_differences(spark_rows: list[tuple], reference_rows: list[tuple]) -> tuple[list, list]:
    """(rows only Spark returned, rows only the reference returned), as multisets; floats
    equal within a relative 1e-9, NaN equal to NaN, -0.0 to 0.0."""
    spark_count = Counter(_row_key(r) for r in spark_rows)
    reference_count = Counter(_row_key(r) for r in reference_rows)
    only_spark = list((spark_count - reference_count).elements())
    only_reference = list((reference_count - spark_count).elements())
    if only_spark and only_reference:  # float noise across a rounding boundary: pair what is close
        unmatched = []
        for row in only_spark:
            match = next((i for i, other in enumerate(only_reference) if _close(row, other)), None)
            if match is None:
                unmatched.append(row)
            else:
                only_reference.pop(match)
        only_spark = unmatched
    return only_spark, only_reference


def differing_columns(only_spark: list, only_reference: list, names: list[str]) -> list[str]:
    """The answer's columns in which the rows only one engine returned differ from their
    nearest rows of the other (the row that shares the most values): where to look."""
    if not only_spark or not only_reference:
        return []
    differ = set()
    for row in only_spark[:SHOWN_ROWS * 20]:
        nearest = max(only_reference[:SHOWN_ROWS * 20], key=lambda other: sum(_close((a,), (b,))
                                                                               for a, b in zip(row, other)))
        differ |= {i for i, (a, b) in enumerate(zip(row, nearest)) if not _close((a,), (b,))}
    return [names[i] for i in sorted(differ) if i < len(names)]


def shown(rows: list) -> list:
    """The first rows that differ, in a stable order, as JSON-safe values."""
    def text(value):
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value if value == value else "NaN"
        if isinstance(value, tuple) and value == ("nan",):
            return "NaN"
        if isinstance(value, bytes):
            return value.hex()
        return str(value)
    ordered = sorted(rows, key=lambda r: json.dumps([text(v) for v in r], default=str))
    return [[text(v) for v in row] for row in ordered[:SHOWN_ROWS]]


def arrow_rows(table) -> list[tuple]:
    columns = [_values(column) for column in table.columns]
    return list(zip(*columns)) if columns else [() for _ in range(table.num_rows)]


# --------------------------------------------------------------------------- one case

_ANSWERS: dict = {}


def _not_compared(why: str, name: str = ENGINE, expression: str | None = None) -> dict:
    found = {"engine": name, "compared": False, "why": one_line(why)}
    if expression:
        found["unverified"] = expression
    return found


def skip_reason(scenario_data: dict, expected_varies: dict | None) -> str | None:
    """Why a file's cases are not compared, from what the file says (None: compare)."""
    declared = scenario_data.get("reference") or {}
    if declared.get("skip"):
        return f"the file turns it off: {declared['skip']}"
    varies = expected_varies or {}
    if "checksum" in varies or "rows" in varies:
        return "the file declares its answer varies between runs"
    return None


def observe(spark, scope_key: tuple, query_sql: str, frames: dict, query, rows: int, checksum: str,
            analysed, known_rows: dict | None = None) -> dict:
    """Spark's answer (`rows`, `checksum` of `query`) against the reference's for the same
    query over the same input rows. `scope_key` names the scenario and its data configs:
    the inputs are moved and the reference run once per key and query."""
    cannot = available()
    if cannot:
        return _not_compared(cannot)
    duck = engine()
    if rows > MAX_ANSWER_ROWS:  # said before an input is moved or a reference run
        return _not_compared(f"an answer over {MAX_ANSWER_ROWS:,} rows (Spark's: {rows:,})", duck.name)
    try:
        reference_rows, reference_checksum, duck_sql = _reference(spark, duck, scope_key, query_sql, frames, query,
                                                             analysed, known_rows)
    except NotCompared as exc:
        return _not_compared(str(exc), duck.name, exc.expression)
    base = {"engine": duck.name, "compared": True, "rows": reference_rows.num_rows, "checksum": reference_checksum,
            "sql": duck_sql}
    if reference_checksum is not None and (rows, checksum) == (reference_rows.num_rows, reference_checksum):
        return {**base, "agrees": True, "how": "row count and checksum"}
    names = [f"c{i}" for i in range(len(query.columns))]
    spark_rows = arrow_rows(arrow_of(query.toDF(*names)))
    only_spark, only_reference = row_differences(spark_rows, arrow_rows(reference_rows))
    if not only_spark and not only_reference:
        return {**base, "agrees": True, "how": f"rows (floats within {FLOAT_TOLERANCE:g})"}
    return {**base, "agrees": False, "spark_rows": rows, "spark_checksum": checksum,
            "columns": differing_columns(only_spark, only_reference, [field.name for field in query.schema.fields]),
            "only_spark": shown(only_spark), "only_spark_count": len(only_spark),
            "only_reference": shown(only_reference), "only_reference_count": len(only_reference)}


def _reference(spark, duck: _Engine, scope_key: tuple, query_sql: str, frames: dict, query, analysed,
               known_rows: dict | None):
    """(the reference's rows typed as Spark's, their Spark checksum or None, how), once per
    scenario, data configs and query; a NotCompared is remembered as well."""
    spark_types = [field.dataType.simpleString() for field in query.schema.fields]
    key = scope_key + (query_sql, tuple(spark_types))
    if key not in _ANSWERS:
        if len(_ANSWERS) > 256:
            _ANSWERS.clear()
        try:
            _ANSWERS[key] = _run_reference(spark, duck, scope_key, query_sql, frames, spark_types, analysed,
                                           known_rows)
        except NotCompared as exc:
            _ANSWERS[key] = exc
    found = _ANSWERS[key]
    if isinstance(found, NotCompared):
        raise found
    return found


def _run_reference(spark, duck: _Engine, scope_key: tuple, query_sql: str, frames: dict, spark_types, analysed,
                   known_rows: dict | None):
    refusal = gate_refusal(spark, query_sql, analysed())
    if refusal:
        raise NotCompared(refusal.why, refusal.expression)
    duck_sql = translate(query_sql)
    try:
        names = referenced_tables(duck_sql)
    except Exception as exc:
        raise NotCompared(f"the translated query does not parse: {_first_line(exc)}") from None
    duck.use_tables(arrow_inputs(scope_key, frames, names, known_rows))
    zone = spark.conf.get("spark.sql.session.timeZone")
    try:
        duck.con.execute("SET TimeZone = ?", [zone]) if zone else None
        width = len(duck.columns(duck_sql))
        if width != len(spark_types):
            raise NotCompared(f"the reference's answer has {width} columns, Spark's {len(spark_types)} "
                              "(the translation reads the query otherwise)")
        answer = duck.run(typed_sql(duck_sql, spark_types, MAX_ANSWER_ROWS), TIMEOUT_S)
    except NotCompared:
        raise
    except Exception as exc:
        raise NotCompared(f"the reference failed: {_first_line(exc)}") from None
    if answer.num_rows > MAX_ANSWER_ROWS:
        raise NotCompared(f"an answer over {MAX_ANSWER_ROWS:,} rows (the reference's)")
    return answer, spark_hash.checksum(answer), duck_sql

