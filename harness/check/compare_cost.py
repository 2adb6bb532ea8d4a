"""How what a join cost compares with its bounds: each field of `expect.cost` within its
range, in bytes or counts, and what a run could not report said as not checkable, never
as a pass."""
from __future__ import annotations

from harness.core.records import Observation
from harness.core.vocab import COST_SIZES


def within(value: int, bounds) -> bool:
    if isinstance(bounds, int):
        return value == bounds
    return bounds.get("min", value) <= value <= bounds.get("max", value)


def _cost_values(expected: dict, cost: dict):
    """(field, side or None, the bounds, the observed value, the name in words) of each
    bound; a bound for both sides compares their sum."""
    for field, bounds in expected.items():
        words = field.replace("_", " ")
        if "min" in bounds or "max" in bounds:
            yield field, None, bounds, cost.get(field), words
            continue
        for side, bound in bounds.items():
            values = [cost[s][field] for s in (("left", "right") if side == "both" else (side,))]
            total = None if None in values else sum(values)
            yield field, side, bound, total, words + ("" if side == "both" else f" {side}")


def cost_unreported(expected: dict, observed: Observation) -> list[str]:
    """Cost bounds this run cannot decide: the deployment read no cost, or this Spark
    version does not report the metric (named, with why)."""
    if not observed.executed or observed.error:
        return []
    if observed.cost is None:
        gone = set(observed.unavailable or [])
        if "cost" in gone:
            return ["cost"]
        # a Spark Connect result sent without plan metrics: no final plan to measure
        return ["cost (no plan metrics came with the result)"] if "final" in gone else []
    out = []
    for field, side, _, value, words in _cost_values(expected, observed.cost):
        if value is None:
            keys = [field] if side is None else [f"{s}.{field}" for s in (("left", "right") if side == "both"
                                                                          else (side,))]
            why = "; ".join(dict.fromkeys(observed.cost["not_reported"][k] for k in keys
                                          if k in observed.cost["not_reported"])) or (
                "no shuffle feeds that side" if side else "not in this record")
            out.append(f"cost {words} ({why})")
    return out


def _cost_text(field: str, value: int) -> str:
    return f"{value:,} B" if field in COST_SIZES else f"{value:,}"


def compare_cost(expected: dict, observed: Observation, unchecked: set) -> list[str]:
    if observed.cost is None:
        return [] if "cost" in unchecked else ["cost: the plan that ran has no join to measure"]
    problems = []
    for field, _, bound, value, words in _cost_values(expected, observed.cost):
        if value is None:
            continue  # named by not_checkable
        if "min" in bound and value < bound["min"]:
            problems.append(f"cost: {words} {_cost_text(field, value)} is below the expected minimum "
                            f"{_cost_text(field, bound['min'])}")
        if "max" in bound and value > bound["max"]:
            problems.append(f"cost: {words} {_cost_text(field, value)} is above the expected maximum "
                            f"{_cost_text(field, bound['max'])}")
    return problems
