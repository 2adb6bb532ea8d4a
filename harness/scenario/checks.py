"""What a schema cannot say about a scenario, one rule each, in the order a person fixes a
file: tables and columns that exist, derived tables declared before use, literal rows of
their column's type, statistics that fit, hint names Spark knows, configs on the
allow-list, version specifiers and regular expressions that parse."""
from __future__ import annotations

import datetime
import difflib
import re
from pathlib import Path

from harness.core.vocab import COST_SIDE_FIELDS, COST_SIZES, STRATEGY_HINTS, THEN_VIEW
from harness.scenario import confs
from harness.scenario.errors import (
    ScenarioError,
    Where,
    did_you_mean,
    dotted,
    excerpt,
    line_for,
)
from harness.scenario.tables import (
    DERIVED_SOURCES,
    DELTA_PROPERTIES,
    ICEBERG_PROPERTIES,
    MAX_PARTITIONS,
    as_hint_list,
    bucket_combinations,
    byte_size,
    catalog_partition_value_problem,
    column_type,
    hint_name,
    iceberg_column_problems,
    is_delta,
    is_derived,
    is_iceberg,
    is_literal,
    is_stats_only,
    literal_schema,
    parse_transform,
    partition_spec,
    partition_text,
    partition_value_problem,
    stats_bound_kind,
    table_columns,
)


def _check_hints(path, lines, field_path: tuple, value) -> None:
    for i, hint in enumerate(as_hint_list(value)):
        name = hint_name(hint)
        if (isinstance(hint, dict) and hint.get("unknown")) or name.upper() in STRATEGY_HINTS:
            continue
        close = difflib.get_close_matches(name.upper(), list(STRATEGY_HINTS), n=1)
        suggestion = f" (did you mean '{close[0]}'?)" if close else ""
        where = field_path + ((i,) if isinstance(value, list) else ())
        raise ScenarioError(path, line_for(lines, where), dotted(where),
                            f"unknown hint '{name}'{suggestion}; write {{name: {name}, unknown: true}} "
                            "to test Spark's handling of an unknown hint")


_COLUMN_REF = re.compile(r"\b([lr])\.([A-Za-z_][A-Za-z0-9_]*)")


def _check_stream(path: Path, data: dict, lines: dict) -> None:
    join, tables = data["join"], data["tables"]
    if "sql" in join:
        raise ScenarioError(path, line_for(lines, ("stream",)), "stream",
                            "a streaming scenario joins join.left and join.right, not join.sql")
    for side in ("left", "right"):
        if is_derived(tables[join[side]]) or is_stats_only(tables[join[side]]):
            raise ScenarioError(path, line_for(lines, ("join", side)), f"join.{side}",
                                "a stream is fed from a generated or literal table")
    for name, mark in data["stream"]["watermarks"].items():
        where = ("stream", "watermarks", name)
        if name not in (join["left"], join["right"]):
            raise ScenarioError(path, line_for(lines, where), dotted(where),
                                f"'{name}' is not a side of the join ({join['left']}, {join['right']})")
        if column_type(tables[name], mark["column"]) != "timestamp":
            raise ScenarioError(path, line_for(lines, where + ("column",)), dotted(where + ("column",)),
                                f"'{mark['column']}' must be a column of '{name}' with type: timestamp")
    at = Where(path, lines)
    if "then" in data["stream"] and THEN_VIEW in {name.lower() for name in tables}:
        raise at.error(("stream", "then", "sql"), f"reads the join as the view '{THEN_VIEW}': rename the table "
                                                  f"'{THEN_VIEW}'")
    steps = data["stream"].get("batches", [])
    for o, override in enumerate((data.get("expect") or {}).get("overrides", [])):
        for c, changed in enumerate(override.get("batches", [])):
            if changed["batch"] > len(steps):
                raise at.error(("expect", "overrides", o, "batches", c, "batch"),
                               f"batch {changed['batch']}: stream.batches has {len(steps)} step(s)")
    for i, batch in enumerate(steps):
        for name, added in batch["add"].items():
            where = ("stream", "batches", i, "add", name)
            if name not in (join["left"], join["right"]):
                raise at.error(where, f"'{name}' is not a side of the join ({join['left']}, {join['right']})")
            for r, row in enumerate(added.get("rows", [])):
                _check_batch_row(at, where + ("rows", r), row, tables[name])


def _check_batch_row(at: "Where", where: tuple, row: list, table: dict) -> None:
    """One value per column of the table, of the column's type where the file says it."""
    columns = table_columns(table)
    if len(row) != len(columns):
        raise at.error(where, f"{len(row)} value(s) for {len(columns)} column(s) ({', '.join(columns)})")
    for value, column in zip(row, columns):
        type_name = column_type(table, column)
        if value is None or type_name is None:
            if isinstance(value, (list, dict)):
                raise at.error(where, f"{excerpt(value)} is not a value (column '{column}')")
            continue
        _check_value(at, where, value, type_name, column)


# The YAML value each scenario type name takes (decimals: numbers; other names: any scalar).
_VALUE_KINDS = {"int": int, "long": int, "bigint": int, "double": (int, float), "string": str, "boolean": bool,
                "date": str, "timestamp": str}


def _check_value(at: "Where", where: tuple, value, type_name: str, column: str) -> None:
    """A literal value of a column's type, in its range (ISO text for dates and timestamps)."""
    kind = (int, float) if type_name.startswith("decimal") else _VALUE_KINDS.get(type_name, (int, float, str, bool))
    if not isinstance(value, kind) or (isinstance(value, bool) and type_name != "boolean") \
            or not _literal_fits(value, type_name):
        raise at.error(where, f"{excerpt(value)} is not a {type_name} (column '{column}')")


# Faker providers that build large binary/structured payloads rather than a value.
HEAVY_PROVIDERS = {"binary", "image", "zip", "tar", "json", "json_bytes", "xml", "csv", "dsv", "psv", "tsv",
                   "fixed_width", "pystruct", "pydict", "pylist", "pyset", "pytuple", "pyiterable",
                   "profile", "simple_profile", "texts", "paragraphs", "sentences", "words"}


def _check_join_tables(at: Where, data: dict) -> None:
    for side in ("left", "right"):
        name = data["join"].get(side)
        if name is not None and name not in data["tables"]:
            raise at.error(("join", side), f"unknown table '{name}'" + did_you_mean(name, data["tables"]))


def _check_weights(at: Where, where: tuple, column: dict) -> None:
    if "weights" not in column:
        return
    if "values" not in column or len(column["weights"]) != len(column["values"]):
        raise at.error(where + ("weights",), "weights needs values of the same length")
    if sum(column["weights"]) <= 0:
        raise at.error(where + ("weights",), "weights must not all be zero")


def _check_key(at: Where, where: tuple, column: dict) -> None:
    key = column.get("key", {})
    if "hot_keys" in key and "hot_fraction" not in key:
        raise at.error(where + ("key",), "hot_keys needs hot_fraction")
    if "zipf" in key and "hot_fraction" in key:
        raise at.error(where + ("key",), "use either zipf or hot_fraction, not both")


def _check_uniform(at: Where, where: tuple, column: dict) -> None:
    uniform = column.get("uniform")
    if not uniform:
        return
    type_name = column.get("type", "long")
    for bound in ("min", "max"):
        value = uniform[bound]
        if type_name in ("date", "timestamp") and not isinstance(value, str):
            raise at.error(where + ("uniform", bound), f"a {type_name} bound is written as a quoted ISO string")
        if type_name not in ("date", "timestamp") and (not isinstance(value, (int, float)) or isinstance(value, bool)):
            raise at.error(where + ("uniform", bound), f"a {type_name} bound must be a number, not {excerpt(value)}")
    if type_name not in ("date", "timestamp") and uniform["min"] > uniform["max"]:
        raise at.error(where + ("uniform",), "min is greater than max")


def _check_literal_rows(at: Where, data: dict) -> None:
    """Each literal row has one value per column, of the column's type; NULL only where
    the schema allows it."""
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
                _check_value(at, where, value, type_name, cname)


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


def _check_faker(at: Where, where: tuple, column: dict) -> None:
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
                       f"unknown Faker provider '{provider}'" + did_you_mean(provider, known))


def _check_columns(at: Where, data: dict) -> None:
    for tname, table in data["tables"].items():
        for cname, column in table.get("columns", {}).items():
            where = ("tables", tname, "columns", cname)
            for check in (_check_weights, _check_key, _check_uniform, _check_faker):
                check(at, where, column)


def _check_on_columns(at: Where, where: tuple, join: dict, tables: dict) -> None:
    """`on` and `l.`/`r.` columns of a join exist in its sides (where the file says
    what a side's columns are: a derived side's are Spark's to check)."""
    for i, pair in enumerate(join.get("on", [])):
        left_col, right_col = (pair, pair) if isinstance(pair, str) else pair
        for side, col in (("left", left_col), ("right", right_col)):
            columns = table_columns(tables[join[side]])
            if columns is not None and col not in columns:
                raise at.error(where + ("on", i), f"unknown column '{col}' in {side} table '{join[side]}'"
                               + did_you_mean(col, columns))
    for match in _COLUMN_REF.finditer(join.get("condition", "")):
        side = "left" if match.group(1) == "l" else "right"
        columns = table_columns(tables[join[side]])
        if columns is not None and match.group(2) not in columns:
            close = difflib.get_close_matches(match.group(2), list(columns), n=1)
            raise at.error(where + ("condition",), f"unknown column '{match.group(0)}' ({side} table '{join[side]}')"
                           + (f"; did you mean '{match.group(1)}.{close[0]}'?" if close else ""))


def _check_join_columns(at: Where, data: dict) -> None:
    if "left" in data["join"]:
        _check_on_columns(at, ("join",), data["join"], data["tables"])


def _derived_tables(data: dict):
    """(position, name, spec) of each derived table, in the file's order."""
    for position, (name, table) in enumerate(data["tables"].items()):
        if is_derived(table):
            yield position, name, table


def _check_derived(at: Where, data: dict) -> None:
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
                raise at.error(where + key, f"unknown table '{used}'" + did_you_mean(used, earlier))
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


def _check_all_hints(at: Where, data: dict) -> None:
    join = data["join"]
    if "left" in join:
        for side in ("left", "right"):
            _check_hints(at.path, at.lines, ("join", "hints", side), join.get("hints", {}).get(side))
    for axis in ("left_hints", "right_hints"):
        for i, value in enumerate(data.get("matrix", {}).get(axis, [])):
            _check_hints(at.path, at.lines, ("matrix", axis, i), value)
    for where, hints in _step_hints(data):
        _check_hints(at.path, at.lines, where, hints)


def _check_stats(at: Where, data: dict) -> None:
    """Statistics name the table's columns, with min/max of the column's type (Spark keeps
    none for strings), and column statistics come with a row count (Spark ignores them
    without one)."""
    for tname, table in data["tables"].items():
        if not is_stats_only(table):
            continue
        stats, schema = table["stats"], literal_schema(table)
        where = ("tables", tname, "stats")
        if "size_bytes" not in stats and (stats or not table.get("partition_by") or is_iceberg(table)):
            raise at.error(where, "statistics need `size_bytes` (only a partitioned table never ANALYZEd has "
                                  "none: `stats: {}`, its partitions listed with their sizes)")
        if "columns" in stats and "rows" not in stats:
            raise at.error(where + ("columns",), "column statistics need `rows` (Spark ignores them without a "
                                                 "row count)")
        for cname, column in stats.get("columns", {}).items():
            if cname not in schema:
                raise at.error(where + ("columns", cname), f"'{cname}' is not a column of the schema"
                               + did_you_mean(cname, schema))
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
                    raise at.error(field_path, f"{excerpt(value)} is not a {type_name}")
            if "min" in column and "max" in column and _ordered(column["min"], type_name) > \
                    _ordered(column["max"], type_name):
                raise at.error(where + ("columns", cname, "min"), f"min {column['min']} is above max {column['max']}")


def _ordered(value, type_name: str):
    """A min/max as a comparable value (instants as UTC)."""
    if type_name == "timestamp":
        instant = datetime.datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "T"))
        return instant.replace(tzinfo=instant.tzinfo or datetime.timezone.utc)
    return value


def _check_plan_only(at: Where, data: dict) -> None:
    """A statistics-only table has no rows: its scenario is planned, never run."""
    stats_tables = [name for name, table in data["tables"].items() if is_stats_only(table)]
    if not stats_tables:
        return
    why = f"statistics-only table '{stats_tables[0]}' has no rows: the scenario is plan-only"
    if "stream" in data:
        raise at.error(("stream",), why)
    for where, block in _expectation_blocks(data):
        for key in ("rows", "checksum", "result_rows", "cost"):
            if key in block:
                raise at.error(where + (key,), f"{why}, nothing to compare {key} with")
        if block.get("plan") in ("final", "both"):
            raise at.error(where + ("plan",), f"{why} (the final adaptive plan needs execution)")
    for _, name, table in _derived_tables(data):
        for i, step in enumerate(table.get("steps", [])):
            if step == "cache":
                raise at.error(("tables", name, "steps", i), f"{why}; caching runs a job")


def _check_synthetic(at: Where, data: dict) -> None:
    if "synthetic" in data and not any(is_stats_only(t) for t in data["tables"].values()):
        raise at.error(("synthetic",), "a synthetic twin replaces statistics-only tables by generated data; "
                                       "this scenario has none")


def _check_version_specifiers(at: Where, data: dict) -> None:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    affected = (data.get("bug") or {}).get("affected")
    specs = [(("expect", "spark"), data["expect"].get("spark"))]
    specs += [(("bug", "affected", i), s) for i, s in enumerate(affected)] if isinstance(affected, list) else \
        [(("bug", "affected"), affected)]
    specs += [(("expect", "overrides", i, "when", "spark"), o["when"].get("spark"))
              for i, o in enumerate(data["expect"].get("overrides", []))]
    for where, spec in specs:
        if spec is None:
            continue
        try:
            SpecifierSet(spec)
        except InvalidSpecifier:
            raise at.error(where, f"'{spec}' is not a PEP 440 version specifier (e.g. '>=3.5')") from None


def _check_stream_shape(at: Where, data: dict) -> None:
    if "stream" in data:
        _check_stream(at.path, data, at.lines)
        return
    for o, override in enumerate((data.get("expect") or {}).get("overrides", [])):
        if "batches" in override:
            raise at.error(("expect", "overrides", o, "batches"), "only a stream fed step by step (stream.batches) "
                                                                   "has batches")


def _check_confs(at: Where, data: dict) -> None:
    """What the file alone decides about its configs (harness.scenario.confs); the running
    Spark's registry decides the rest at collection (harness.spark.conf_registry)."""
    for where, key, value in confs.settings(data):
        try:
            confs.check(key, value)
        except confs.ConfError as exc:
            raise at.error(where, str(exc)) from None


def _expectation_blocks(data: dict):
    yield ("expect",), data["expect"]
    for i, override in enumerate(data["expect"].get("overrides", [])):
        yield ("expect", "overrides", i), override


# Each `varies` entry and the expectations that would assert it.
VARYING_EXPECTATIONS = {"checksum": ("checksum", "result_rows"), "rows": ("rows", "result_rows"),
                        "estimates": ("estimates",), "warnings": ("warnings",), "stream_steps": ("batches",)}


def _check_varies(at: Where, data: dict) -> None:
    """A field declared as differing between runs is not asserted where the declaration
    is in force: in the base `expect`, and in each override merged over it (the override
    replaces the fields it names, `varies` included)."""
    base = data["expect"]
    for where, block in _expectation_blocks(data):
        merged = block if where == ("expect",) else {**base, **block}
        varies = merged.get("varies") or {}
        for declared, keys in VARYING_EXPECTATIONS.items():
            for key in keys:
                if declared in varies and key in merged:
                    at_field = where + (key,) if key in block else ("expect", key)
                    raise at.error(at_field, f"asserted, but `varies` says the {declared.replace('_', ' ')} "
                                             f"differs between runs ({varies[declared]})")
        if "final_plan" in varies and merged.get("plan") in ("final", "both"):
            at_field = where + ("plan",) if "plan" in block else ("expect", "plan")
            raise at.error(at_field, f"checks the final plan, which `varies` says differs between runs "
                                     f"({varies['final_plan']})")
    if "stream_steps" in (base.get("varies") or {}):
        for i, step in enumerate((data.get("stream") or {}).get("batches", [])):
            if "expect" in step:
                raise at.error(("stream", "batches", i, "expect"), f"asserted, but `varies` says the stream steps "
                                                                   f"differ between runs ({base['varies']['stream_steps']})")


def _check_patterns(at: Where, data: dict) -> None:
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
def _check_layouts(at: Where, data: dict) -> None:
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
    if value is None or (type_name not in _INT_RANGES and type_name != "date"):
        return True
    return _literal_fits(partition_text(value) if type_name == "date" else value, type_name)


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


def _check_pruned_tables(at: Where, data: dict) -> None:
    """`dynamic_pruning` names tables of this file."""
    expect = data.get("expect") or {}
    places = [(("expect",), expect)] + [(("expect", "overrides", i), o) for i, o in enumerate(expect.get("overrides") or [])]
    tables = list(data["tables"])
    for where, block in places:
        wanted = block.get("dynamic_pruning")
        if wanted is None:
            continue
        listed = wanted if isinstance(wanted, list) else [wanted]
        for i, want in enumerate(listed):
            field_path = where + ("dynamic_pruning",) + ((i,) if isinstance(wanted, list) else ()) + ("table",)
            if want["table"] not in tables:
                raise at.error(field_path, f"'{want['table']}' is not a table of this file{did_you_mean(want['table'], tables)}")


def _read_sizes(at: Where, data: dict) -> None:
    """Sizes a file writes as text (`40 GiB`) made bytes, in place: the one step here that
    rewrites the file's data, first, so that every later check and the harness read bytes."""
    for name, table in data["tables"].items():
        places = [(("stats",), table.get("stats") or {})]
        places += [(("partition_values", i), p) for i, p in enumerate(table.get("partition_values") or [])]
        places += [((key,), table[key]) for key in ("partitions_omitted", "catalog_stats") if key in table]
        for where, holder in places:
            if "size_bytes" in holder:
                try:
                    holder["size_bytes"] = byte_size(holder["size_bytes"])
                except ValueError as exc:
                    raise at.error(("tables", name) + where + ("size_bytes",), str(exc)) from None


def _cost_value(at: Where, where: tuple, field: str, value) -> int:
    if field in COST_SIZES:
        try:
            return byte_size(value)
        except ValueError as exc:
            raise at.error(where, str(exc)) from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise at.error(where, f"{str(value)[:40]!r} is not a count: write a whole number")
    return value


def _cost_bound(at: Where, where: tuple, field: str, bound) -> dict:
    """{min, max} in bytes or counts (an exact value: both)."""
    if not isinstance(bound, dict):
        value = _cost_value(at, where, field, bound)
        return {"min": value, "max": value}
    read = {key: _cost_value(at, where + (key,), field, value) for key, value in bound.items()}
    if read.get("min", 0) > read.get("max", read.get("min", 0)):
        raise at.error(where + ("min",), f"min {bound['min']} is above max {bound['max']}")
    return read


def _read_cost_bounds(at: Where, data: dict) -> None:
    """Cost bounds made `{field: {side or "both": {min, max}}}` / `{field: {min, max}}`
    in bytes and counts, in place; refused where nothing runs."""
    for where, block in _expectation_blocks(data):
        if "cost" not in block:
            continue
        if "stream" in data:
            raise at.error(where + ("cost",), "cost is observed for batch joins: a stream's micro-batches each "
                                              "run a plan of their own")
        read = {}
        for field, bound in block["cost"].items():
            place = where + ("cost", field)
            if field in COST_SIDE_FIELDS:
                sides = bound if isinstance(bound, dict) and set(bound) <= {"left", "right"} else {"both": bound}
                read[field] = {side: _cost_bound(at, place + ((side,) if side != "both" else ()), field, b)
                               for side, b in sides.items()}
            else:
                read[field] = _cost_bound(at, place, field, bound)
        block["cost"] = read


SEMANTIC_CHECKS = (_read_sizes, _read_cost_bounds, _check_join_tables, _check_derived, _check_literal_rows, _check_stats, _check_columns, _check_layouts,
                   _check_pruned_tables, _check_join_columns, _check_stream_shape, _check_plan_only, _check_synthetic, _check_all_hints, _check_confs,
                   _check_version_specifiers, _check_patterns, _check_varies)


def check_semantics(path: Path, data: dict, lines: dict) -> None:
    at = Where(path, lines)
    for check in SEMANTIC_CHECKS:
        check(at, data)
