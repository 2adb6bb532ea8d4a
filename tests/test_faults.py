"""A case that overruns or kills its worker fails alone; the rest of the run goes on."""
import json
import time

from harness.check.agreement import run_agreement
from harness.check.runner import run_case
from harness.scenario.model import expand, load_scenario
from harness.spark import case_scope
from harness.spark import session as session_module
from tests.conftest import MINIMAL

pytest_plugins = ["pytester"]

# 10^8 x 10^8 rows under a non-equi condition: a cartesian product no machine finishes.
ENDLESS = """\
id: endless
description: a join that would run for days
timeout: 2
tables:
  a: {rows: 100000000, columns: {k: {expr: "id"}}}
  b: {rows: 100000000, columns: {k: {expr: "id"}}}
join: {left: a, right: b, type: inner, condition: "l.k < r.k"}
expect: {rows: 1}
"""


# The same sizes joined on a key of two values: every strategy a check forces runs for days.
ENDLESS_EQUI = ENDLESS.replace('{expr: "id"}', '{expr: "id % 2"}').replace('condition: "l.k < r.k"', "on: [k]")


def _only_case(path):
    return expand(load_scenario(path))[0]


def test_overrunning_case_is_cancelled_and_the_session_stays_usable(write_scenario, session):
    case = _only_case(write_scenario(ENDLESS))
    started = time.perf_counter()
    record = run_case(case, session).to_json()
    assert record["status"] == "timeout"
    assert "cancelled after 2 s" in record["message"]
    assert time.perf_counter() - started < 15
    # what was planned before the cut stays in the record (the upgrade diff reads it)
    assert record["observed"]["initial"]["joins"][0]["strategy"] == "CartesianProduct"
    assert "CartesianProduct" in record["observed"]["initial"]["text"]
    assert not record["observed"]["executed"]
    assert not session.abandoned
    follow_up = run_case(_only_case(write_scenario(MINIMAL, "ok.yaml")), session).to_json()
    assert follow_up["status"] == "passed", follow_up["message"]


def test_agreement_check_shares_one_timeout(write_scenario, session):
    case = _only_case(write_scenario(ENDLESS_EQUI))
    started = time.perf_counter()
    record = run_agreement(case, session).to_json()
    assert record["status"] == "timeout"
    assert time.perf_counter() - started < 15  # not 2 s per forced strategy


def test_an_endless_nested_loop_check_runs_nothing(write_scenario, session):
    """Every strategy Spark can force on it is a nested loop too big to compare: planned only."""
    record = run_agreement(_only_case(write_scenario(ENDLESS)), session).to_json()
    assert record["status"] == "unchecked" and "planned, not run" in record["message"]


def test_case_ignoring_cancellation_gets_its_context_stopped(write_scenario, session, monkeypatch):
    # Stand in for a job that does not react to cancellation. Its clock is not read
    # between steps either: on a loaded machine planning alone may outlast the 2 s, and the
    # case would then end at that check, before any job ran, with nothing to stop.
    monkeypatch.setattr(case_scope.CaseScope, "_cancel_jobs", lambda self: None)
    monkeypatch.setattr(case_scope.CaseScope, "check_timeout", lambda self: None)
    monkeypatch.setattr(case_scope, "STOP_GRACE_S", 3.0)
    from pyspark import SparkContext
    jvm = SparkContext._gateway.proc
    case = _only_case(write_scenario(ENDLESS))
    record = run_case(case, session).to_json()
    # its JVM is gone with it: the tasks that ignored cancellation do not hold the cores
    assert jvm.wait(timeout=30) is not None
    assert record["status"] == "timeout"
    assert "SparkContext stopped" in record["message"]
    assert record["observed"]["initial"]["joins"][0]["strategy"] == "CartesianProduct"  # JVM gone, joins kept
    fresh = session_module.get_session()
    assert fresh is not session and not fresh.abandoned
    follow_up = run_case(_only_case(write_scenario(MINIMAL, "ok.yaml")), fresh).to_json()
    assert follow_up["status"] == "passed", follow_up["message"]


# A query whose job fails while it runs (ANSI: 'x0' is no integer).
FAILS_AT_RUN_TIME = """\
id: fails_at_run_time
description: a value that cannot be cast fails the query's job
tables:
  a: {rows: 10, columns: {k: {expr: "id"}, bad: {expr: "cast(concat('x', id) as int)"}}}
  b: {rows: 10, columns: {k: {expr: "id"}}}
join: {left: a, right: b, on: [k]}
spark_conf: {spark.sql.ansi.enabled: true}
expect: {rows: 10}
"""


def _cast_failed(message: str) -> bool:
    # Spark's error class from 3.4; the Java exception before it (measured on 3.0.3)
    return "CAST_INVALID_INPUT" in message or "NumberFormatException" in message


def test_under_an_engine_an_item_whose_job_failed_hands_the_next_item_a_new_session(write_scenario, session,
                                                                                    monkeypatch):
    """A native engine's failed task may leave native threads on freed memory (Comet
    0.12.0: an off-heap OOM, then a SIGSEGV under a later case): under an engine the
    session is not kept after a case whose job failed. Without one it is."""
    failing = _only_case(write_scenario(FAILS_AT_RUN_TIME, "fails.yaml"))
    record = run_case(failing, session).to_json()
    assert record["status"] == "error" and _cast_failed(record["message"]), record["message"]
    assert not session.spoiled and session_module.get_session() is session  # plain Spark: kept
    monkeypatch.setattr(session, "engine", "comet")
    monkeypatch.setattr(session, "engine_runtime", "org.apache.datafusion:comet-spark-stand-in:0")
    record = run_case(failing, session).to_json()
    assert record["status"] == "error" and _cast_failed(record["message"]), record["message"]
    # the rest of the item (a check's other runs) goes on in it; the next item gets a new one
    assert not session.abandoned and session.spoiled == ("a job failed under comet: its native state is not "
                                                         "trusted for the next item")
    assert run_case(_only_case(write_scenario(MINIMAL, "same_item.yaml")), session).to_json()["status"] == "passed"
    fresh = session_module.get_session()
    assert session.abandoned == session.spoiled
    assert fresh is not session and not fresh.abandoned and not fresh.engine_runtime
    follow_up = run_case(_only_case(write_scenario(MINIMAL, "ok.yaml")), fresh).to_json()
    assert follow_up["status"] == "passed", follow_up["message"]


def test_a_dead_jvm_and_a_lost_worker_each_fail_their_case_alone(pytester):
    """One run, one worker: a case whose JVM dies fails alone and the next case gets a new
    session; a case whose worker process dies fails alone ("worker process lost") and a
    new worker runs the rest; the reports (merged page included) are written."""
    scenarios = pytester.mkdir("scenarios")
    for name in ("a_first", "b_killer", "c_after", "d_doomed", "e_last"):
        (scenarios / f"{name}.yaml").write_text(MINIMAL.replace("id: minimal", f"id: {name}"))
    pytester.makeconftest('''
        import os, signal, time
        import harness.check.runner as runner
        original = runner.observe
        def observe(session, scope, case, *args, **kwargs):
            if case.scenario.id == "b_killer":  # the JVM dies in the middle of this case, as a native crash would
                os.kill(session.spark.sparkContext._gateway.proc.pid, signal.SIGSEGV)
                time.sleep(1)
            return original(session, scope, case, *args, **kwargs)
        runner.observe = observe
        def pytest_runtest_call(item):
            if item.name == "d_doomed":
                os._exit(3)  # the worker JVM and Python process die mid-case
    ''')
    result = pytester.runpytest_subprocess("scenarios", "-n", "1", "--report-dir", "out", "-p", "no:cacheprovider",
                                           "-k", "not agree", timeout=300)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 3 and outcomes.get("failed") == 2, result.stdout.str()
    [results] = (pytester.path / "out").glob("*/results.json")
    by_id = {c["case_id"]: c for c in json.loads(results.read_text())["cases"]}
    assert {case: record["status"] for case, record in by_id.items()} == {
        "a_first": "passed", "b_killer": "error", "c_after": "passed", "d_doomed": "error", "e_last": "passed"}
    assert "worker process lost" in by_id["d_doomed"]["message"]
    # said as what it is, with the JVM's own fatal-error log (never "connection refused")
    assert by_id["b_killer"]["observed"]["error"]["class"] == "JvmDied"
    assert by_id["b_killer"]["message"].startswith(
        "unexpected error JvmDied: the Spark driver JVM died during the case: SIGSEGV in native code ("), \
        by_id["b_killer"]["message"]
    assert "join-harness-crashes/hs_err_pid" in by_id["b_killer"]["message"]
    assert (pytester.path / "out" / "index.html").exists()
