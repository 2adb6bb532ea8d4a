"""False alarms of the reference over generated queries: random compositions of the verified
list's scalar entries (nested up to DEPTH, over columns of every type holding edge values),
each run by Spark and, where the gate lets it through, by DuckDB through the very path a
case takes (harness.observe.reference: gate, translation, Arrow, typed answer, multiset
comparison). A query both engines answer differently is a false alarm unless Spark is
wrong; each is printed for a person to judge.

    python bench/bench_reference_alarms.py [--queries N] [--seed S] [--ansi on|off] [--zone Z]

The verification suite proves each entry alone; this measures what it cannot: entries
composed, with the casts Spark inserts between them."""
from __future__ import annotations

import argparse
import collections
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.observe import reference, reference_gate as gate, reference_verify as suite  # noqa: E402
from harness.spark.expression_walk import nodes_of  # noqa: E402

COLUMNS = {"i": "int", "b": "bigint", "x": "double", "m": "decimal(10,2)", "s": "string", "d": "date",
           "t": "timestamp", "f": "boolean"}
ROWS = 300
DEPTH = 3


def table_sql(rng: random.Random) -> str:
    rows = []
    for i in range(ROWS):
        values = [str(i)]
        for kind in COLUMNS.values():
            family = gate.family(kind)
            pick = rng.choice(["NULL"] + suite.EDGES[family])
            values.append(f"CAST({pick} AS {kind})")
        rows.append("(" + ", ".join(values) + ")")
    return f"SELECT * FROM VALUES {', '.join(rows)} AS gen(id, {', '.join(COLUMNS)})"


def output_types(spark, entries: list[dict]) -> list[tuple[dict, str, str]]:
    """(entry, template, output family) for every scalar template, its type read from Spark."""
    out = []
    for entry in entries:
        if entry.get("kind") == "aggregate" or "OVER" in " ".join(entry["sql"]).upper():
            continue
        columns = suite.column_types(entry)
        if any(suite.source_type(c) not in suite.EDGES for c in columns):
            continue
        concrete = suite.concrete_choices(columns)[0]
        spark.sql(suite.edge_sql(columns, concrete, ids={0})).createOrReplaceTempView("edges")
        for template in entry["sql"]:
            try:
                kind = spark.sql(suite.query_of(entry, template)).schema.fields[1].dataType.simpleString()
            except Exception:
                continue
            out.append((entry, template, gate.family(kind), [suite.source_type(c) for c in columns]))
    return out


def expression(rng: random.Random, want: str, producers: dict, depth: int) -> str:
    leaves = [name for name, kind in COLUMNS.items() if gate.family(kind) == want]
    if depth == 0 or not producers.get(want) or rng.random() < 0.3:
        if leaves and rng.random() < 0.8:
            return rng.choice(leaves)
        literal = rng.choice(suite.EDGES.get(want, ["NULL"]))
        return f"CAST({literal} AS {want if want != 'decimal' else 'decimal(10,2)'})"
    entry, template, _, columns = rng.choice(producers[want])
    args = [f"({expression(rng, gate.family(c), producers, depth - 1)})" for c in columns]
    return template.format(*args)


def run(queries: int, seed: int, ansi: str, zone: str) -> int:
    from harness.core.options import RunOptions
    from harness.spark.session import get_session
    spark = get_session(RunOptions()).spark
    spark.sparkContext.setLogLevel("OFF")
    spark.conf.set("spark.sql.ansi.enabled", "true" if ansi == "on" else "false")
    spark.conf.set("spark.sql.session.timeZone", zone)
    rng = random.Random(seed)
    verified = gate.verified_list()
    usable = [e for e in verified.data["entries"] if gate.verified_here(e, spark.version, ansi == "on", zone)]
    producers = collections.defaultdict(list)
    for item in output_types(spark, usable):
        producers[item[2]].append(item)
    gen = spark.sql(table_sql(rng)).localCheckpoint()
    gen.createOrReplaceTempView("gen")
    arrow = reference.arrow_of(gen)
    duck = reference.engine()
    counts: collections.Counter = collections.Counter()
    alarms = []
    started = time.perf_counter()
    for _ in range(queries):
        want = rng.choice(["boolean", "int", "bigint", "double", "decimal", "string", "date"])
        text = f"SELECT id, {expression(rng, want, producers, DEPTH)} AS r FROM gen"
        try:
            frame = spark.sql(text)
            spark_table = reference.arrow_of(frame.toDF("k", "r"))
        except Exception:
            counts["Spark refused the query (an ANSI error)"] += 1
            continue
        refusal = reference.gate_refusal(spark, text, nodes_of(frame._jdf.queryExecution().analyzed()))
        if refusal:
            counts["not compared: " + (refusal.expression or refusal.why)[:60]] += 1
            continue
        try:
            duck.use_tables({"gen": arrow})
            duck.con.execute("SET TimeZone = ?", [zone])
            types = [f.dataType.simpleString() for f in frame.schema.fields]
            duck_table = duck.run(reference.typed_sql(reference.translate(text), types, 10_000), 60)
        except Exception:
            counts["not compared: DuckDB refused"] += 1
            continue
        only_spark, only_duck = reference.row_differences(reference.arrow_rows(spark_table),
                                                          reference.arrow_rows(duck_table))
        if only_spark or only_duck:
            counts["compared: DIFFER"] += 1
            alarms.append((text, reference.shown(only_spark)[:2], reference.shown(only_duck)[:2]))
        else:
            counts["compared: agree"] += 1
    seconds = time.perf_counter() - started
    print(f"Spark {spark.version}, ANSI {ansi}, {zone}: {queries} generated queries over {ROWS} rows of edge "
          f"values in {seconds:.0f} s (seed {seed})")
    for what, n in counts.most_common():
        print(f"  {what}: {n}")
    compared = counts["compared: agree"] + counts["compared: DIFFER"]
    print(f"false-alarm candidates: {len(alarms)} of {compared} compared ({compared * ROWS:,} expression x row cases)")
    for text, spark_rows, duck_rows in alarms[:10]:
        print(f"  {text}\n    Spark only {spark_rows}; DuckDB only {duck_rows}")
    return 1 if alarms else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ansi", default="off", choices=("on", "off"))
    parser.add_argument("--zone", default="America/Los_Angeles")
    args = parser.parse_args()
    sys.exit(run(args.queries, args.seed, args.ansi, args.zone))
