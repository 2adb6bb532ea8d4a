"""Load, validate and expand scenario files.

A scenario file is untrusted input: it is parsed with a safe loader that also refuses
anchors/aliases (no alias bombs) and duplicate keys, capped in size, validated against
schemas/scenario.schema.json, then checked for what a schema cannot say (tables and
columns that exist, hint names Spark knows). Every problem becomes a ScenarioError that
names the file, the line and the field, in one line.
"""
from __future__ import annotations

import copy
import datetime
import difflib
import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from . import confs
from .synthetic import twin_data
from .util import display_path, one_line, printable
from .vocab import JOIN_TYPES, STRATEGY_HINTS

# Shipped inside the package; the top-level schemas/ links to these files (the contract).
SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
MAX_FILE_BYTES = 1 << 20
MAX_CASES_PER_SCENARIO = 512
DEFAULT_SEED = 42
DEFAULT_TIMEOUT_S = 120.0

# Short labels for config keys in readable case ids, e.g. `aqe=off`.
CONF_LABELS = {
    "spark.sql.adaptive.enabled": "aqe",
    "spark.sql.autoBroadcastJoinThreshold": "abjt",
    "spark.sql.join.preferSortMergeJoin": "psmj",
    "spark.sql.shuffle.partitions": "parts",
    "spark.sql.adaptive.autoBroadcastJoinThreshold": "aqe_abjt",
    "spark.sql.cbo.enabled": "cbo",
    "spark.sql.cbo.joinReorder.enabled": "reorder",
    "spark.sql.optimizeNullAwareAntiJoin": "naaj",
    "spark.sql.execution.reuseSubquery": "reuse",
    "spark.sql.adaptive.skewJoin.enabled": "skew",
}

MAX_NESTING = 40  # levels of YAML nesting; the format needs fewer than ten


class ScenarioError(Exception):
    """One-line, user-facing problem with a scenario file."""

    def __init__(self, path: str | Path, line: int | None, field_path: str, message: str):
        self.path, self.line, self.field_path, self.message = str(path), line, field_path, one_line(message)
        shown = display_path(path)  # relative to the project root when below it
        where = f"{shown}:{line}" if line else shown
        super().__init__(one_line(f"{where}: {field_path or '(file)'}: {self.message}"))


# --------------------------------------------------------------------------- YAML

class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors/aliases (exponential blow-up), duplicate keys and
    nesting deeper than MAX_NESTING (the composer recurses per level)."""

    _depth = 0

    def compose_node(self, parent, index):
        if self._depth >= MAX_NESTING:
            raise yaml.MarkedYAMLError("while composing", None,
                                       f"nesting deeper than {MAX_NESTING} levels", self.peek_event().start_mark)
        self._depth += 1
        try:
            return self._compose_checked(parent, index)
        finally:
            self._depth -= 1

    def _compose_checked(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.MarkedYAMLError("while composing", None,
                                       "YAML aliases are not allowed in scenario files", event.start_mark)
        event = self.peek_event()
        if getattr(event, "anchor", None):
            raise yaml.MarkedYAMLError("while composing", None,
                                       "YAML anchors are not allowed in scenario files", event.start_mark)
        return super().compose_node(parent, index)


def _node_to_data(node, path: tuple, lines: dict, source: str):
    """Convert a composed node to plain data, recording each path's 1-based line."""
    lines.setdefault(path, node.start_mark.line + 1)  # a key's own line, where it has one
    if isinstance(node, yaml.MappingNode):
        out = {}
        for key_node, value_node in node.value:
            key = _StrictLoader.construct_object(_loader_for_scalars, key_node)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                raise ScenarioError(source, key_node.start_mark.line + 1, _dotted(path), "mapping keys must be scalars")
            key = str(key) if not isinstance(key, str) else key
            if key in out:
                raise ScenarioError(source, key_node.start_mark.line + 1, _dotted(path + (key,)), "duplicate key")
            lines[path + (key,)] = key_node.start_mark.line + 1
            out[key] = _node_to_data(value_node, path + (key,), lines, source)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_node_to_data(item, path + (i,), lines, source) for i, item in enumerate(node.value)]
    try:
        value = _StrictLoader.construct_object(_loader_for_scalars, node)
    except (ValueError, OverflowError, TypeError, yaml.YAMLError) as exc:
        # e.g. an impossible date 2024-02-30, `!!float abc`, an integer of 5,000 digits
        raise ScenarioError(source, node.start_mark.line + 1, _dotted(path),
                            f"cannot read the value {_excerpt(node.value)}: {_first_line(exc)}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ScenarioError(source, node.start_mark.line + 1, _dotted(path), f"{node.value} is not a finite number")
    # YAML turns 2024-01-01 into a date; scenarios want the text they wrote.
    return value.isoformat() if isinstance(value, (datetime.date, datetime.datetime)) else value


def _excerpt(text, limit: int = 40) -> str:
    text = printable(str(text))
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _first_line(exc: BaseException) -> str:
    return printable((str(exc).strip().splitlines() or [type(exc).__name__])[0])[:200]


# YAML 1.2 booleans only: in YAML 1.1 `on`, `off`, `yes`, `no` are booleans, which would
# turn the `on:` join key list into `True:`.
_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_StrictLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                    list("tTfF"))

_loader_for_scalars = _StrictLoader("")


def _dotted(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _line_for(lines: dict, path: tuple) -> int | None:
    path = tuple(path)
    while path not in lines and path:
        path = path[:-1]
    return lines.get(path)


def _read_text(path: Path) -> str:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ScenarioError(path, None, "", f"file is {size} bytes; the limit is {MAX_FILE_BYTES}")
    raw = path.read_bytes()
    if b"\0" in raw:
        line = raw[:raw.index(b"\0")].count(b"\n") + 1
        raise ScenarioError(path, line, "", "not a text file (NUL byte)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ScenarioError(path, line, "", f"not UTF-8 text (byte 0x{raw[exc.start]:02x})") from None


def load_yaml(path: Path) -> tuple[Any, dict]:
    text = _read_text(path)
    try:
        loader = _StrictLoader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = printable((exc.problem or exc.context or "invalid YAML").strip())
        raise ScenarioError(path, mark.line + 1 if mark else None, "", f"YAML syntax: {problem}") from None
    except yaml.reader.ReaderError as exc:
        line = text[:exc.position].count("\n") + 1
        raise ScenarioError(path, line, "", f"YAML: character {exc.character!r} is not allowed") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(path, None, "", f"YAML syntax: {_first_line(exc)}") from None
    if node is None:
        raise ScenarioError(path, 1, "", "file is empty")
    lines: dict = {}
    return _node_to_data(node, (), lines, str(path)), lines


# --------------------------------------------------------------------------- schema

_validator = None


def scenario_validator():
    global _validator
    if _validator is None:
        schema = json.loads((SCHEMA_DIR / "scenario.schema.json").read_text())
        _validator = jsonschema.Draft202012Validator(schema)
    return _validator


# The kinds of table: the fields that make one, and every field it may have.
TABLE_KINDS = {
    "statistics-only": (("schema", "stats"), ("schema", "stats")),
    "literal": (("schema", "values"), ("schema", "values", "materialize", "analyze", "filter")),
    "derived": ((), ("from", "sql", "join", "steps", "spark_conf")),
    "generated": (("rows", "columns"), ("rows", "columns", "partitions", "materialize", "analyze", "filter")),
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
        close = _did_you_mean(extra[0], may_have)
        return (extra[0],), f"unknown field '{extra[0]}'" + (close or f" (allowed: {', '.join(may_have)})")
    if extra:
        return (extra[0],), f"a {kind} table has no '{extra[0]}' (its fields: {', '.join(may_have)})"
    missing = [key for key in needs if key not in table]
    if missing:
        return (), f"a {kind} table needs '{missing[0]}'"
    return None


def _schema_error(path: Path, lines: dict, error: jsonschema.ValidationError) -> ScenarioError:
    where = tuple(error.absolute_path)
    if error.validator == "oneOf" and len(where) == 2 and where[0] == "tables" and isinstance(error.instance, dict):
        problem = _table_shape_problem(error.instance)
        if problem:
            field_path = where + problem[0]
            return ScenarioError(path, _line_for(lines, field_path), _dotted(field_path), problem[1])
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
    if len(message) > 300:
        message = message[:297] + "..."
    return ScenarioError(path, _line_for(lines, field_path), _dotted(field_path), message)


def validate(path: Path, data: Any, lines: dict) -> None:
    if not isinstance(data, dict):
        raise ScenarioError(path, 1, "", "a scenario file must be a mapping at the top level")
    errors = sorted(scenario_validator().iter_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if errors:
        # A misspelt field also makes the right one "missing": name the typo first.
        typos = [e for e in errors if e.validator == "additionalProperties"]
        shapes = [e for e in errors if e.validator == "oneOf" and list(e.absolute_path)[:1] == ["tables"]
                  and len(e.absolute_path) == 2 and _table_shape_problem(e.instance or {})]
        best = shapes[0] if shapes else max(typos, key=lambda e: len(e.absolute_path)) if typos \
            else jsonschema.exceptions.best_match(errors)
        raise _schema_error(path, lines, best)
    _check_semantics(path, data, lines)


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
    inputs are read from Spark's parse of the query (harness.derived)."""
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


def _check_hints(path, lines, field_path: tuple, value) -> None:
    for i, hint in enumerate(as_hint_list(value)):
        name = hint_name(hint)
        if (isinstance(hint, dict) and hint.get("unknown")) or name.upper() in STRATEGY_HINTS:
            continue
        close = difflib.get_close_matches(name.upper(), list(STRATEGY_HINTS), n=1)
        suggestion = f" (did you mean '{close[0]}'?)" if close else ""
        where = field_path + ((i,) if isinstance(value, list) else ())
        raise ScenarioError(path, _line_for(lines, where), _dotted(where),
                            f"unknown hint '{name}'{suggestion}; write {{name: {name}, unknown: true}} "
                            "to test Spark's handling of an unknown hint")


_COLUMN_REF = re.compile(r"\b([lr])\.([A-Za-z_][A-Za-z0-9_]*)")


def _check_stream(path: Path, data: dict, lines: dict) -> None:
    join, tables = data["join"], data["tables"]
    if "sql" in join:
        raise ScenarioError(path, _line_for(lines, ("stream",)), "stream",
                            "a streaming scenario joins join.left and join.right, not join.sql")
    for side in ("left", "right"):
        if is_derived(tables[join[side]]) or is_stats_only(tables[join[side]]):
            raise ScenarioError(path, _line_for(lines, ("join", side)), f"join.{side}",
                                "a stream is fed from a generated or literal table")
    for name, mark in data["stream"]["watermarks"].items():
        where = ("stream", "watermarks", name)
        if name not in (join["left"], join["right"]):
            raise ScenarioError(path, _line_for(lines, where), _dotted(where),
                                f"'{name}' is not a side of the join ({join['left']}, {join['right']})")
        if column_type(tables[name], mark["column"]) != "timestamp":
            raise ScenarioError(path, _line_for(lines, where + ("column",)), _dotted(where + ("column",)),
                                f"'{mark['column']}' must be a column of '{name}' with type: timestamp")


# Faker providers that build large binary/structured payloads rather than a value.
HEAVY_PROVIDERS = {"binary", "image", "zip", "tar", "json", "json_bytes", "xml", "csv", "dsv", "psv", "tsv",
                   "fixed_width", "pystruct", "pydict", "pylist", "pyset", "pytuple", "pyiterable",
                   "profile", "simple_profile", "texts", "paragraphs", "sentences", "words"}


class _Where:
    """Raises a ScenarioError at a field of the file being checked."""

    def __init__(self, path: Path, lines: dict):
        self.path, self.lines = path, lines

    def error(self, where: tuple, message: str) -> ScenarioError:
        return ScenarioError(self.path, _line_for(self.lines, where), _dotted(where), message)


def _did_you_mean(name: str, choices) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _check_join_tables(at: _Where, data: dict) -> None:
    for side in ("left", "right"):
        name = data["join"].get(side)
        if name is not None and name not in data["tables"]:
            raise at.error(("join", side), f"unknown table '{name}'" + _did_you_mean(name, data["tables"]))


def _check_weights(at: _Where, where: tuple, column: dict) -> None:
    if "weights" not in column:
        return
    if "values" not in column or len(column["weights"]) != len(column["values"]):
        raise at.error(where + ("weights",), "weights needs values of the same length")
    if sum(column["weights"]) <= 0:
        raise at.error(where + ("weights",), "weights must not all be zero")


def _check_key(at: _Where, where: tuple, column: dict) -> None:
    key = column.get("key", {})
    if "hot_keys" in key and "hot_fraction" not in key:
        raise at.error(where + ("key",), "hot_keys needs hot_fraction")
    if "zipf" in key and "hot_fraction" in key:
        raise at.error(where + ("key",), "use either zipf or hot_fraction, not both")


def _check_uniform(at: _Where, where: tuple, column: dict) -> None:
    uniform = column.get("uniform")
    if not uniform:
        return
    type_name = column.get("type", "long")
    for bound in ("min", "max"):
        value = uniform[bound]
        if type_name in ("date", "timestamp") and not isinstance(value, str):
            raise at.error(where + ("uniform", bound), f"a {type_name} bound is written as a quoted ISO string")
        if type_name not in ("date", "timestamp") and (not isinstance(value, (int, float)) or isinstance(value, bool)):
            raise at.error(where + ("uniform", bound), f"a {type_name} bound must be a number, not {_excerpt(value)}")
    if type_name not in ("date", "timestamp") and uniform["min"] > uniform["max"]:
        raise at.error(where + ("uniform",), "min is greater than max")


def _check_literal_rows(at: _Where, data: dict) -> None:
    """Each literal row has one value per column, of the column's type; NULL only where
    the schema allows it."""
    kinds = {"int": int, "long": int, "bigint": int, "double": (int, float), "string": str, "boolean": bool,
             "date": str, "timestamp": str}
    for tname, table in data["tables"].items():
        if not is_literal(table):
            continue
        schema = literal_schema(table)
        for i, row in enumerate(table["values"]):
            where = ("tables", tname, "values", i)
            if len(row) != len(schema):
                raise at.error(where, f"{len(row)} value(s) for {len(schema)} column(s) ({', '.join(schema)})")
            for value, (cname, (type_name, nullable)) in zip(row, schema.items()):
                if value is None:
                    if not nullable:
                        raise at.error(where, f"NULL in column '{cname}', which is not nullable "
                                              f"(write \"{type_name}?\" to allow NULL)")
                    continue
                kind = (int, float) if type_name.startswith("decimal") else kinds[type_name]
                if not isinstance(value, kind) or (isinstance(value, bool) and type_name != "boolean") \
                        or not _literal_fits(value, type_name):
                    raise at.error(where, f"{_excerpt(value)} is not a {type_name} (column '{cname}')")


_INT_RANGES = {"int": 31, "long": 63, "bigint": 63, "smallint": 15, "short": 15, "tinyint": 7, "byte": 7}


def _literal_fits(value, type_name: str) -> bool:
    """In range for an integer type; an ISO date or timestamp Spark reads as one."""
    if type_name in _INT_RANGES:
        return -(1 << _INT_RANGES[type_name]) <= value < (1 << _INT_RANGES[type_name])
    try:
        if type_name == "date":
            datetime.date.fromisoformat(value[:10])
            return len(value) == 10
        if type_name == "timestamp":
            datetime.datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "T"))
    except ValueError:
        return False
    return True


def _faker_providers(locale: str) -> set | None:
    """The value providers a Faker of this locale offers; None where Faker is not
    installed (an environment that reads pools cached on disk) or the locale is unknown."""
    if locale not in _FAKER_PROVIDERS:
        try:
            from faker import Faker
            fake = Faker(locale)
            _FAKER_PROVIDERS[locale] = {name for name in dir(fake) if not name.startswith("_")
                                        and name not in FAKER_NOT_PROVIDERS and callable(getattr(fake, name, None))}
        except (ImportError, AttributeError):
            _FAKER_PROVIDERS[locale] = None
    return _FAKER_PROVIDERS[locale]


_FAKER_PROVIDERS: dict = {}
# Callables of a Faker instance that are its machinery, not value providers.
FAKER_NOT_PROVIDERS = {"seed", "seed_instance", "seed_locale", "add_provider", "get_providers", "provider",
                       "set_arguments", "get_arguments", "del_arguments", "set_formatter", "get_formatter",
                       "format", "parse", "optional", "unique", "items", "random", "weights"}


def _check_faker(at: _Where, where: tuple, column: dict) -> None:
    spec = column.get("faker")
    if not spec:
        return
    provider = spec["provider"]
    if provider in HEAVY_PROVIDERS or provider.startswith("_"):
        raise at.error(where + ("faker", "provider"),
                       f"Faker provider '{provider}' is not allowed (it builds large payloads)")
    known = _faker_providers(spec.get("locale", "en_US"))
    if known is not None and provider not in known:
        raise at.error(where + ("faker", "provider"),
                       f"unknown Faker provider '{provider}'" + _did_you_mean(provider, known))


def _check_columns(at: _Where, data: dict) -> None:
    for tname, table in data["tables"].items():
        for cname, column in table.get("columns", {}).items():
            where = ("tables", tname, "columns", cname)
            for check in (_check_weights, _check_key, _check_uniform, _check_faker):
                check(at, where, column)


def _check_on_columns(at: _Where, where: tuple, join: dict, tables: dict) -> None:
    """`on` and `l.`/`r.` columns of a join exist in its sides (where the file says
    what a side's columns are: a derived side's are Spark's to check)."""
    for i, pair in enumerate(join.get("on", [])):
        left_col, right_col = (pair, pair) if isinstance(pair, str) else pair
        for side, col in (("left", left_col), ("right", right_col)):
            columns = table_columns(tables[join[side]])
            if columns is not None and col not in columns:
                raise at.error(where + ("on", i), f"unknown column '{col}' in {side} table '{join[side]}'"
                               + _did_you_mean(col, columns))
    for match in _COLUMN_REF.finditer(join.get("condition", "")):
        side = "left" if match.group(1) == "l" else "right"
        columns = table_columns(tables[join[side]])
        if columns is not None and match.group(2) not in columns:
            close = difflib.get_close_matches(match.group(2), list(columns), n=1)
            raise at.error(where + ("condition",), f"unknown column '{match.group(0)}' ({side} table '{join[side]}')"
                           + (f"; did you mean '{match.group(1)}.{close[0]}'?" if close else ""))


def _check_join_columns(at: _Where, data: dict) -> None:
    if "left" in data["join"]:
        _check_on_columns(at, ("join",), data["join"], data["tables"])


def _derived_tables(data: dict):
    """(position, name, spec) of each derived table, in the file's order."""
    for position, (name, table) in enumerate(data["tables"].items()):
        if is_derived(table):
            yield position, name, table


def _check_derived(at: _Where, data: dict) -> None:
    """One source each; inputs that exist and are declared before (no cycles); the
    columns of a derived join."""
    declared = list(data["tables"])
    for position, name, table in _derived_tables(data):
        where = ("tables", name)
        sources = [key for key in DERIVED_SOURCES if key in table]
        if len(sources) > 1:
            raise at.error(where + (sources[1],), f"a derived table has one source: {' or '.join(DERIVED_SOURCES)}"
                                                  f" (this one has {' and '.join(sources)})")
        inputs = [(("from",), table["from"])] if "from" in table else []
        if "join" in table:
            inputs = [(("join", side), table["join"][side]) for side in ("left", "right")]
        earlier = declared[:position]
        for key, used in inputs:
            if used not in data["tables"]:
                raise at.error(where + key, f"unknown table '{used}'" + _did_you_mean(used, earlier))
            if used not in earlier:
                raise at.error(where + key, f"'{used}' is not declared before '{name}' (a derived table is made "
                                            "from tables declared above it)")
        if "join" in table:
            _check_on_columns(at, where + ("join",), table["join"], data["tables"])


def _step_hints(data: dict):
    """(field path, hint list) of every hint a derived table carries."""
    for _, name, table in _derived_tables(data):
        for side in ("left", "right"):
            hints = table.get("join", {}).get("hints", {}).get(side)
            if hints is not None:
                yield ("tables", name, "join", "hints", side), hints
        for i, step in enumerate(table.get("steps", [])):
            if isinstance(step, dict) and "hint" in step:
                yield ("tables", name, "steps", i, "hint"), step["hint"]


def _check_all_hints(at: _Where, data: dict) -> None:
    join = data["join"]
    if "left" in join:
        for side in ("left", "right"):
            _check_hints(at.path, at.lines, ("join", "hints", side), join.get("hints", {}).get(side))
    for axis in ("left_hints", "right_hints"):
        for i, value in enumerate(data.get("matrix", {}).get(axis, [])):
            _check_hints(at.path, at.lines, ("matrix", axis, i), value)
    for where, hints in _step_hints(data):
        _check_hints(at.path, at.lines, where, hints)


_STAT_KINDS = {"int": int, "long": int, "bigint": int, "smallint": int, "short": int, "tinyint": int, "byte": int,
               "double": (int, float), "float": (int, float), "real": (int, float), "boolean": bool,
               "date": str, "timestamp": str}


def stats_bound_kind(type_name: str):
    """The Python kind of a column's min/max statistics, None where Spark keeps none
    (strings, binary, nested types)."""
    if type_name.startswith("decimal"):
        return (int, float)
    return _STAT_KINDS.get(type_name)


def _check_stats(at: _Where, data: dict) -> None:
    """Statistics name the table's columns, with min/max of the column's type (Spark keeps
    none for strings), and column statistics come with a row count (Spark ignores them
    without one)."""
    for tname, table in data["tables"].items():
        if not is_stats_only(table):
            continue
        stats, schema = table["stats"], literal_schema(table)
        where = ("tables", tname, "stats")
        if "columns" in stats and "rows" not in stats:
            raise at.error(where + ("columns",), "column statistics need `rows` (Spark ignores them without a "
                                                 "row count)")
        for cname, column in stats.get("columns", {}).items():
            if cname not in schema:
                raise at.error(where + ("columns", cname), f"'{cname}' is not a column of the schema"
                               + _did_you_mean(cname, schema))
            if column.get("nulls", 0) > stats["rows"]:
                raise at.error(where + ("columns", cname, "nulls"), f"more nulls than rows ({stats['rows']})")
            type_name = schema[cname][0]
            for bound in ("min", "max"):
                if bound not in column:
                    continue
                value, field_path = column[bound], where + ("columns", cname, bound)
                kind = stats_bound_kind(type_name)
                if kind is None:
                    raise at.error(field_path, f"Spark keeps no min/max for {type_name} columns")
                if not isinstance(value, kind) or (isinstance(value, bool) and type_name != "boolean") \
                        or not _literal_fits(value, type_name):
                    raise at.error(field_path, f"{_excerpt(value)} is not a {type_name}")
            if "min" in column and "max" in column and _ordered(column["min"], type_name) > \
                    _ordered(column["max"], type_name):
                raise at.error(where + ("columns", cname, "min"), f"min {column['min']} is above max {column['max']}")


def _ordered(value, type_name: str):
    """A min/max as a comparable value (instants as UTC)."""
    if type_name == "timestamp":
        instant = datetime.datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "T"))
        return instant.replace(tzinfo=instant.tzinfo or datetime.timezone.utc)
    return value


def _check_plan_only(at: _Where, data: dict) -> None:
    """A statistics-only table has no rows: its scenario is planned, never run."""
    stats_tables = [name for name, table in data["tables"].items() if is_stats_only(table)]
    if not stats_tables:
        return
    why = f"statistics-only table '{stats_tables[0]}' has no rows: the scenario is plan-only"
    if "stream" in data:
        raise at.error(("stream",), why)
    for where, block in _expectation_blocks(data):
        for key in ("rows", "checksum", "result_rows"):
            if key in block:
                raise at.error(where + (key,), f"{why}, nothing to compare {key} with")
        if block.get("plan") in ("final", "both"):
            raise at.error(where + ("plan",), f"{why} (the final adaptive plan needs execution)")
    for _, name, table in _derived_tables(data):
        for i, step in enumerate(table.get("steps", [])):
            if step == "cache":
                raise at.error(("tables", name, "steps", i), f"{why}; caching runs a job")


def _check_synthetic(at: _Where, data: dict) -> None:
    if "synthetic" in data and not any(is_stats_only(t) for t in data["tables"].values()):
        raise at.error(("synthetic",), "a synthetic twin replaces statistics-only tables by generated data; "
                                       "this scenario has none")


def _check_version_specifiers(at: _Where, data: dict) -> None:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    specs = [(("expect", "spark"), data["expect"].get("spark")), (("bug", "affected"), (data.get("bug") or {}).get("affected"))]
    specs += [(("expect", "overrides", i, "when", "spark"), o["when"].get("spark"))
              for i, o in enumerate(data["expect"].get("overrides", []))]
    for where, spec in specs:
        if spec is None:
            continue
        try:
            SpecifierSet(spec)
        except InvalidSpecifier:
            raise at.error(where, f"'{spec}' is not a PEP 440 version specifier (e.g. '>=3.5')") from None


def _check_stream_shape(at: _Where, data: dict) -> None:
    if "stream" in data:
        _check_stream(at.path, data, at.lines)


def _check_confs(at: _Where, data: dict) -> None:
    """Only allow-listed runtime configs, each with a value of its type."""
    settings = [(("spark_conf", key), key, value) for key, value in data.get("spark_conf", {}).items()]
    for tname, table in data["tables"].items():
        settings += [(("tables", tname, "spark_conf", key), key, value)
                     for key, value in table.get("spark_conf", {}).items()]
    for key, values in data.get("matrix", {}).get("conf", {}).items():
        settings += [(("matrix", "conf", key, i), key, value) for i, value in enumerate(values)]
    for where, key, value in settings:
        try:
            confs.check(key, value)
        except confs.ConfError as exc:
            raise at.error(where, str(exc)) from None


def _expectation_blocks(data: dict):
    yield ("expect",), data["expect"]
    for i, override in enumerate(data["expect"].get("overrides", [])):
        yield ("expect", "overrides", i), override


def _check_patterns(at: _Where, data: dict) -> None:
    """Every regular expression compiles (error messages, warnings)."""
    for where, block in _expectation_blocks(data):
        patterns = [(where + ("error", "message"), (block.get("error") or {}).get("message"))]
        warnings = block.get("warnings") or []
        if isinstance(warnings, dict):
            patterns += [(where + ("warnings", key, i), p) for key in ("match", "absent")
                         for i, p in enumerate(warnings.get(key, []))]
        else:
            patterns += [(where + ("warnings", i), p) for i, p in enumerate(warnings)]
        for field_path, pattern in patterns:
            if pattern is None:
                continue
            try:
                re.compile(pattern)
            except re.error as exc:
                raise at.error(field_path, f"not a regular expression: {exc}") from None


# What a schema cannot say, one rule each, in the order a person fixes a file.
SEMANTIC_CHECKS = (_check_join_tables, _check_derived, _check_literal_rows, _check_stats, _check_columns,
                   _check_join_columns, _check_stream_shape, _check_plan_only, _check_synthetic, _check_all_hints, _check_confs,
                   _check_version_specifiers, _check_patterns)


def _check_semantics(path: Path, data: dict, lines: dict) -> None:
    at = _Where(path, lines)
    for check in SEMANTIC_CHECKS:
        check(at, data)


def sql_texts(data: dict):
    """(field path, text) of every piece of Spark SQL in a scenario."""
    join = data["join"]
    for key in ("sql", "condition"):
        if key in join:
            yield ("join", key), join[key]
    for tname, table in data["tables"].items():
        if "filter" in table:
            yield ("tables", tname, "filter"), table["filter"]
        if "sql" in table:
            yield ("tables", tname, "sql"), table["sql"]
        if "condition" in table.get("join", {}):
            yield ("tables", tname, "join", "condition"), table["join"]["condition"]
        for i, step in enumerate(table.get("steps", [])):
            if isinstance(step, dict) and "filter" in step:
                yield ("tables", tname, "steps", i, "filter"), step["filter"]
            for j, text in enumerate(step.get("select", []) if isinstance(step, dict) else []):
                yield ("tables", tname, "steps", i, "select", j), text
        for cname, column in table.get("columns", {}).items():
            if "expr" in column:
                yield ("tables", tname, "columns", cname, "expr"), column["expr"]


# --------------------------------------------------------------------------- model

@dataclass
class Scenario:
    path: Path
    data: dict
    lines: dict
    # (id of the Spark session, refusal or None): harness.sqlguard's verdict, made once
    sql_verdict: tuple | None = field(default=None, compare=False, repr=False)
    twin_of: str | None = None  # the synthetic twin of that scenario id (harness.synthetic)

    @property
    def id(self) -> str:
        return self.data["id"]

    @property
    def seed(self) -> int:
        return self.data.get("seed", DEFAULT_SEED)

    @property
    def timeout(self) -> float:
        return float(self.data.get("timeout", DEFAULT_TIMEOUT_S))

    def line_of(self, *path) -> int | None:
        return _line_for(self.lines, path)

    @property
    def plan_only(self) -> bool:
        """A statistics-only table has no rows: nothing of the scenario executes."""
        return any(is_stats_only(table) for table in self.data["tables"].values())


@dataclass
class Case:
    """One expansion of a scenario's matrix: everything needed to run it."""
    scenario: Scenario
    label: str                 # e.g. "left_outer-BROADCAST@right-aqe=off" ("" without matrix)
    params: dict               # matrix values of this case, by axis
    join: dict                 # join spec with the matrix applied
    spark_conf: dict           # configs with the matrix applied (values may be relative)
    expect: dict               # expectations with the matching overrides applied (version-free part)
    overrides: list = field(default_factory=list)

    @property
    def case_id(self) -> str:
        return f"{self.scenario.id}[{self.label}]" if self.label else self.scenario.id

    @property
    def join_type(self) -> str:
        return JOIN_TYPES[self.join.get("type", "inner")]


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    data, lines = load_yaml(path)
    validate(path, data, lines)
    return Scenario(path=path, data=data, lines=lines)


def _value_label(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, dict):
        parts = [f"{value['estimate_of']}_estimate"]
        if value.get("times") not in (None, 1):
            parts.append(f"x{value['times']}")
        if value.get("plus"):
            parts.append(f"{value['plus']:+d}")
        return "".join(parts)
    return str(value)


def hints_label(hints, side: str) -> str:
    names = [hint_name(h) for h in as_hint_list(hints)]
    return f"{'+'.join(names) if names else 'none'}@{side}"


def _axis_label(axis: str, value) -> str:
    if axis in ("left_hints", "right_hints"):
        return hints_label(value, axis.split("_")[0])
    return str(value)


def expand(scenario: Scenario) -> list[Case]:
    data = scenario.data
    matrix = data.get("matrix", {})
    axes: list[tuple[str, list]] = []
    for axis, values in matrix.items():
        if axis == "conf":
            axes.extend((f"conf:{key}", vals) for key, vals in values.items())
        else:
            axes.append((axis, values))
    count = math.prod(len(values) for _, values in axes)
    if count > MAX_CASES_PER_SCENARIO:  # counted before anything is expanded
        raise ScenarioError(scenario.path, scenario.line_of("matrix"), "matrix",
                            f"expands to {count:,} cases; the limit is {MAX_CASES_PER_SCENARIO}")
    combos = itertools.product(*(values for _, values in axes)) if axes else [()]
    cases, seen = [], set()
    for combo in combos:
        params: dict = {}
        join = copy.deepcopy(data["join"])
        conf = dict(data.get("spark_conf", {}))
        labels = []
        for (axis, _), value in zip(axes, combo):
            if axis.startswith("conf:"):
                key = axis[5:]
                conf[key] = value
                params.setdefault("conf", {})[key] = value
                labels.append(f"{CONF_LABELS.get(key, key.rsplit('.', 1)[-1])}={_value_label(value)}")
                continue
            params[axis] = value
            labels.append(_axis_label(axis, value))
            if axis == "join_type":
                join["type"] = value
            elif axis == "api":
                join["api"] = value
            else:
                join.setdefault("hints", {})[axis.split("_")[0]] = value
        label = "-".join(labels)
        if label in seen:
            raise ScenarioError(scenario.path, scenario.line_of("matrix"), "matrix",
                                f"two combinations give the same case id '{label}'")
        seen.add(label)
        cases.append(Case(scenario=scenario, label=label, params=params, join=join, spark_conf=conf,
                          expect=data["expect"], overrides=data["expect"].get("overrides", [])))
    twin = twin_data(data)
    if twin is None:
        return cases
    return cases + expand(Scenario(path=scenario.path, data=twin, lines=scenario.lines, twin_of=scenario.id))


def stable_seed(*parts) -> int:
    """A 63-bit seed from the parts, identical in every process (unlike Python's hash())."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") & 0x7FFF_FFFF_FFFF_FFFF
