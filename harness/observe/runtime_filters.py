"""Runtime filters (Spark's InjectRuntimeFilter, 3.3+) as a join's own observation: a
filter one side of a shuffled join gets at run time from the other side's join keys.

Two kinds, each read where Spark leaves it:
- `bloom_filter`: `might_contain(<scalar subquery: bloom_filter_agg over the creation
  side's keys>, xxhash64(key))` in a Filter over the application side's scan (read from
  the plan objects: harness.observe.jvm_plans.runtime_filters);
- `in_subquery` (semi-join reduction, 3.3-3.5, off by default; its config removed in
  4.0.0): an IN subquery over the creation side's distinct keys, which Spark rewrites into
  a LeftSemi join before planning. That join is told from one a query wrote by the alias
  Spark gives the aggregated key: the key expression's own text, expression ids and all
  (`hash(customer#52L, 42)`), so the join's right key prints with two ids
  (`hash(customer#52L, 42)#70`) — read here from the join nodes already recorded.
"""
from __future__ import annotations

import re

# A join key printed as an attribute whose own name holds an expression id: `x#52L#70`.
ALIASED_KEY = re.compile(r"#\d+L?\b.*#\d+L?\)?$")
COLUMN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)#\d+")


def _keys(text: str) -> list[str]:
    """`List(a#1L, b#2)` → the keys' texts (a join key list as Spark prints it)."""
    inner = text[5:-1] if text.startswith("List(") and text.endswith(")") else text
    depth, start, out = 0, 0, []
    for i, char in enumerate(inner):
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            out.append(inner[start:i].strip())
            start = i + 1
    return out + [inner[start:].strip()] if inner.strip() else out


def _column(key_text: str) -> str | None:
    found = COLUMN.search(key_text)
    return found.group(1) if found else None


def in_subquery_filters(joins: list[dict]) -> list[dict]:
    """The IN-subquery runtime filters among a plan's join nodes (pre-order): a LeftSemi
    join with one key whose right key is Spark's alias of the creation side's key."""
    found = []
    for join in joins:
        right = _keys(join.get("right_keys") or "")
        if join.get("join_type") != "LeftSemi" or len(right) != 1 or not ALIASED_KEY.search(right[0]):
            continue
        left = _keys(join.get("left_keys") or "")
        scans = join.get("scans") or {}
        applied = [s["table"] for s in scans.get("left") or [] if s.get("table")]
        found.append({"kind": "in_subquery", "table": applied[0] if applied else None,
                      "key": _column(left[0]) if left else None,
                      "creation": sorted({s["table"] for s in scans.get("right") or [] if s.get("table")}),
                      "creation_key": _column(right[0])})
    return found


FILTER_WORDS = {"bloom_filter": "a bloom filter", "in_subquery": "an IN-subquery filter"}


def runtime_filter_words(found: dict) -> str:
    """One runtime filter as a person reads it: `a bloom filter on sales.customer built
    from customers.customer`."""
    on = f"{found['table']}.{found.get('key') or '?'}" if found.get("table") else (found.get("key") or "?")
    creation = ", ".join(found.get("creation") or []) or "a side naming no table of the file"
    key = f".{found['creation_key']}" if found.get("creation_key") and len(found.get("creation") or []) == 1 else ""
    ran = {True: "", False: " (its subquery did not run)", None: ""}[found.get("ran")]
    return f"{FILTER_WORDS.get(found['kind'], found['kind'])} on {on} built from {creation}{key}{ran}"
