"""Ternary logic partitioning (SQLancer's TLP) of a join's answer, inside Spark: where no
independent engine can answer the query (a Spark-only function, a cast whose semantics
differ), the rows of `Q WHERE p`, `Q WHERE NOT p` and `Q WHERE p IS NULL` together must be
Q's rows. Each partition is optimized on its own — the predicate pushed through the join,
its aggregates and subqueries — so a rewrite that loses or invents rows under one of them
shows.

The answer's checksum is a sum of per-row hashes, so the partitions' counts and checksums
add up to Q's exactly when the rows do: nothing is collected, and three partitions cost one
Spark action (a union of their three aggregates), on the session and inputs that gave Q's
answer (the cross-strategy check's; judged as an item of its own, harness.check.partitions)."""
from __future__ import annotations

from harness.observe.reference_gate import PICKS_ROWS  # each partition runs the query again: rows it picks could differ
from harness.spark.query import CHECKSUM_MOD, checksum_text

# Column types whose values xxhash64 takes (a map cannot be hashed).
UNHASHABLE = ("map<",)


# Expressions whose value differs in each run of the query: each partition runs it again.
DIFFERS_EACH_RUN = ("Rand", "Randn", "Uuid", "Shuffle", "MonotonicallyIncreasingID", "SparkPartitionID",
                    "InputFileName", "InputFileBlockStart", "InputFileBlockLength")


def why_not(analysed_tree: list) -> str | None:
    """Why the partitions cannot rightly add up to the query's answer, read from Spark's
    analysed plan of the query (None: they must)."""
    from harness.spark.sql_trees import nodes
    for node in nodes(analysed_tree):
        simple = node["class"].rsplit(".", 1)[-1]
        if simple in PICKS_ROWS:
            return "a LIMIT, OFFSET or sample picks rows each partition may pick otherwise"
        if simple in DIFFERS_EACH_RUN:
            return f"{simple} gives another value each time a partition runs the query"
    return None


def key_column(columns: list, join: dict) -> int | None:
    """The output column the predicate is on: the join's first key where the answer has it,
    else the first column that can be hashed (None: no such column)."""
    names = [name.lower() for name, _ in columns]
    for pair in join.get("on") or []:
        left = (pair if isinstance(pair, str) else pair[0]).lower()
        if left in names:
            return names.index(left)
    return next((i for i, (_, kind) in enumerate(columns) if not kind.startswith(UNHASHABLE)), None)


def predicate(column: str) -> str:
    """p over one column: true for about half the values, false for the rest, NULL where the
    column is NULL (so all three partitions hold rows)."""
    return f"IF(`{column}` IS NULL, CAST(NULL AS BOOLEAN), pmod(xxhash64(`{column}`), 2) = 0)"


PARTS = (("p", "{p}"), ("NOT p", "NOT ({p})"), ("p IS NULL", "({p}) IS NULL"))


def partition(query, columns: list, join: dict, rows: int, checksum: str) -> dict | None:
    """The three partitions' answers against Q's (`rows`, `checksum`): a record, or None
    when no column can carry the predicate."""
    at = key_column(columns, join)
    if at is None:
        return None
    names = [f"c{i}" for i in range(len(columns))]
    frame = query.toDF(*names)
    p = predicate(names[at])
    aggregates = None
    for label, condition in PARTS:
        part = frame.where(condition.format(p=p)).selectExpr(
            f"'{label}' AS part", "count(1) AS rows",
            f"sum(CAST(xxhash64({', '.join(names)}) AS DECIMAL(38,0))) AS hash_sum")
        aggregates = part if aggregates is None else aggregates.unionAll(part)
    found = {row["part"]: (int(row["rows"]), int(row["hash_sum"] or 0)) for row in aggregates.collect()}
    parts = [{"where": label, "rows": found[label][0], "checksum": checksum_text(found[label][1])}
             for label, _ in PARTS]
    total_rows = sum(part["rows"] for part in parts)
    total_checksum = checksum_text(sum(found[label][1] for label, _ in PARTS) % CHECKSUM_MOD)
    return {"column": columns[at][0], "predicate": f"p = {predicate(columns[at][0])}", "parts": parts,
            "rows": total_rows, "checksum": total_checksum, "query_rows": rows, "query_checksum": checksum,
            "agrees": (total_rows, total_checksum) == (rows, checksum)}


def words(result: dict) -> str:
    """The partitions against Q, in one line."""
    parts = " + ".join(f"{part['rows']:,} ({part['where']})" for part in result["parts"])
    if result["agrees"]:
        return (f"ternary partitioning on {result['column']} agrees: {parts} = {result['query_rows']:,} rows, "
                "checksums add up")
    return (f"ternary partitioning on {result['column']} does not add up: {parts} = {result['rows']:,} rows / "
            f"{result['checksum']}, the query gives {result['query_rows']:,} rows / {result['query_checksum']}")
