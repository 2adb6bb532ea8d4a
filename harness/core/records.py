"""Typed records of what a run saw: an observation of one query, a case's record, an
agreement check's record. They hold plain values only (JVM plan objects never enter
them) and become JSON in one place, `to_json()`, at the edge: the item's report to the
controller. The whole results document is validated against the results schema once,
when it is written (harness.report.version_report)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class SparkError:
    """An error in one line: the Python-side class, the Java class, the message."""
    cls: str
    message: str
    java_class: str = ""

    def to_json(self) -> dict:
        return {"class": self.cls, "java_class": self.java_class, "message": self.message}

    @classmethod
    def from_json(cls, data: dict | None) -> "SparkError | None":
        if not data:
            return None
        return cls(data["class"], data.get("message", ""), data.get("java_class", ""))


# What a deployment could not observe or run (Spark Connect), in the words records use.
UNAVAILABLE = "unavailable"
NOT_RUN = "not run through Spark Connect"
# How a case begins its message when this Spark has no package it needs (an Iceberg
# runtime, a Delta release, a native engine's jar): skipped, and compared with nothing.
NOT_AVAILABLE = "not available"
NOT_CHECKABLE = "not checkable on this deployment"
# A case that passed on everything it could check, whose only unobservable expectation is
# its hint warnings (Spark Connect returns no driver log): passed, saying so.
WARNINGS_UNOBSERVED = "warnings not observable through Spark Connect"
# The units Spark prints sizes in (Utils.bytesToString), e.g. an estimate's `printed` text.
BYTE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50,
              "EiB": 1 << 60}


# A field that was not recorded at all (written as absent), unlike one recorded empty (null).
ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "ABSENT", "__bool__": lambda self: False})()


@dataclass
class PlanView:
    """The join nodes of one physical plan (pre-order) and what a report shows of it."""
    joins: list = field(default_factory=list)
    text: str = ""
    operators: Optional[dict] = None   # operator counts, when an expectation asks for them
    # The joins inside the plan's subqueries, apart from the main plan's: [{subquery, kind,
    # joins}] (harness.observe.jvm_plans.subquery_joins); None where not read (Connect).
    subqueries: Optional[list] = None
    # Run-time sizes of the top join's inputs: recorded for a final adaptive plan, where
    # None says AQE showed none; ABSENT elsewhere.
    runtime: Any = ABSENT
    # The plan's runtime filters (harness.observe.jvm_plans.runtime_filters); None where
    # not read (Connect's printed plans, a record made before they were read).
    runtime_filters: Optional[list] = None

    @property
    def top(self) -> Optional[dict]:
        return self.joins[0] if self.joins else None

    @property
    def runtime_sizes(self) -> Optional[dict]:
        return None if self.runtime is ABSENT else self.runtime

    @classmethod
    def from_json(cls, data: dict | None) -> "PlanView | None":
        if data is None:
            return None
        return cls(joins=data.get("joins") or [], text=data.get("text", ""), operators=data.get("operators"),
                   subqueries=data.get("subqueries"), runtime=data.get("runtime", ABSENT),
                   runtime_filters=data.get("runtime_filters"))

    def to_json(self) -> dict:
        out: dict[str, Any] = {"joins": self.joins, "text": self.text}
        if self.operators is not None:
            out["operators"] = self.operators
        if self.subqueries is not None:  # absent: not read (Connect, an older release)
            out["subqueries"] = self.subqueries
        if self.runtime is not ABSENT:
            out["runtime"] = self.runtime
        if self.runtime_filters is not None:
            out["runtime_filters"] = self.runtime_filters
        return out


@dataclass
class Observation:
    """Everything Spark showed for one query: plans, estimates, result, error, warnings."""
    adaptive: Optional[bool] = None
    initial: PlanView = field(default_factory=PlanView)
    final: Optional[PlanView] = None
    estimates: list = field(default_factory=list)
    executed: bool = False
    rows: Optional[int] = None
    checksum: Optional[str] = None
    error: Optional[SparkError] = None
    conf: dict = field(default_factory=dict)
    join_conf: Optional[dict] = None
    timings: dict = field(default_factory=dict)
    warnings: Optional[list] = None
    result_rows: Optional[list] = None
    stream_batches: Optional[int] = None
    stream_steps: Optional[list] = None  # per `stream.batches` step: added, emitted, watermark, state, late rows
    final_not_applicable: Optional[str] = None   # why a case has no final plan by design
    unavailable: Optional[list] = None   # what the deployment could not observe (Spark Connect)
    undefined_conf: Optional[list] = None  # configs of the case this Spark does not declare (not set)
    removed_conf: Optional[dict] = None  # of those, the ones a release removed: key → that release
    cost: Optional[dict] = None   # what the top join cost when it ran (harness.observe.cost)
    # Under a native engine: Spark's own answer to the same query, the engine off
    # ({"rows", "checksum", "source"}): a native answer that differs is a wrong answer.
    engine_reference: Optional[dict] = None
    # The same query's answer from an independent engine (harness.observe.reference):
    # {engine, compared, agrees, rows, checksum, ...} or {engine, compared: false, why}.
    reference: Optional[dict] = None
    # The answer's columns, [name, type] each as Spark names them (read from the query's
    # schema, without running it); None where not read.
    columns: Optional[list] = None
    # {analysed, optimized}: the optimized plan's output is not the analysed query's (a
    # rewrite leaked or dropped a column); None when they are the same or not read.
    output_change: Optional[dict] = None

    def plan(self, which: str) -> Optional[PlanView]:
        return self.initial if which == "initial" else self.final

    def checked_plan(self, which: str = "initial") -> PlanView:
        """The final plan where asked for and present, else the initial one."""
        return self.final if which in ("final", "both") and self.final is not None else self.initial

    @classmethod
    def from_json(cls, data: dict) -> "Observation":
        """An observation read back from results.json (accept re-checks edits against it)."""
        return cls(adaptive=data.get("adaptive"), initial=PlanView.from_json(data.get("initial")) or PlanView(),
                   final=PlanView.from_json(data.get("final")), estimates=data.get("estimates") or [],
                   executed=bool(data.get("executed")), rows=data.get("rows"), checksum=data.get("checksum"),
                   error=SparkError.from_json(data.get("error")), conf=data.get("conf") or {},
                   join_conf=data.get("join_conf"), timings=data.get("timings") or {},
                   warnings=data.get("warnings"), result_rows=data.get("result_rows"),
                   stream_batches=data.get("stream_batches"), stream_steps=data.get("stream_steps"),
                   final_not_applicable=data.get("final_not_applicable"),
                   unavailable=data.get("unavailable"), undefined_conf=data.get("undefined_conf"),
                   removed_conf=data.get("removed_conf"),
                   cost=data.get("cost"), engine_reference=data.get("engine_reference"),
                   reference=data.get("reference"), columns=data.get("columns"),
                   output_change=data.get("output_change"))

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "adaptive": self.adaptive, "initial": self.initial.to_json(),
            "final": self.final.to_json() if self.final is not None else None,
            "estimates": self.estimates, "executed": self.executed, "rows": self.rows, "checksum": self.checksum,
            "error": self.error.to_json() if self.error is not None else None, "conf": self.conf,
            "timings": self.timings}
        for key in ("join_conf", "warnings", "result_rows", "stream_batches", "stream_steps", "final_not_applicable",
                    "unavailable", "undefined_conf", "removed_conf", "cost", "engine_reference", "reference", "columns",
                    "output_change"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@dataclass
class Identity:
    """Where a record comes from: the scenario, the case's place in it, the run."""
    scenario_id: str
    file: str
    line: int
    tags: list
    bug: Optional[dict]
    join_type: Optional[str]
    api: str
    versions: dict
    master: Optional[str]
    cluster: Optional[dict]

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class ItemRecord:
    """What every item's record says: where it comes from, which item, the verdict."""
    identity: Identity
    case_id: str
    label: str
    params: dict
    description: str
    status: str
    message: str
    # Which run observed what this record judges: {id, at, host}; `reused` when an earlier
    # run's observation was judged now (harness.store), with that run's stamp.
    run: Optional[dict] = None
    reused: bool = False

    kind = "item"

    def _head(self) -> dict:
        head = {**self.identity.to_json(), "kind": self.kind, "case_id": self.case_id, "label": self.label,
                "params": self.params, "description": self.description, "status": self.status,
                "message": self.message}
        if self.run is not None:
            head["run"] = {**self.run, "reused": self.reused}
        return head


@dataclass
class CaseRecord(ItemRecord):
    expected: dict = field(default_factory=dict)
    observed: Observation = field(default_factory=Observation)
    timings: dict = field(default_factory=dict)
    model: Optional[dict] = None

    kind = "case"

    def to_json(self) -> dict:
        return {**self._head(), "expected": self.expected, "observed": self.observed.to_json(),
                "timings": self.timings, "model": self.model}


@dataclass
class AgreementRun:
    """One forced strategy's answer, or the error it threw."""
    forced: str
    strategy: Optional[str] = None
    build_side: Optional[str] = None
    rows: Optional[int] = None
    checksum: Optional[str] = None
    error: Optional[str] = None
    shared: bool = False  # the answer of an identical plan run earlier in this worker
    seconds: Optional[float] = None

    def to_json(self) -> dict:
        if self.error is not None:
            return {"forced": self.forced, "error": self.error}
        extra = {"shared": True} if self.shared else {}
        if self.seconds is not None:
            extra["seconds"] = round(self.seconds, 3)
        return {"forced": self.forced, "strategy": self.strategy, "build_side": self.build_side,
                "rows": self.rows, "checksum": self.checksum, **extra}


@dataclass
class PartitionsRecord(ItemRecord):
    """The ternary-partitioning check of a scenario's answer (harness.check.partitions)."""
    partitions: Optional[dict] = None   # harness.check.ternary.partition's record, or {not_compared: why}
    timings: dict = field(default_factory=dict)

    kind = "partitions"

    def to_json(self) -> dict:
        return {**self._head(), "expected": {},
                "observed": {"partitions": self.partitions} if self.partitions is not None else {},
                "timings": self.timings}


@dataclass
class AgreementRecord(ItemRecord):
    runs: list = field(default_factory=list)         # AgreementRun, in the order they ran
    strategies: list = field(default_factory=list)   # "Strategy (build side)" that answered
    timings: dict = field(default_factory=dict)
    forced: Any = None   # the observation judged (harness.check.agreement.ForcedRuns): stored, not reported

    kind = "agreement"

    def to_json(self) -> dict:
        return {**self._head(), "expected": {},
                "observed": {"agreement": [run.to_json() for run in self.runs], "strategies": self.strategies,
                             **({"reference": self.forced.reference}
                                if getattr(self.forced, "reference", None) is not None else {}),
                             **({"partitions": self.forced.partitions}
                                if getattr(self.forced, "partitions", None) is not None else {})},
                "timings": self.timings}
