"""A team's workload at size (`make bench-workload`; not part of the timed tests).

Generates (seeded, the same every run) a shared catalog of 28 statistics-only tables
(three date-partitioned facts of 365 daily partitions, dimensions with snowflaked
sub-dimensions, column statistics for CBO) and QUERIES query files over it (default
1,000): each a fact joined along 2 to 20 of its foreign keys and its dimensions' own keys
(star shapes, and snowflake shapes reaching sub-dimensions), filtered on the partition
column (the scan prunes) and on a dimension, aggregated; CBO on for a third of them.

Then, on the installed Spark, with 2 pytest-xdist workers:
1. the workload run from nothing (`--fresh`): wall time, per query, and the largest
   resident memory of one process (a worker's JVM or Python, from the kernel's
   accounting of the waited children);
2. the same run again, nothing changed: every observation reused from the store;
3. the floor: each query planned once in one plain PySpark session over the same
   catalog tables (created by the harness's own statistics-only code), `executedPlan`
   timed per query — what any tool that plans the query pays.

`--queries N` and `--keep DIR` (keep the generated workload there) change the run.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DAYS = 365
FIRST_DAY = 2451545  # date_sk of 2000-01-01 in TPC-DS numbering

# table → (rows, size in bytes, {column: (type, distinct, min, max)})
DIMENSIONS = {
    "date_dim": (73049, 12 << 20, {"d_date_sk": ("int", 73049, 2415022, 2488070), "d_month_sk": ("int", 2400, 1, 2400),
                                   "d_year": ("int", 201, 1900, 2100), "d_dow": ("int", 7, 0, 6)}),
    "month_dim": (2400, 80 << 10, {"mo_month_sk": ("int", 2400, 1, 2400), "mo_quarter_sk": ("int", 800, 1, 800),
                                   "mo_name": ("string", 12, None, None)}),
    "quarter_dim": (800, 24 << 10, {"qu_quarter_sk": ("int", 800, 1, 800), "qu_name": ("string", 4, None, None)}),
    "item": (204000, 58 << 20, {"i_item_sk": ("int", 204000, 1, 204000), "i_brand_sk": ("int", 1000, 1, 1000),
                                "i_price": ("double", 9000, 0.09, 99.99)}),
    "brand": (1000, 40 << 10, {"b_brand_sk": ("int", 1000, 1, 1000), "b_category_sk": ("int", 50, 1, 50),
                               "b_name": ("string", 1000, None, None)}),
    "category": (50, 4 << 10, {"cat_category_sk": ("int", 50, 1, 50), "cat_department_sk": ("int", 10, 1, 10),
                               "cat_name": ("string", 50, None, None)}),
    "department": (10, 1 << 10, {"dep_department_sk": ("int", 10, 1, 10), "dep_name": ("string", 10, None, None)}),
    "customer": (12000000, 2200 << 20, {"c_customer_sk": ("int", 12000000, 1, 12000000),
                                        "c_address_sk": ("int", 6000000, 1, 6000000),
                                        "c_demo_sk": ("int", 1920800, 1, 1920800),
                                        "c_birth_year": ("int", 69, 1924, 1992)}),
    "customer_address": (6000000, 900 << 20, {"ca_address_sk": ("int", 6000000, 1, 6000000),
                                              "ca_region_sk": ("int", 400, 1, 400),
                                              "ca_city": ("string", 980, None, None)}),
    "region": (400, 16 << 10, {"r_region_sk": ("int", 400, 1, 400), "r_country_sk": ("int", 40, 1, 40),
                               "r_name": ("string", 400, None, None)}),
    "country": (40, 2 << 10, {"co_country_sk": ("int", 40, 1, 40), "co_name": ("string", 40, None, None)}),
    "customer_demographics": (1920800, 80 << 20, {"cd_demo_sk": ("int", 1920800, 1, 1920800),
                                                  "cd_gender": ("string", 2, None, None),
                                                  "cd_education": ("string", 7, None, None)}),
    "store": (1002, 300 << 10, {"s_store_sk": ("int", 1002, 1, 1002), "s_city_sk": ("int", 300, 1, 300),
                                "s_floor_space": ("int", 900, 5000000, 9999999)}),
    "city": (300, 12 << 10, {"ci_city_sk": ("int", 300, 1, 300), "ci_state_sk": ("int", 50, 1, 50),
                             "ci_name": ("string", 300, None, None)}),
    "state": (50, 2 << 10, {"st_state_sk": ("int", 50, 1, 50), "st_name": ("string", 50, None, None)}),
    "web_site": (54, 20 << 10, {"web_site_sk": ("int", 54, 1, 54), "web_city_sk": ("int", 30, 1, 300),
                                "web_class": ("string", 3, None, None)}),
    "warehouse": (20, 4 << 10, {"w_warehouse_sk": ("int", 20, 1, 20), "w_city_sk": ("int", 20, 1, 300),
                                "w_sq_ft": ("int", 20, 50000, 1000000)}),
    "promotion": (1500, 300 << 10, {"p_promo_sk": ("int", 1500, 1, 1500), "p_channel_sk": ("int", 8, 1, 8),
                                    "p_cost": ("double", 1400, 0.0, 1000.0)}),
    "channel": (8, 1 << 10, {"ch_channel_sk": ("int", 8, 1, 8), "ch_name": ("string", 8, None, None)}),
    "household": (7200, 300 << 10, {"hd_demo_sk": ("int", 7200, 1, 7200), "hd_income_band_sk": ("int", 20, 1, 20),
                                    "hd_dep_count": ("int", 10, 0, 9)}),
    "income_band": (20, 1 << 10, {"ib_income_band_sk": ("int", 20, 1, 20), "ib_lower": ("int", 20, 0, 190001)}),
    "ship_mode": (20, 2 << 10, {"sm_ship_mode_sk": ("int", 20, 1, 20), "sm_carrier_sk": ("int", 10, 1, 10),
                                "sm_type": ("string", 6, None, None)}),
    "carrier": (10, 1 << 10, {"car_carrier_sk": ("int", 10, 1, 10), "car_name": ("string", 10, None, None)}),
    "reason": (65, 4 << 10, {"re_reason_sk": ("int", 65, 1, 65), "re_desc": ("string", 65, None, None)}),
    "time_dim": (86400, 5 << 20, {"t_time_sk": ("int", 86400, 0, 86399), "t_hour": ("int", 24, 0, 23)}),
}
# dimension → [(its key column, sub-dimension, the sub-dimension's key)]: the snowflake
SNOWFLAKE = {
    "date_dim": [("d_month_sk", "month_dim", "mo_month_sk")],
    "month_dim": [("mo_quarter_sk", "quarter_dim", "qu_quarter_sk")],
    "item": [("i_brand_sk", "brand", "b_brand_sk")],
    "brand": [("b_category_sk", "category", "cat_category_sk")],
    "category": [("cat_department_sk", "department", "dep_department_sk")],
    "customer": [("c_address_sk", "customer_address", "ca_address_sk"),
                 ("c_demo_sk", "customer_demographics", "cd_demo_sk")],
    "customer_address": [("ca_region_sk", "region", "r_region_sk")],
    "region": [("r_country_sk", "country", "co_country_sk")],
    "store": [("s_city_sk", "city", "ci_city_sk")],
    "web_site": [("web_city_sk", "city", "ci_city_sk")],
    "warehouse": [("w_city_sk", "city", "ci_city_sk")],
    "city": [("ci_state_sk", "state", "st_state_sk")],
    "promotion": [("p_channel_sk", "channel", "ch_channel_sk")],
    "household": [("hd_income_band_sk", "income_band", "ib_income_band_sk")],
    "ship_mode": [("sm_carrier_sk", "carrier", "car_carrier_sk")],
}
# fact → (rows, bytes, its outlet dimension, {foreign key: (dimension, its key)})
FACTS = {
    "store_sales": (2880000000, 390 << 30, "store", "ss"),
    "web_sales": (720000000, 98 << 30, "web_site", "ws"),
    "catalog_sales": (1440000000, 196 << 30, "warehouse", "cs"),
}
FACT_KEYS = [("date_sk", "date_dim", "d_date_sk"), ("item_sk", "item", "i_item_sk"),
             ("customer_sk", "customer", "c_customer_sk"), ("outlet_sk", None, None),
             ("promo_sk", "promotion", "p_promo_sk"), ("hdemo_sk", "household", "hd_demo_sk"),
             ("ship_mode_sk", "ship_mode", "sm_ship_mode_sk"), ("reason_sk", "reason", "re_reason_sk"),
             ("time_sk", "time_dim", "t_time_sk")]
KEY_OF = {"store": "s_store_sk", "web_site": "web_site_sk", "warehouse": "w_warehouse_sk"}


def _column_stats(kind: str, distinct: int, low, high, rows: int) -> dict:
    stats = {"distinct": distinct, "nulls": 0, "avg_len": 4 if kind == "int" else 8,
             "max_len": 4 if kind == "int" else 20}
    if low is not None:
        stats.update({"min": low, "max": high})
    return stats


def catalog() -> dict:
    tables = {}
    for name, (rows, size, columns) in DIMENSIONS.items():
        tables[name] = {"schema": {c: kind for c, (kind, *_) in columns.items()},
                        "stats": {"size_bytes": size, "rows": rows,
                                  "columns": {c: _column_stats(kind, d, lo, hi, rows)
                                              for c, (kind, d, lo, hi) in columns.items()}}}
    for name, (rows, size, outlet, prefix) in FACTS.items():
        schema = {f"{prefix}_{key}": "int" for key, _, _ in FACT_KEYS}
        schema[f"{prefix}_amount"] = "decimal(7,2)"
        columns = {}
        for key, dim, dim_key in FACT_KEYS:
            dim = dim or outlet
            dim_columns = DIMENSIONS[dim][2]
            kind, distinct, low, high = dim_columns[dim_key or KEY_OF[outlet]]
            if key == "date_sk":
                distinct, low, high = DAYS, FIRST_DAY, FIRST_DAY + DAYS - 1
            columns[f"{prefix}_{key}"] = _column_stats("int", distinct, low, high, rows)
        columns[f"{prefix}_amount"] = {"distinct": 1000000, "nulls": 0, "min": 0.0, "max": 20000.0,
                                       "avg_len": 8, "max_len": 8}
        per_day, rows_per_day = size // DAYS, rows // DAYS  # the partitions add up to the table
        size, rows = per_day * DAYS, rows_per_day * DAYS
        tables[name] = {"schema": schema, "stats": {"size_bytes": size, "rows": rows, "columns": columns},
                        "partition_by": [f"{prefix}_date_sk"],
                        "partition_values": [{"values": [FIRST_DAY + d], "size_bytes": per_day,
                                              "rows": rows_per_day} for d in range(DAYS)]}
    return {"description": "A generated TPC-DS-like catalog (bench/bench_workload.py): three facts of "
                           f"{DAYS} daily partitions and {len(DIMENSIONS)} dimensions, statistics only.",
            "tables": tables}


def _filter(rng: random.Random, alias: str, table: str) -> str | None:
    columns = DIMENSIONS[table][2]
    candidates = [(c, spec) for c, spec in columns.items() if not c.endswith("_sk")]
    if not candidates:
        return None
    column, (kind, distinct, low, high) = rng.choice(candidates)
    if kind == "string":
        return f"{alias}.{column} = 'v{rng.randrange(distinct)}'"
    if kind == "double":
        return f"{alias}.{column} < {round(low + (high - low) * rng.random() * 0.2, 2)}"
    return f"{alias}.{column} BETWEEN {low} AND {low + max(1, (high - low) // rng.choice((5, 20, 100)))}"


def query(rng: random.Random, index: int) -> dict:
    fact = rng.choice(list(FACTS))
    _, _, outlet, prefix = FACTS[fact]
    joins_wanted = rng.randint(2, 20)
    star = rng.random() < 0.35
    edges = []  # (left alias, left column, table, key)
    for key, dim, dim_key in FACT_KEYS:
        edges.append(("f", f"{prefix}_{key}", dim or outlet, dim_key or KEY_OF[outlet]))
    joined, clauses, aliases = [], [], {}
    available = list(edges)
    while available and len(joined) < joins_wanted:
        edge = available.pop(rng.randrange(len(available)))
        left, column, table, key = edge
        alias = f"t{len(joined) + 1}"
        aliases[alias] = table
        joined.append(alias)
        clauses.append(f"JOIN {table} {alias} ON {left}.{column} = {alias}.{key}")
        if not star:
            available += [(alias, sub_column, sub_table, sub_key)
                          for sub_column, sub_table, sub_key in SNOWFLAKE.get(table, [])]
    first_day = FIRST_DAY + rng.randrange(DAYS - 31)
    span = rng.choice((0, 6, 30))
    where = [f"f.{prefix}_date_sk BETWEEN {first_day} AND {first_day + span}"]
    for alias in rng.sample(joined, min(len(joined), rng.randint(1, 3))):
        condition = _filter(rng, alias, aliases[alias])
        if condition:
            where.append(condition)
    group = rng.choice(joined)
    group_column = next(c for c in DIMENSIONS[aliases[group]][2] if not c.endswith("_sk")) \
        if any(not c.endswith("_sk") for c in DIMENSIONS[aliases[group]][2]) else next(iter(DIMENSIONS[aliases[group]][2]))
    sql = (f"SELECT {group}.{group_column}, sum(f.{prefix}_amount) AS amount FROM {fact} f "
           + " ".join(clauses) + " WHERE " + " AND ".join(where) + f" GROUP BY {group}.{group_column}")
    data = {"id": f"wq{index:04d}",
            "description": f"generated {'star' if star else 'snowflake'} query: {fact} and {len(joined)} joins",
            "tags": ["bench_workload", "star" if star else "snowflake"],
            "catalog": "catalog.yaml", "join": {"sql": sql}}
    if index % 3 == 0:
        data["spark_conf"] = {"spark.sql.cbo.enabled": True, "spark.sql.cbo.joinReorder.enabled": True}
    data["expect"] = {}
    return data


def generate(folder: Path, count: int, seed: int = 7) -> list[int]:
    """The workload's files in `folder` (a `scenarios` tree); the join count of each query."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "catalog.yaml").write_text(yaml.safe_dump(catalog(), sort_keys=False, width=200))
    counts = []
    for index in range(count):
        data = query(rng, index)
        counts.append(data["join"]["sql"].count(" JOIN "))
        (folder / f"{data['id']}.yaml").write_text(yaml.safe_dump(data, sort_keys=False, width=4000))
    return counts


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _peak_kib(pid: int) -> tuple[str, int]:
    """(the process's program, its peak resident KiB so far: VmHWM)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        name = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace").rsplit("/", 1)[-1]
    except OSError:
        return "", 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return name, int(line.split()[1])
    return name, 0


def run_suite(folder: Path, report_dir: Path, fresh: bool, workers: int = 2) -> tuple[float, dict, str]:
    """(wall seconds, program → largest peak resident KiB of one such process, pytest's
    last line): the run's process tree sampled every half second."""
    command = [sys.executable, "-m", "pytest", str(folder), "-p", "no:cacheprovider", "-q", "-n", str(workers),
               "--report-dir", str(report_dir)] + (["--fresh"] if fresh else [])
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peaks: dict[str, int] = {}
    while process.poll() is None:
        for pid in _descendants(process.pid):
            name, kib = _peak_kib(pid)
            if name:
                peaks[name] = max(peaks.get(name, 0), kib)
        time.sleep(0.5)
    out, err = process.communicate()
    wall = time.perf_counter() - start
    last = (out.strip().splitlines() or ["(no output)"])[-1]
    if process.returncode not in (0, 1):
        print(out[-3000:], err[-3000:])
    return wall, peaks, last


FLOOR_SCRIPT = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from harness.scenario.model import load_scenario
from harness.spark.session import get_session
from harness.spark import datagen
spark = get_session().spark
folder = Path({folder!r})
files = sorted(p for p in folder.glob("wq*.yaml"))
made = {{}}
times = []
for path in files:
    data = load_scenario(path).data
    sql = data["join"]["sql"]
    for name, spec in data["tables"].items():
        if name not in made:
            table = datagen.catalog_identifier(spark, datagen.catalog_table_name(0, name, spec), spec)
            datagen._catalog_table(spark, table, None, None, spec)
            spark.sql(f"CREATE OR REPLACE TEMP VIEW {{name}} AS SELECT * FROM {{table}}")
            made[name] = table
    conf = data.get("spark_conf") or {{}}
    for key, value in conf.items():
        spark.conf.set(key, str(value).lower())
    start = time.perf_counter()
    spark.sql(sql)._jdf.queryExecution().executedPlan()
    times.append(time.perf_counter() - start)
    for key in conf:
        spark.conf.unset(key)
print(json.dumps(times))
"""


def plan_floor(folder: Path) -> list[float]:
    script = FLOOR_SCRIPT.format(root=str(ROOT), folder=str(folder))
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the floor's plain session failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--keep", default=None, help="generate the workload into this folder and keep it")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (default 2)")
    parser.add_argument("--no-floor", action="store_true", help="leave out the plain session's planning floor")
    args = parser.parse_args()
    import pyspark
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-workload-"))
    folder = base / "scenarios" / "workload"
    if folder.exists():
        shutil.rmtree(folder)
    counts = generate(folder, args.queries)
    catalog_bytes = (folder / "catalog.yaml").stat().st_size
    query_bytes = sum(p.stat().st_size for p in folder.glob("wq*.yaml"))
    print(f"Spark {pyspark.__version__}, {os.cpu_count()} cores: {len(counts)} queries of {min(counts)} to "
          f"{max(counts)} joins (median {statistics.median(counts):g}) over one catalog of "
          f"{len(DIMENSIONS) + len(FACTS)} tables ({catalog_bytes / 1024:.0f} KiB; the query files "
          f"{query_bytes / 1024:.0f} KiB together)")
    try:
        measure(folder, base / "reports", len(counts), args)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


def measure(folder: Path, reports: Path, queries: int, args) -> None:
    wall, peaks, last = run_suite(folder, reports, fresh=True, workers=args.workers)
    print(f"fresh run: {wall:.1f} s ({wall / queries * 1000:.0f} ms per query, {args.workers} workers) — {last}")
    print("  peak resident memory of one process: " + ", ".join(f"{name} {kib / 1024:.0f} MiB"
                                                              for name, kib in sorted(peaks.items()) if kib > 10240))
    wall, _, last = run_suite(folder, reports, fresh=False, workers=args.workers)
    print(f"nothing changed, rerun: {wall:.1f} s — {last}")
    if args.no_floor:
        return
    floor = plan_floor(folder)
    print(f"floor, planning alone in one plain session: {sum(floor):.1f} s for {len(floor)} queries "
          f"(median {statistics.median(floor) * 1000:.0f} ms, p95 {sorted(floor)[int(len(floor) * 0.95)] * 1000:.0f} ms,"
          f" max {max(floor) * 1000:.0f} ms per query, one core)")


if __name__ == "__main__":
    sys.exit(main())
