"""Run one case on the shared SparkSession: tables → join → plans → (execute) → result.

`run_case` returns a result record (see schemas/results.schema.json) with what was
expected, what Spark did and the verdict. The query itself is built by harness.spark.query,
Spark's errors are put in one line by harness.spark.errors, and the cross-strategy
check (harness.check.agreement) observes through `observe` here.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from harness.check import compare_results, expect
from harness.check.compare_plans import RUNTIME_FILTERS_SINCE
from harness.core.options import deployment
from harness.core.records import (
    NOT_CHECKABLE,
    WARNINGS_UNOBSERVED,
    CaseRecord,
    Identity,
    Observation,
    PlanView,
    SparkError,
)
from harness.core.text import display_path, one_line, printable
from harness.core.vocab import NESTED_LOOP_OPERATORS, RUNTIME_FILTER_CONFS, SPJ_CONFS
from harness.check.answers import absolute_conf, answer_columns, reference_answer
from harness.observe import filter_plans, jvm_plans, model, printed_plans
from harness.scenario import confs
from harness.scenario.errors import ScenarioError
from harness.scenario.model import Case
from harness.scenario.formats import written_derived
from harness.scenario.tables import is_derived, is_stats_only, uses_iceberg
from harness.spark import datagen, derived, engines, executions, sql_guard, streaming
from harness.spark.errors import describe_error
from harness.spark.query import build_query, checksum_frame, checksum_text
from harness.spark.case_scope import CaseScope
from harness.spark.session import Session

RESULT_ROWS_LIMIT = 1000
AS_WRITTEN = "as written"
PREDICTED = "predicted"  # expect: {strategy: predicted}
PLAN_ONLY = "plan-only: statistics-only tables have no rows, so nothing executes"
# How a session's deployment reads plans (Session.plan_reader): the JVM's plan objects, or
# what a Spark Connect server prints and reports.
PLAN_READERS = {"jvm": jvm_plans, "printed": printed_plans}


def plans_of(session: Session):
    """The plan reader of the session's deployment."""
    return PLAN_READERS[session.plan_reader]


class ScenarioRuntimeError(Exception):
    """The scenario asks for something the harness refuses at run time."""


# --------------------------------------------------------------------------- run

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
             for name, table in spec.items() if table.get("materialize") == "catalog" or is_stats_only(table)}
    names.update({datagen.derived_catalog_name(case.scenario.seed, name, spec, data_conf): name
                  for name, table in spec.items() if is_derived(table) and written_derived(table)})
    return names or None


def _wants_operators(case: Case) -> bool:
    return "operators" in case.expect or any("operators" in o for o in case.overrides)


def _plan_view(plans, plan, case: Case, table_names: dict | None, final: bool = False,
               semi_join_reduction: bool = False) -> PlanView:
    """Join nodes now; the plan's text later (see `_add_plan_texts`). `plans` reads the
    plan as the session's deployment can (harness.observe.jvm_plans, or harness.observe.printed_plans)."""
    view = PlanView(joins=[j.to_dict() for j in plans.join_nodes(plan, table_names)])
    read_subqueries = getattr(plans, "subquery_joins", None)  # the JVM's plans only (not Connect's printed ones)
    if read_subqueries is not None:
        view.subqueries = read_subqueries(plan, table_names)
    view.runtime_filters = filter_plans.read(plan, view.joins, table_names, final=final,
                                             semi_join_reduction=semi_join_reduction)
    if _wants_operators(case):
        view.operators = plans.operator_counts(plan)
    return view


def _add_plan_texts(record: CaseRecord, plan_objects: dict, policy: str, plans) -> None:
    """`all`: every case's plans in the report; `failed`: only for cases that did not
    pass. A plan holding a Faker pool (an array literal) takes ~40 ms to print."""
    if policy == "failed" and record.status == "passed":
        record.observed.initial.text = ""  # an adaptive plan's, printed before it ran
        return
    for which, plan in plan_objects.items():
        view = record.observed.plan(which)
        if view is not None:
            try:
                view.text = printable(plans.plan_text(plan))
            except Exception:  # the JVM of a case cut short may be gone: its joins are kept
                pass


def observe(session: Session, scope: CaseScope, case: Case, join: dict, conf: dict,
            execute: bool, collect_rows: bool, stream: bool = False,
            so_far: dict | None = None) -> tuple[Observation, dict]:
    """Build, plan and optionally run the query: what Spark showed, and the JVM plan
    objects (kept apart, for the plan text a report may want). `so_far` receives the
    observation as soon as the query is planned, so a run cut short keeps its plan."""
    timings = {}
    start = time.perf_counter()
    tables = prepare_inputs(session, scope, case, conf)
    if stream:
        if len(absolute_conf(conf)) != len(conf):
            raise ScenarioRuntimeError("a streaming scenario cannot size configs by estimates")
        return _observe_stream(session, scope, case, tables, collect_rows, timings, start), {}
    return observe_query(session, scope, case, join, conf, tables, execute, collect_rows, timings, start, so_far)


def check_sql(session: Session, scenario) -> None:
    """Refuse the scenario if its SQL does what a scenario may not (harness.spark.sql_guard), on
    this session's Spark or, where the session has one, its guard's (Spark Connect: a
    classic Spark in a child process)."""
    guard = getattr(session, "guard", None)
    if guard is not None:
        guard.check(scenario, session.spark)
    else:
        sql_guard.check_scenario(session.spark, scenario)


def prepare_inputs(session: Session, scope: CaseScope, case: Case, conf: dict) -> dict:
    """The scenario's SQL checked (once per session), the case's configs set (before the
    tables: time zone and ANSI shape their data), and the tables its join reads, built."""
    try:
        check_sql(session, case.scenario)  # done at collection: cached
    except ScenarioError as exc:
        raise ScenarioRuntimeError(str(exc)) from None
    absolute = absolute_conf(conf)
    for key, value in absolute.items():
        scope.set_conf(key, value)
    return derived.build_inputs(session, scope, case, absolute)


def sized_query(session: Session, scope: CaseScope, join: dict, conf: dict, tables: dict):
    """The join over the built tables; configs sized by an estimate of it are set first
    (and the query built again under them). `conf` values already set stay as they are."""
    query = build_query(session.spark, scope, join, tables)
    absolute = absolute_conf(conf)
    if len(absolute) != len(conf):
        estimates = plans_of(session).join_estimates(query, logical=False)  # sizes only: the final frame's are recorded
        for key, value in resolve_conf(conf, estimates).items():
            if key not in absolute:
                scope.set_conf(key, value)
        query = build_query(session.spark, scope, join, tables)
    return query


def observe_query(session: Session, scope: CaseScope, case: Case, join: dict, conf: dict, tables: dict,
                  execute: bool, collect_rows: bool, timings: dict | None = None,
                  start: float | None = None, so_far: dict | None = None) -> tuple[Observation, dict]:
    """Plan (and optionally run) the join over tables already built under `conf`."""
    timings = {} if timings is None else timings
    start = time.perf_counter() if start is None else start
    query = sized_query(session, scope, join, conf, tables)
    timings["build_s"] = time.perf_counter() - start

    start = time.perf_counter()
    plans = plans_of(session)
    frame = checksum_frame(query)
    plan = plans.current_plan(frame)
    plan_objects = {"initial": plan}
    absolute = absolute_conf(conf)
    table_names = _catalog_names(case, absolute)
    join_conf = _join_conf(session, case, conf)
    semi = filter_plans.semi_join_reduction_on(join_conf.get)
    observed = Observation(adaptive=plans.is_adaptive(plan),
                           initial=_plan_view(plans, plan, case, table_names, semi_join_reduction=semi),
                           estimates=plans.join_estimates(frame), conf={k: session.conf_value(k) for k in conf},
                           join_conf=join_conf, timings=timings,
                           unavailable=list(session.unavailable) or None)
    observed.columns, observed.output_change = answer_columns(query, optimized=session.plan_reader == "jvm")
    if observed.unavailable and observed.initial.joins and not observed.estimates:
        observed.unavailable.append("estimates")  # the printed plan was cut before its joins
    timings["plan_s"] = time.perf_counter() - start
    if so_far is not None:
        so_far.update(observed=observed, plans=plan_objects)
    scope.check_timeout()

    if execute:
        if observed.adaptive:
            # The adaptive plan object is the one that runs, re-planned as it goes: printed
            # afterwards it would show the final plan (which stage finished first and all).
            observed.initial.text = printable(plans.plan_text(plan))
            plan_objects.pop("initial")
        start = time.perf_counter()
        ran, shared = _execute(session, frame, plan, shareable=not collect_rows)
        if shared:
            timings["shared_execution"] = 1.0
        else:
            timings["cost_s"] = ran.cost_s
        scope.check_timeout()
        observed.executed, observed.rows, observed.checksum = True, ran.rows, ran.checksum
        if ran.engine_reference is None:  # once per execution: a shared one carries it
            ran.engine_reference = _engine_reference(session, case, frame)
        observed.engine_reference = ran.engine_reference
        reference_started = time.perf_counter()
        observed.reference = reference_answer(session, scope, case, join, query, tables, ran.rows, ran.checksum)
        timings["reference_s"] = time.perf_counter() - reference_started
        final_plan = ran.plan
        if final_plan is not None:
            plan_objects["final"] = final_plan
            observed.final = _plan_view(plans, final_plan, case, table_names, final=True, semi_join_reduction=semi)
            if observed.adaptive:
                observed.final.runtime = plans.runtime_sides(final_plan)
            observed.cost = ran.cost
        else:  # the server sent no plan metrics with the result
            observed.unavailable = sorted({*(observed.unavailable or []), "final"})
        if collect_rows:
            observed.result_rows = expect.normalize_rows(query.limit(RESULT_ROWS_LIMIT + 1).collect())
        timings["execute_s"] = time.perf_counter() - start
    return observed, plan_objects


@dataclass
class ForcedRun:
    strategy: str
    build_side: str
    rows: int | None      # None: planned, not run
    checksum: str | None
    shared: bool


def run_forced(session: Session, scope: CaseScope, join: dict, conf: dict, tables: dict,
               nested_loops: bool = True, execute: bool = True) -> ForcedRun | None:
    """Run the join over tables already built, under the configs now set, and read only
    what the cross-strategy check compares: the top join of the plan that ran, the row
    count and checksum (no estimates, no model inputs, no plan text). `nested_loops`
    False: a plan whose top join is a nested loop (fixed: no AQE) is not run (None).
    `execute` False: planned only (its top join, no answer)."""
    query = sized_query(session, scope, join, conf, tables)
    frame = checksum_frame(query)
    plans = plans_of(session)
    plan = plans.current_plan(frame)
    scope.check_timeout()
    if not nested_loops and not plans.is_adaptive(plan) and plans.top_join(plan)["strategy"] in NESTED_LOOP_OPERATORS:
        return None
    if not execute:
        top = plans.top_join(plan)
        return ForcedRun(top["strategy"], top["build_side"], None, None, False)
    ran, shared = _execute(session, frame, plan, shareable=True)
    scope.check_timeout()
    if ran.plan is None and not plans.is_adaptive(plan):
        # A Spark Connect 3.5 client gets no plan back with the result (executionInfo is
        # 4.0+); without AQE the plan printed before the action is the plan that ran.
        ran_plan = plan
    else:
        ran_plan = ran.plan
    top = plans.top_join(ran_plan) if ran_plan is not None else {"strategy": None, "build_side": None}
    return ForcedRun(top["strategy"], top["build_side"], ran.rows, ran.checksum, shared)


def _engine_reference(session: Session, case: Case, frame) -> dict | None:
    """Under a native engine, Spark's own answer to the same query: a plain run's, where
    the result store holds one, else planned afresh with the engine off in the same
    session (None without an engine)."""
    if not session.engine_runtime:
        return None
    stored = session.plain_answers(case) if session.plain_answers is not None else None
    if stored is not None:
        return stored
    conf = session.spark.conf
    off = engines.off_confs(session.engine)
    before = {key: conf.get(key, None) for key in off}
    try:
        for key, value in off.items():
            conf.set(key, value)
        row = frame.toDF(*frame.columns).collect()[0]  # a new Dataset: planned again, the engine off
    finally:
        for key, value in before.items():
            conf.unset(key) if value is None else conf.set(key, value)
    return {"rows": int(row["rows"]), "checksum": checksum_text(row["hash_sum"]),
            "source": f"this session, {session.engine} off"}


def _execute(session: Session, frame, plan, shareable: bool) -> tuple[executions.Executed, bool]:
    """Run the checksum query; (its answer, shared) where `shared` says the same physical
    query already ran under the same configs in this worker (harness.spark.executions)."""
    plans = plans_of(session)
    memo_key = executions.key(session.spark, plan, plans.is_adaptive(plan)) if shareable and plans.shares else None
    # under a native engine sameResult is the engine's canonical form: confirmed by its text
    earlier = executions.lookup(memo_key, plan, confirm_text=bool(session.engine_runtime)) \
        if memo_key is not None else None
    if earlier is not None:
        return earlier, True
    try:
        row, ran_stages = session.run_action(lambda: frame.collect()[0])
    except Exception as exc:
        exc.harness_phase = "execution"  # Spark accepted and planned the query; running it failed
        raise
    ran = executions.Executed(int(row["rows"]), checksum_text(row["hash_sum"]), plans.ran_plan(frame), key_plan=plan)
    if ran.plan is not None:  # read now: the stages are known only right after the run
        started = time.perf_counter()
        ran.cost = plans.cost(ran.plan, ran_stages)
        ran.cost_s = time.perf_counter() - started
    if memo_key is not None:
        executions.remember(memo_key, ran)
    return ran, False


def _join_conf(session: Session, case: Case, case_conf: dict) -> dict:
    """The values of every config the join-selection model reads, those runtime filters
    depend on (and, over Iceberg tables, those a storage-partitioned join depends on), as
    Spark reports them: the case's own from Spark, the rest are the session's defaults
    (read once). None: the version does not declare it (or, for Iceberg's own, it is unset)."""
    keys = model.CONF_KEYS + RUNTIME_FILTER_CONFS + (SPJ_CONFS if uses_iceberg(case.scenario.data) else ())
    return {key: session.conf_value(key) if key in case_conf else session.default_conf_value(key) for key in keys}


def _observe_stream(session, scope, case, tables, collect_rows, timings, start) -> Observation:
    memo_key = executions.stream_key(session.spark, case)
    streamed = None if collect_rows else executions.lookup_stream(memo_key)
    result_rows = None
    if streamed is not None:
        timings["shared_execution"] = 1.0
    else:
        run = streaming.run_stream(session, scope, case, tables)
        row = checksum_frame(run["result"]).collect()[0]
        streamed = executions.Streamed(int(row["rows"]), checksum_text(row["hash_sum"]),
                                       plans_of(session).stream_plan(run["query"]), run["batches"], run["steps"])
        executions.remember_stream(memo_key, streamed)
        if collect_rows:
            result_rows = expect.normalize_rows(run["result"].limit(RESULT_ROWS_LIMIT + 1).collect())
    observed = Observation(
        adaptive=False,
        # A micro-batch reads only the sources that had new files: which sides show a file
        # scan depends on how the rows fell into batches, so a stream join records none.
        initial=PlanView(joins=[{**j.to_dict(), "scans": None} for j in plans_of(session).join_nodes(streamed.plan)],
                         text=plans_of(session).plan_text(streamed.plan)),
        executed=True, rows=streamed.rows, checksum=streamed.checksum,
        conf={k: session.conf_value(k) for k in case.spark_conf}, join_conf=_join_conf(session, case, case.spark_conf),
        stream_batches=streamed.batches, stream_steps=streamed.steps, result_rows=result_rows, timings=timings)
    timings["execute_s"] = time.perf_counter() - start
    return observed


def capture(session: Session, case: Case, execute: bool, collect_rows: bool) -> tuple[Observation, dict]:
    """Observe the case in its own scope; whatever Spark throws is an observation too. A
    case cut short keeps what was planned before (a timed-out case still shows its plan)."""
    so_far: dict = {}
    with session.case_scope(case.scenario.timeout) as scope:
        try:
            observed, plan_objects = observe(session, scope, case, case.join, case.spark_conf, execute=execute,
                                             collect_rows=collect_rows, stream="stream" in case.scenario.data,
                                             so_far=so_far)
        except ScenarioRuntimeError as exc:
            observed, plan_objects = so_far.get("observed") or Observation(), so_far.get("plans") or {}
            observed.error = SparkError("ScenarioError", str(exc))
        except Exception as exc:  # Spark rejected or failed the query: that is an observation
            observed, plan_objects = so_far.get("observed") or Observation(), so_far.get("plans") or {}
            if scope.timed_out.is_set():
                observed.error = timeout_error(case, session)
            else:
                died = session.death()  # a native crash takes the JVM with it: said, never "connection refused"
                observed.error = SparkError("JvmDied", died) if died else describe_error(exc)
        observed.warnings = scope.warnings()
        observed.undefined_conf = list(scope.undefined) or None
        observed.removed_conf = dict(scope.removed) or None
    if session.unavailable and observed.unavailable is None:  # a stream, or a case cut short
        observed.unavailable = list(session.unavailable)
    return observed, plan_objects


def expectations(case: Case, who) -> dict:
    """The expectations in force for the case on the session's (or a stored record's)
    Spark version, deployment and engine; a survey (`--observe`) keeps only what says
    which plan to read."""
    expected = expect.resolve(case, who.versions["spark"], who.deployment, expect.engine_of(who.versions))
    observe = who.options.observe
    return {"plan": expected["plan"]} if observe else expected


def observation_needs(case: Case, expected: dict) -> dict:
    """What the expectations in force make a run observe beyond the plans: the only part
    of them that changes an observation (harness.store keys by it)."""
    # a known bug's file runs its query: its answer is what the bug is about, and the
    # independent engine can only judge an answer that ran
    return {"execute": not case.scenario.plan_only and (expect.executes(expected) or bool(case.scenario.data.get("bug"))),
            "result_rows": "result_rows" in expected, "operators": _wants_operators(case),
            "step_rows": any("new_rows" in step for step in expected.get("batches") or [])}


def run_case(case: Case, session: Session) -> dict:
    expected = expectations(case, session)
    started = time.perf_counter()
    cannot = session.cannot_run(case)
    if cannot:  # this deployment cannot run it at all: said, never passed
        record = make_record(case, session, expected, Observation(unavailable=list(session.unavailable)), 0.0)
        record.status, record.message = "skipped", cannot
        return record
    executors_before = session.cluster_shape if session.deployment == "cluster" else None
    needs = observation_needs(case, expected)
    observed, plan_objects = capture(session, case, collect_rows=needs["result_rows"], execute=needs["execute"])
    if case.scenario.plan_only:
        observed.final_not_applicable = PLAN_ONLY
    record = make_record(case, session, expected, observed, time.perf_counter() - started)
    _note_lost_executors(record, executors_before)
    _add_plan_texts(record, plan_objects, session.options.plan_text, plans_of(session))
    return record


def _note_lost_executors(record: CaseRecord, before: dict | None) -> None:
    """On a cluster, say so when executors went away while the case ran."""
    after = record.identity.cluster or {}
    if before and before.get("executors") is not None and after.get("executors") is not None \
            and after["executors"] < before["executors"]:
        lost = before["executors"] - after["executors"]
        note = (f"{lost} executor(s) lost during the case ({before['executors']} → {after['executors']}); "
                "Spark re-ran their tasks on the others")
        record.message = f"{record.message}; {note}" if record.message else note
        record.identity.cluster = {**after, "executors_at_start": before["executors"]}


def timeout_error(case: Case, session: Session) -> SparkError:
    message = f"cancelled after {case.scenario.timeout:g} s"
    if session.abandoned:
        message += f" ({session.abandoned}; SparkContext stopped and its JVM ended, the next case gets new ones)"
    return SparkError("Timeout", message)


def _status(expected: dict, observed: Observation, problems: list[str]) -> str:
    error = observed.error
    if error and error.cls == "Timeout":
        return "timeout"
    if not expect.has_assertions(expected):
        if error:
            return "error"
        # nothing declared, yet the answer was checked: an independent engine gave the same rows
        return "passed" if (observed.reference or {}).get("agrees") else "observed"
    if not problems:
        return "passed"
    return "error" if error and "error" not in expected else "failed"


def _identity(case: Case, session: Session) -> Identity:
    return Identity(
        scenario_id=case.scenario.id,
        file=display_path(case.scenario.path),
        line=case.scenario.line_of("id") or 1,
        tags=case.scenario.data.get("tags", []),
        bug=case.scenario.data.get("bug"),
        join_type=case.join_type if "sql" not in case.join else None,
        api="sql" if "sql" in case.join else case.join.get("api", "dataframe"),
        versions=session.versions,
        master=session.master,
        cluster=getattr(session, "cluster_shape", None),
    )


def _unchecked_words(unchecked: list[str], version: str) -> list[str]:
    """What could not be checked, by why: the deployment could not see it, this Spark
    version does not report it (a stream step's figure, a cost metric), or AQE decides it at run time
    and the case was only planned."""
    unreported = [item for item in unchecked if item.startswith(("batch ", "cost "))]
    pending = [item for item in unchecked if item.endswith(expect.AQE_DECIDES)]
    absent = [item for item in unchecked if item == expect.NO_RUNTIME_FILTERS]
    unseen = [item for item in unchecked if item not in unreported and item not in pending and item not in absent]
    return ([f"{NOT_CHECKABLE}: {', '.join(unseen)}"] if unseen else []) + \
        ([f"not reported by Spark {version}: {', '.join(unreported)}"] if unreported else []) + \
        ([f"not checkable in the initial plan: {', '.join(pending)}"] if pending else []) + \
        ([f"no runtime filters on this version: Spark {version} plans none ({RUNTIME_FILTERS_SINCE} added "
          f"them)"] if absent else [])


def make_record(case: Case, session: Session, expected: dict, observed: Observation, total_s: float) -> CaseRecord:
    judged = None if "model" in (observed.unavailable or []) else \
        model.evaluate(observed, session.versions["spark"], streaming="stream" in case.scenario.data)
    if expected.get("strategy") == PREDICTED:
        expected = _with_prediction(expected, judged)
    version = session.versions["spark"]
    problems = expect.compare(expected, observed, version) if expect.has_assertions(expected) else []
    status = _status(expected, observed, problems)
    for wrong in (compare_results.engine_answer_differs(observed),  # a native answer that is not Spark's
                  compare_results.reference_differs(observed),      # an independent engine's answer
                  compare_results.output_changed(observed),         # a rewrite that changed the output
                  compare_results.answers_disagree(observed, RESULT_ROWS_LIMIT)):
        if wrong:  # wrong, whatever else was expected
            status, problems = "correctness", [wrong, *problems]
    unchecked = expect.not_checkable(expected, observed, version) if expect.has_assertions(expected) else []
    said = _unchecked_words(unchecked, session.versions["spark"])
    if unchecked == ["warnings"] and status == "passed" and \
            expect.has_assertions({k: v for k, v in expected.items() if k != "warnings"}):
        problems = [WARNINGS_UNOBSERVED]  # the strategy, build side, rows ... were checked and held
    elif unchecked and status == "passed":  # what held was checked; the rest could not be: never green
        status, problems = "unchecked", said
    elif unchecked and problems:
        problems += said
    if status in ("error", "timeout") and not problems:
        problems = [f"{observed.error.cls}: {observed.error.message}"]
    if status == "passed" and not expect.has_assertions(expected):
        problems = [f"nothing declared; {observed.reference['engine']} gives the same "
                    f"{observed.reference['rows']:,} rows"]
    version = session.versions["spark"]
    bug = expect.bug_in_force(case, version, deployment(session.master), expect.engine_of(session.versions))
    note = compare_results.reference_note(observed.reference)
    if bug is not None and status == "passed" and note and not any(k in expected for k in expect.EXECUTION_KEYS):
        # the answer a known bug is about was declared nowhere and not compared: never
        # "behaves correctly", said
        status, problems, note = "unchecked", [*problems, note], None
    status, message = expect.bug_verdict(bug, status,
                                         one_line("; ".join(problems)), version)
    if note:
        message = f"{message}; {note}" if message else note
    return CaseRecord(
        identity=_identity(case, session), case_id=case.case_id, label=case.label, params=case.params,
        description=case.scenario.data["description"], status=status, message=message,
        expected=expected, observed=observed,
        timings={"total_s": round(total_s, 4), **{k: round(v, 4) for k, v in observed.timings.items()}},
        model=judged)


def _with_prediction(expected: dict, judged: dict | None) -> dict:
    """`strategy: predicted`: Spark must do what the join-selection model says."""
    if judged is None:
        return {**expected, "strategy": "none (no prediction: the query failed)"}
    return {**expected, "strategy": judged["strategy"], "build_side": judged["build_side"]}


def judge_case(case: Case, who, observed: Observation, total_s: float) -> CaseRecord:
    """The record of an observation made earlier (harness.store), judged by the
    expectations in force now."""
    expected = expectations(case, who)
    return make_record(case, who, expected, observed, total_s)


def absent_session(versions: dict, master: str | None, cluster: dict | None = None, observe: bool = False):
    """What a record needs of a session, for records made without one: by the controller
    for a lost worker, or from a stored observation."""
    from types import SimpleNamespace
    return SimpleNamespace(versions=versions, master=master, abandoned=None, cluster_shape=cluster,
                           deployment=deployment(master), options=SimpleNamespace(observe=observe))


def lost_record(case: Case, versions: dict, master: str | None, message: str) -> CaseRecord:
    """The record of a case whose worker process died under it (built by the controller)."""
    stand_in = absent_session(versions, master)
    message = one_line(message)
    observed = Observation(warnings=[], error=SparkError("WorkerLost", message))
    record = judge_case(case, stand_in, observed, 0.0)
    record.status, record.message = "error", message
    return record


