"""The query of a case, as Spark gets it: the join (DataFrame API or SQL, hints and all)
over the generated tables, and the frame that counts and checksums its result."""
from __future__ import annotations

from harness.core.vocab import JOIN_TYPES, SQL_JOIN, THEN, THEN_VIEW
from harness.scenario.tables import as_hint_list, hint_name
from harness.spark.case_scope import CaseScope

CHECKSUM_MOD = 1 << 64


def condition_text(join: dict) -> str:
    """The join condition as Spark SQL over the aliases `l` and `r` (empty: none)."""
    conditions = []
    for pair in join.get("on", []):
        left_col, right_col = (pair, pair) if isinstance(pair, str) else pair
        conditions.append(f"l.`{left_col}` = r.`{right_col}`")
    if "condition" in join:
        conditions.append(f"({join['condition']})")
    return " AND ".join(conditions)


def sql_text(join: dict) -> str:
    hints = [f"{hint_name(h)}(l)" for h in as_hint_list(join.get("hints", {}).get("left"))]
    hints += [f"{hint_name(h)}(r)" for h in as_hint_list(join.get("hints", {}).get("right"))]
    hint_text = f"/*+ {', '.join(hints)} */ " if hints else ""
    condition = condition_text(join)
    on_text = f" ON {condition}" if condition else ""
    join_type = JOIN_TYPES[join.get("type", "inner")]
    return f"SELECT {hint_text}* FROM {join['left']} l {SQL_JOIN[join_type]} {join['right']} r{on_text}"


def build_query(spark, scope: CaseScope, join: dict, tables: dict):
    joined = _join_query(spark, scope, join, tables)
    if THEN not in join:
        return joined
    # a stream's further stateful operator (`stream.then`), over the join; sql_guard checked it
    scope.register_view(THEN_VIEW, joined)
    return spark.sql(join[THEN])


def _join_query(spark, scope: CaseScope, join: dict, tables: dict):
    from pyspark.sql import functions as F

    if "sql" in join:  # harness.spark.sql_guard checked it before any case of the scenario ran
        for name, df in tables.items():
            scope.register_view(name, df)
        return spark.sql(join["sql"])
    if join.get("api", "dataframe") == "sql":
        for name in {join["left"], join["right"]}:
            scope.register_view(name, tables[name])
        return spark.sql(sql_text(join))
    left = tables[join["left"]].alias("l")
    right = tables[join["right"]].alias("r")
    for hint in as_hint_list(join.get("hints", {}).get("left")):
        left = left.hint(hint_name(hint))
    for hint in as_hint_list(join.get("hints", {}).get("right")):
        right = right.hint(hint_name(hint))
    join_type = JOIN_TYPES[join.get("type", "inner")]
    condition = condition_text(join)
    if not condition:
        return left.crossJoin(right) if join_type == "cross" else left.join(right, how=join_type)
    return left.join(right, F.expr(condition), join_type)


def checksum_frame(query):
    """count(*) and an order-independent checksum over every output column. Hashing all
    columns keeps them all alive, so column pruning cannot change the planned join.
    Built from SQL text: two DataFrame calls instead of one JVM round trip per column."""
    names = [f"c{i}" for i in range(len(query.columns))]
    row_hash = f"CAST(xxhash64({', '.join(names)}) AS DECIMAL(38,0))"
    return query.toDF(*names).selectExpr("count(1) AS rows", f"sum({row_hash}) AS hash_sum")


def checksum_text(hash_sum) -> str:
    return f"{int(hash_sum or 0) % CHECKSUM_MOD:016x}"
