"""The pytest items of the adapter: a scenario file collected into one item per case (each
matrix expansion, and each repetition of a flake-finder run) and, per join type, a
cross-strategy check and a partitions check (harness.check.file_checks); an item runs its case on this worker's session, or judges a stored
observation again, and hands its record to the controller."""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from harness.check.file_checks import AGREEMENT, PARTITIONS, file_checks
from harness.check.partitions import judged_from_check, partitions_id
from harness.core.text import display_path, one_line
from harness.plugin_state import (
    FAILING,
    FLAKE_RUN_KEY,
    RECORD_KEY,
    REUSE,
    REUSED_KEY,
    SHARD_KEY,
    flake_runs,
    options_of,
)
from harness.scenario.errors import ScenarioError
from harness.scenario.model import expand, load_once
from harness.spark.session import SessionUnavailable
from harness.store.results_store import RunStamp
from harness.store.reuse import CASE, Reuse


# pytest's own marks: a folder or tag of that name would skip, xfail or break every item.
RESERVED_MARKS = {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "tryfirst",
                  "trylast", "agreement"}


def marker_names(scenario) -> list[str]:
    """The scenario's tags and its folder's name, as pytest markers (names pytest accepts)."""
    names = [*scenario.data.get("tags", []), scenario.path.parent.name]
    return list(dict.fromkeys(n for n in names if n.isidentifier() and not n.startswith("_")
                              and n not in RESERVED_MARKS))


class ScenarioFile(pytest.File):
    def collect(self):
        try:
            scenario, cases = self._load()
        except ScenarioError:
            raise
        except SessionUnavailable as exc:  # the file is fine; no session can be had to check it
            raise ScenarioError(self.path, None, "", str(exc)) from None
        except Exception as exc:  # whatever else goes wrong is this file's problem alone
            raise ScenarioError(self.path, None, "", f"cannot be loaded ({type(exc).__name__}: {exc})") from None
        marks = marker_names(scenario)
        for mark in marks:
            self.config.addinivalue_line("markers", f"{mark}: scenario tag")
        runs = range(1, flake_runs(self.config) + 1) if flake_runs(self.config) else [None]
        for run in runs:
            for case in cases:
                yield self._item(ScenarioItem, case.case_id, case, marks, run)
            if self.config.getoption("no_agree"):
                continue
            for kind, case, item_id in file_checks(cases, options_of(self.config).reference):
                item_class = AgreementItem if kind == AGREEMENT else PartitionsItem
                yield self._item(item_class, item_id, case, marks + ["agreement"], run)

    def _item(self, kind, name: str, case, marks: list, run: int | None):
        """One item; in a flake-finder run, one of its K repetitions (`name@2`)."""
        item = kind.from_parent(self, name=name if run is None else f"{name}@{run}", case=case)
        item.flake_run = run
        for mark in marks:
            item.add_marker(mark)
        return item

    def _load(self):
        reuse = self.config.stash[REUSE]
        scenario = load_once(self.path, reuse.parsed if reuse is not None else None)
        ids = self.config._harness_ids
        owner = ids.setdefault(scenario.id, str(self.path))
        if owner != str(self.path):
            raise ScenarioError(self.path, scenario.line_of("id"), "id",
                                f"duplicate id '{scenario.id}' (already used by {owner})")
        cases = expand(scenario)
        for checked in {id(c.scenario): c.scenario for c in cases}.values():  # a synthetic twin too
            judge_sql(self.config, checked, wait=True)
        return scenario, cases

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, ScenarioError):
            return str(excinfo.value)
        return one_line(f"{self.path}: cannot be loaded ({excinfo.type.__name__}: {excinfo.value})")


# How long a worker waits for the verdict another worker owns before judging it itself.
SHARED_VERDICT_WAIT_S = 60.0


def _worker(config) -> tuple[int, int]:
    """(this xdist worker's index, the run's worker count); (0, 1) outside xdist. Read from
    the run's own config (xdist's `workerinput`), not the environment: a pytest run inside
    a worker (pytester) is no worker of its own."""
    workerinput = getattr(config, "workerinput", None) or {}
    worker, count = str(workerinput.get("workerid", "")), int(workerinput.get("workercount", 1) or 1)
    return (int(worker[2:]), count) if worker.startswith("gw") and worker[2:].isdigit() else (0, 1)


def _owner(config, path) -> int:
    """The index of the worker that judges the file's SQL: every xdist worker collects
    every file, so each judges its share (by a digest of the path) and reads the others'
    verdicts from the store; a process outside xdist judges all."""
    count = _worker(config)[1]
    return int(hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest(), 16) % count if count > 1 else 0


def _owns(config, path) -> bool:
    return _owner(config, path) == _worker(config)[0]


def _share_done_key(reuse, index: int) -> str:
    return f"sql-share-done:{reuse.stamp.id}:{index}"


def judge_sql(config, scenario, wait: bool) -> None:
    """The SQL guard's verdict on a loaded scenario (harness.spark.sql_guard): the store's,
    made before on this Spark and harness or by another worker of this run; else judged
    here (or, `wait`, first awaited from the worker that owns it) and kept. A refusal
    raises its ScenarioError."""
    from harness.check.runner import check_sql
    from harness.spark import sql_guard
    from harness.spark.session import get_session
    reuse = config.stash[REUSE]
    if reuse is None:
        check_sql(get_session(options_of(config)), scenario)
        return
    verdict = reuse.sql_verdict(scenario)
    if verdict is None and wait and not _owns(config, scenario.path) and reuse.store.usable():
        # until the owner has judged it, or has gone through its whole share without
        # (it could not: its collection says why, and so will this one's)
        owner_done = _share_done_key(reuse, _owner(config, scenario.path))
        deadline = time.monotonic() + SHARED_VERDICT_WAIT_S
        while time.monotonic() < deadline:
            done = reuse.store.has(owner_done)
            verdict = reuse.sql_verdict(scenario)
            if verdict is not None or done:
                break
            time.sleep(0.02)
    if verdict is None:
        try:
            check_sql(get_session(options_of(config)), scenario)
            verdict = True
        except ScenarioError as refusal:
            verdict = refusal
        reuse.keep_sql_verdict(scenario, None if verdict is True else verdict)
    sql_guard.remember_verdict(scenario, None if verdict is True else verdict)
    if verdict is not True:
        raise verdict


def judge_own_share(config, paths) -> None:
    """Before an xdist worker collects: the SQL of the files it owns judged at once, so
    that the other workers, judging theirs meanwhile, find them in the store."""
    reuse = config.stash[REUSE]
    if reuse is None or _worker(config)[1] < 2:
        return
    try:
        for path in paths:
            if not _owns(config, path):
                continue
            try:
                scenarios = {id(c.scenario): c.scenario for c in expand(load_once(path, reuse.parsed))}
                for scenario in scenarios.values():
                    judge_sql(config, scenario, wait=False)
            except Exception:  # the file's collection says what is wrong with it
                continue
    finally:
        reuse.store.put(_share_done_key(reuse, _worker(config)[0]), "sql-share", "", reuse.env.spark, {"done": True},
                        reuse.stamp, 0.0)


class CaseFailed(Exception):
    """(one-line verdict, lines saying why Spark chose what it chose)"""


def _why(record: dict) -> list[str]:
    from harness.observe.describe import expectation_words, why_lines
    if record["kind"] in ("agreement", "partitions"):
        return why_lines(record)
    return [f"expected: {expectation_words(record.get('expected'))}", *why_lines(record)]


class ScenarioItem(pytest.Item):
    kind = CASE
    flake_run = None

    def __init__(self, *, case, **kwargs):
        # The id from its text, as pytest reads ids back from its cache: `name[params]`
        # parsed the same way both times, so that --lf/--ff find the item again (pytest 9).
        kwargs.setdefault("nodeid", f"{kwargs['parent'].nodeid}::{kwargs['name']}")
        super().__init__(**kwargs)
        self.case = case

    def _run(self, session):
        from harness.check.runner import run_case
        return run_case(self.case, session)

    def _recall(self, reuse: Reuse | None):
        return reuse.recall(self.case, self.kind) if reuse is not None else None

    def _keep(self, reuse: Reuse | None, record, session) -> None:
        if reuse is not None:
            reuse.keep(self.case, self.kind, record, session)

    def runtest(self):
        from harness.spark.session import get_session
        reuse = self.config.stash[REUSE]
        record = self._recall(reuse)
        if record is None:
            session = get_session(options_of(self.config))
            from harness.spark import executions
            # Each repetition runs anew: its executions are not shared with another's.
            executions.set_round(self.flake_run or 0)
            # under an engine, Spark's own answer from a plain run the store holds
            session.plain_answers = reuse.plain_answer if reuse is not None else None
            record = self._run(session)
            record.run = self.config._harness_stamp.to_json()
            self._keep(reuse, record, session)
        self._hand_over(record)
        self._report(record)

    def _hand_over(self, record) -> None:
        """What a later item of this worker judges from this one's observation (none here)."""

    def _report(self, record) -> None:
        # The edge: the typed record becomes JSON here, and travels to the controller.
        as_json = record.to_json()
        self.user_properties.append((RECORD_KEY, json.dumps(as_json, default=str)))
        reused = ""
        if record.reused:
            reused = f" (reused: observed by {RunStamp.from_json(record.run).words()})"
            self.user_properties.append((REUSED_KEY, RunStamp.from_json(record.run).words()))
        if getattr(self.config, "_harness_split", None):
            self.user_properties.append((SHARD_KEY, json.dumps(self.config._harness_split)))
        if self.flake_run is not None:
            self.user_properties.append((FLAKE_RUN_KEY, str(self.flake_run)))
        if record.status in ("skipped", "unchecked"):  # the record keeps which of the two
            # reported at the scenario file and line (reportinfo), not at this line
            raise pytest.skip.Exception(record.message + reused, _use_item_location=True)
        if record.status == "known_bug":  # reported apart: xfailed, and listed with its JIRA
            pytest.xfail(record.message + reused)
        if record.status in FAILING:
            raise CaseFailed(f"[{record.status}] {record.message}{reused}", _why(as_json))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CaseFailed):
            verdict, why = excinfo.value.args
            head = one_line(f"{display_path(self.path)}:{self.case.scenario.line_of('id')}: {self.name}: {verdict}")
            return "\n".join([head, *(f"    {one_line(line)}" for line in why)])
        if isinstance(excinfo.value, (ScenarioError, SessionUnavailable)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, (self.case.scenario.line_of("id") or 1) - 1, self.name


class CheckItem(ScenarioItem):
    """An item that checks a case's answer beyond the case's own expectations: collected
    right after that case (harness.plugin)."""


class AgreementItem(CheckItem):
    kind = AGREEMENT

    def _recall(self, reuse: Reuse | None):
        from harness.check.agreement import nothing_to_compare, skipped_record
        if nothing_to_compare(self.case) and reuse is not None:  # nothing to compare, no session to start
            record = skipped_record(self.case, reuse.stand_in())
            record.run = self.config._harness_stamp.to_json()
            return record
        return super()._recall(reuse)

    def _run(self, session):
        from harness.check.agreement import run_agreement
        return run_agreement(self.case, session)

    def _hand_over(self, record) -> None:
        """The partitions this check ran, to the file's partitions item (collected right
        after it, so on this worker as a rule) where the run has that item."""
        if partitions_id(self.case) in _selected_partitions(self.session):
            HANDED[(partitions_id(self.case), self.flake_run)] = record


def _selected_partitions(session) -> set:
    """The ids of the partitions items this run selected (after -k and markers)."""
    if getattr(session, "_harness_partitions", None) is None:
        session._harness_partitions = {partitions_id(item.case) for item in session.items
                                      if isinstance(item, PartitionsItem)}
    return session._harness_partitions


# partitions item (id, repetition) → the agreement record of this worker whose partitions it judges
HANDED: dict = {}


class PartitionsItem(CheckItem):
    """Judges the partitions its file's cross-strategy check ran: handed over on this
    worker, else from the store (an earlier run's, or this run's from another worker),
    else that check is run here (and kept, for the check's own item)."""
    kind = PARTITIONS

    def _recall(self, reuse: Reuse | None):
        agreement = HANDED.pop((partitions_id(self.case), self.flake_run), None)
        if agreement is not None:
            return judged_from_check(self.case, agreement)
        return reuse.recall_partitions(self.case) if reuse is not None else None

    def _run(self, session):
        from harness.check.agreement import run_agreement
        agreement = run_agreement(self.case, session)
        agreement.run = self.config._harness_stamp.to_json()
        reuse = self.config.stash[REUSE]
        if reuse is not None:
            reuse.keep(self.case, AGREEMENT, agreement, session)
        return judged_from_check(self.case, agreement)

    def _keep(self, reuse: Reuse | None, record, session) -> None:
        """Nothing of its own: the check it judges was kept under its own key."""
