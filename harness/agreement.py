"""The cross-strategy check: a scenario's join re-run with each strategy Spark can apply
to it, forced by hints; every one must give the same row count and checksum."""
from __future__ import annotations

import time
from functools import reduce

from . import expect
from .runner import AS_WRITTEN, _identity, _tables_used, absent_session, observe, timeout_error
from .util import one_line
from .scenario import Case
from .session import Session
from .records import AgreementRecord, AgreementRun
from .spark_errors import describe_error
from .vocab import NESTED_LOOP_OPERATORS, NO_JOIN

# Nested-loop strategies compare every pair: the cross-strategy check only forces them
# when the tables are small enough for that to stay cheap.
NESTED_LOOP_PAIR_BUDGET = 20_000_000


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


def run_agreement(case: Case, session: Session) -> AgreementRecord:
    """Force every strategy Spark can apply to this join; all must agree on the answer."""
    started = time.perf_counter()
    runs, problems = [], []
    if "error" in expect.resolve(case, session.versions["spark"], session.deployment):
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
                observed, _ = observe(session, scope, case, join, {**base_conf, **extra}, execute=True,
                                      collect_rows=False, stream=streamed and label == AS_WRITTEN)
            except Exception as exc:
                if scope.timed_out.is_set():
                    message = f"forced {label}: {timeout_error(case, session).message}"
                    return _agreement_record(case, session, "timeout", message, runs, [], started)
                err = describe_error(exc)
                runs.append(AgreementRun(label, error=f"{err.cls}: {err.message}"))
                continue
        top = (observed.final or observed.initial).top or {"strategy": NO_JOIN, "build_side": "none"}
        if skip_nested_loop and top["strategy"] in NESTED_LOOP_OPERATORS and label != AS_WRITTEN:
            continue
        runs.append(AgreementRun(label, top["strategy"], top["build_side"], observed.rows, observed.checksum))
    answered = [r for r in runs if r.error is None]
    if not answered:
        status = "error"
        problems.append("no forced strategy could run the query: " + "; ".join(r.error for r in runs))
    else:
        reference = answered[0]
        for run in answered[1:]:
            if (run.rows, run.checksum) != (reference.rows, reference.checksum):
                problems.append(f"{run.strategy} (build {run.build_side}, forced {run.forced}) gives "
                                f"{run.rows} rows / {run.checksum}, but {reference.strategy} "
                                f"(forced {reference.forced}) gives {reference.rows} rows / {reference.checksum}")
        status = "correctness" if problems else "passed"
    strategies = sorted({(r.strategy, r.build_side) for r in answered})
    message = "; ".join(problems) if problems else f"{len(answered)} runs over {len(strategies)} strategies agree"
    version = session.versions["spark"]
    status, message = expect.bug_verdict(expect.bug_in_force(case, version, session.deployment), status, message,
                                         version, case_item=False)
    return _agreement_record(case, session, status, message, runs, strategies, started)


def _agreement_record(case, session, status, message, runs, strategies, started) -> AgreementRecord:
    return AgreementRecord(
        identity=_identity(case, session), case_id=agreement_id(case), label=agreement_label(case),
        params={k: v for k, v in case.params.items() if k == "join_type"},
        description=f"results agree across strategies: {case.scenario.data['description']}",
        status=status, message=message, runs=runs, strategies=[f"{s} ({b})" for s, b in strategies],
        timings={"total_s": round(time.perf_counter() - started, 4)})


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


def lost_record(case: Case, versions: dict, master: str | None, message: str) -> AgreementRecord:
    """The record of an agreement item whose worker process died under it."""
    return _agreement_record(case, absent_session(versions, master), "error", one_line(message), [], [],
                             time.perf_counter())
