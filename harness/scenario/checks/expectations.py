"""Rules on what a scenario expects: version specifiers that parse, `varies` that names
what it frees, regular expressions that compile, dynamic pruning and runtime filters of tables of the file,
cost bounds in their units, configs on the allow-list."""
from __future__ import annotations

import re

from harness.core.vocab import COST_SIDE_FIELDS, COST_SIZES
from harness.scenario import confs
from harness.scenario.checks.tables import derived_tables
from harness.scenario.errors import (
    Where,
    did_you_mean,
)
from harness.scenario.tables import (
    byte_size,
    is_stats_only,
)


def check_plan_only(at: Where, data: dict) -> None:
    """A statistics-only table has no rows: its scenario is planned, never run (a `cache`
    step caches without materialising). A cache sized as Spark sized it is for such a
    scenario only: over rows, Spark sizes a cache itself."""
    stats_tables = [name for name, table in data["tables"].items() if is_stats_only(table)]
    if not stats_tables:
        for _, name, table in derived_tables(data):
            for i, step in enumerate(table.get("steps", [])):
                if isinstance(step, dict) and "cache" in step:
                    raise at.error(("tables", name, "steps", i, "cache"),
                                   "a cache sized as Spark sized it replays a plan-only scenario (statistics-only "
                                   "tables); over generated rows Spark sizes the cache itself: write `cache`")
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
    for _, name, table in derived_tables(data):
        for i, step in enumerate(table.get("steps", [])):
            sizes = step.get("cache") if isinstance(step, dict) else None
            if sizes and sizes.get("columns") and "rows" not in sizes:
                raise at.error(("tables", name, "steps", i, "cache", "columns"),
                               "column statistics need `rows` (Spark ignores them without a row count)")


def check_synthetic(at: Where, data: dict) -> None:
    if "synthetic" in data and not any(is_stats_only(t) for t in data["tables"].values()):
        raise at.error(("synthetic",), "a synthetic twin replaces statistics-only tables by generated data; "
                                       "this scenario has none")


def check_version_specifiers(at: Where, data: dict) -> None:
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


def check_confs(at: Where, data: dict) -> None:
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


def check_varies(at: Where, data: dict) -> None:
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


def check_patterns(at: Where, data: dict) -> None:
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


def check_pruned_tables(at: Where, data: dict) -> None:
    """`dynamic_pruning` and `runtime_filters` name tables of this file."""
    expect = data.get("expect") or {}
    places = [(("expect",), expect)] + [(("expect", "overrides", i), o) for i, o in enumerate(expect.get("overrides") or [])]
    tables = list(data["tables"])
    for where, block in places:
        for key, fields in (("dynamic_pruning", ("table",)), ("runtime_filters", ("table", "from"))):
            wanted = block.get(key)
            if wanted is None:
                continue
            listed = wanted if isinstance(wanted, list) else [wanted]
            for i, want in enumerate(listed):
                for field in fields:
                    if field in want and want[field] not in tables:
                        field_path = where + (key,) + ((i,) if isinstance(wanted, list) else ()) + (field,)
                        raise at.error(field_path, f"'{want[field]}' is not a table of this file"
                                                   f"{did_you_mean(want[field], tables)}")


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


def read_cost_bounds(at: Where, data: dict) -> None:
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
