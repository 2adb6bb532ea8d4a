"""A Spark Connect server on this machine, and the suite run through it.

`ConnectServer` starts `SparkConnectServer` from the installed PySpark (`spark-submit`
with the `spark-connect` jar that PySpark 4.x wheels ship; for 3.4 and 3.5, whose wheels
do not, that version's `spark-connect_2.12` jar fetched once from Maven Central into the
jar cache, harness.spark.jvm_packages), bound to loopback on a free port, in its own process
group, with the session defaults the harness gives a local session (UTC, the 4.3 locks on
reflection, plan strings capped); it waits until the server answers and stops it (and
its JVM) on exit, on an exception and on SIGINT/SIGTERM.

`python -m harness connect-test` (make connect-test) runs the suite through such a
server, then compares every case with the local-mode result of the same Spark version:
strategy and build side of the initial and final plans, adaptivity, the join
condition's shape, rows, checksum, error (harness.report.diff, minus what Connect cannot see)
and the estimates (the JVM's exact bytes against the server's printed, rounded ones). It
writes reports/connect/<version>/ (results, HTML, comparison.json) and
reports/connect/index.html, the two runs side by side, and prints the differences.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.core import project
from harness.core.options import RunOptions
from harness.core.records import NOT_RUN
from harness.deploy.cluster import (
    LOOPBACK,
    LocalDaemons,
    _signal_group,
    against_local,
    free_port,
    run_suite,
    spark_home,
)
from harness.deploy.connect import NOT_OBSERVABLE
from harness.core.text import bytes_text
from harness.report.diff import UNSEEN
from harness.scenario.tables import declares_format
from harness.spark import jvm_packages
from harness.spark.formats import iceberg
from harness.spark.jvm_packages import Coordinate
from harness.spark.session import NOTHING_MATCHES, ensure_java

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class ConnectError(RuntimeError):
    pass


def server_jar() -> Path | None:
    """The server jar the installed PySpark ships (4.0+), else None."""
    jars = sorted((spark_home() / "jars").glob("spark-connect_*.jar"))
    return jars[0] if jars else None


def server_package(spark: str) -> Coordinate | None:
    """The Spark Connect server of a 3.4 or 3.5 Spark, as published on Maven Central."""
    if not spark.startswith(("3.4.", "3.5.")):
        return None
    return Coordinate("org.apache.spark", "spark-connect_2.12", spark,
                      marker="org/apache/spark/sql/connect/service/SparkConnectServer.class")


def available_server_jar(options: RunOptions | None = None) -> Path:
    """The shipped server jar, else the fetched one (ConnectError: one line saying why not)."""
    import pyspark
    shipped = server_jar()
    if shipped is not None:
        return shipped
    package = server_package(pyspark.__version__)
    if package is None:
        raise ConnectError(f"PySpark {pyspark.__version__} has no Spark Connect server (Spark Connect starts "
                           f"with 3.4)")
    options = options or RunOptions.from_env()
    try:
        return jvm_packages.ensure_jar(package, jvm_packages.cache_of(options), options.maven_repository)
    except jvm_packages.PackageUnavailable as exc:
        raise ConnectError(str(exc)) from None


def server_conf(port: int, workdir: Path) -> dict:
    """What the harness's local session sets, as the server's defaults for every session."""
    return {"spark.connect.grpc.binding.address": LOOPBACK, "spark.connect.grpc.binding.port": str(port),
            "spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK,
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.warehouse.dir": str(workdir / "warehouse"),
            "spark.sql.session.timeZone": "UTC", "spark.sql.runSQLOnFiles": "false",
            "spark.sql.restrictedMode.enabled": "true", "spark.sql.reflect.allowList": NOTHING_MATCHES}
    # Not spark.sql.maxPlanStringLength (local runs cap plan strings): through Connect the
    # estimates are read from the printed plan, and Faker pools would cut it before its joins.


def iceberg_catalog(workdir: Path, options: RunOptions | None = None) -> tuple[list[Path], dict]:
    """(jars, confs) giving the server the worker sessions' Iceberg catalog, when the
    installed Spark has an Iceberg runtime and it can be fetched (else none: those cases
    then say they cannot run through this server)."""
    import pyspark
    coordinates = iceberg.runtime_for(pyspark.__version__)
    if coordinates is None:
        return [], {}
    options = options or RunOptions.from_env()
    try:
        jars = [jvm_packages.ensure_jar(c, jvm_packages.cache_of(options), options.maven_repository)
                for c in coordinates]
    except jvm_packages.PackageUnavailable:
        return [], {}
    confs = iceberg.session_confs(jars, workdir)
    confs.pop("spark.jars")
    return jars, confs


class ConnectServer(LocalDaemons):
    def __init__(self, master: str = "local[2]", driver_memory: str = "4g", log=print, iceberg: bool = False):
        self.iceberg = iceberg
        self.master = master
        self.driver_memory = driver_memory
        self.log = log
        self.dir = Path(tempfile.mkdtemp(prefix="join-harness-connect-"))
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self._previous_handlers: dict = {}

    @property
    def url(self) -> str:
        return f"sc://{LOOPBACK}:{self.port}"

    def start(self, timeout_s: float = 120.0) -> "ConnectServer":
        jar = available_server_jar()
        ensure_java()
        self._trap_signals()
        env = dict(os.environ, SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=LOOPBACK,
                   PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable))
        args = [str(spark_home() / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", self.master,
                "--driver-memory", self.driver_memory,
                "--driver-java-options", RunOptions.driver_jvm_flags, "--name", f"join-harness-connect-{self.port}"]
        jars, iceberg_confs = iceberg_catalog(self.dir) if self.iceberg else ([], {})
        for key, value in {**server_conf(self.port, self.dir), **iceberg_confs}.items():
            args += ["--conf", f"{key}={value}"]
        if jar != server_jar():  # fetched: spark-submit of 3.4/3.5 loads the server class from --jars only
            jars.append(jar)
        if jars:
            args += ["--jars", ",".join(map(str, jars))]
        log = open(self.dir / "server.log", "wb")
        self.proc = subprocess.Popen([*args, str(jar)], env=env, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True, cwd=self.dir)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ConnectError(f"the Spark Connect server exited ({self.dir / 'server.log'})")
            if self.answers():
                self.log(f"[connect] Spark Connect server {self.url} (log: {self.dir / 'server.log'})")
                return self
            time.sleep(0.5)
        raise ConnectError(f"the Spark Connect server did not answer in {timeout_s:g} s ({self.dir / 'server.log'})")

    def answers(self) -> bool:
        """The port accepts connections and the log says the service started."""
        try:
            with socket.create_connection((LOOPBACK, self.port), timeout=1):
                pass
        except OSError:
            return False
        log = (self.dir / "server.log").read_text(errors="replace")
        return "Spark Connect server started" in log or "SparkConnectServer: Spark Connect server" in log

    def stop(self) -> None:
        if self.proc is not None:
            _signal_group(self.proc, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                _signal_group(self.proc, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._restore_signals()


# --------------------------------------------------------------------------- comparison

def _estimate_differences(local: dict, remote: dict) -> list[str]:
    """The JVM's exact estimate printed as Spark prints it, against what the server printed."""
    out = []
    for i, (mine, theirs) in enumerate(zip(local["observed"].get("estimates") or [],
                                           remote["observed"].get("estimates") or [])):
        for side in ("left", "right"):
            exact, printed = mine[side]["size_in_bytes"], theirs[side].get("printed")
            if printed is not None and exact is not None and bytes_text(exact) != printed:
                out.append(f"join #{i + 1} {side}: local {exact:,} B ({bytes_text(exact)}), connect {printed}")
    return out


def compare(local: dict, remote: dict) -> dict:
    """The Connect run against the local run of the same version, per case."""
    from harness.report.diff import case_changes
    by_id = {c["case_id"]: c for c in local["cases"]}
    differences: dict[str, list] = {}
    not_run, compared = [], 0
    for record in remote["cases"]:
        mine = by_id.get(record["case_id"])
        if mine is None:
            continue
        if record["status"] == "skipped" and record["message"].startswith(NOT_RUN):
            not_run.append((record["case_id"], record["message"]))
            continue
        compared += 1
        changes = case_changes(mine, record)
        if record.get("kind") == "case":
            changes += [("estimate", text) for text in _estimate_differences(mine, record)]
        for kind, text in changes:
            differences.setdefault(kind, []).append((record["case_id"], text))
    differing = sorted({case for kind, entries in differences.items() if kind != UNSEEN for case, _ in entries})
    return {"local": {"master": local.get("master"), "summary": local["summary"]},
            "connect": {"master": remote.get("master"), "summary": remote["summary"]},
            "cases_compared": compared, "differing_cases": differing, "differences": differences,
            "not_run_through_connect": not_run, "unavailable_through_connect": NOT_OBSERVABLE}


def format_comparison(comparison: dict) -> str:
    lines = [f"[connect] {comparison['cases_compared']} cases compared with local mode; "
             f"{len(comparison['differing_cases'])} differ; "
             f"{len(comparison['differences'].get(UNSEEN, []))} with something Connect cannot see; "
             f"{len(comparison['not_run_through_connect'])} not run through Connect"]
    for kind, entries in sorted(comparison["differences"].items()):
        lines.append(f"  {kind} ({len(entries)}):")
        lines += [f"    {case}: {text}" for case, text in entries[:50]]
        if len(entries) > 50:
            lines.append(f"    ... {len(entries) - 50} more")
    return "\n".join(lines)


def main(report_dir: str = "reports", extra: list[str] | None = None) -> int:
    extra = extra or []
    from harness.deploy.connect import unsupported_client
    if unsupported_client():
        print(f"[connect] {unsupported_client()}", file=sys.stderr)
        return 2

    def run_through_connect(folder: str) -> int:
        # the Iceberg runtime only when the suite declares Iceberg tables, as for a local run
        with ConnectServer(iceberg=declares_format(project.find().scenario_paths(), "iceberg")) as server:
            return run_suite(folder, [*extra, "--spark-remote", server.url])

    return against_local(report_dir, extra, "connect", run_through_connect, compare,
                         lambda comparison, version: format_comparison(comparison), ConnectError, "Spark Connect")
