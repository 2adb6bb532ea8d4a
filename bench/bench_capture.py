"""What capture costs (`make bench-capture`; not part of the timed tests).

A warehouse of real parquet tables is written once (a fact of 4 daily partitions, two
dimensions, and a fact of 1,000 daily partitions), then each query is captured ROUNDS
times with the self-check (the written file planned in a clone of the session) and
without it, and the median of each is printed: per query, and for the 1,000-partition
table (every partition's files listed; its statistics-only twin made with 1,000 sparse
partitions by the self-check).
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.capturing import fidelity  # noqa: E402
from harness.capturing.to_scenario import capture  # noqa: E402
from harness.spark.session import get_session  # noqa: E402

ROUNDS = 5
QUERIES = {
    "one partition": "SELECT f.amount, c.region FROM bench.ev f JOIN bench.cu c ON f.customer = c.customer "
                     "WHERE f.day = 2",
    "all partitions": "SELECT f.amount, c.region FROM bench.ev f JOIN bench.cu c ON f.customer = c.customer",
    "dynamic pruning": "SELECT f.amount, d.name FROM bench.ev f JOIN bench.days d ON f.day = d.day "
                       "WHERE d.name = 'd1'",
    "1,000 partitions, one kept": "SELECT f.amount, c.region FROM bench.ev1000 f JOIN bench.cu c "
                                  "ON f.customer = c.customer WHERE f.day = 17",
}


def warehouse(spark) -> None:
    spark.sql("CREATE DATABASE IF NOT EXISTS bench")
    spark.range(3000).selectExpr("id AS customer", "concat('r', id % 4) AS region").write.saveAsTable("bench.cu")
    spark.range(4).selectExpr("CAST(id AS INT) AS day", "concat('d', id) AS name").write.saveAsTable("bench.days")
    spark.range(60000).selectExpr("id % 3000 AS customer", "CAST(id AS DOUBLE) AS amount",
                                  "CAST(id % 4 AS INT) AS day").write.partitionBy("day").saveAsTable("bench.ev")
    spark.range(100000).selectExpr("id % 3000 AS customer", "CAST(id AS DOUBLE) AS amount",
                                   "CAST(id % 1000 AS INT) AS day").repartition(4, "day") \
        .write.partitionBy("day").saveAsTable("bench.ev1000")
    for table in ("cu", "days", "ev", "ev1000"):
        spark.sql(f"ANALYZE TABLE bench.{table} COMPUTE STATISTICS")


def timed(spark, text: str, folder: Path, checked: bool) -> float:
    original = fidelity.self_check
    if not checked:
        fidelity.self_check = lambda *args: []
    try:
        started = time.perf_counter()
        capture(text, folder / "q.yaml", spark=spark)
        return time.perf_counter() - started
    finally:
        fidelity.self_check = original


def main() -> None:
    spark = get_session().spark
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    started = time.perf_counter()
    warehouse(spark)
    print(f"Spark {spark.version}: warehouse written in {time.perf_counter() - started:.1f} s")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, text in QUERIES.items():
            timed(spark, text, folder, True)  # warm: the first plan of each table
            with_check = statistics.median(timed(spark, text, folder, True) for _ in range(ROUNDS))
            without = statistics.median(timed(spark, text, folder, False) for _ in range(ROUNDS))
            print(f"{name:28} capture {with_check:6.2f} s with the self-check, {without:6.2f} s without "
                  f"(median of {ROUNDS})")


if __name__ == "__main__":
    main()
