"""Run one case on the shared SparkSession: tables → join → plans → (execute) → result.

`run_case` returns a result record (see schemas/results.schema.json) with what was
expected, what Spark did and the verdict. `run_agreement` re-runs a scenario's join
with each strategy Spark can apply to it, forced by hints, and checks every one gives
the same row count and checksum.
"""
from __future__ import annotations

import os
import re
import time
from functools import reduce

from . import confs, datagen, expect, model, plans, sqlguard, streaming
from .scenario import JOIN_TYPES, Case, ScenarioError, as_hint_list, hint_name
from .session import CaseScope, Session
from .util import one_line, printable

CHECKSUM_MOD = 1 << 64
RESULT_ROWS_LIMIT = 1000
# Nested-loop strategies compare every pair: the cross-strategy check only forces them
# when the tables are small enough for that to stay cheap.
NESTED_LOOP_PAIR_BUDGET = 20_000_000
AS_WRITTEN = "as written"
PREDICTED = "predicted"  # expect: {strategy: predicted}
SQL_JOIN = {"inner": "JOIN", "cross": "CROSS JOIN", "left_outer": "LEFT OUTER JOIN",
            "right_outer": "RIGHT OUTER JOIN", "full_outer": "FULL OUTER JOIN",
            "left_semi": "LEFT SEMI JOIN", "left_anti": "LEFT ANTI JOIN"}


class ScenarioRuntimeError(Exception):
    """The scenario asks for something the harness refuses at run time."""


# --------------------------------------------------------------------------- query

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
    from pyspark.sql import functions as F

    if "sql" in join:
        sqlguard.check_query_text(spark, join["sql"], set(tables))  # again, before Spark sees it
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


def _checksum_text(hash_sum) -> str:
    return f"{int(hash_sum or 0) % CHECKSUM_MOD:016x}"


# --------------------------------------------------------------------------- errors

def _first_line(text: str) -> str:
    return next((ln.strip() for ln in str(text or "").splitlines() if ln.strip()), "")


def _root_cause(java_exception):
    """The innermost Java cause: a failed job's message is only 'Job aborted ...'."""
    cause, seen = java_exception, 0
    while seen < 20:
        nxt = cause.getCause()
        if nxt is None or nxt.equals(cause):
            return cause
        cause, seen = nxt, seen + 1
    return cause


def _java_throwable(exc: BaseException):
    # Py4JJavaError.java_exception; PySpark's captured exceptions keep it as `_origin`.
    for attr in ("java_exception", "_origin"):
        throwable = getattr(exc, attr, None)
        if throwable is not None and hasattr(throwable, "getClass"):
            return throwable
    return None


def describe_error(exc: BaseException) -> dict:
    """Class and a one-line message (with the root cause of a failed job), no JVM stack."""
    throwable = _java_throwable(exc)
    java_class, line, cause = "", "", ""
    if throwable is not None:
        try:
            java_class = str(throwable.getClass().getName())
            line = _first_line(throwable.getMessage())
            root = _root_cause(throwable)
            if not root.equals(throwable):
                cause = f" (caused by {root.getClass().getSimpleName()}: {_first_line(root.getMessage())[:300]})"
        except Exception:
            pass
    cls = type(exc).__name__
    if cls == "Py4JJavaError" and java_class:
        cls = java_class.rsplit(".", 1)[-1]
    else:
        line = _first_line(str(exc)) or line  # PySpark's own message for captured errors
    if not line:
        line = _first_line(str(exc)) or cls
    match = re.match(r"^([\w.$]+(?:Exception|Error)):\s*(.*)$", line)
    if match:
        java_class, line = java_class or match.group(1), match.group(2)
    return {"class": cls, "java_class": java_class, "message": _cap(one_line(line + cause))}


def _cap(line: str) -> str:
    return line if len(line) <= 500 else line[:497] + "..."


# --------------------------------------------------------------------------- run

def _build_tables(session: Session, scope: CaseScope, case: Case, names, conf: dict) -> dict:
    tables = {}
    spec = case.scenario.data["tables"]
    data_conf = confs.data_conf(conf)
    for name in names:
        table = spec[name]
        tables[name] = datagen.build_table(session.spark, case.scenario.seed, name, table, session.workdir,
                                           data_conf)
        if table.get("materialize") == "cached":
            scope.cached = True
    return tables


def _tables_used(case: Case) -> list[str]:
    if "sql" in case.join:
        return list(case.scenario.data["tables"])
    return list(dict.fromkeys([case.join["left"], case.join["right"]]))


def resolve_conf(conf: dict, estimates: list[dict]) -> dict:
    """Replace `{estimate_of: side, plus, times}` values by bytes from the top join's estimate."""
    resolved = {}
    for key, value in conf.items():
        if isinstance(value, dict):
            if not estimates:
                raise ScenarioRuntimeError(f"spark_conf.{key}: the query has no join to take an estimate from")
            size = estimates[0][value["estimate_of"]]["size_in_bytes"]
            value = int(size * value.get("times", 1)) + value.get("plus", 0)
        resolved[key] = value
    return resolved


def _catalog_names(case: Case, conf: dict) -> dict | None:
    """Catalog table → scenario table name, for scenarios with catalog tables."""
    spec = case.scenario.data["tables"]
    data_conf = confs.data_conf(conf)
    names = {datagen.catalog_table_name(case.scenario.seed, name, table, data_conf): name
             for name, table in spec.items() if table.get("materialize") == "catalog"}
    return names or None


def _wants_operators(case: Case) -> bool:
    return "operators" in case.expect or any("operators" in o for o in case.overrides)


def _plan_summary(plan, case: Case, table_names: dict | None, plan_objects: dict, which: str) -> dict:
    """Join nodes now; the plan's text later (see `_add_plan_texts`)."""
    plan_objects[which] = plan
    summary = {"joins": [j.to_dict() for j in plans.join_nodes(plan, table_names)], "text": ""}
    if _wants_operators(case):
        summary["operators"] = plans.operator_counts(plan)
    return summary


def plan_text_policy() -> str:
    """`all` (default): every case's plans in the report; `failed`: only for cases that
    did not pass. A plan holding a Faker pool (an array literal) takes ~40 ms to print."""
    return os.environ.get("HARNESS_PLAN_TEXT", "all")


def _add_plan_texts(record: dict, plan_objects: dict) -> None:
    if plan_text_policy() == "failed" and record["status"] == "passed":
        return
    for which, plan in plan_objects.items():
        if record["observed"].get(which):
            record["observed"][which]["text"] = printable(plans.plan_text(plan))


def observe(session: Session, scope: CaseScope, case: Case, join: dict, conf: dict,
            execute: bool, collect_rows: bool, stream: bool = False) -> dict:
    """Build, plan and optionally run the query; everything Spark showed, as data."""
    timings = {}
    start = time.perf_counter()
    try:
        sqlguard.check_scenario(session.spark, case.scenario)  # done at collection: cached
    except ScenarioError as exc:
        raise ScenarioRuntimeError(str(exc)) from None
    absolute = {k: v for k, v in conf.items() if not isinstance(v, dict)}
    for key, value in absolute.items():  # before the tables: time zone and ANSI shape their data
        scope.set_conf(key, value)
    tables = _build_tables(session, scope, case, _tables_used(case), absolute)
    if stream:
        if len(absolute) != len(conf):
            raise ScenarioRuntimeError("a streaming scenario cannot size configs by estimates")
        return _observe_stream(session, scope, case, tables, collect_rows, timings, start)
    query = build_query(session.spark, scope, join, tables)
    if len(absolute) != len(conf):
        estimates = plans.join_estimates(query, logical=False)  # sizes only: the final frame's are recorded
        for key, value in resolve_conf(conf, estimates).items():
            if key not in absolute:
                scope.set_conf(key, value)
        query = build_query(session.spark, scope, join, tables)
    timings["build_s"] = time.perf_counter() - start

    start = time.perf_counter()
    frame = checksum_frame(query)
    plan = plans.current_plan(frame)
    plan_objects: dict = {}
    table_names = _catalog_names(case, absolute)
    observed = {
        "adaptive": plans.is_adaptive(plan),
        "initial": _plan_summary(plan, case, table_names, plan_objects, "initial"),
        "final": None,
        "estimates": plans.join_estimates(frame),
        "executed": False,
        "rows": None,
        "checksum": None,
        "error": None,
        "conf": {k: session.conf_value(k) for k in conf},
        "join_conf": _join_conf(session, conf),
    }
    observed["plan_objects"] = plan_objects  # taken out again before the record is made
    timings["plan_s"] = time.perf_counter() - start
    scope.check_timeout()

    if execute:
        start = time.perf_counter()
        row = frame.collect()[0]
        scope.check_timeout()
        observed.update(executed=True, rows=int(row["rows"]), checksum=_checksum_text(row["hash_sum"]))
        final_plan = plans.current_plan(frame)
        observed["final"] = _plan_summary(final_plan, case, table_names, plan_objects, "final")
        if observed["adaptive"]:
            observed["final"]["runtime"] = plans.runtime_sides(final_plan)
        if collect_rows:
            observed["result_rows"] = expect.normalize_rows(query.limit(RESULT_ROWS_LIMIT + 1).collect())
        timings["execute_s"] = time.perf_counter() - start
    observed["timings"] = timings
    return observed


def _join_conf(session: Session, case_conf: dict) -> dict:
    """The values of every config the join-selection model reads, as Spark reports them:
    the case's own from Spark, the rest are the session's defaults (read once)."""
    return {key: session.conf_value(key) if key in case_conf else session.default_conf_value(key)
            for key in model.CONF_KEYS}


def _observe_stream(session, scope, case, tables, collect_rows, timings, start) -> dict:
    run = streaming.run_stream(session, scope, case, tables, build_query)
    row = checksum_frame(run["result"]).collect()[0]
    observed = {
        **_empty_observation(),
        "adaptive": False,
        "initial": {"joins": streaming.stream_join_nodes(run["plan"]), "text": plans.plan_text(run["plan"])},
        "executed": True,
        "rows": int(row["rows"]),
        "checksum": _checksum_text(row["hash_sum"]),
        "conf": {k: session.conf_value(k) for k in case.spark_conf},
        "join_conf": _join_conf(session, case.spark_conf),
        "stream_batches": run["batches"],
    }
    if collect_rows:
        observed["result_rows"] = expect.normalize_rows(run["result"].limit(RESULT_ROWS_LIMIT + 1).collect())
    timings["execute_s"] = time.perf_counter() - start
    observed["timings"] = timings
    return observed


def _empty_observation() -> dict:
    return {"adaptive": None, "initial": {"joins": [], "text": ""}, "final": None, "estimates": [],
            "executed": False, "rows": None, "checksum": None, "error": None, "conf": {}, "timings": {}}


def run_case(case: Case, session: Session) -> dict:
    expected = expect.resolve(case, session.versions["spark"])
    if os.environ.get("HARNESS_OBSERVE") == "1":  # a survey: record, do not check
        expected = {"plan": expected["plan"]}
    started = time.perf_counter()
    executors_before = session.cluster_shape if session.deployment == "cluster" else None
    observed = _empty_observation()
    with session.case_scope(case.scenario.timeout) as scope:
        try:
            observed = observe(session, scope, case, case.join, case.spark_conf,
                               execute=expect.needs_execution(expected) or not expect.has_assertions(expected),
                               collect_rows="result_rows" in expected, stream="stream" in case.scenario.data)
        except ScenarioRuntimeError as exc:
            observed["error"] = {"class": "ScenarioError", "java_class": "", "message": str(exc)}
        except Exception as exc:  # Spark rejected or failed the query: that is an observation
            observed["error"] = timeout_error(case, session) if scope.timed_out.is_set() else describe_error(exc)
        observed["warnings"] = scope.warnings()
    plan_objects = observed.pop("plan_objects", {})
    record = make_record(case, session, expected, observed, time.perf_counter() - started)
    _note_lost_executors(record, executors_before)
    _add_plan_texts(record, plan_objects)
    return record


def _note_lost_executors(record: dict, before: dict | None) -> None:
    """On a cluster, say so when executors went away while the case ran."""
    after = record.get("cluster") or {}
    if before and before.get("executors") is not None and after.get("executors") is not None \
            and after["executors"] < before["executors"]:
        lost = before["executors"] - after["executors"]
        note = (f"{lost} executor(s) lost during the case ({before['executors']} → {after['executors']}); "
                "Spark re-ran their tasks on the others")
        record["message"] = f"{record['message']}; {note}" if record["message"] else note
        record["cluster"] = {**after, "executors_at_start": before["executors"]}


def timeout_error(case: Case, session: Session) -> dict:
    message = f"cancelled after {case.scenario.timeout:g} s"
    if session.abandoned:
        message += f" ({session.abandoned}; SparkContext stopped, the next case gets a new one)"
    return {"class": "Timeout", "java_class": "", "message": message}


def _status(expected: dict, observed: dict, problems: list[str]) -> str:
    error = observed.get("error")
    if error and error["class"] == "Timeout":
        return "timeout"
    if not expect.has_assertions(expected):
        return "error" if error else "observed"
    if not problems:
        return "passed"
    return "error" if error and "error" not in expected else "failed"


def display_path(path) -> str:
    """The scenario's path relative to the working directory when it lies below it."""
    try:
        return str(path.resolve().relative_to(os.getcwd()))
    except ValueError:
        return str(path)


def _identity(case: Case, session: Session) -> dict:
    return {
        "scenario_id": case.scenario.id,
        "file": display_path(case.scenario.path),
        "line": case.scenario.line_of("id") or 1,
        "tags": case.scenario.data.get("tags", []),
        "bug": case.scenario.data.get("bug"),
        "join_type": case.join_type if "sql" not in case.join else None,
        "api": "sql" if "sql" in case.join else case.join.get("api", "dataframe"),
        "versions": session.versions,
        "master": session.master,
        "cluster": getattr(session, "cluster_shape", None),
    }


def make_record(case: Case, session: Session, expected: dict, observed: dict, total_s: float) -> dict:
    judged = model.evaluate(observed, session.versions["spark"], streaming="stream" in case.scenario.data)
    if expected.get("strategy") == PREDICTED:
        expected = _with_prediction(expected, judged)
    problems = expect.compare(expected, observed) if expect.has_assertions(expected) else []
    status = _status(expected, observed, problems)
    if status in ("error", "timeout") and not problems:
        problems = [f"{observed['error']['class']}: {observed['error']['message']}"]
    return {
        **_identity(case, session),
        "kind": "case",
        "case_id": case.case_id,
        "label": case.label,
        "params": case.params,
        "description": case.scenario.data["description"],
        "status": status,
        "message": one_line("; ".join(problems)),
        "expected": expected,
        "observed": observed,
        "timings": {"total_s": round(total_s, 4), **{k: round(v, 4) for k, v in observed.get("timings", {}).items()}},
        "model": judged,
    }


def _with_prediction(expected: dict, judged: dict | None) -> dict:
    """`strategy: predicted`: Spark must do what the join-selection model says."""
    if judged is None:
        return {**expected, "strategy": "none (no prediction: the query failed)"}
    return {**expected, "strategy": judged["strategy"], "build_side": judged["build_side"]}


def lost_record(case: Case, item_id: str, versions: dict, master: str | None, message: str) -> dict:
    """The record of an item whose worker process died under it (built by the controller)."""
    from types import SimpleNamespace
    stand_in = SimpleNamespace(versions=versions, master=master, abandoned=None)
    message = one_line(message)
    if item_id != case.case_id:
        record = _agreement_record(case, stand_in, "error", message, [], [], time.perf_counter())
        return {**record, "case_id": item_id}
    observed = {**_empty_observation(), "warnings": [],
                "error": {"class": "WorkerLost", "java_class": "", "message": message}}
    record = make_record(case, stand_in, expect.resolve(case, versions["spark"]), observed, 0.0)
    return {**record, "status": "error", "message": message}


# --------------------------------------------------------------------------- agreement

def _pairs(case: Case) -> int:
    tables = case.scenario.data["tables"]
    sizes = [tables[name]["rows"] for name in _tables_used(case)]
    return reduce(lambda a, b: a * max(b, 1), sizes, 1)


def forced_variants(case: Case) -> list[tuple[str, dict, dict]]:
    """(label, join spec, extra conf) for each strategy to force on this case's query."""
    # Few shuffle partitions: the forced strategies do not depend on them, and 200 tiny
    # tasks per shuffle would make this check cost more than all cases together.
    # AQE off so that each forced strategy is the one that runs (no runtime re-planning).
    no_auto = {"spark.sql.autoBroadcastJoinThreshold": -1, "spark.sql.shuffle.partitions": 8,
               "spark.sql.adaptive.enabled": False}
    if "sql" in case.join:
        return [("sort-merge-preferred", case.join, {**no_auto, "spark.sql.join.preferSortMergeJoin": True}),
                ("broadcast-all", case.join, {**no_auto, "spark.sql.autoBroadcastJoinThreshold": 1 << 30})]
    hinted = [("BROADCAST@left", {"left": ["BROADCAST"]}),
              ("BROADCAST@right", {"right": ["BROADCAST"]}), ("SHUFFLE_HASH@left", {"left": ["SHUFFLE_HASH"]}),
              ("SHUFFLE_HASH@right", {"right": ["SHUFFLE_HASH"]}), ("MERGE", {"left": ["MERGE"]})]
    if _pairs(case) <= NESTED_LOOP_PAIR_BUDGET:
        hinted.append(("SHUFFLE_REPLICATE_NL", {"left": ["SHUFFLE_REPLICATE_NL"]}))
    as_written = (AS_WRITTEN, case.join, {})
    return [as_written] + [(label, {**case.join, "hints": hints}, no_auto) for label, hints in hinted]


def run_agreement(case: Case, session: Session) -> dict:
    """Force every strategy Spark can apply to this join; all must agree on the answer."""
    started = time.perf_counter()
    runs, problems = [], []
    if "error" in expect.resolve(case, session.versions["spark"]):
        return _agreement_record(case, session, "skipped", "Spark rejects this query on this version", [], [], started)
    base_conf = {k: v for k, v in case.spark_conf.items() if not isinstance(v, dict)}
    skip_nested_loop = _pairs(case) > NESTED_LOOP_PAIR_BUDGET
    deadline = started + case.scenario.timeout  # one budget for all the forced runs
    streamed = "stream" in case.scenario.data
    for label, join, extra in forced_variants(case):
        with session.case_scope(max(deadline - time.perf_counter(), 0.01)) as scope:
            try:
                # A streaming scenario: the stream-stream join as written against every
                # batch strategy over the same tables.
                observed = observe(session, scope, case, join, {**base_conf, **extra}, execute=True,
                                   collect_rows=False, stream=streamed and label == AS_WRITTEN)
            except Exception as exc:
                if scope.timed_out.is_set():
                    message = f"forced {label}: {timeout_error(case, session)['message']}"
                    return _agreement_record(case, session, "timeout", message, runs, [], started)
                err = describe_error(exc)
                runs.append({"forced": label, "error": f"{err['class']}: {err['message']}"})
                continue
        joins = (observed["final"] or observed["initial"])["joins"]
        top = joins[0] if joins else {"strategy": "none", "build_side": "none"}
        if skip_nested_loop and top["strategy"] in ("CartesianProduct", "BroadcastNestedLoopJoin") \
                and label != AS_WRITTEN:
            continue
        runs.append({"forced": label, "strategy": top["strategy"], "build_side": top["build_side"],
                     "rows": observed["rows"], "checksum": observed["checksum"]})
    answered = [r for r in runs if "error" not in r]
    if not answered:
        status = "error"
        problems.append("no forced strategy could run the query: " + "; ".join(r["error"] for r in runs))
    else:
        reference = answered[0]
        for run in answered[1:]:
            if (run["rows"], run["checksum"]) != (reference["rows"], reference["checksum"]):
                problems.append(f"{run['strategy']} (build {run['build_side']}, forced {run['forced']}) gives "
                                f"{run['rows']} rows / {run['checksum']}, but {reference['strategy']} "
                                f"(forced {reference['forced']}) gives {reference['rows']} rows / "
                                f"{reference['checksum']}")
        status = "correctness" if problems else "passed"
    strategies = sorted({(r["strategy"], r["build_side"]) for r in answered})
    message = "; ".join(problems) if problems else f"{len(answered)} runs over {len(strategies)} strategies agree"
    return _agreement_record(case, session, status, message, runs, strategies, started)


def _agreement_record(case, session, status, message, runs, strategies, started) -> dict:
    return {
        **_identity(case, session),
        "kind": "agreement",
        "case_id": agreement_id(case),
        "label": agreement_label(case),
        "params": {k: v for k, v in case.params.items() if k == "join_type"},
        "description": f"results agree across strategies: {case.scenario.data['description']}",
        "status": status,
        "message": message,
        "expected": {},
        "observed": {"agreement": runs, "strategies": [f"{s} ({b})" for s, b in strategies]},
        "timings": {"total_s": round(time.perf_counter() - started, 4)},
    }


def agreement_label(case: Case) -> str:
    return f"{case.join_type}-agree" if "sql" not in case.join else "agree"


def agreement_id(case: Case) -> str:
    return f"{case.scenario.id}[{agreement_label(case)}]"


def agreement_representatives(cases: list[Case]) -> list[Case]:
    """One case per distinct answer-defining variant (join type) of a scenario. A variant
    Spark rejects on the running version is skipped when the check runs."""
    chosen: dict[str, Case] = {}
    for case in cases:
        chosen.setdefault(agreement_label(case), case)
    return list(chosen.values())
