"""What the table formats' rules share: vetted table properties, and partitions that add
up to their table and whose values fit their column."""
from __future__ import annotations

from harness.scenario.errors import Where
from harness.scenario.tables import INT_RANGES, literal_fits, partition_text


def check_properties(at: Where, where: tuple, table: dict, allowed: dict, on: str = "") -> None:
    """Only vetted table properties, each with a value the harness sets."""
    for key, value in (table.get("properties") or {}).items():
        if key not in allowed:
            raise at.error(where + ("properties", key), f"table property '{key}' may not be set from a scenario "
                           f"(allowed{on}: {', '.join(sorted(allowed))})")
        if not allowed[key](value):
            raise at.error(where + ("properties", key), f"{value!r} is not a value this harness sets for '{key}'")


def partition_value_fits(value, type_name: str) -> bool:
    """In range for an integer column; a real date for a date column."""
    if value is None or (type_name not in INT_RANGES and type_name != "date"):
        return True
    return literal_fits(partition_text(value) if type_name == "date" else value, type_name)


def check_partition_totals(at: Where, where: tuple, listed: list, stats: dict, omitted: dict | None = None) -> None:
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
