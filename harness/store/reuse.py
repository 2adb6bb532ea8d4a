"""Reuse: an item's observation is looked up by its key before any Spark work; found, it
is judged by today's expectations (harness.check) and marked with the run that observed
it; not found, the item runs and its observation is kept. A record judged `error` or
`timeout` is never taken from the store: that item runs again."""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Optional

from harness.check import agreement, partitions, runner
from harness.check.file_checks import AGREEMENT, file_checks, nothing_to_compare
from harness.core.options import RunOptions
from harness.core.records import AgreementRecord, CaseRecord, ItemRecord, Observation, PartitionsRecord
from harness.scenario.errors import ScenarioError
from harness.scenario.model import Case, Scenario
from harness.store import fingerprint
from harness.store.parsed import ParsedScenarios
from harness.store.results_store import ResultStore, RunStamp

CASE = "case"
NEVER_REUSED = ("error", "timeout")
# Errors that say something went wrong around the query rather than what Spark does with it.
NOT_KEPT_ERRORS = ("Timeout", "WorkerLost", "ScenarioError", "JvmDied")


class Reuse:
    """One process's view of the store for a run: keys, recall, keeping."""

    def __init__(self, options: RunOptions, store: ResultStore, stamp: RunStamp, fresh: bool = False):
        self.options = options
        self.store = store
        self.stamp = stamp
        self.fresh = fresh
        # A file's Faker pools are read once per scenario, not once per case and kind.
        self._pools: dict = {}

    @functools.cached_property
    def parsed(self) -> Optional[ParsedScenarios]:
        """Scenario texts parsed and validated before (not recalled by a --fresh run)."""
        return None if self.fresh else ParsedScenarios(self.store, self.stamp)

    @functools.cached_property
    def env(self) -> fingerprint.Environment:
        return fingerprint.Environment.of(self.options)

    @functools.cached_property
    def _as_run(self):
        """What expectations are resolved by for this run: its Spark, deployment and engine."""
        from types import SimpleNamespace
        return SimpleNamespace(versions={"spark": self.env.spark, "engine": self.options.engine},
                               deployment=self.options.deployment, options=self.options)

    @functools.cached_property
    def _plain(self) -> "Reuse":
        """The same store, seen by this run without its engine."""
        return Reuse(dataclasses.replace(self.options, engine=""), self.store, self.stamp)

    def plain_answer(self, case: Case) -> Optional[dict]:
        """Under a native engine: the case's answer from a plain run of this Spark, where
        the store holds one that executed (None: Spark's own answer must be run)."""
        if not self.options.engine:
            return None
        stored = self.store.get(self._plain.key(case, CASE))
        observed = (stored.payload.get("observed") or {}) if stored is not None else {}
        if not observed.get("executed") or observed.get("error") or observed.get("rows") is None:
            return None
        return {"rows": observed["rows"], "checksum": observed["checksum"],
                "source": f"a plain run: {stored.stamp.words()}"}

    def key(self, case: Case, kind: str) -> str:
        needs = {}
        if kind == CASE:
            expected = runner.expectations(case, self._as_run)
            needs = runner.observation_needs(case, expected)
        scenario = case.scenario
        if id(scenario) not in self._pools:
            self._pools[id(scenario)] = (scenario, fingerprint.faker_pools(scenario))
        return fingerprint.case_key(case, kind, self.env, needs, pools=self._pools[id(scenario)][1])

    def recall(self, case: Case, kind: str) -> Optional[ItemRecord]:
        """The item's record judged from a stored observation, or None: it must run."""
        if self.fresh:
            return None
        stored = self.store.get(self.key(case, kind))
        if stored is None:
            return None
        try:
            who = runner.absent_session(stored.payload["versions"], stored.payload["master"],
                                        stored.payload.get("cluster"), self.options.observe)
            if kind == CASE:
                record = runner.judge_case(case, who, Observation.from_json(stored.payload["observed"]),
                                           stored.seconds)
            else:
                record = agreement.judge_agreement(case, who, agreement.ForcedRuns.from_json(stored.payload["forced"]),
                                                   stored.seconds)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self.store.warn(f"join harness: store entry for {case.case_id} ignored (unreadable: "
                            f"{type(exc).__name__}); the case runs again")
            return None
        if record.status in NEVER_REUSED:
            return None
        record.run, record.reused = stored.stamp.to_json(), True
        return record

    def recall_partitions(self, case: Case) -> Optional[PartitionsRecord]:
        """A partitions item's record, judged from its cross-strategy check's stored
        observation: an earlier run's, or (even under --fresh) this run's, kept by the
        worker that ran the check."""
        key = self.key(case, AGREEMENT)
        stored = self.store.get(key)
        if stored is None or (self.fresh and stored.stamp.id != self.stamp.id):
            return None
        try:
            who = runner.absent_session(stored.payload["versions"], stored.payload["master"],
                                        stored.payload.get("cluster"), self.options.observe)
            check = agreement.judge_agreement(case, who, agreement.ForcedRuns.from_json(stored.payload["forced"]),
                                              stored.seconds)
        except (KeyError, TypeError, ValueError, AttributeError):
            return None  # the check's own item says so, and runs it again
        if check.status in NEVER_REUSED:
            return None
        check.run, check.reused = stored.stamp.to_json(), stored.stamp.id != self.stamp.id
        return partitions.judged_from_check(case, check)

    def keep(self, case: Case, kind: str, record: ItemRecord, session) -> None:
        """Store what the item observed (not a timeout, a lost worker, a refused scenario)."""
        record.run = self.stamp.to_json()
        if record.status == "timeout":
            return
        payload = {"versions": session.versions, "master": session.master,
                   "cluster": getattr(session, "cluster_shape", None)}
        if isinstance(record, CaseRecord):
            if record.status == "skipped":
                # this session could not run it (a package or an engine it lacks): nothing was
                # observed, and a later session that has the package must run it
                return
            error = record.observed.error
            if error is not None and error.cls in NOT_KEPT_ERRORS:
                return
            payload["observed"] = record.observed.to_json()
        elif isinstance(record, AgreementRecord) and record.forced is not None:
            payload["forced"] = record.forced.to_json()
        else:
            return  # skipped before anything was observed
        self.store.put(self.key(case, kind), kind, record.case_id, self.env.spark, payload, self.stamp,
                       record.timings.get("total_s", 0.0))

    def files_to_run(self, scenarios: list[list[Case]], with_checks: bool) -> int:
        """How many of these expanded scenario files have a case (or cross-strategy check)
        the store holds no entry for, or SQL the guard has not passed on this Spark: the
        files a run of them must give to Spark (an entry may still turn out unusable)."""
        missing = 0
        for cases in scenarios:
            checks = file_checks(cases, self.options.reference) if with_checks else []
            # a partitions item is judged from its cross-strategy check's entry
            keys = [self.key(c, CASE) for c in cases] + [self.key(c, AGREEMENT) for kind, c, _ in checks
                                                        if kind == AGREEMENT and not nothing_to_compare(kind, c)]
            if any(self.sql_verdict(s) is None for s in {id(c.scenario): c.scenario for c in cases}.values()) \
                    or not all(map(self.store.has, keys)):
                missing += 1
        return missing

    def stand_in(self):
        """A record's view of this run's session, without starting one."""
        versions = {"spark": self.env.spark, "java": self.env.java, "python": self.env.python}
        return runner.absent_session(versions, self.options.master, None, self.options.observe)

    def sql_verdict(self, scenario: Scenario):
        """The guard's verdict on the scenario's SQL on this Spark and harness, where the
        store has one (a --fresh run takes only its own run's, which another of its
        workers may have made): True (it passed), a ScenarioError (refused), or None."""
        stored = self.store.get(fingerprint.sql_check_key(scenario, self.env))
        if stored is None or (self.fresh and stored.stamp.id != self.stamp.id):
            return None
        refused = stored.payload.get("refused")
        return ScenarioError(*refused) if refused else True

    def keep_sql_verdict(self, scenario: Scenario, refusal: Optional[ScenarioError]) -> None:
        payload = {"passed": True} if refusal is None else \
            {"refused": [refusal.path, refusal.line, refusal.field_path, refusal.message]}
        self.store.put(fingerprint.sql_check_key(scenario, self.env), "sql-check", scenario.id, self.env.spark,
                       payload, self.stamp, 0.0)


def open_reuse(options: RunOptions, folder: str, stamp: RunStamp, fresh: bool,
               warn: Callable[[str], None]) -> Optional[Reuse]:
    """None for Spark Connect: a server's Spark and Java are only known by asking it."""
    if options.remote:
        return None
    return Reuse(options, ResultStore(folder, warn), stamp, fresh)
