"""The ternary-partitioning check: one item per scenario file and join type, beside the
cross-strategy check. Where no independent engine compared the answer (a Spark-only
function, a cast whose semantics differ, bounds), Spark answers the query's three
partitions over a predicate on a join key (harness.check.ternary); partitions that do not
add up to the query's rows are a `correctness` verdict, whatever anyone declared.

The partitions run inside the cross-strategy check, over the inputs it built and against
the answer its strategies gave (nothing built or run twice); this module decides what is
partitioned there (`of_runs`) and judges it as the item's own verdict (`judge_partitions`)."""
from __future__ import annotations

from harness.check import expect, ternary
from harness.check.answers import analysed_alone
from harness.check.runner import PLAN_ONLY, _identity, absent_session, sized_query
from harness.core.records import PartitionsRecord
from harness.core.text import one_line
from harness.scenario.model import Case
from harness.spark.errors import describe_error


def partitions_label(case: Case) -> str:
    return f"{case.join_type}-partitions" if "sql" not in case.join else "partitions"


def partitions_id(case: Case) -> str:
    return f"{case.scenario.id}[{partitions_label(case)}]"


def nothing_to_partition(case: Case) -> str | None:
    """Why a scenario has no partitions item, decided from the file alone (its
    cross-strategy check says the same as a skipped item)."""
    if case.scenario.plan_only:
        return f"{PLAN_ONLY}: no answer to partition"
    if "stream" in case.scenario.data:
        return "a stream's answer is its micro-batches' (each step's expectations are its check)"
    return None


def of_runs(session, scope, case: Case, conf: dict, tables: dict, answer, reference: dict | None) -> dict | None:
    """What the partitions item judges, from inside the cross-strategy check: the three
    partitions against `answer` (the strategies' AgreementRun), {not_run: why} where the
    reference compared the answer already, {not_compared: why} where the partitions cannot
    rightly add up; None when no strategy answered."""
    if answer is None:
        return None
    if (reference or {}).get("compared"):
        return {"not_run": f"{reference.get('engine', 'the reference')} compared this answer"}
    varies = expect.resolve(case, session.versions["spark"], session.deployment,
                            expect.engine_of(session.versions)).get("varies") or {}
    if "rows" in varies or "checksum" in varies:
        return {"not_compared": "the file declares its answer varies between runs"}
    try:
        why = ternary.why_not(analysed_alone(session, scope, case.join, tables)) \
            if session.plan_reader == "jvm" else None
        if why:
            return {"not_compared": why}
        query = sized_query(session, scope, case.join, conf, tables)
        columns = [[f.name, f.dataType.simpleString()] for f in query.schema.fields]
        found = ternary.partition(query, columns, case.join, answer.rows, answer.checksum)
    except Exception as exc:
        if scope.timed_out.is_set():  # the strategies answered in time; the oracle did not: said, never a verdict
            return {"not_compared": f"cut at the scenario's timeout ({case.scenario.timeout:g} s)"}
        return {"not_compared": f"the partitions could not run: {one_line(describe_error(exc).message)[:300]}"}
    return found or {"not_compared": "no column of the answer can carry a predicate"}


def judge_partitions(case: Case, who, found: dict | None, seconds: float) -> PartitionsRecord:
    """The verdict on what the cross-strategy check partitioned (just now, or stored by
    harness.store), with the scenario's known bug as it reads now."""
    if found is None:
        status, message = "skipped", "ternary partitioning: no strategy answered the query, nothing to partition"
    elif "not_run" in found:
        status, message = "skipped", f"ternary partitioning: not needed ({found['not_run']})"
    elif "not_compared" in found:
        status, message = "unchecked", f"ternary partitioning: not compared ({found['not_compared']})"
    elif not found["agrees"]:
        status, message = "correctness", ternary.words(found)
    elif not found["query_rows"]:
        # partitions of no rows add up unless one of them invents rows: no green on that
        status, message = "unchecked", f"{ternary.words(found)}: an empty answer, nothing to partition"
    else:
        status, message = "passed", ternary.words(found)
    version = who.versions["spark"]
    status, message = expect.bug_verdict(expect.bug_in_force(case, version, who.deployment,
                                                             expect.engine_of(who.versions)), status, message,
                                         version, case_item=False)
    return _record(case, who, status, message, found, seconds)


def judged_from_check(case: Case, check) -> PartitionsRecord:
    """The partitions item's record from its cross-strategy check's record (just run, or
    judged from the store): the same run, and reused where the check was."""
    identity = check.identity
    who = absent_session(identity.versions, identity.master, identity.cluster)
    forced = check.forced
    if forced is None:  # the check observed nothing: skipped (a package it lacks), or cut short
        record = _record(case, who, "skipped", f"ternary partitioning: not run (its cross-strategy check is "
                                               f"{check.status}: {check.message})", None, 0.0)
    else:
        record = judge_partitions(case, who, forced.partitions, forced.seconds.get("partitions_s", 0.0))
    record.run, record.reused = check.run, check.reused
    return record


def _record(case: Case, who, status: str, message: str, found: dict | None, seconds: float) -> PartitionsRecord:
    return PartitionsRecord(
        identity=_identity(case, who), case_id=partitions_id(case), label=partitions_label(case),
        params={k: v for k, v in case.params.items() if k == "join_type"},
        description=f"its partitions add up to its answer: {case.scenario.data['description']}",
        status=status, message=message, partitions=found, timings={"total_s": round(seconds, 4)})


def lost_record(case: Case, versions: dict, master: str | None, message: str) -> PartitionsRecord:
    """The record of a partitions item whose worker process died under it."""
    return _record(case, absent_session(versions, master), "error", one_line(message), None, 0.0)
