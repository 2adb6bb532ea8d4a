"""A second run judges the first run's observations by today's expectations, without
Spark; what can have changed runs again."""
import json
import textwrap

import pytest

from tests.conftest import MINIMAL

pytest_plugins = ["pytester"]

NO_SPARK = """
import harness.spark.session as session

def _refuse(*args, **kwargs):
    raise RuntimeError("a Spark session was started")

session.new_session = _refuse
"""


CANNOT_RUN = """
import os
import harness.spark.session as session

_original = session.Session.cannot_run


def pytest_configure(config):
    if os.environ.get("HARNESS_TEST_CANNOT_RUN"):
        session.Session.cannot_run = lambda self, case: "not available: withheld by this test"


def pytest_unconfigure(config):
    session.Session.cannot_run = _original
"""


def _suite(pytester, text=MINIMAL, name="s.yaml"):
    folder = pytester.path / "scenarios"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(textwrap.dedent(text))


def _records(pytester, session) -> dict:
    results = json.loads((pytester.path / "out" / session.versions["spark"] / "results.json").read_text())
    return {r["case_id"]: r for r in results["cases"]}


def _run(pytester, *args):
    return pytester.runpytest("scenarios", "--report-dir", "out", "-p", "no:cacheprovider", "-v", *args)


def test_unchanged_is_reused_and_an_edited_expectation_is_judged_again(pytester, session):
    _suite(pytester)
    _run(pytester).assert_outcomes(passed=2, skipped=1)
    first = _records(pytester, session)
    assert not first["minimal"]["run"]["reused"]

    result = _run(pytester)
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["*PASSED (reused)*", "*3 of 3 records reused from run *"])
    again = _records(pytester, session)
    assert again["minimal"]["run"] == {**first["minimal"]["run"], "reused": True}
    assert again["minimal"]["observed"] == first["minimal"]["observed"]
    assert again["minimal"]["ran_at"] == first["minimal"]["run"]["at"]

    _suite(pytester, MINIMAL.replace("build_side: right", "build_side: left"))
    result = _run(pytester, "-k", "not agree")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*minimal: [[]failed[]] initial plan: expected build side left*(reused: observed by run*"])
    assert _records(pytester, session)["minimal"]["run"]["reused"]


@pytest.mark.parametrize("edit", [("rows: 100", "rows: 120"), ("seed", None)])
def test_a_changed_table_or_fresh_runs_again(pytester, session, edit):
    _suite(pytester)
    _run(pytester, "-k", "not agree").assert_outcomes(passed=1)
    if edit[1] is None:
        result = _run(pytester, "-k", "not agree", "--fresh")
    else:
        _suite(pytester, MINIMAL.replace(*edit))
        result = _run(pytester, "-k", "not agree")
    result.assert_outcomes(passed=1)
    assert "(reused)" not in result.stdout.str()
    assert not _records(pytester, session)["minimal"]["run"]["reused"]


def test_an_error_is_never_reused(pytester, session):
    _suite(pytester, MINIMAL.replace("k: {sequence: {}}", 'k: {expr: "no_such_function(id)"}'))
    _run(pytester, "-k", "not agree").assert_outcomes(failed=1)
    _run(pytester, "-k", "not agree").assert_outcomes(failed=1)
    assert not _records(pytester, session)["minimal"]["run"]["reused"]


def test_an_unusable_store_is_a_warning_and_the_run_goes_on(pytester):
    _suite(pytester)
    (pytester.path / "not-a-folder").write_text("")
    result = pytester.runpytest("scenarios", "--report-dir", "out", "-p", "no:cacheprovider", "-k", "not agree",
                                "--store", "not-a-folder/store")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*result store not used: cannot open*every case runs*"])
    assert "Traceback" not in result.stdout.str()


def test_workers_follow_what_is_left_to_run_and_none_start_when_everything_is_reused(pytester, monkeypatch):
    _suite(pytester)
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "2")
    _suite(pytester, MINIMAL.replace("id: minimal", "id: other"), name="other.yaml")
    run = ("scenarios", "--report-dir", "out", "-p", "no:cacheprovider", "-n", "auto")
    first = pytester.runpytest_subprocess(*run, timeout=300)
    first.assert_outcomes(passed=4, skipped=2)  # a partitions item per file: not needed
    assert "2 workers [6 items]" in first.stdout.str()  # two files to run
    _suite(pytester, MINIMAL.replace("id: minimal", "id: second"), name="second.yaml")
    result = pytester.runpytest_subprocess(*run, timeout=300)
    result.assert_outcomes(passed=6, skipped=3)
    assert "1 worker [9 items]" in result.stdout.str()  # one file to run: one worker

    pytester.makeconftest(NO_SPARK)
    again = pytester.runpytest_subprocess(*run, timeout=300)
    again.assert_outcomes(passed=6, skipped=3)
    assert "workers [" not in again.stdout.str() and "collected 9 items" in again.stdout.str()
    # and the refusal is real: a run that must observe fails for it
    fresh = pytester.runpytest_subprocess(*run, "--fresh", timeout=300)
    assert "a Spark session was started" in fresh.stdout.str()


def test_a_case_this_session_could_not_run_is_never_stored(pytester, session, monkeypatch):
    """A case skipped because this session lacks what it needs (a Delta or Iceberg package,
    an engine's jar) observed nothing: the next run runs it, never judges an empty
    observation as 'no join'."""
    _suite(pytester)
    pytester.makeconftest(CANNOT_RUN)
    monkeypatch.setenv("HARNESS_TEST_CANNOT_RUN", "1")
    _run(pytester, "-k", "not agree").assert_outcomes(skipped=1)
    monkeypatch.delenv("HARNESS_TEST_CANNOT_RUN")
    _run(pytester, "-k", "not agree").assert_outcomes(passed=1)
    assert not _records(pytester, session)["minimal"]["run"]["reused"]
