"""The suite through a Spark Connect server (`--spark-remote sc://host:port`).

A Connect client has no JVM: no plan objects, no log appender, no job groups. So here:

- plans are read from what the server prints and reports (harness.observe.printed_plans);
- a case's jobs are stopped through Connect's own interrupt: every operation of a case
  carries an operation tag, and the watchdog interrupts that tag;
- configs are restored per case and the session's whole config is compared with the one
  it started with (one `GetAll` call), as in local mode;
- scenario SQL is still decided from Spark's parsed and analysed plans before any of it
  reaches the server (Connect runs commands as soon as it parses them): the SQL guard runs
  in a child process on the client's own PySpark in classic local mode (one small JVM
  per worker that executes nothing), and the server gets only what it accepted;
- what cannot be observed through Connect is named in each record (`unavailable`), and
  an expectation on it is reported as not checkable, never as passed.
"""
from __future__ import annotations

import multiprocessing
import os
import tempfile
import threading
import time
from pathlib import Path

from harness.core.options import RunOptions
from harness.core.records import NOT_RUN
from harness.spark.case_scope import CaseScope
from harness.spark.errors import describe_error
from harness.spark.session import NO_SESSION, SESSION_KINDS, Session, SessionUnavailable
from harness.spark.stages import RunStages


# What a Connect client cannot see, and why (the words a record and the README use).
NOT_OBSERVABLE = {
    "warnings": "hint warnings are logged in the server's JVM; Connect does not send them",
    "model": "the join-selection model reads equi keys and orderability from the JVM's logical join",
    "runtime": "AQE's run-time statistics of query stages are not in Connect's plan metrics",
    "operators": "operator counts are read from the JVM's plan classes; Connect prints other names",
    "subqueries": "the joins inside subqueries are read from the JVM's plan objects (the subqueries of each operator)",
    "key_grouped": "whether Spark used a V2 scan's partitioning is read from the JVM's plan "
                   "(KeyGroupedPartitioning); the printed plan does not say it",
}
# A join's cost is read from the plan metrics the server sends with the result; what its
# stage's tasks read is not among them.
NO_STAGES = "Spark Connect sends no stage or task figures with a result"
# Also per node: a final plan's shuffled hash join has build side `unavailable` (not in
# the plan metrics); a result sent without plan metrics has no final plan (`final`).
CANNOT_RUN = {
    "statistics": f"{NOT_RUN}: statistics-only tables get their statistics "
                  "injected into the catalog through the JVM",
    "estimate_of": f"{NOT_RUN}: a config is sized by an exact estimate, and Connect "
                   "prints estimates rounded (e.g. 878.9 KiB)",
    "iceberg_sort_order": f"{NOT_RUN}: an Iceberg table's sort order is set through Iceberg's Java "
                          "API (its SQL needs Iceberg's session extensions, which the harness does not load)",
}
# How long the client retries a server that does not answer before the case fails.
CLIENT_RETRIES = {"max_retries": 3, "initial_backoff": 200, "max_backoff": 2000, "backoff_multiplier": 2.0}


def unsupported_client() -> str | None:
    """Why this PySpark's Spark Connect client cannot run the suite (None: it can). A case
    is bounded in time by interrupting its operations by tag; a 3.4 client has no tags
    and no interrupt (3.5+), so a runaway query would hold the server."""
    from pyspark.sql.connect.session import SparkSession
    if not hasattr(SparkSession, "addTag"):
        import pyspark
        return (f"a PySpark {pyspark.__version__} Spark Connect client cannot interrupt a query (operation tags "
                "and interrupts came in 3.5), so no case could be bounded in time: run through Connect with "
                "PySpark 3.5 or later")
    return None


def public_url(remote: str) -> str:
    """The URL without its parameters (`;token=...` is a secret; reports keep only where)."""
    return remote.split(";", 1)[0].rstrip("/")


class ConnectSession(Session):
    """The worker's session on a Spark Connect server: harness.spark.session.Session where the
    JVM is out of reach (configs, life, what can be observed)."""

    plan_reader = "printed"   # what the server prints and reports (harness.observe.printed_plans)
    unavailable = tuple(NOT_OBSERVABLE)

    def __init__(self, options: RunOptions):
        from pyspark.sql import SparkSession

        self.options = options
        self.workdir = Path(tempfile.mkdtemp(prefix="join-harness-", dir=options.work_dir))
        self.master = public_url(options.remote)
        _refuse_while_unreachable(self.master)
        try:
            self.spark = SparkSession.builder.remote(options.remote).create()  # its own session, never a shared one
            _limit_retries(self.spark)
            server_version = self.spark.version
        except Exception as exc:
            _UNREACHABLE[self.master] = (time.monotonic(), describe_error(exc).message)
            raise SessionUnavailable(f"{NO_SESSION}: Spark Connect server {self.master} does not answer "
                                     f"({_UNREACHABLE[self.master][1]})") from None
        self.deployment = "connect"
        self.versions = {"spark": server_version, "java": "unavailable", "python": _python_version(),
                         "client": _client_version()}
        self._defaults: dict[str, str | None] = {}
        self.abandoned: str | None = None
        self.stopped = threading.Event()
        self.guard = GuardProcess(options)
        for key, value in options.spark_conf.items():  # --spark-conf: this session's, on the server
            try:
                self.spark.conf.set(key, value)
            except Exception as exc:
                raise SessionUnavailable(f"{NO_SESSION}: --spark-conf {key} cannot be set through Spark Connect "
                                         f"({describe_error(exc).message})") from None
        self._baseline = self._current_confs()

    @property
    def cluster_shape(self) -> None:
        return None  # executors are the server's business

    def _let_go(self) -> None:
        """Interrupt everything of this session (it is then closed; the next case gets a new one)."""
        try:
            self.spark.interruptAll()
        except Exception:
            pass

    def run_action(self, action):
        return action(), RunStages.unknown(NO_STAGES)

    def death(self) -> None:
        return None  # the server's JVM is not this client's: a lost server is said by its gRPC error

    def alive(self) -> bool:
        try:
            self.spark.conf.get("spark.sql.shuffle.partitions")
            return True
        except Exception:
            return False

    def jvm_reachable(self) -> bool:
        return True  # no JVM of ours to forget

    def cannot_run(self, case) -> str | None:
        from harness.scenario.tables import is_iceberg, is_stats_only, uses_iceberg
        from harness.spark import formats
        from harness.spark.formats import iceberg
        data = case.scenario.data
        unavailable = formats.cannot_run(data, self.versions["spark"])
        if unavailable:
            return unavailable
        if uses_iceberg(data) and not self._has_iceberg_catalog():
            return (f"{NOT_RUN}: the Spark Connect server {self.master} has no Iceberg catalog "
                    f"`{iceberg.CATALOG}` (make connect-test starts its server with one)")
        if any(is_iceberg(spec) and spec.get("sort_by") for spec in data["tables"].values()):
            return CANNOT_RUN["iceberg_sort_order"]
        if any(is_stats_only(spec) for spec in data["tables"].values()):
            return CANNOT_RUN["statistics"]
        if any(isinstance(value, dict) for value in case.spark_conf.values()):
            return CANNOT_RUN["estimate_of"]
        return None

    def _has_iceberg_catalog(self) -> bool:
        from harness.spark.formats import iceberg
        if not hasattr(self, "_iceberg_catalog"):
            try:
                self._iceberg_catalog = bool(self.spark.conf.get(f"spark.sql.catalog.{iceberg.CATALOG}", None))
            except Exception:
                self._iceberg_catalog = False
        return self._iceberg_catalog

    # Configs: the whole set in one GetAll call (what the session set; unset keys are absent).
    def _confs_unchanged(self) -> bool:
        return self._current_confs() == self._baseline

    def _current_confs(self) -> dict:
        try:
            return self.spark.conf.getAll
        except AttributeError:  # a PySpark 3.5 client: no getAll yet
            return {row[0]: row[1] for row in self.spark.sql("SET").collect()}

    def _snapshot(self, key: str):
        return self._current_confs().get(key)


class ConnectScope(CaseScope):
    """A case on the Connect server: its operations carry a tag, interrupted at the timeout."""

    def _begin(self) -> None:
        self.tag = f"join-harness-{self.group}"
        self.spark.addTag(self.tag)

    def _end(self) -> None:
        self.spark.removeTag(self.tag)

    def _cancel_spark(self) -> None:
        try:
            self.spark.interruptTag(self.tag)
        except Exception:
            pass

    def _drop_caches(self) -> None:
        # Only this case's: the server's cache is shared by every session (other workers').
        for frame in self.cached:
            frame.unpersist()

    def warnings(self) -> None:
        return None  # unavailable through Connect (see NOT_OBSERVABLE)


ConnectSession.scope_class = ConnectScope
SESSION_KINDS["connect"] = ConnectSession

# A server that did not answer is not asked again for a while: every case after it fails
# at once with the same reason, instead of each spending the client's retries.
UNREACHABLE_PAUSE_S = 30.0
_UNREACHABLE: dict = {}


def _refuse_while_unreachable(url: str) -> None:
    when, why = _UNREACHABLE.get(url, (None, ""))
    if when is not None and time.monotonic() - when < UNREACHABLE_PAUSE_S:
        raise SessionUnavailable(f"{NO_SESSION}: Spark Connect server {url} did not answer "
                                 f"{time.monotonic() - when:.0f} s ago ({why}); asked again after "
                                 f"{UNREACHABLE_PAUSE_S:g} s")


def _limit_retries(spark) -> None:
    """A server that is gone fails the case in seconds, not after the client's default
    ten minutes of retries."""
    try:
        from pyspark.sql.connect.client.retries import DefaultPolicy
        spark.client.set_retry_policies([DefaultPolicy(**CLIENT_RETRIES)])
    except Exception:
        pass


def _python_version() -> str:
    import platform
    return platform.python_version()


def _client_version() -> str:
    import pyspark
    return pyspark.__version__


# --------------------------------------------------------------------------- the SQL guard

class GuardProcess:
    """The SQL guard on a classic local Spark in a child process (started at the first
    scenario): it receives the loaded scenario, checks every piece of its SQL on Spark's
    parsed and analysed plans (harness.spark.sql_guard), and answers with the refusal or with the
    tables each derived query reads. Nothing of the scenario reaches the server first."""

    def __init__(self, options: RunOptions):
        self.options = options
        self._conn = None
        self._proc = None
        self._lock = threading.Lock()

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        self._proc = context.Process(target=_guard_main, args=(child, self.options.work_dir), daemon=True,
                                     name="join-harness-sql-guard")
        self._proc.start()
        self._conn = parent

    def check(self, scenario, spark) -> None:
        from harness.scenario.errors import ScenarioError
        from harness.spark import derived
        from harness.spark.sql_guard import once_per_session

        def refusal():
            answer = self._ask(scenario)
            if "error" in answer:  # no verdict: not kept, asked again by the next case
                raise ScenarioError(scenario.path, None, "", answer["error"])
            for text, names in answer.get("relations", {}).items():
                derived.remember_relations(spark, text, names)
            return ScenarioError(*answer["refused"]) if answer.get("refused") else None
        once_per_session(scenario, id(spark), refusal)

    def _ask(self, scenario) -> dict:
        from dataclasses import replace
        with self._lock:
            if self._proc is None or not self._proc.is_alive():
                self._start()
            try:
                self._conn.send(replace(scenario, sql_verdict=None))
                if not self._conn.poll(GUARD_TIMEOUT_S):
                    self._stop()
                    return {"error": f"the SQL guard gave no verdict in {GUARD_TIMEOUT_S:g} s"}
                return self._conn.recv()
            except (EOFError, OSError) as exc:
                self._stop()
                return {"error": f"the SQL guard process ended ({type(exc).__name__})"}

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(10)
        self._proc = None


GUARD_TIMEOUT_S = 180.0


def _guard_main(conn, work_dir) -> None:
    """The child: classic local Spark (never Connect), one scenario at a time."""
    for key in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE"):
        os.environ.pop(key, None)
    # Its JVM's start-up lines are not the run's output: kept in a log beside its files.
    log = os.open(os.path.join(tempfile.gettempdir(), f"join-harness-sql-guard-{os.getpid()}.log"),
                  os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    from harness.scenario.errors import ScenarioError
    from harness.spark.session import Session
    from harness.spark.sql_guard import check_scenario
    from harness.spark.sql_trees import relation_names

    options = RunOptions.from_env(master="local[1]", driver_memory="1g", work_dir=work_dir)
    options = RunOptions(**{**options.__dict__, "remote": None})
    session = Session(options)
    spark = session.spark
    while True:
        try:
            scenario = conn.recv()
        except EOFError:
            return
        try:
            check_scenario(spark, scenario)
            relations = {spec["sql"]: relation_names(spark, spec["sql"])
                         for spec in scenario.data["tables"].values() if "sql" in spec}
            conn.send({"relations": relations})
        except ScenarioError as exc:
            conn.send({"refused": (exc.path, exc.line, exc.field_path, exc.message)})
        except Exception as exc:
            conn.send({"error": f"the SQL guard failed ({type(exc).__name__}: {str(exc)[:200]})"})
