"""A scenario checked against its contract, schemas/scenario.schema.json (shipped in this
package), then against what a schema cannot say (harness.scenario.checks). A schema
error becomes the one message a person can act on: the misspelt field, the table that
mixes two kinds, the value not in an enumeration."""
from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import jsonschema

from harness.scenario.checks import check_semantics
from harness.scenario.errors import (
    ScenarioError,
    did_you_mean,
    dotted,
    excerpt,
    line_for,
)
from harness.scenario.tables import is_derived, is_literal, is_stats_only

# The contract ships inside the package; the top-level schemas/ holds the same file.
SCHEMA_DIR = Path(__file__).resolve().parent
_validator = None


def scenario_validator():
    global _validator
    if _validator is None:
        schema = json.loads((SCHEMA_DIR / "scenario.schema.json").read_text())
        _validator = jsonschema.Draft202012Validator(schema)
    return _validator


ICEBERG_FIELDS = ("format", "sort_by", "files_per_partition", "properties")
# The kinds of table: the fields that make one, and every field it may have.
TABLE_KINDS = {
    "statistics-only": (("schema", "stats"), ("schema", "stats", "bucket_by", "partition_by", "partition_values",
                                              "partitions_omitted", "stale_stats", "catalog_stats", "data_files")
                        + ICEBERG_FIELDS),
    "literal": (("schema", "values"), ("schema", "values", "materialize", "analyze", "filter", "bucket_by",
                                       "partition_by") + ICEBERG_FIELDS),
    "derived": ((), ("from", "sql", "join", "steps", "spark_conf", "partition_by") + ICEBERG_FIELDS),
    "generated": (("rows", "columns"), ("rows", "columns", "partitions", "materialize", "analyze", "filter",
                                        "bucket_by", "partition_by") + ICEBERG_FIELDS),
}


def _table_kind(table: dict) -> str | None:
    if is_stats_only(table):
        return "statistics-only"
    if is_literal(table):
        return "literal"
    if is_derived(table):
        return "derived"
    if "rows" in table or "columns" in table:
        return "generated"
    return None


def _table_shape_problem(table: dict) -> tuple[tuple, str] | None:
    """(field, message) when a table mixes the fields of two kinds or lacks one of its own."""
    kind = _table_kind(table)
    if kind is None:
        return (), ("a table is generated (rows, columns), literal (schema, values), derived (from, sql or join) "
                    "or statistics-only (schema, stats)")
    needs, may_have = TABLE_KINDS[kind]
    extra = [key for key in table if key not in may_have]
    known = {name for _, fields in TABLE_KINDS.values() for name in fields}
    if extra and extra[0] not in known:  # a typo, not a field of another kind
        close = did_you_mean(extra[0], may_have)
        return (extra[0],), f"unknown field '{extra[0]}'" + (close or f" (allowed: {', '.join(may_have)})")
    if extra:
        return (extra[0],), f"a {kind} table has no '{extra[0]}' (its fields: {', '.join(may_have)})"
    missing = [key for key in needs if key not in table]
    if missing:
        return (), f"a {kind} table needs '{missing[0]}'"
    return None


# Schema limits on a value's size: said with its count, not by quoting the value.
SIZE_LIMITS = {"maxItems": ("items", "at most"), "minItems": ("items", "at least"),
               "maxProperties": ("entries", "at most"), "minProperties": ("entries", "at least"),
               "maxLength": ("characters", "at most"), "minLength": ("characters", "at least")}


def _schema_error(path: Path, lines: dict, error: jsonschema.ValidationError) -> ScenarioError:
    where = tuple(error.absolute_path)
    if error.validator == "oneOf" and len(where) == 2 and where[0] == "tables" and isinstance(error.instance, dict):
        problem = _table_shape_problem(error.instance)
        if problem:
            field_path = where + problem[0]
            return ScenarioError(path, line_for(lines, field_path), dotted(field_path), problem[1])
    # For oneOf/anyOf, the deepest sub-error is the one a person can act on.
    while error.context:
        error = max(error.context, key=lambda e: (len(e.absolute_path), -len(e.context or [])))
    field_path = tuple(error.absolute_path)
    message = error.message
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = list(error.schema.get("properties", {}))
        extras = [k for k in error.instance if k not in allowed]
        if extras:
            field_path = field_path + (extras[0],)
            close = difflib.get_close_matches(extras[0], allowed, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (allowed: {', '.join(allowed)})"
            message = f"unknown field '{extras[0]}'{hint}"
    elif error.validator == "enum":
        close = difflib.get_close_matches(str(error.instance), [str(v) for v in error.validator_value], n=1)
        allowed = [str(v) for v in error.validator_value]
        message = f"{error.instance!r} is not allowed" + (f" (did you mean '{close[0]}'?)" if close else
                                                          f" (allowed: {', '.join(allowed)})" if len(allowed) <= 8 else "")
    elif error.validator == "required":
        message = error.message
    elif error.validator == "maxProperties" and error.validator_value == 1:
        message = f"one operation per step ({', '.join(error.instance)}): write each as its own list item"
    elif error.validator in SIZE_LIMITS and hasattr(error.instance, "__len__"):
        # the limit and the count, never the value itself (10,001 rows, 400 tables)
        what, bound = SIZE_LIMITS[error.validator]
        message = f"{len(error.instance):,} {what}; {bound} {error.validator_value:,}"
    elif len(repr(error.instance)) > 60:
        message = message.replace(repr(error.instance), excerpt(error.instance))
    if len(message) > 300:
        message = message[:297] + "..."
    return ScenarioError(path, line_for(lines, field_path), dotted(field_path), message)


def schema_error(path: Path, lines: dict, errors: list) -> ScenarioError:
    """The one schema error of many a person fixes first."""
    errors = sorted(errors, key=lambda e: (list(map(str, e.absolute_path)), e.message))
    # A misspelt field also makes the right one "missing": name the typo first.
    typos = [e for e in errors if e.validator == "additionalProperties"]
    shapes = [e for e in errors if e.validator == "oneOf" and list(e.absolute_path)[:1] == ["tables"]
              and len(e.absolute_path) == 2 and _table_shape_problem(e.instance or {})]
    best = shapes[0] if shapes else max(typos, key=lambda e: len(e.absolute_path)) if typos \
        else jsonschema.exceptions.best_match(errors)
    return _schema_error(path, lines, best)


def validate_shape(path: Path, data: Any, lines: dict) -> None:
    """The file against the schema alone (what its own text says)."""
    if not isinstance(data, dict):
        raise ScenarioError(path, 1, "", "a scenario file must be a mapping at the top level")
    errors = list(scenario_validator().iter_errors(data))
    if errors:
        raise schema_error(path, lines, errors)
    if "tables" not in data and "catalog" not in data:
        raise ScenarioError(path, None, "", "'tables' is a required property (or `catalog`, to read them from a "
                                            "shared catalog file)")


def validate(path: Path, data: Any, lines: dict) -> None:
    validate_shape(path, data, lines)
    check_semantics(path, data, lines)
