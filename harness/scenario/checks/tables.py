"""Rules on a scenario's tables and columns: tables that exist and are declared before use,
generators that fit their column, literal rows of their column's type, statistics that
fit, hint names Spark knows, sizes written as text read as bytes."""
from __future__ import annotations

import difflib
import re

from harness.core.instants import utc_instant
from harness.core.vocab import STRATEGY_HINTS
from harness.scenario.errors import ScenarioError, Where, did_you_mean, dotted, excerpt, line_for
from harness.scenario.tables import (
    DERIVED_SOURCES,
    as_hint_list,
    byte_size,
    hint_name,
    is_derived,
    is_iceberg,
    is_literal,
    is_stats_only,
    literal_fits,
    literal_schema,
    stats_bound_kind,
    supports_histogram,
    table_columns,
)


_COLUMN_REF = re.compile(r"\b([lr])\.([A-Za-z_][A-Za-z0-9_]*)")


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


# The YAML value each scenario type name takes (decimals: numbers; other names: any scalar).
_VALUE_KINDS = {"int": int, "long": int, "bigint": int, "double": (int, float), "string": str, "boolean": bool,
                "date": str, "timestamp": str}


def check_value(at: "Where", where: tuple, value, type_name: str, column: str) -> None:
    """A literal value of a column's type, in its range (ISO text for dates and timestamps)."""
    kind = (int, float) if type_name.startswith("decimal") else _VALUE_KINDS.get(type_name, (int, float, str, bool))
    if not isinstance(value, kind) or (isinstance(value, bool) and type_name != "boolean") \
            or not literal_fits(value, type_name):
        raise at.error(where, f"{excerpt(value)} is not a {type_name} (column '{column}')")


# Faker providers that build large binary/structured payloads rather than a value.
HEAVY_PROVIDERS = {"binary", "image", "zip", "tar", "json", "json_bytes", "xml", "csv", "dsv", "psv", "tsv",
                   "fixed_width", "pystruct", "pydict", "pylist", "pyset", "pytuple", "pyiterable",
                   "profile", "simple_profile", "texts", "paragraphs", "sentences", "words"}


def check_join_tables(at: Where, data: dict) -> None:
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
    if "bins" in key:
        if "zipf" in key or "hot_fraction" in key:
            raise at.error(where + ("key", "bins"), "bins shape the keys themselves: not with zipf or hot_fraction")
        _check_bins(at, where + ("key", "bins"), key["bins"], 0, key["cardinality"] - 1, "rank")


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
    if "bins" in uniform:
        low, high = (_bin_bound(at, where + ("uniform", b), uniform[b], type_name) for b in ("min", "max"))
        bins = [[_bin_bound(at, where + ("uniform", "bins", i, j), value, type_name) for j, value in enumerate(pair)]
                for i, pair in enumerate(uniform["bins"])]
        _check_bins(at, where + ("uniform", "bins"), bins, low, high, "bound")


def _bin_bound(at: Where, where: tuple, value, type_name: str):
    if type_name in ("date", "timestamp"):
        if not isinstance(value, str):
            raise at.error(where, f"a {type_name} bound is written as a quoted ISO string")
        if not literal_fits(value, type_name):
            raise at.error(where, f"not an ISO {type_name}: {excerpt(value)}")
        return _ordered(value, type_name)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise at.error(where, f"a {type_name} bound must be a number, not {excerpt(value)}")
    return value


def _check_bins(at: Where, where: tuple, bins: list, low, high, what: str) -> None:
    """Ascending ranges inside [low, high], none overlapping the next."""
    previous = None
    for index, (first, last) in enumerate(bins):
        if first > last:
            raise at.error(where + (index,), f"the first {what} is above the last")
        if first < low or last > high:
            raise at.error(where + (index,), f"outside [{low}, {high}]")
        if previous is not None and first < previous:
            raise at.error(where + (index,), "bins must be ascending and must not overlap")
        previous = last


def check_literal_rows(at: Where, data: dict) -> None:
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
                check_value(at, where, value, type_name, cname)


_FAKER_PROVIDERS: dict = {}


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


def check_columns(at: Where, data: dict) -> None:
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


def check_join_columns(at: Where, data: dict) -> None:
    if "left" in data["join"]:
        _check_on_columns(at, ("join",), data["join"], data["tables"])


def derived_tables(data: dict):
    """(position, name, spec) of each derived table, in the file's order."""
    for position, (name, table) in enumerate(data["tables"].items()):
        if is_derived(table):
            yield position, name, table


def check_derived(at: Where, data: dict) -> None:
    """One source each; inputs that exist and are declared before (no cycles); the
    columns of a derived join."""
    declared = list(data["tables"])
    for position, name, table in derived_tables(data):
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
    for _, name, table in derived_tables(data):
        for side in ("left", "right"):
            hints = table.get("join", {}).get("hints", {}).get(side)
            if hints is not None:
                yield ("tables", name, "join", "hints", side), hints
        for i, step in enumerate(table.get("steps", [])):
            if isinstance(step, dict) and "hint" in step:
                yield ("tables", name, "steps", i, "hint"), step["hint"]


def check_all_hints(at: Where, data: dict) -> None:
    join = data["join"]
    if "left" in join:
        for side in ("left", "right"):
            _check_hints(at.path, at.lines, ("join", "hints", side), join.get("hints", {}).get(side))
    for axis in ("left_hints", "right_hints"):
        for i, value in enumerate(data.get("matrix", {}).get(axis, [])):
            _check_hints(at.path, at.lines, ("matrix", axis, i), value)
    for where, hints in _step_hints(data):
        _check_hints(at.path, at.lines, where, hints)


def check_stats(at: Where, data: dict) -> None:
    """Statistics name the table's columns, with min/max of the column's type (Spark keeps
    none for strings), and column statistics come with a row count (Spark ignores them
    without one)."""
    for tname, table in data["tables"].items():
        if not is_stats_only(table):
            continue
        if not is_iceberg(table):
            for i, partition in enumerate(table.get("partition_values") or []):
                if "data_files" in partition:
                    raise at.error(("tables", tname, "partition_values", i, "data_files"), "data files with their "
                                   "column bounds are an Iceberg table's (`format: iceberg`)")
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
                        or not literal_fits(value, type_name):
                    raise at.error(field_path, f"{excerpt(value)} is not a {type_name}")
            if "min" in column and "max" in column and _ordered(column["min"], type_name) > \
                    _ordered(column["max"], type_name):
                raise at.error(where + ("columns", cname, "min"), f"min {column['min']} is above max {column['max']}")
            if "histogram" in column:
                _check_histogram(at, where + ("columns", cname, "histogram"), column["histogram"], type_name)


def _check_histogram(at: Where, where: tuple, histogram: dict, type_name: str) -> None:
    """Bins Spark's filter estimation can search: each lo ≤ hi, in ascending
    order without overlap, on a column type Spark keeps histograms for."""
    if not supports_histogram(type_name):
        raise at.error(where, f"Spark keeps no histogram for {type_name} columns (numeric, decimal, date and "
                              "timestamp columns only)")
    previous_hi = None  # (a bound that is not a finite number is refused with every number of a file)
    for index, (lo, hi, _) in enumerate(histogram["bins"]):
        if lo > hi:
            raise at.error(where + ("bins", index), f"bin [{lo}, {hi}]: its lo is above its hi")
        if previous_hi is not None and lo < previous_hi:
            raise at.error(where + ("bins", index), f"bin [{lo}, {hi}] starts below the previous bin's hi "
                                                    f"{previous_hi} (bins ascend without overlap)")
        previous_hi = hi


def _ordered(value, type_name: str):
    """A min/max as a comparable value (instants as UTC)."""
    if type_name == "timestamp":
        return utc_instant(value)
    return value  # an ISO date orders as its text


def read_sizes(at: Where, data: dict) -> None:
    """Sizes a file writes as text (`40 GiB`) made bytes, in place: the one step here that
    rewrites the file's data, first, so that every later check and the harness read bytes."""
    for name, table in data["tables"].items():
        places = [(("stats",), table.get("stats") or {})]
        places += [(("partition_values", i), p) for i, p in enumerate(table.get("partition_values") or [])]
        places += [((key,), table[key]) for key in ("partitions_omitted", "catalog_stats") if key in table]
        places += [(("steps", i, "cache"), step["cache"]) for i, step in enumerate(table.get("steps") or [])
                   if isinstance(step, dict) and isinstance(step.get("cache"), dict)]
        places += [(("data_files", i), f) for i, f in enumerate(table.get("data_files") or []) if isinstance(f, dict)]
        places += [(("partition_values", i, "data_files", j), f)
                   for i, p in enumerate(table.get("partition_values") or []) if isinstance(p, dict)
                   for j, f in enumerate(p.get("data_files") or []) if isinstance(f, dict)]
        for where, holder in places:
            if "size_bytes" in holder:
                try:
                    holder["size_bytes"] = byte_size(holder["size_bytes"])
                except ValueError as exc:
                    raise at.error(("tables", name) + where + ("size_bytes",), str(exc)) from None
