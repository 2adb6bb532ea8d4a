"""A real Spark standalone cluster on this machine, and the suite run against it.

`StandaloneCluster` starts a master and N workers from the installed PySpark
(`bin/spark-class`), each its own JVM in its own process group, bound to loopback
only, with small memory; it waits until every worker has registered and stops them all
(executors included) on exit, on an exception and on SIGINT/SIGTERM.

`python -m harness cluster-test` (make cluster-test) runs the scenario suite against such
a cluster (one application with one executor per worker, so shuffles and broadcasts
cross JVMs), then compares every case with the local-mode result of the same Spark
version (strategy and build side of the initial and final plans, rows, checksum, error,
warnings). It writes reports/cluster/<version>/ (results, HTML, comparison.json) and
reports/cluster/index.html, the two runs side by side, and prints the differences.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from harness.core import project

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
LOOPBACK = "127.0.0.1"


def cluster_conf(workers: int) -> dict:
    """One application, one 1-core executor per worker (tasks and broadcasts cross JVMs).
    The session starts only once every executor has registered, so a case sees them all."""
    return {"spark.executor.memory": "1g", "spark.executor.cores": "1", "spark.cores.max": str(workers),
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "60s",
            "spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK}


class ClusterError(RuntimeError):
    pass


def spark_home() -> Path:
    import pyspark
    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


class LocalDaemons:
    """Processes this machine runs for a test (`start`, `stop`): stopped on leaving the
    `with` block, on an exception, and on SIGINT/SIGTERM (raised as KeyboardInterrupt)."""

    _previous_handlers: dict

    def _trap_signals(self) -> None:
        def handler(signum, frame):
            raise KeyboardInterrupt(f"signal {signum}")
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._previous_handlers[sig] = signal.signal(sig, handler)
            except ValueError:  # not the main thread: the caller's own handling applies
                pass

    def _restore_signals(self) -> None:
        for sig, previous in self._previous_handlers.items():
            signal.signal(sig, previous)
        self._previous_handlers.clear()

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()


class StandaloneCluster(LocalDaemons):
    def __init__(self, workers: int = 2, cores_per_worker: int = 1, worker_memory: str = "2g",
                 daemon_memory: str = "512m", log=print):
        self.workers = workers
        self.cores_per_worker = cores_per_worker
        self.worker_memory = worker_memory
        self.daemon_memory = daemon_memory
        self.log = log
        self.dir = Path(tempfile.mkdtemp(prefix="join-harness-cluster-"))
        self.master_port = free_port()
        self.ui_port = free_port()
        self.master: subprocess.Popen | None = None
        self.worker_procs: list[subprocess.Popen] = []
        self._previous_handlers: dict = {}

    @property
    def url(self) -> str:
        return f"spark://{LOOPBACK}:{self.master_port}"

    def _env(self) -> dict:
        from harness.spark.session import ensure_java
        ensure_java()
        env = dict(os.environ)
        env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=LOOPBACK, SPARK_MASTER_HOST=LOOPBACK,
                   SPARK_DAEMON_MEMORY=self.daemon_memory, SPARK_LOG_DIR=str(self.dir / "logs"),
                   SPARK_WORKER_DIR=str(self.dir / "work"), SPARK_NO_DAEMONIZE="1",
                   PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable))
        return env

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(self.dir / f"{name}.log", "wb")
        return subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], env=self._env(),
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def start(self, timeout_s: float = 120.0) -> "StandaloneCluster":
        self._trap_signals()
        # A properties file in the cluster's folder: every JVM's command line names the folder,
        # so what this cluster started can be found (and checked gone) from outside.
        properties = self.dir / "spark-daemon.conf"
        properties.write_text("# daemons of one harness cluster\n")
        self.master = self._spawn("master", [MASTER_CLASS, "--host", LOOPBACK, "--port", str(self.master_port),
                                             "--webui-port", str(self.ui_port), "--properties-file", str(properties)])
        deadline = time.monotonic() + timeout_s
        self._wait(lambda: self.state() is not None, deadline, "the master did not come up")
        for i in range(self.workers):
            work = self.dir / f"worker-{i}"
            work.mkdir()
            self.worker_procs.append(self._spawn(f"worker-{i}", [
                WORKER_CLASS, "--host", LOOPBACK, "--cores", str(self.cores_per_worker),
                "--memory", self.worker_memory, "--webui-port", str(free_port()), "--work-dir", str(work), self.url]))
        self._wait(lambda: self.alive_workers() >= self.workers, deadline,
                   f"{self.workers} workers did not register with the master")
        self.log(f"[cluster] master {self.url}, {self.workers} workers × {self.cores_per_worker} core, "
                 f"logs in {self.dir}")
        return self

    def _wait(self, ready, deadline: float, what: str) -> None:
        while time.monotonic() < deadline:
            if self.master is not None and self.master.poll() is not None:
                raise ClusterError(f"the master exited ({self.dir / 'master.log'})")
            if ready():
                return
            time.sleep(0.5)
        raise ClusterError(f"{what} in time (logs in {self.dir})")

    def state(self) -> dict | None:
        """The master's JSON status page, or None while it is not up."""
        try:
            with urllib.request.urlopen(f"http://{LOOPBACK}:{self.ui_port}/json/", timeout=2) as response:
                return json.loads(response.read().decode())
        except (OSError, ValueError):
            return None

    def alive_workers(self) -> int:
        state = self.state() or {}
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def kill_worker(self, index: int) -> None:
        """Kill one worker JVM and the executors it launched (its process group), hard."""
        proc = self.worker_procs[index]
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    def stop(self) -> None:
        procs = [p for p in (*self.worker_procs, self.master) if p is not None]
        for proc in procs:
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in procs:
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait(timeout=10)
        self._restore_signals()


def _signal_group(proc: subprocess.Popen, sig) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# --------------------------------------------------------------------------- cluster-test

def conf_args(workers: int) -> list[str]:
    return [arg for key, value in cluster_conf(workers).items() for arg in ("--spark-conf", f"{key}={value}")]


def run_suite(report_dir: str, extra: list[str], master: str | None = None, cluster_workers: int = 0) -> int:
    xdist = "1" if master else "2"  # on the cluster: one application holding every executor
    args = [sys.executable, "-m", "pytest", *map(str, project.find().scenario_paths()), "-q", "-n", xdist, "-p", "no:cacheprovider",
            "--report-dir", report_dir, *extra]
    if master:
        args += ["--spark-master", master, *conf_args(cluster_workers)]
    return subprocess.run(args, cwd=project.find().root).returncode


def compare(local: dict, cluster: dict) -> dict:
    """The cluster run against the local run of the same version, per case."""
    from harness.report.diff import diff_results
    ran = {c["case_id"] for c in cluster["cases"]}  # a filtered cluster run (-k) compares what it ran
    grouped = diff_results({**local, "cases": [c for c in local["cases"] if c["case_id"] in ran]}, cluster)
    differing = sorted({case for entries in grouped.values() for case, _ in entries})
    return {"local": {"master": local.get("master"), "cluster": local.get("cluster"), "summary": local["summary"]},
            "cluster": {"master": cluster.get("master"), "cluster": cluster.get("cluster"),
                        "summary": cluster["summary"]},
            "cases_compared": len({c["case_id"] for c in local["cases"]} & {c["case_id"] for c in cluster["cases"]}),
            "differing_cases": differing,
            "differences": {kind: entries for kind, entries in grouped.items() if entries}}


def main(report_dir: str = "reports", extra: list[str] | None = None, workers: int = 2) -> int:
    from harness.report.diff import KINDS, format_diff

    def run_on_cluster(folder: str) -> int:
        with StandaloneCluster(workers=workers) as cluster:
            return run_suite(folder, extra or [], master=cluster.url, cluster_workers=workers)

    def show(comparison: dict, version: str) -> str:
        grouped = {kind: comparison["differences"].get(kind, []) for kind in KINDS}
        return format_diff(f"{version} local", f"{version} cluster", grouped)

    return against_local(report_dir, extra or [], "cluster", run_on_cluster, compare, show, ClusterError,
                         f"a {workers}-worker cluster")


def against_local(report_dir: str, extra: list[str], name: str, run_there, compare_runs, show, failure,
                  described: str) -> int:
    """The suite run by `run_there(folder)` on another deployment, compared case by case
    with the local-mode results of the same version (run first when missing): writes
    <report_dir>/<name>/<version>/comparison.json and <report_dir>/<name>/index.html (both
    runs side by side), prints what `show` says of the comparison."""
    from harness.core.files import atomic_write_text
    from harness.report import merged
    from harness.report.diff import load_results
    from harness.report.version_report import installed_spark, version_dir
    version = installed_spark()
    if not (version_dir(report_dir, version) / "results.json").exists():
        print(f"[{name}] no local-mode results for Spark {version} under {report_dir}/: running the suite locally first",
              flush=True)
        run_suite(report_dir, extra)
    there = str(Path(report_dir) / name)
    try:
        code = run_there(there)
    except failure as exc:
        print(f"[{name}] {exc}", file=sys.stderr)
        return 2
    local, remote = load_results(report_dir, version), load_results(there, version)
    comparison = compare_runs(local, remote)
    atomic_write_text(version_dir(there, version) / "comparison.json", json.dumps(comparison, indent=1) + "\n")
    page = merged.write_merged_from({f"{version} local": local, f"{version} {name}": remote},
                                    Path(there) / "index.html",
                                    links={f"{version} local": f"../{version}", f"{version} {name}": version},
                                    title=f"Join strategies: local mode and {described}, Spark {version}")
    print(show(comparison, version))
    print(f"[{name}] comparison: {page}")
    return code
