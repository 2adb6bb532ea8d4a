"""A statistics-only table of 10,000 partitions (PARTITIONS= another count) (`make bench-partitions`; not part of the
timed tests).

Prints: validating the scenario file; creating the table (10,000 partitions registered
in the catalog, each located at one sparse file) with the first case; planning each case
afterwards (a filter on one partition, no partition filter, a join on the partition column
that keeps every partition); the disk the table's folder occupies against the size it
replays; and `capture` of a query over the table (10,000 partitions listed, no file read).
"""
from __future__ import annotations

import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.capturing.to_scenario import capture  # noqa: E402
from harness.check.runner import run_case  # noqa: E402
from harness.scenario.model import expand, load_scenario  # noqa: E402
from harness.spark.session import get_session  # noqa: E402
from harness.spark.stats_only import table_location  # noqa: E402

PARTITIONS = int(os.environ.get("BENCH_PARTITIONS", "10000"))  # make bench-partitions PARTITIONS=1000
PARTITION_BYTES = 5_000_000_000  # 10,000 x 5 GB: a 50 TB table


def scenario_text(join_sql: str) -> str:
    first = dt.date(2000, 1, 1)
    listed = "".join(f"      - {{values: [\"{first + dt.timedelta(days=i)}\"], size_bytes: {PARTITION_BYTES}}}\n"
                     for i in range(PARTITIONS))
    return f"""\
id: bench_partitions
description: a 50 TB fact of 10,000 daily partitions
tables:
  fact:
    schema: {{k: long, v: double, day: date}}
    stats: {{size_bytes: {PARTITIONS * PARTITION_BYTES}, rows: {PARTITIONS * 50_000_000}}}
    partition_by: [day]
    partition_values:
{listed}  days:
    schema: {{day: date, name: string}}
    stats: {{size_bytes: 400000, rows: {PARTITIONS}}}
join:
  sql: {join_sql}
expect: {{}}
"""


QUERIES = {
    "one partition": "SELECT f.v, d.name FROM fact f JOIN days d ON f.k = d.name WHERE f.day = DATE'2010-06-01'",
    "no partition filter": "SELECT f.v, d.name FROM fact f JOIN days d ON f.k = d.name",
    "join on the partition column": "SELECT f.v, d.name FROM fact f JOIN days d ON f.day = d.day "
                                    "WHERE d.name = 'x'",
}


def disk_used(folder: Path) -> tuple[int, int]:
    """(bytes occupied on disk, bytes the files' lengths add up to)."""
    used = length = 0
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            stat = os.lstat(os.path.join(root, name))
            used += stat.st_blocks * 512
            length += stat.st_size if name in files else 0
    return used, length


def main() -> None:
    session = get_session()
    print(f"Spark {session.versions['spark']}, {session.master}")
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        for i, sql in enumerate(QUERIES.values()):
            path = Path(tmp) / f"q{i}.yaml"
            path.write_text(scenario_text(sql))
            started = time.perf_counter()
            cases.append(expand(load_scenario(path))[0])
            if i == 0:
                print(f"validate a file of {PARTITIONS:,} partitions: {time.perf_counter() - started:.2f} s")
        started = time.perf_counter()
        record = run_case(cases[0], session)
        assert record.status in ("observed", "passed"), record.message
        print(f"first case (table created: {PARTITIONS:,} partitions registered, each a sparse file, statistics): "
              f"{time.perf_counter() - started:.2f} s")
        for (label, _), case in zip(QUERIES.items(), cases):
            times = []
            for _ in range(5):
                started = time.perf_counter()
                record = run_case(case, session)
                times.append(time.perf_counter() - started)
            size = (record.observed.estimates or [{}])[0].get("left", {}).get("size_in_bytes")
            print(f"plan a case, {label}: median {statistics.median(times):.3f} s "
                  f"(fact side estimated {size:,} B; {record.observed.initial.joins[0]['strategy']})")
        spark = session.spark
        table = next(t for t in spark.catalog.listTables() if t.name.startswith("fact_"))
        used, length = disk_used(Path(table_location(spark, table.name)))
        print(f"disk: the table's folder replays {length / 1e12:.1f} TB in {used / 1024:,.0f} KiB "
              f"({PARTITIONS:,} partitions, one sparse file each)")
        spark.sql("CREATE DATABASE IF NOT EXISTS prod_bench")
        started = time.perf_counter()
        out = capture(f"SELECT * FROM {table.name} f JOIN {table.name} g ON f.k = g.k WHERE f.day = DATE'2001-01-01'",
                      Path(tmp) / "captured.yaml", source="bench.sql")
        print(f"capture of a query over the {PARTITIONS:,}-partition table: {time.perf_counter() - started:.2f} s "
              f"({out.stat().st_size / 1024:,.0f} KiB written)")


if __name__ == "__main__":
    main()
