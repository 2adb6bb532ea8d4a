"""What a scenario's tables and hints are: the kind of a table (generated, literal, derived,
statistics-only), its columns and types as the file declares them, and hints as written."""
from __future__ import annotations

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

