"""How much bulk work a selection of cases holds, read from the files alone (no Spark):
the pairs its executed nested-loop joins compare. It picks the driver JVM's compiler
(harness.plugin): the quick JIT (C1 only) runs the many short queries of a suite fastest,
the optimising one (C2) the long loops of a nested-loop join. Measured on 2 cores, Spark
4.3.0 (docs/speed.md): 400 million pairs of an inner BroadcastNestedLoopJoin took 8.6 s
under C1 and 1.8 s under C2 (full outer: 36 s and 2.6 s); the shipped suite (562 cases,
193 cross-strategy checks) took 203 s under C1 and 250–253 s under C2."""
from __future__ import annotations

from harness.scenario.tables import table_rows

# What the optimising JIT saves per nested-loop pair, and costs per item of a suite.
SECONDS_SAVED_PER_PAIR = 6.8 / 400e6
SECONDS_LOST_PER_CASE = (250 - 203) / 562  # its cross-strategy check included


def nested_loop_pairs(case, executes) -> int:
    """The pairs a case's join compares when it is a nested loop Spark executes: a join
    with no equality keys (`condition` only) between generated or literal tables, in a
    case whose expectations need its answer (`executes(case)`: a cross-strategy check
    never runs a nested loop over more pairs than its budget); 0 for an equi-join, a
    plan-only case, or inputs whose rows the file does not say."""
    join = case.join
    if case.scenario.plan_only or "sql" in join or join.get("on") or "stream" in case.scenario.data \
            or not executes(case):
        return 0
    tables = case.scenario.data["tables"]
    rows = [table_rows(tables[join[side]]) if join.get(side) in tables else None for side in ("left", "right")]
    return rows[0] * rows[1] if all(rows) else 0


def prefers_optimising_jit(cases: list, executes) -> bool:
    """True when the selection's executed nested loops save more under C2 than its cases lose."""
    pairs = sum(nested_loop_pairs(case, executes) for case in cases)
    return pairs * SECONDS_SAVED_PER_PAIR > len(cases) * SECONDS_LOST_PER_CASE
