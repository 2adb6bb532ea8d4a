"""The cross-strategy check: a scenario's join re-run with each strategy Spark can apply
to it, forced by hints; every one must give the same row count and checksum."""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from functools import reduce

from harness.check import expect, partitions
from harness.check.answers import absolute_conf, reference_answer
from harness.check.compare_results import reference_words
from harness.check.runner import (
    AS_WRITTEN,
    PLAN_ONLY,
    _identity,
    absent_session,
    observe,
    prepare_inputs,
    run_forced,
    sized_query,
    timeout_error,
)
from harness.core.records import AgreementRecord, AgreementRun
from harness.core.text import one_line
from harness.observe.reference import ENGINE
from harness.core.vocab import NESTED_LOOP_OPERATORS, NO_JOIN, spark_version
from harness.scenario.model import Case
from harness.scenario.tables import table_rows, uses_iceberg
from harness.spark.derived import build_inputs, top_tables
from harness.spark.errors import describe_error
from harness.spark.session import Session

# Nested-loop strategies compare every pair: the cross-strategy check only forces them
# when the tables are small enough for that to stay cheap.
NESTED_LOOP_PAIR_BUDGET = 20_000_000
# A forced strategy that cannot run for lack of room (a broadcast too large) gives no
# answer; any other run-time failure while another strategy answers is a wrong result.
RESOURCE_LIMITS = re.compile(r"Cannot broadcast the table|OutOfMemoryError|maxResultSize|larger than the "
                             r"(?:maximum|max)|Not enough memory to build")


# Shuffle partitions of the forced runs: one task per core (at least two, so that a
# shuffle really splits the rows; at most eight): the answer does not depend on it, and
# tasks beyond the cores only add scheduling (measured: 8 → 2 made the checks 15% faster
# on a 2-core machine).
FORCED_PARTITIONS = (2, 8)


def forced_partitions(session: Session) -> int:
    cores = (session.cluster_shape or {}).get("cores") or FORCED_PARTITIONS[0]
    return max(FORCED_PARTITIONS[0], min(FORCED_PARTITIONS[1], int(cores)))


def _declared_pairs(case: Case) -> int | None:
    """The pairs a nested loop would compare, from the declared row counts (None when a
    derived input's rows are only known by counting)."""
    tables = case.scenario.data["tables"]
    sizes = [table_rows(tables[name]) for name in top_tables(case)]
    if None in sizes:
        return None
    return reduce(lambda a, b: a * max(b, 1), sizes, 1)


_COUNTED_ROWS: dict = {}


def _real_pairs(session: Session, case: Case) -> int:
    """The pairs a nested loop would compare, from the rows the inputs really have: a
    filter can leave 499 of 200,000 declared rows, an aggregate 10 of a million (each
    input counted once per worker and configs, built exactly as the case builds it)."""
    spec = case.scenario.data["tables"]
    absolute = {k: v for k, v in case.spark_conf.items() if not isinstance(v, dict)}
    sizes = []
    for name in top_tables(case):
        table = spec[name]
        if "filter" not in table and table_rows(table) is not None:
            sizes.append(table_rows(table))
            continue
        key = (id(session.spark), str(case.scenario.path), case.scenario.id, name,
               json.dumps(absolute, sort_keys=True, default=str))
        if key not in _COUNTED_ROWS:
            with session.case_scope(case.scenario.timeout) as scope:
                try:
                    for conf_key, value in absolute.items():
                        scope.set_conf(conf_key, value)
                    frame = build_inputs(session, scope, case, absolute, names=[name])[name]
                    _COUNTED_ROWS[key] = frame.count()
                except Exception:  # cannot be built or counted: every forced run will say why
                    return NESTED_LOOP_PAIR_BUDGET + 1
        sizes.append(_COUNTED_ROWS[key])
    return reduce(lambda a, b: a * max(b, 1), sizes, 1)


def nested_loops_affordable(session: Session, case: Case) -> bool:
    declared = _declared_pairs(case)
    if declared is not None and declared <= NESTED_LOOP_PAIR_BUDGET:
        return True
    return _real_pairs(session, case) <= NESTED_LOOP_PAIR_BUDGET


# The join as written with storage-partitioned joins off (both sides shuffled): what a
# wrong answer of a storage-partitioned join is caught against.
SPJ_OFF_LABEL, SPJ_OFF_CONF = "storage-partitioned-join-off", {"spark.sql.sources.v2.bucketing.enabled": False}
SPJ_SINCE = "3.3"


def forced_variants(case: Case, nested_loops: bool = True, hints_off: bool = False,
                    partitions: int = FORCED_PARTITIONS[0], spj_off: bool = False) -> list[tuple[str, dict, dict]]:
    """(label, join spec, extra conf) for each strategy to force on this case's query.
    `hints_off` (Spark 3.1+): a query's own hints are ignored in the configuration-forced
    runs of SQL text, which a hint would otherwise pin to one strategy. `spj_off`: the
    join as written once more without storage-partitioned joins (Iceberg tables, 3.3+)."""
    spj = [(SPJ_OFF_LABEL, case.join, SPJ_OFF_CONF)] if spj_off else []
    # AQE off so that each forced strategy is the one that runs (no runtime re-planning).
    no_auto = {"spark.sql.autoBroadcastJoinThreshold": -1, "spark.sql.shuffle.partitions": partitions,
               "spark.sql.adaptive.enabled": False}
    if "sql" in case.join:
        no_hints = {"spark.sql.optimizer.disableHints": True} if hints_off else {}
        return [(AS_WRITTEN, case.join, {}),
                ("sort-merge-preferred", case.join, {**no_auto, **no_hints, "spark.sql.join.preferSortMergeJoin": True}),
                ("broadcast-all", case.join, {**no_auto, **no_hints, "spark.sql.autoBroadcastJoinThreshold": 1 << 30})] + spj
    hinted = [("BROADCAST@left", {"left": ["BROADCAST"]}),
              ("BROADCAST@right", {"right": ["BROADCAST"]}), ("SHUFFLE_HASH@left", {"left": ["SHUFFLE_HASH"]}),
              ("SHUFFLE_HASH@right", {"right": ["SHUFFLE_HASH"]}), ("MERGE", {"left": ["MERGE"]})]
    if nested_loops:
        hinted.append(("SHUFFLE_REPLICATE_NL", {"left": ["SHUFFLE_REPLICATE_NL"]}))
    as_written = (AS_WRITTEN, case.join, {})
    return [as_written] + [(label, {**case.join, "hints": hints}, no_auto) for label, hints in hinted] + \
        spj


@dataclass
class ForcedRuns:
    """What the check observed: every forced run's answer or error, which failures were
    refusals (not results), and whether nested loops were forced. Judged by `judge_agreement`."""
    runs: list = field(default_factory=list)       # AgreementRun, in the order they ran
    rejected: list = field(default_factory=list)   # labels of runs Spark refused, or too big to run
    nested_loops: bool = True
    reference: dict | None = None   # the answer against an independent engine's (harness.observe.reference)
    # ternary logic partitioning of the answer (harness.check.partitions), judged by the
    # file's partitions item, not by this check
    partitions: dict | None = None
    seconds: dict = field(default_factory=dict)  # what the oracles took here (never stored: a reused check took none)

    def to_json(self) -> dict:
        return {"runs": [{**run.to_json(), "error": run.error} if run.error is not None else
                         {**run.to_json(), "shared": run.shared, "seconds": run.seconds} for run in self.runs],
                "rejected": self.rejected, "nested_loops": self.nested_loops, "reference": self.reference,
                "partitions": self.partitions}

    @classmethod
    def from_json(cls, data: dict) -> "ForcedRuns":
        runs = [AgreementRun(r["forced"], r.get("strategy"), r.get("build_side"), r.get("rows"), r.get("checksum"),
                             r.get("error"), bool(r.get("shared")), r.get("seconds")) for r in data["runs"]]
        return cls(runs, list(data["rejected"]), bool(data["nested_loops"]), data.get("reference"),
                   data.get("partitions"))


STEPPED = ("a stream fed step by step emits by its watermarks and drops late rows: a batch join of its tables "
           "is not its answer (each step's expectations are its check)")


def nothing_to_compare(case: Case) -> str | None:
    """Why the scenario's cross-strategy check has nothing to compare, decided from the
    file alone (so a run that finds it needs no Spark session for it), else None."""
    if case.scenario.plan_only:
        return f"{PLAN_ONLY}: no results to compare"
    if (case.scenario.data.get("stream") or {}).get("batches"):
        return STEPPED
    return None


def skipped_record(case: Case, who) -> AgreementRecord:
    """The check of a scenario with nothing to compare (`nothing_to_compare`)."""
    return _agreement_record(case, who, "skipped", nothing_to_compare(case), [], [], 0.0)


def run_agreement(case: Case, session: Session) -> AgreementRecord:
    """Force every strategy Spark can apply to this join; all must agree on the answer.
    A strategy that throws while another answers is a correctness failure; a check that
    compared fewer than two strategies checked nothing and says so (`unchecked`).

    The inputs are built once, under the case's configs, and every strategy runs over
    them in one scope: each forced strategy's configs are set for its run only."""
    started = time.perf_counter()
    if nothing_to_compare(case):
        return skipped_record(case, session)
    cannot = session.cannot_run(case)
    if cannot:
        return _agreement_record(case, session, "skipped", cannot, [], [], 0.0)

    def took() -> float:
        return time.perf_counter() - started

    base_conf = absolute_conf(case.spark_conf)
    forced = ForcedRuns(nested_loops=nested_loops_affordable(session, case))
    runs, rejected = forced.runs, forced.rejected
    deadline = started + case.scenario.timeout  # one budget for all the forced runs
    hints_off = spark_version(session.versions["spark"]) >= spark_version("3.1")
    spj_off = uses_iceberg(case.scenario.data) and \
        spark_version(session.versions["spark"]) >= spark_version(SPJ_SINCE)
    variants = forced_variants(case, nested_loops=forced.nested_loops, hints_off=hints_off,
                               partitions=forced_partitions(session), spj_off=spj_off)
    if "stream" in case.scenario.data:
        # The stream-stream join as written against every batch strategy over the same tables.
        variants = [v for v in variants if v[0] != AS_WRITTEN]
        if not _stream_run(case, session, base_conf, deadline, runs, rejected):
            return _agreement_record(case, session, "timeout", f"forced {AS_WRITTEN}: "
                                     f"{timeout_error(case, session).message}", runs, [], took())
    with session.case_scope(max(deadline - time.perf_counter(), 0.01)) as scope:
        try:
            tables = prepare_inputs(session, scope, case, base_conf)
        except Exception as exc:  # no strategy can run without its inputs
            if scope.timed_out.is_set():
                return _agreement_record(case, session, "timeout", timeout_error(case, session).message, runs, [],
                                         took())
            err = describe_error(exc)
            for label, _, _ in variants:
                runs.append(AgreementRun(label, error=f"{err.cls}: {err.message}"))
                rejected.append(label)
            tables = None
        # The join as written last: when no forced strategy ran, its answer would be
        # compared with nothing, and it is planned, not run.
        ordered = [v for v in variants if v[0] != AS_WRITTEN] + [v for v in variants if v[0] == AS_WRITTEN]
        for label, join, extra in ordered if tables is not None else []:
            run_started = time.perf_counter()
            try:
                with scope.conf_overlay(extra):
                    # a nested loop too big to compare every pair is planned, never run
                    ran = run_forced(session, scope, join, base_conf, tables,
                                     nested_loops=forced.nested_loops or label == AS_WRITTEN,
                                     execute=label != AS_WRITTEN or bool(runs))
            except Exception as exc:
                if scope.timed_out.is_set():
                    message = f"forced {label}: {timeout_error(case, session).message}"
                    return _agreement_record(case, session, "timeout", message, runs, [], took())
                died = session.death()  # no answer from a dead JVM: the check could not go on, never a correctness
                if died:
                    runs.append(AgreementRun(label, error=f"JvmDied: {died}"))
                    return _agreement_record(case, session, "error", f"{_run_words(label)}: JvmDied: {died}", runs,
                                             [], took())
                _failed_run(label, exc, runs, rejected, first=label == AS_WRITTEN)
                continue
            if ran is None or (not forced.nested_loops and ran.strategy in NESTED_LOOP_OPERATORS
                               and label != AS_WRITTEN):
                continue
            runs.insert(0 if label == AS_WRITTEN else len(runs),  # the reference, as before
                        AgreementRun(label, ran.strategy, ran.build_side, ran.rows, ran.checksum, shared=ran.shared,
                                     seconds=time.perf_counter() - run_started))
        if tables is not None and "stream" not in case.scenario.data:
            oracle_started = time.perf_counter()
            forced.reference = _reference_of_runs(session, scope, case, base_conf, tables, runs)
            forced.seconds["reference_s"] = round(time.perf_counter() - oracle_started, 4)
            if getattr(session.options, "reference", "on") != "off":
                oracle_started = time.perf_counter()
                forced.partitions = partitions.of_runs(session, scope, case, base_conf, tables,
                                                       the_answer(runs), forced.reference)
                forced.seconds["partitions_s"] = round(time.perf_counter() - oracle_started, 4)
    return judge_agreement(case, session, forced, took())


def the_answer(runs: list) -> AgreementRun | None:
    """The strategies' answer the oracles judge: the join as written's, else the first that
    ran (None: no strategy answered)."""
    answered = [run for run in runs if run.error is None and run.rows is not None]
    return next((run for run in answered if run.forced == AS_WRITTEN), answered[0]) if answered else None


def _reference_of_runs(session: Session, scope, case: Case, conf: dict, tables: dict, runs: list) -> dict | None:
    """The answer the strategies gave (the join as written's, else the first's) against an
    independent engine's; None when no strategy answered."""
    first = the_answer(runs)
    if first is None:
        return None
    try:
        query = sized_query(session, scope, case.join, conf, tables)
    except Exception as exc:
        return {"engine": ENGINE, "compared": False, "why": f"the query could not be built again: {exc}"}
    return reference_answer(session, scope, case, case.join, query, tables, first.rows, first.checksum)


def judge_agreement(case: Case, who, forced: ForcedRuns, seconds: float) -> AgreementRecord:
    """The verdict on forced runs (just made, or stored by harness.store), with the
    scenario's known bug as it reads now."""
    varies = expect.resolve(case, who.versions["spark"], who.deployment, expect.engine_of(who.versions)).get("varies") or {}
    status, message = _verdict(forced.runs, forced.rejected, forced.nested_loops, varies, forced.reference)
    shared = sum(1 for run in forced.runs if run.shared)
    if shared:  # the same physical query under the same configs already ran in this worker
        message += f" ({shared} answer{'s' if shared > 1 else ''} shared with an identical plan run before)"
    version = who.versions["spark"]
    status, message = expect.bug_verdict(expect.bug_in_force(case, version, who.deployment,
                                                             expect.engine_of(who.versions)), status, message,
                                         version, case_item=False)
    record = _agreement_record(case, who, status, message, forced.runs, _strategies(forced.runs), seconds)
    record.timings.update(forced.seconds)
    record.forced = forced
    return record


def _failed_run(label: str, exc: Exception, runs: list, rejected: list, first: bool = False) -> None:
    """`first`: the join as written, listed before the forced runs (it runs last)."""
    err = describe_error(exc)
    runs.insert(0 if first else len(runs), AgreementRun(label, error=f"{err.cls}: {err.message}"))
    if getattr(exc, "harness_phase", None) != "execution" or RESOURCE_LIMITS.search(err.message):
        rejected.append(label)  # refused at analysis or planning, or too big: not a result


def _stream_run(case: Case, session: Session, conf: dict, deadline: float, runs: list, rejected: list) -> bool:
    """The stream-stream join as written, in a scope of its own (its query is stopped
    when the scope closes); False when it ran past the check's time."""
    with session.case_scope(max(deadline - time.perf_counter(), 0.01)) as scope:
        try:
            observed, _ = observe(session, scope, case, case.join, conf, execute=True, collect_rows=False,
                                  stream=True)
        except Exception as exc:
            if scope.timed_out.is_set():
                return False
            _failed_run(AS_WRITTEN, exc, runs, rejected)
            return True
    top = observed.initial.top or {"strategy": NO_JOIN, "build_side": "none"}
    runs.append(AgreementRun(AS_WRITTEN, top["strategy"], top["build_side"], observed.rows, observed.checksum,
                             shared=bool(observed.timings.get("shared_execution"))))
    return True


def _strategies(runs: list) -> list[tuple[str, str]]:
    # A run whose plan could not be read (an adaptive run through a Spark Connect 3.5
    # client) has no strategy: None sorts first.
    return sorted({(r.strategy, r.build_side) for r in runs if r.error is None},
                  key=lambda pair: tuple("" if part is None else part for part in pair))


def _verdict(runs: list, rejected: list, nested_loops: bool, varies: dict,
             reference: dict | None = None) -> tuple[str, str]:
    """`varies`: the scenario's own declaration of what differs between runs: its rows
    or checksum are then not compared (said in the message), never silently. `reference`:
    the answer against an independent engine's; one that differs is a wrong answer even
    where every strategy agrees (a rewrite bug happens before strategies are chosen)."""
    status, message = _strategies_verdict(runs, rejected, nested_loops, varies)
    if status in ("skipped", "error") or not reference:
        return status, message
    if reference.get("compared") and not reference.get("agrees"):
        words = reference_words(reference)
        return "correctness", words if status != "correctness" else f"{message}; {words}"
    if reference.get("compared"):
        agreed = f"{reference['engine']} gives the same {reference['rows']:,} rows"
        if status == "unchecked" and message.startswith("only one strategy"):
            return "passed", f"{message.split(': nothing to check against')[0]}: {agreed}"
        return status, f"{message}; {agreed}"
    return status, f"{message}; reference: not compared ({reference['why']})"


def _strategies_verdict(runs: list, rejected: list, nested_loops: bool, varies: dict) -> tuple[str, str]:
    compared = [what for what in ("rows", "checksum") if what not in varies]
    said = "".join(f"; {what} not compared ({varies[what]})" for what in ("rows", "checksum") if what in varies)
    answered = [r for r in runs if r.error is None]
    failed = [r for r in runs if r.error is not None]
    if not answered:
        if failed and len(rejected) == len(failed):
            return "skipped", "Spark rejects this query on this version: " + failed[0].error
        return "error", "no forced strategy could run the query: " + "; ".join(
            f"{r.forced}: {r.error}" for r in failed) if failed else "no strategy ran"
    problems = [f"forced {r.forced} threw {r.error} while {answered[0].strategy} (forced {answered[0].forced}) "
                f"returned {answered[0].rows} rows" for r in failed if r.forced not in rejected]
    reference = answered[0]
    # runs Spark refused or could not afford are no answer, but the verdict names them
    said += "".join(f"; {_run_words(r.forced)} did not run ({_why_not(r.error)})" for r in failed
                    if r.forced in rejected)
    if not compared:
        return "unchecked", f"nothing compared: the scenario says its rows and checksum differ between runs{said}"
    for run in answered[1:]:
        if any(getattr(run, what) != getattr(reference, what) for what in compared):
            problems.append(f"{run.strategy} (build {run.build_side}, forced {run.forced}) gives "
                            f"{run.rows} rows / {run.checksum}, but {reference.strategy} "
                            f"(forced {reference.forced}) gives {reference.rows} rows / {reference.checksum}")
    if problems:
        return "correctness", "; ".join(problems) + said
    strategies = [pair for pair in _strategies(runs) if pair[0] is not None]  # a plan not read is no strategy
    if len(strategies) < 2:
        why = "" if nested_loops else "; nested-loop strategies were not forced (the inputs hold more than " \
                                      f"{NESTED_LOOP_PAIR_BUDGET:,} pairs)"
        only = ", ".join(f"{s} ({b})" for s, b in strategies)
        planned = "; the join as written was planned, not run" if all(r.rows is None for r in answered) else ""
        return "unchecked", (f"only one strategy could be compared ({only}): nothing to check against"
                             f"{why}{planned}{said}")
    return "passed", f"{len(answered)} runs over {len(strategies)} strategies agree{said}"


def _run_words(forced: str) -> str:
    return "the join as written" if forced == AS_WRITTEN else f"forced {forced}"


def _why_not(error: str) -> str:
    """The part of a refused run's error that says why: from the resource limit it hit."""
    limit = RESOURCE_LIMITS.search(error)
    start = error.rfind(" ", 0, limit.start()) + 1 if limit else 0
    why = error[start:]
    return why if len(why) <= 120 else why[:117] + "..."


def _agreement_record(case, session, status, message, runs, strategies, seconds: float) -> AgreementRecord:
    return AgreementRecord(
        identity=_identity(case, session), case_id=agreement_id(case), label=agreement_label(case),
        params={k: v for k, v in case.params.items() if k == "join_type"},
        description=f"results agree across strategies: {case.scenario.data['description']}",
        status=status, message=message, runs=runs,
        strategies=[f"{s} ({b})" if s is not None else "plan not read" for s, b in strategies],
        timings={"total_s": round(seconds, 4)})


def agreement_label(case: Case) -> str:
    return f"{case.join_type}-agree" if "sql" not in case.join else "agree"


def agreement_id(case: Case) -> str:
    return f"{case.scenario.id}[{agreement_label(case)}]"


def agreement_representatives(cases: list[Case]) -> list[Case]:
    """One case per distinct answer-defining variant (join type) of a scenario. A variant
    Spark rejects on the running version is skipped when the check runs."""
    chosen: dict[tuple, Case] = {}
    for case in cases:  # a synthetic twin is a scenario of its own
        key = (case.scenario.id, agreement_label(case))
        # Preferably a case that executes: the check's as-written run is then its answer,
        # shared (harness.spark.executions), not run again.
        if key not in chosen or (not expect.executes(chosen[key].expect) and expect.executes(case.expect)):
            chosen[key] = case
    return list(chosen.values())


def lost_record(case: Case, versions: dict, master: str | None, message: str) -> AgreementRecord:
    """The record of an agreement item whose worker process died under it."""
    return _agreement_record(case, absent_session(versions, master), "error", one_line(message), [], [], 0.0)
