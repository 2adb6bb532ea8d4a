"""One case's hold on the worker's session: the configs it set (restored after it), the
temporary views and caches it made (dropped), the hint warnings logged while it ran, its
job group, and the watchdog that cancels its jobs past its timeout, stops the
SparkContext when a cancel does not end it and, as a last resort, ends the xdist worker.
The session (harness.spark.session) hands one out per case (`Session.case_scope`)."""
from __future__ import annotations

import os
import threading
import time
import uuid
from contextlib import contextmanager

from harness.core.text import printable
from harness.spark import conf_registry, stages
from harness.scenario.confs import conf_text


# a regular expression no method name matches
STOP_GRACE_S = float(os.environ.get("HARNESS_STOP_GRACE_S", "20"))
EXIT_GRACE_S = float(os.environ.get("HARNESS_EXIT_GRACE_S", "40"))


class CaseTimeout(Exception):
    pass


class CaseScope:
    """Configs, warnings, views, caches and the job group of one case."""

    def __init__(self, session, timeout_s: float):
        self.session = session
        self.spark = session.spark
        self.saved: dict[str, str | None] = {}
        self.undefined: list[str] = []  # configs this Spark does not declare: not set
        self.removed: dict[str, str] = {}  # of those, the ones it says a release removed: key → release
        self.views: list[str] = []
        self.cached: list = []   # frames this case cached
        self.group = f"case-{uuid.uuid4().hex[:12]}"
        self._on_close: list = []
        self._on_timeout: list = []
        self.timed_out = threading.Event()
        self._finished = threading.Event()
        self._begin()
        self._watchdog = threading.Thread(target=self._watch, args=(timeout_s,), daemon=True)
        self._watchdog.start()

    def _watch(self, timeout_s: float) -> None:
        """Escalate while a case overruns: cancel its jobs at the timeout; stop the
        SparkContext if that did not end it (the next case gets a new session); as a last
        resort, end an xdist worker process (xdist reports the case and starts a new one)."""
        if self._finished.wait(timeout_s):
            return
        self.timed_out.set()
        give_up = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < give_up:
            # Again and again: AQE and broadcasts may submit new jobs after a cancel.
            self._cancel_jobs()
            if self._finished.wait(0.5):
                return
        self.session.abandon(f"a case ignored cancellation for {STOP_GRACE_S:g} s")
        if self._finished.wait(EXIT_GRACE_S) or not os.environ.get("PYTEST_XDIST_WORKER"):
            return
        os.write(2, b"join harness: a case did not stop after its timeout and the SparkContext was "
                    b"stopped; ending this worker so the rest of the suite goes on\n")
        os._exit(70)

    def _begin(self) -> None:
        self._log_offset = self.session.hint_log.stat().st_size
        self.spark.sparkContext.setJobGroup(self.group, "join harness case", True)

    def _a_job_failed(self) -> bool:
        try:
            stages.drain(self.spark)  # a job's end reaches the tracker through the listener bus
            tracker = self.spark.sparkContext.statusTracker()
            for job in tracker.getJobIdsForGroup(self.group):
                info = tracker.getJobInfo(job)
                if info is not None and info.status == "FAILED":
                    return True
        except Exception:  # the JVM is gone: get_session finds out
            return False
        return False

    def _end(self) -> None:
        self.spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)

    def on_close(self, callback) -> None:
        """Run when the case ends (e.g. stop a streaming query)."""
        self._on_close.append(callback)

    def on_timeout(self, callback) -> None:
        """Run when the case overruns, besides cancelling its jobs."""
        self._on_timeout.append(callback)

    def _cancel_jobs(self) -> None:
        for callback in self._on_timeout:
            try:
                callback()
            except Exception:
                pass
        self._cancel_spark()

    def _cancel_spark(self) -> None:
        sc = self.spark.sparkContext
        try:
            sc.cancelJobGroup(self.group)
            # Broadcast and AQE stage jobs may run under their own job group; one case
            # at a time runs per session, so cancelling everything hits only this case.
            sc.cancelAllJobs()
        except Exception:
            pass

    def set_conf(self, key: str, value) -> None:
        if not conf_registry.declared_here(self.spark, key):
            # a key only another Spark version declares: set here it would do nothing (or,
            # were Spark to read it by prefix, something no registry vetted), so it is not set
            if key not in self.undefined:
                self.undefined.append(key)
                removed = conf_registry.removed_in(self.spark, key)
                if removed:
                    self.removed[key] = removed
            return
        if key not in self.saved:
            self.saved[key] = self.session._snapshot(key)
        self.spark.conf.set(key, conf_text(value))

    @contextmanager
    def conf_overlay(self, conf: dict):
        """Configs for one step of the case (a derived table's), then back to the case's."""
        during = {key: self.session._snapshot(key) for key in conf}
        for key, value in conf.items():
            self.set_conf(key, value)
        try:
            yield
        finally:
            for key, value in during.items():
                self.session._restore(key, value)

    def remember_cached(self, frame) -> None:
        self.cached.append(frame)

    def _drop_caches(self) -> None:
        self.spark.catalog.clearCache()  # one case at a time holds this JVM

    def register_view(self, name: str, dataframe) -> None:
        dataframe.createOrReplaceTempView(name)
        self.views.append(name)

    def check_timeout(self) -> None:
        if self.timed_out.is_set():
            raise CaseTimeout("case cancelled: it ran past its timeout")

    def warnings(self) -> list[str]:
        """Hint warnings logged since the case began, deduplicated, in order."""
        with open(self.session.hint_log, "r", encoding="utf-8", errors="replace") as handle:
            handle.seek(self._log_offset)
            lines = [printable(line.strip()) for line in handle.read().splitlines() if line.strip()]
        return list(dict.fromkeys(lines))

    def close(self) -> None:
        self._finished.set()
        if self.session.abandoned:
            return
        if getattr(self.session, "engine_runtime", None) and self._a_job_failed():
            # A native engine's task that failed (Comet 0.12.0's shuffle out of off-heap
            # memory) may leave native threads on freed memory: the JVM then dies under a
            # later case (SIGSEGV in libcomet). The next item gets a new session (the rest
            # of this one, e.g. a check's other runs, goes on in this one).
            self.session.spoiled = (f"a job failed under {self.session.engine}: its native state is not trusted "
                                    "for the next item")
        for callback in self._on_close:
            callback()
        for name in self.views:
            try:
                self.spark.catalog.dropTempView(name)
            except Exception:
                pass
        try:
            if self.cached:
                self._drop_caches()
            # Every key is restored even when one fails; then the whole session is
            # compared with its starting configs, and replaced if it cannot be mended.
            for key, previous in reversed(list(self.saved.items())):
                self.session._restore(key, previous)
            clean = self.session.ensure_baseline_confs()
            self._end()
        except Exception:
            clean = False
        if not clean:
            self.session.abandon("the session's configs could not be restored after a case")
