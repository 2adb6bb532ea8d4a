"""The synthetic twin of a scenario with statistics-only tables (`synthetic: {scale}`).

A captured scenario plans without data. Its twin replaces each statistics-only table by a
generated one shaped by the statistics: the same columns, rows scaled down (at most
`max_rows`, and never fewer than the distinct keys they hold), each column's distinct
count kept up to 1,000 and scaled above (`distinct_kept`), its keys spread over its
min/max (so that two tables with the same statistics share keys and a range filter keeps
its share), its null fraction. Derived tables and the query stay as written. The twin executes: its rows
come back, the cross-strategy check runs on them; it has no expectations of its own
(the strategy at a thousandth of the size is not production's), so its verdict is
`observed` and its agreement item is the check.
"""
from __future__ import annotations

import copy
import datetime as dt
import math
import re

from harness.core.instants import utc_instant
from harness.scenario.tables import partition_spec

DEFAULT_MAX_ROWS = 1_000_000
KEPT_DISTINCT = 1000
LONG_MAX = 2 ** 63 - 1
SUFFIX = ".synthetic"
INTEGRAL = {"int": "int", "integer": "int", "long": "long", "bigint": "long", "smallint": "int", "tinyint": "int",
            "short": "int", "byte": "int"}
FRACTIONAL = {"double": "double", "float": "double", "real": "double"}
TYPE_WIDTH = {"int": 4, "long": 8, "double": 8, "date": 4, "timestamp": 8, "boolean": 1, "string": 20}


def twin_data(data: dict) -> dict | None:
    """The twin scenario's data, or None when the scenario asks for none. Pure data: the
    loader (harness.scenario.expand) makes it a scenario of its own."""
    spec = data.get("synthetic")
    if not spec:
        return None
    twin = copy.deepcopy(data)
    del twin["synthetic"]
    twin["id"] = data["id"] + SUFFIX
    twin["description"] = f"Synthetic twin of {data['id']} (scale {spec['scale']}): {data['description']}"
    # `stats` belongs to statistics-only tables alone (the contract's table kinds)
    twin["tables"] = {name: (iceberg_twin(table, generated(table, spec["scale"], spec.get("max_rows", DEFAULT_MAX_ROWS)))
                             if "stats" in table else _cached_from_rows(table))
                      for name, table in data["tables"].items()}
    twin["expect"] = {}
    return twin


def _cached_from_rows(table: dict) -> dict:
    """A derived table's cache sized as in production (`{cache: {...}}`) is, over the
    twin's rows, a cache Spark materialises and sizes itself."""
    steps = table.get("steps")
    if not steps or not any(isinstance(step, dict) and "cache" in step for step in steps):
        return table
    return {**table, "steps": ["cache" if isinstance(step, dict) and "cache" in step else step for step in steps]}


def iceberg_twin(table: dict, twin: dict) -> dict:
    """A statistics-only Iceberg table's twin is an Iceberg table written with the same
    partition spec, sort order and properties; a column under a listed partition's
    identity, truncate, days, months or years transform takes the listed partitions'
    values, weighted by their rows, so the twin's rows fall into those partitions (a
    bucket is a hash: its column keeps its generated keys)."""
    if table.get("format") != "iceberg":
        return twin
    layout = {"materialize": "catalog", "format": "iceberg",
              **{key: table[key] for key in ("partition_by", "sort_by", "properties") if key in table}}
    for column, values in _partition_columns(table).items():
        twin["columns"][column] = values
    return {**twin, **layout}


def _partition_columns(table: dict) -> dict:
    """column → a `values` generator made from the listed partitions."""
    out = {}
    listed = [p for p in table.get("partition_values") or [] if "spec" not in p]  # the current spec's
    schema = {name: _type_of(value) for name, value in table["schema"].items()}
    for i, transform in enumerate(partition_spec(table)):
        if transform.name not in ("identity", "truncate", "days", "months", "years") or not listed:
            continue
        rows: dict = {}
        for partition in listed:
            value = _column_value(transform.name, partition["values"][i])
            rows[value] = rows.get(value, 0) + partition["rows"]
        nulls = rows.pop(None, 0)
        heaviest = sorted(rows.items(), key=lambda item: -item[1])[:KEPT_DISTINCT]
        if not heaviest or not sum(weight for _, weight in heaviest):
            continue
        column = {"values": [value for value, _ in heaviest], "weights": [weight for _, weight in heaviest],
                  "type": schema[transform.column]}
        if nulls:
            column["nulls"] = nulls / (nulls + sum(rows.values()))
        out[transform.column] = column
    return out


def _column_value(transform: str, value):
    """A value of the column that falls into the partition (`value` as listed)."""
    if value is None or transform in ("identity", "truncate", "days"):
        return value
    if transform == "years":
        return f"{1970 + value:04d}-01-01"
    return f"{1970 + value // 12:04d}-{value % 12 + 1:02d}-01"  # months


def distinct_kept(distinct: int, scale: float) -> int:
    """A column keeps up to KEPT_DISTINCT distinct values; more scale down, never below
    that. A function of the statistics and the scale only, not of the table: a key and
    the foreign keys that reference it (the same distinct count, min and max) get the same
    keys in every table, so joins meet as in production."""
    return min(distinct, max(KEPT_DISTINCT, round(distinct * scale)))


def generated(table: dict, scale: float, max_rows: int) -> dict:
    stats = table["stats"]
    schema = {name: _type_of(value) for name, value in table["schema"].items()}
    full_rows = stats.get("rows")
    if full_rows is None:  # size only: rows as Spark's default row width would give them
        width = sum(TYPE_WIDTH.get(_base(t), 8) for t in schema.values()) or 8
        size = stats["size_bytes"] if "size_bytes" in stats else \
            sum(p["size_bytes"] for p in table["partition_values"])  # a partitioned table never ANALYZEd
        full_rows = max(1, size // width)
    column_stats = stats.get("columns") or {}
    kept = {name: distinct_kept(s["distinct"], scale) for name, s in column_stats.items() if s.get("distinct")}
    # enough rows for the keys a table holds (a 500k-row dimension at 0.001 keeps 1,000)
    rows = max([round(full_rows * scale)] + list(kept.values()))
    rows = int(max(1, min(rows, full_rows, max_rows)))
    columns = {name: _column(type_name, column_stats.get(name, {}), min(kept.get(name, rows), rows), rows,
                             full_rows)
               for name, type_name in schema.items()}
    return {"rows": rows, "columns": columns}


def _type_of(value) -> str:
    text = value["type"] if isinstance(value, dict) else value
    return text.rstrip("?").strip()


def _base(type_name: str) -> str:
    if type_name.startswith("decimal"):
        return "decimal"
    return INTEGRAL.get(type_name) or FRACTIONAL.get(type_name) or type_name


def _column(type_name: str, stats: dict, distinct: int, rows: int, full_rows: int) -> dict:
    base = _base(type_name)
    scaled = distinct if stats.get("distinct") else None
    low, high = stats.get("min"), stats.get("max")
    ranges = _histogram_ranges(stats.get("histogram"))
    if base in ("int", "long"):
        column = _integral(base, scaled, low, high, rows, ranges)
    elif base in ("double", "decimal"):
        column = {"uniform": {"min": float(low), "max": float(high)} if _numbers(low, high) else {"min": 0.0, "max": 1.0},
                  "type": "double" if base == "double" else re.sub(r"\s", "", type_name)}
        if base == "decimal" and _numbers(low, high):
            column["uniform"] = {"min": low, "max": high}
        if ranges and _numbers(low, high):
            column["uniform"]["bins"] = _inside(ranges, low, high)
    elif base in ("date", "timestamp"):
        column = ({"uniform": {"min": str(low), "max": str(high)}, "type": base} if low is not None and high is not None
                  else {"key": {"cardinality": scaled or rows}, "type": base})
        if ranges and "uniform" in column:
            try:
                column["uniform"]["bins"] = _instant_bins(base, ranges, str(low), str(high))
            except ValueError:  # bounds that are no ISO instants: the loader says so for the table itself
                pass
    elif base == "boolean":
        column = {"values": [True, False]}
    elif base == "string" and scaled == rows:
        column = {"sequence": {}, "type": "string"}
    elif base == "string":
        column = {"key": {"cardinality": scaled or rows}, "type": "string"}
    else:  # binary, arrays, maps, structs: present, typed, empty
        return {"expr": f"CAST(NULL AS {type_name})"}
    nulls = stats.get("nulls")
    if nulls and full_rows:
        column["nulls"] = min(1.0, nulls / full_rows)
    return column


def _numbers(*values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _integral(base: str, scaled, low, high, rows: int, ranges: list | None = None) -> dict:
    """Keys spread evenly over the statistics' range: a range filter keeps the share of
    rows it keeps in production, and two tables with the same statistics share keys. A
    histogram puts equal shares of rows in its bins, on the keys of the same grid (the
    skew a filter or a join meets in production, the keys a table without one holds)."""
    if not _numbers(low, high):
        return {"key": {"cardinality": scaled or rows}, "type": base}
    if scaled is None:
        column = {"uniform": {"min": int(low), "max": int(high)}, "type": base}
        if ranges:
            column["uniform"]["bins"] = _inside([(math.floor(lo), math.ceil(hi)) for lo, hi in ranges],
                                                int(low), int(high))
        return column
    low, high = max(int(low), -LONG_MAX), min(int(high), LONG_MAX)  # a bare -2^63 is no long literal
    span = high - low
    scaled = max(1, min(scaled, span + 1))
    key = {"cardinality": scaled}
    if low:
        key["start"] = low
    # rank × step is computed before start is added: it must stay a long (ANSI overflows)
    step = min(span // (scaled - 1), LONG_MAX // (scaled - 1)) if scaled > 1 else 1
    if step > 1:
        key["step"] = step
    if scaled == rows:  # unique: every key once (a primary key), not drawn
        return {"sequence": {k: v for k, v in key.items() if k != "cardinality"}, "type": base}
    if ranges:
        key["bins"] = _rank_bins(ranges, low, step if step > 1 else 1, scaled)
    return {"key": key, "type": base}


# Generators take up to this many bins; Spark's default histogram has 254.
MAX_BINS = 1000


def _histogram_ranges(histogram: dict | None) -> list | None:
    """A histogram's bins as [lo, hi] ranges of equal rows: more than MAX_BINS merged, runs
    of neighbouring bins taken together."""
    if not histogram:
        return None
    bins = [(float(lo), float(hi)) for lo, hi, _ in histogram["bins"]]
    size = math.ceil(len(bins) / MAX_BINS)
    return [(bins[i][0], bins[min(i + size, len(bins)) - 1][1]) for i in range(0, len(bins), size)]


def _inside(ranges: list, low, high) -> list:
    """The ranges with both ends held inside [low, high] (a bin the statistics' own bounds
    leave out shrinks to the nearer one)."""
    return [[min(max(lo, low), high), min(max(hi, low), high)] for lo, hi in ranges]


def _rank_bins(ranges: list, low: int, step: int, keys: int) -> list:
    """Each range as the ranks of the keys low + rank × step inside it; a range narrower than
    a step takes the key at or below its middle (never above the range: a filter `<= hi`
    keeps its rows)."""
    out = []
    for lo, hi in ranges:
        first, last = math.ceil((lo - low) / step), math.floor((hi - low) / step)
        if first > last:
            first = last = math.floor(((lo + hi) / 2 - low) / step)
        out.append([min(max(first, 0), keys - 1), min(max(last, 0), keys - 1)])
    return out


def _instant_bins(base: str, ranges: list, low: str, high: str) -> list:
    """A date histogram's bins (days since 1970-01-01) or a timestamp's (microseconds) as
    ISO ranges inside [low, high]."""
    epoch = dt.datetime(1970, 1, 1)
    unit = dt.timedelta(days=1) if base == "date" else dt.timedelta(microseconds=1)
    first, last = _iso_key(low, base), _iso_key(high, base)

    def iso(offset: int, beyond: str) -> str:
        try:
            instant = epoch + unit * offset
        except OverflowError:  # a bound past year 9999: the statistics' own bound
            return beyond
        text = instant.date().isoformat() if base == "date" else instant.isoformat(sep=" ")
        return min(max(text, first), last)

    return [[iso(math.floor(lo), first if lo < 0 else last), iso(math.ceil(hi), first if hi < 0 else last)]
            for lo, hi in ranges]


def _iso_key(text: str, base: str) -> str:
    """A statistics bound in the form `_instant_bins` writes (ordered as text)."""
    if base == "date":
        return text[:10]
    return utc_instant(text).replace(tzinfo=None).isoformat(sep=" ")
