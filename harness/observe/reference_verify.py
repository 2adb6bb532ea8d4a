"""The verification suite of the reference's translations: each entry of the verified list
(harness.observe.reference_gate) is evaluated over edge values of its input types by
Spark and by DuckDB through the very path a case's answer takes (sqlglot's translation,
the rows handed over as Arrow, the answer typed by Spark's schema, the multiset
comparison with its float tolerance), in each ANSI mode and session time zone asked for.

An entry agrees in a configuration when every edge row that Spark answers is answered
the same by DuckDB. A row Spark refuses (an ANSI error) is no case: such a query errors
in Spark and is never compared. A row DuckDB refuses is safe (the reference says `not
compared` for a query that fails there) and is counted apart."""
from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field

from harness.observe import reference

EDGE_ZONE = "America/Los_Angeles"  # daylight saving: a gap on 2024-03-10, an overlap on 2024-11-03
ZONES = ("UTC", EDGE_ZONE)
MAX_ROWS = 1200

_DOUBLES = ["0.0D", "-0.0D", "1.0D", "-1.0D", "1.5D", "-1.5D", "2.5D", "-2.5D", "0.125D", "0.1D", "3.0E-5D",
            "123456.789D", "1.0E15D", "1.0E308D", "4.9E-324D", "CAST('NaN' AS DOUBLE)",
            "CAST('Infinity' AS DOUBLE)", "CAST('-Infinity' AS DOUBLE)"]
EDGES = {
    "boolean": ["true", "false"],
    "tinyint": ["0Y", "1Y", "-1Y", "7Y", "-7Y", "100Y", "-128Y", "127Y"],
    "smallint": ["0S", "1S", "-1S", "7S", "-7S", "1000S", "-32768S", "32767S"],
    "int": ["0", "1", "-1", "2", "7", "-7", "12", "31", "100", "2147483647", "-2147483648"],
    "bigint": ["0L", "1L", "-1L", "7L", "-7L", "86400L", "4294967296L", "9223372036854775807L",
               "-9223372036854775808L"],
    "double": _DOUBLES,
    "float": [d[:-1] + "F" if d.endswith("D") else d.replace("AS DOUBLE", "AS FLOAT") for d in _DOUBLES
              if "308" not in d and "324" not in d],
    "decimal": ["0", "0.01", "-0.01", "1.25", "2.50", "-2.55", "12", "0.005", "99999999.99", "-99999999.99"],
    "string": ["''", "' '", "'a'", "'abc'", "' a '", "'A'", "'Ab'", "'ß'", "'İ'", "'ΣΑΣ'", "'é'",
               "'e\u0301'", "'a\\\\b'", "'a_b'", "'a%b'", "'.*'", "'['", "'12'", "' 12 '", "'1.5'", "'-0'",
               "'2024-02-01'", "'2024-2-1'", "'true'", "'NaN'", "'中文'", "'😀'", "'a,b'", "'\\t'"],
    "date": ["DATE'0001-01-01'", "DATE'9999-12-31'", "DATE'1970-01-01'", "DATE'2024-02-29'",
             "DATE'2023-02-28'", "DATE'2024-03-10'", "DATE'2024-11-03'", "DATE'2024-12-31'",
             "DATE'1900-03-01'", "DATE'2024-01-31'", "DATE'2021-01-03'", "DATE'1582-10-10'"],
    "timestamp": ["TIMESTAMP'1970-01-01 00:00:00'", "TIMESTAMP'2024-03-10 02:30:00'",
                  "TIMESTAMP'2024-11-03 01:30:00'", "TIMESTAMP'2024-02-29 23:59:59.999999'",
                  "TIMESTAMP'2024-01-31 12:00:00'", "TIMESTAMP'2023-12-31 23:00:00'",
                  "TIMESTAMP'1900-01-01 00:00:00'", "TIMESTAMP'9999-12-31 23:59:59'"],
    "binary": ["X''", "X'00'", "X'616263'", "X'FF'"],
}
# The concrete type a column of each family takes in the edge table.
CONCRETE = {"decimal": ["decimal(10,2)", "decimal(38,6)"]}


@dataclass
class Outcome:
    """One entry in one configuration."""
    cases: int = 0            # edge rows compared
    refused_by_spark: int = 0
    refused_by_duckdb: int = 0
    differed: list = field(default_factory=list)   # (template, inputs, Spark's, DuckDB's)
    error: str | None = None  # the entry could not be evaluated at all

    @property
    def agrees(self) -> bool:
        return self.error is None and not self.differed and self.cases > 0


def source_type(entry_input: str) -> str:
    """The column type an entry input is fed as: `timestamp<-date` is fed dates."""
    return entry_input.split("<-")[-1]


def column_types(entry: dict) -> list[str]:
    """The edge table's column types: the entry's inputs, and for an entry named by one
    type whatever its arity (coalesce, IN, CASE), that type for each further column a
    template reads."""
    used = max([int(i) + 1 for t in entry["sql"] for i in re.findall(r"\{(\d+)\}", t)] + [0])
    inputs = list(entry["inputs"])
    return inputs + [inputs[-1]] * (used - len(inputs)) if inputs else inputs


def edge_rows(inputs: list[str]) -> list[tuple]:
    """(id, group of three, group of seven, literal per input) rows: every combination of
    edge values (NULL first), thinned evenly where there are more than MAX_ROWS."""
    columns = [["NULL"] + EDGES[family] for family in (source_type(t) for t in inputs)]
    combos = list(itertools.product(*columns)) if columns else [()]
    step = max(1, math.ceil(len(combos) / MAX_ROWS))
    chosen = combos[::step]
    return [(i, i % 3, i % 7, *combo) for i, combo in enumerate(chosen)]


def _literal(text: str, concrete: str) -> str:
    return f"CAST({text} AS {concrete})"


def edge_sql(inputs: list[str], concrete: dict, ids: set | None = None) -> str:
    rows = [row for row in edge_rows(inputs) if ids is None or row[0] in ids]
    names = ", ".join(["id", "g", "h"] + [f"a{i}" for i in range(len(inputs))])
    values = ",\n".join("(" + ", ".join([str(row[0]), str(row[1]), str(row[2])] +
                                        [_literal(v, concrete[source_type(t)]) for v, t in zip(row[3:], inputs)]) + ")"
                        for row in rows)
    return f"SELECT * FROM VALUES {values} AS edges({names})"


def concrete_choices(inputs: list[str]) -> list[dict]:
    families = {source_type(t) for t in inputs}
    options = [CONCRETE.get(f, [f]) for f in sorted(families)]
    return [dict(zip(sorted(families), pick)) for pick in zip(*[o * max(map(len, options)) for o in options])] \
        if options else [{}]


def query_of(entry: dict, template: str, group: str = "g") -> str:
    expression = template.format(*[f"a{i}" for i in range(len(column_types(entry)))])
    if entry.get("kind") == "aggregate":
        return f"SELECT {group}, {expression} AS r FROM edges GROUP BY {group}"
    if entry.get("kind") == "literal":
        return f"SELECT id, {template} AS r FROM edges"
    return f"SELECT id, {expression} AS r FROM edges"


def verify_entry(spark, entry: dict) -> Outcome:
    """The entry in the session's current ANSI mode and time zone."""
    outcome = Outcome()
    columns = column_types(entry)
    for concrete in concrete_choices(columns):
        try:
            edges = spark.sql(edge_sql(columns, concrete)).localCheckpoint()
        except Exception as exc:
            outcome.error = f"the edge table does not build: {reference._first_line(exc)}"
            return outcome
        edges.createOrReplaceTempView("edges")
        arrow_edges = reference.arrow_of(edges)
        for template in entry["sql"]:
            for group in ("g", "h") if entry.get("kind") == "aggregate" else ("g",):
                _verify_template(spark, entry, template, concrete, arrow_edges, outcome, group)
                if outcome.error:
                    return outcome
    return outcome


def _verify_template(spark, entry, template, concrete, arrow_edges, outcome: Outcome, group: str) -> None:
    text = query_of(entry, template, group)
    try:
        duck_sql = reference.translate(text)
    except reference.NotCompared as exc:
        outcome.error = f"{template}: {exc}"
        return
    ids = [row[0] for row in edge_rows(column_types(entry))]
    spark_rows, spark_types, spark_refused = _spark_answer(spark, text, ids, entry, concrete)
    outcome.refused_by_spark += spark_refused
    if spark_types is None:
        return
    mismatch = _type_mismatch(duck_sql, arrow_edges, spark_types[-1])
    if mismatch:
        outcome.error = f"{template}: {mismatch}"
        return
    duck_rows, duck_refused = _duck_answer(spark, duck_sql, arrow_edges, spark_types, ids,
                                           entry.get("kind") == "aggregate")
    outcome.refused_by_duckdb += duck_refused
    inputs = {row[0]: list(row[3:]) for row in edge_rows(column_types(entry))}
    for key, spark_value in spark_rows.items():
        if key not in duck_rows:
            continue
        outcome.cases += 1
        only_spark, only_duck = reference.row_differences([(key, spark_value)], [(key, duck_rows[key])])
        if only_spark or only_duck:
            shown_inputs = inputs[key] if entry.get("kind") != "aggregate" else f"group {group} = {key}"
            outcome.differed.append((template, shown_inputs, reference.shown([(spark_value,)])[0][0],
                                     reference.shown([(duck_rows[key],)])[0][0]))


def kind_of_spark(spark_type: str) -> str:
    if spark_type.startswith("decimal") or spark_type in ("tinyint", "smallint", "int", "bigint"):
        return "exact number"
    return {"float": "approximate number", "double": "approximate number", "timestamp_ntz": "timestamp",
            "void": "any"}.get(spark_type, spark_type)


def kind_of_duck(duck_type: str) -> str:
    duck_type = duck_type.upper()
    if duck_type.startswith(("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                             "UINTEGER", "UBIGINT", "UHUGEINT", "DECIMAL")):
        return "exact number"
    if duck_type.startswith(("FLOAT", "DOUBLE", "REAL")):
        return "approximate number"
    if duck_type.startswith("TIMESTAMP"):
        return "timestamp"
    return {"VARCHAR": "string", "BOOLEAN": "boolean", "BLOB": "binary", "DATE": "date",
            "NULL": "any", '"NULL"': "any"}.get(duck_type, duck_type.lower())


def _type_mismatch(duck_sql: str, arrow_edges, spark_type: str) -> str | None:
    """Where DuckDB computes another kind of value than Spark (a DOUBLE for Spark's exact
    decimal quotient or floor(double) as bigint, a TIMESTAMP for date_sub's date): the
    answer, cast to Spark's type, may agree on the edge values, then differ once composed
    with other expressions (cast to a string, more arithmetic); not verified."""
    duck = reference.engine()
    duck.use_tables({"edges": arrow_edges})
    try:
        duck_type = str(duck.con.sql(duck_sql).types[-1])
    except Exception:
        return None  # DuckDB refuses the query: said as refusals
    spark_kind, duck_kind = kind_of_spark(spark_type), kind_of_duck(duck_type)
    if "any" not in (spark_kind, duck_kind) and spark_kind != duck_kind:
        return f"DuckDB computes it as {duck_type} where Spark's answer is {spark_type}"
    return None


def _answers(run, ids: list, aggregate: bool) -> tuple[dict, int]:
    """{id or group: value} of `run(part)` over the rows `ids`, and the rows refused: a
    part the engine refuses is split until each refused row is alone (an ANSI error, an
    overflow are one row's); an aggregate is refused whole."""
    answers, refused = {}, 0
    pending = [ids]
    while pending:
        part = pending.pop()
        try:
            answers.update(dict(reference.arrow_rows(run(part))))
        except Exception:
            if aggregate or len(part) == 1:
                refused += 1 if aggregate else len(part)
                continue
            pending += [part[: len(part) // 2], part[len(part) // 2:]]
    return answers, refused


def _spark_answer(spark, text: str, ids: list, entry: dict, concrete: dict):
    """{id or group: Spark's value}, Spark's answer types, rows Spark refused. The parts
    of a query Spark refuses read their rows inline (no job: planning evaluates them)."""
    types: list = []

    def run(part):
        sql = text if len(part) == len(ids) else \
            text.replace(" FROM edges", f" FROM ({edge_sql(column_types(entry), concrete, set(part))}) AS edges", 1)
        frame = spark.sql(sql)
        table = reference.arrow_of(frame.toDF("k", "r"))
        types[:] = [f.dataType.simpleString() for f in frame.schema.fields]
        return table
    answers, refused = _answers(run, ids, entry.get("kind") == "aggregate")
    return answers, types or None, refused


def _duck_answer(spark, duck_sql: str, arrow_edges, spark_types: list, ids: list, aggregate: bool):
    duck = reference.engine()
    duck.use_tables({"edges": arrow_edges})
    duck.con.execute("SET TimeZone = ?", [spark.conf.get("spark.sql.session.timeZone")])

    def run(part):
        where = "" if len(part) == len(ids) else f" WHERE id IN ({', '.join(map(str, part))})"
        sql = duck_sql.replace(" FROM edges", f" FROM edges{where}", 1)
        return duck.run(reference.typed_sql(sql, spark_types, reference.MAX_ANSWER_ROWS), reference.TIMEOUT_S)
    return _answers(run, ids, aggregate)


def verify(spark, entries: list[dict], ansi_modes=("off", "on"), zones=ZONES, done=None) -> dict:
    """{entry index: {(ansi, zone): Outcome}} over every configuration asked for; `done`
    is told each (index, ansi, zone, outcome) as it is known."""
    results: dict = {}
    previous = {key: spark.conf.get(key) for key in ("spark.sql.ansi.enabled", "spark.sql.session.timeZone")}
    try:
        for ansi in ansi_modes:
            spark.conf.set("spark.sql.ansi.enabled", "true" if ansi == "on" else "false")
            for zone in zones:
                spark.conf.set("spark.sql.session.timeZone", zone)
                for i, entry in enumerate(entries):
                    try:
                        outcome = verify_entry(spark, entry)
                    except Exception as exc:  # an entry that cannot be evaluated is said, never the run's end
                        outcome = Outcome(error=f"{type(exc).__name__}: {reference._first_line(exc)}")
                    results.setdefault(i, {})[(ansi, zone)] = outcome
                    if done:
                        done(i, ansi, zone, outcome)
    finally:
        for key, value in previous.items():
            spark.conf.set(key, value)
    return results
