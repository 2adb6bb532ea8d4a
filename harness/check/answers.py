"""Answers nobody declared, for one case or cross-strategy check: the query's answer
against an independent engine's (harness.observe.reference), and the columns the answer
really has (the optimized plan's output, against the analysed query's)."""
from __future__ import annotations

from harness.check import expect
from harness.observe import reference
from harness.scenario import confs
from harness.scenario.model import Case
from harness.scenario.tables import is_derived, is_stats_only, table_rows
from harness.spark.case_scope import CaseScope
from harness.spark.errors import describe_error
from harness.spark.expression_walk import nodes_of
from harness.spark.query import build_query, sql_text
from harness.spark.session import Session


def absolute_conf(conf: dict) -> dict:
    """The configs with a value of their own (not sized by an estimate of the query)."""
    return {k: v for k, v in conf.items() if not isinstance(v, dict)}


def analysed_alone(session: Session, scope: CaseScope, join: dict, tables: dict, read=None):
    """Spark's analysed plan of the join over empty stand-ins of its inputs (their
    schemas, none of the expressions that made their rows): what the query itself does,
    read by `read` (its toJSON tree by default). The views are registered over the real
    inputs again afterwards."""
    from harness.spark.sql_trees import tree_of
    stand_ins = {name: _stand_in(session.spark, name, frame) for name, frame in tables.items()}
    try:
        return (read or tree_of)(build_query(session.spark, scope, join, stand_ins)._jdf.queryExecution().analyzed())
    finally:
        build_query(session.spark, scope, join, tables)


_STAND_INS: dict = {}  # (session, table name, schema) → a frame of that schema over no rows


def _stand_in(spark, name: str, frame):
    """An empty frame of `frame`'s schema, made once per worker session, table name and
    schema (a file's cases and checks ask for the same ones; making one is a JVM round
    trip of its own). One per name: two tables of one schema stay two relations."""
    key = (id(spark), name.lower(), frame.schema.json())
    if key not in _STAND_INS:
        if len(_STAND_INS) > 512:
            _STAND_INS.clear()
        _STAND_INS[key] = spark.createDataFrame([], frame.schema)
    return _STAND_INS[key]


def exact_rows(case: Case) -> dict:
    """The rows each input table holds, known from the file without a Spark job: generated
    and literal tables without a filter, whatever their layout or format (every copy is
    written from the same rows); derived, filtered and statistics-only tables are counted."""
    out = {}
    for name, spec in case.scenario.data["tables"].items():
        if not (is_derived(spec) or is_stats_only(spec) or "filter" in spec):
            out[name] = table_rows(spec)
    return out


def reference_answer(session: Session, scope: CaseScope, case: Case, join: dict, query, tables: dict, rows: int,
                     checksum: str) -> dict | None:
    """The answer `rows`/`checksum` of `query` (the case's join over `tables`) against an
    independent engine's (harness.observe.reference); every case of a file with the same
    join and data configs shares one reference answer, whichever API or hints it uses."""
    if getattr(session.options, "reference", "on") != "on":  # --reference off or partitions
        return None
    expected = expect.resolve(case, session.versions["spark"], session.deployment, expect.engine_of(session.versions))
    why = reference.skip_reason(case.scenario.data, expected.get("varies"))
    if why is None and session.plan_reader != "jvm":
        why = "not run through Spark Connect (the reference reads the inputs through the JVM)"
    if why is None and "stream" in case.scenario.data:
        why = "a stream's answer is its micro-batches'"
    if why is not None:
        return {"engine": reference.ENGINE, "compared": False, "why": why}
    absolute = absolute_conf(case.spark_conf)
    scope_key = (id(session.spark), str(case.scenario.path), case.scenario.id,
                 tuple(sorted(confs.data_conf(absolute).items())))
    query_sql = join["sql"] if "sql" in join else sql_text({**join, "hints": {}})
    try:
        return reference.observe(session.spark, scope_key, query_sql, tables, query, rows, checksum,
                                 analysed=lambda: analysed_alone(session, scope, join, tables, nodes_of),
                                 known_rows=exact_rows(case))
    except Exception as exc:  # never the case's error: said, and nothing compared
        return {"engine": reference.ENGINE, "compared": False,
                "why": f"the comparison could not run: {describe_error(exc).message[:300]}"}


def _columns_of(struct) -> list:
    return [[f.name, f.dataType.simpleString()] for f in struct.fields]


def answer_columns(query, optimized: bool = True) -> tuple[list, dict | None]:
    """The columns Spark's answer has — the optimized plan's output, which is what runs and
    what `collect()` returns — and, where an optimizer rewrite changed the output the query
    was analysed with (a column leaked or dropped), both (None when they are the same).
    `optimized` False (Spark Connect: no JVM here): the analysed query's columns only."""
    from pyspark.sql.types import _parse_datatype_json_string
    analysed = _columns_of(query.schema)
    if not optimized:
        return analysed, None
    optimized = _columns_of(_parse_datatype_json_string(query._jdf.queryExecution().optimizedPlan().schema().json()))
    same = [(n.lower(), t) for n, t in analysed] == [(n.lower(), t) for n, t in optimized]
    return optimized, None if same else {"analysed": analysed, "optimized": optimized}
