"""The controller's side of the pytest adapter: the records every item hands over, kept as
they arrive, progress lines, and at the end of the run the reports (results.json, pages,
JUnit) written once, the records of items a lost worker never ran, and the summary."""
from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import pytest

import harness

from harness.core.text import one_line
from harness.plugin_state import (
    FLAKE_RUN_KEY,
    RECORD_KEY,
    REUSE,
    SHARD_KEY,
    flake_runs,
    options_of,
    previous_durations,
    repetition,
)
from harness.report import version_report
from harness.report.plan_pictures import PlanPictures
from harness.report.progress import Progress
from harness.scenario.errors import ScenarioError
from harness.scenario.model import expand, load_scenario
from harness.spark.session import NO_SESSION


def _junit_writer(config):
    """pytest's junitxml writer of this run (None: no --junitxml, or a pytest that keeps it
    elsewhere)."""
    try:
        from _pytest.junitxml import xml_key
        return config.stash.get(xml_key, None)
    except (ImportError, AttributeError):
        return getattr(config, "_xml", None)


class HarnessReporter:
    """Gathers result records and invalid files on the controller; writes the reports."""

    def __init__(self, config):
        self.config = config
        self.records: dict[str, dict] = {}
        self.invalid: dict[str, str] = {}
        self.lost: dict[str, str] = {}
        self.written: list[Path] = []
        self.failed_write = ""
        self.shard: dict | None = None
        self.flake_runs: dict[str, dict[int, dict]] = {}  # case id → run → record (flake finder)
        self.flakes: dict | None = None
        self.pruned = 0
        self.progress = Progress(version_report.installed_spark(), self._progress_line)

    def _progress_line(self, text: str) -> None:
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.write("\n")  # pytest's progress dots leave the line open
            terminal.write_line(text)

    def pytest_sessionstart(self, session):
        junit = _junit_writer(self.config)  # the release in every report
        if junit is not None:
            junit.add_global_property("join_harness_release", harness.__version__)

    def pytest_collection_finish(self, session):
        self.progress.start([item.nodeid for item in session.items], previous_durations(self.config))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        if not self.progress.total:
            self.progress.start(ids, previous_durations(self.config))

    def pytest_runtest_logreport(self, report):
        self.progress.seen(report)
        carried, record, run = False, None, None
        for key, value in getattr(report, "user_properties", []):
            if key == RECORD_KEY:
                record = json.loads(value)
                carried = True
            elif key == SHARD_KEY:
                self.shard = json.loads(value)
            elif key == FLAKE_RUN_KEY:
                run = int(value)
        if record is not None:
            self._keep(record, run)
        if report.failed and not carried and (".yaml::" in report.nodeid or ".yml::" in report.nodeid):
            # No record came back: the worker died under the case (xdist says "crashed").
            self.lost.setdefault(report.nodeid, str(report.longrepr).strip().splitlines()[-1][:500])

    def _keep(self, record: dict, run: int | None) -> None:
        """A record; of a flake-finder run, each repetition's, the first one reported."""
        if run is None:
            self.records[record["case_id"]] = record
            return
        self.flake_runs.setdefault(record["case_id"], {})[run] = record
        self.records.setdefault(record["case_id"], record)

    def pytest_collectreport(self, report):
        if report.failed and str(report.nodeid).endswith((".yaml", ".yml")):
            self.invalid[report.nodeid] = str(report.longrepr).strip().splitlines()[-1]

    def pytest_sessionfinish(self, session, exitstatus):
        self._add_lost_records()
        reuse = self.config.stash[REUSE]
        if reuse is not None:
            self.pruned = reuse.store.prune()
        if not self.records and not self.invalid:
            return
        if flake_runs(self.config):
            self.flakes = self._flips()
        invalid = [{"file": nodeid, "message": message} for nodeid, message in self.invalid.items()]
        report_dir = self.config.getoption("report_dir")
        drawings = PlanPictures()  # one drawing per distinct plan, for both pages
        try:
            self.written = version_report.write_reports(report_dir, list(self.records.values()), invalid,
                                                        shard=self.shard, drawings=drawings, flakes=self.flakes,
                                                        keep_previous=self.flakes is None)
            from harness.report.merged import (
                write_merged,  # every version's results side by side
            )
            from harness.report.summary import write_summary  # for a CI job summary
            extra = [write_summary(report_dir, self.written[0].parent.name)]
            if not self.config.getoption("no_merged_page"):
                extra.append(write_merged(report_dir, drawings))
            self.written += [path for path in extra if path is not None]
        except OSError as exc:
            self.failed_write = one_line(f"join harness: reports not written to {report_dir}: {exc}")
            return
        if self.config.getoption("accept"):
            from harness.report import accept
            accept.main([version_report.installed_spark()], report_dir)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config):
        """pytest's junitxml has written its file (at session finish): move it into place."""
        temp, target = getattr(config, "_harness_junit", (None, None))
        if temp is not None and temp.exists():
            try:
                os.replace(temp, target)
            except OSError:
                temp.unlink(missing_ok=True)

    def _flips(self) -> dict:
        """Every item's runs compared (harness.report.flakes); a run lost with its worker
        is a record like any other here: its verdict differs from the runs that came back."""
        from harness.report import flakes
        return {"runs": flake_runs(self.config), "items": len(self.flake_runs),
                "stress": int(os.environ.get("HARNESS_FLAKE_STRESS") or 0),
                "flips": flakes.declare(flakes.flips(self.flake_runs), self.flake_runs)}

    def _add_lost_records(self):
        from harness.check import runner
        from harness.check.file_checks import file_checks
        from harness.check.file_checks import lost_record as lost_check_record
        known = next(iter(self.records.values()), None)
        versions = known["versions"] if known else {"spark": version_report.installed_spark(), "java": "unknown",
                                                    "python": platform.python_version()}
        master = known["master"] if known else options_of(self.config).master
        for nodeid, message in self.lost.items():
            path, _, name = nodeid.partition("::")
            name, run = repetition(name) if flake_runs(self.config) else (name, None)
            try:
                cases = expand(load_scenario(self.config.rootpath / path))
            except (ScenarioError, OSError):
                continue
            by_id = {c.case_id: c for c in cases}
            checks = {item_id: (kind, c) for kind, c, item_id in file_checks(cases)}
            if name in (self.records if run is None else self.flake_runs.get(name, {})):
                continue
            why = message if message.startswith(NO_SESSION) else f"worker process lost: {message}"
            if name in by_id:
                self._keep(runner.lost_record(by_id[name], versions, master, why).to_json(), run)
            elif name in checks:
                self._keep(lost_check_record(*checks[name], versions, master, why).to_json(), run)

    def _reuse_line(self) -> str:
        """How many records were judged from stored observations, and from which runs."""
        from harness.observe.describe import reuse_words
        reuse = self.config.stash[REUSE]
        if reuse is None or not self.records:
            return ""
        reused, origin = reuse_words(list(self.records.values()))
        where = f"store {reuse.store.path}" + (f", {self.pruned} old entries pruned" if self.pruned else "")
        if not reused:
            return f"join harness: all {len(self.records)} records observed now ({where})"
        return (f"join harness: {reused} of {len(self.records)} records reused from {origin} "
                f"(observations judged by today's expectations); {len(self.records) - reused} "
                f"observed now ({where}; --fresh runs everything)")

    def _reference_lines(self) -> list[str]:
        """The answers against the independent engine: compared, and not compared by why."""
        counts = version_report.reference_counts(list(self.records.values()))
        if not counts["compared"] and not counts["not_compared"]:
            return self._partition_lines()
        engines = ", ".join(counts["engines"])
        lines = [f"join harness: answers against {engines}: {counts['compared']} compared ({counts['agree']} agree, "
                 f"{counts['differ']} differ), {counts['not_compared']} not compared"]
        lines += [f"  not compared, {why}: {n}" for why, n in counts["by_reason"].items()]
        if counts.get("by_expression"):
            lines.append("  the expressions that cost most comparisons: " +
                         ", ".join(f"{name} {n}" for name, n in counts["by_expression"].items()))
        return lines + self._partition_lines()

    def _partition_lines(self) -> list[str]:
        """The partitions items: compared, and not compared by why."""
        counts = version_report.partition_counts(list(self.records.values()))
        if not counts["compared"] and not counts["not_compared"] and not counts["not_needed"]:
            return []
        lines = [f"join harness: answers partitioned in Spark: {counts['compared']} compared ({counts['add_up']} add "
                 f"up, {counts['differ']} do not), {counts['not_needed']} not needed (the reference compared), "
                 f"{counts['not_compared']} not compared"]
        lines += [f"  not compared, {why}: {n}" for why, n in counts["by_reason"].items()]
        return lines

    def pytest_terminal_summary(self, terminalreporter):
        if self.failed_write:
            terminalreporter.write_line(self.failed_write)
        if self.flakes is not None:
            from harness.report.flakes import summary_lines
            terminalreporter.write_sep("-", "flake finder")
            for line in summary_lines(self.flakes["flips"], self.flakes["items"], self.flakes["runs"]):
                terminalreporter.write_line(one_line(line) if len(line) < 2000 else line[:2000])
        known = sorted((r for r in self.records.values() if r["status"] == "known_bug"), key=lambda r: r["case_id"])
        if known:
            terminalreporter.write_sep("-", f"known bugs on Spark {version_report.installed_spark()}: {len(known)} case(s)")
            for record in known:
                bug = record.get("bug") or {}
                terminalreporter.write_line(one_line(f"  {record['case_id']}: {bug.get('id', '')} "
                                                     f"{bug.get('url', '')} ({record['file']}:{record['line']})"))
        for line in self._reference_lines():
            terminalreporter.write_line(line)
        reuse_line = self._reuse_line()
        if reuse_line:
            terminalreporter.write_line(reuse_line)
        if self.written:
            terminalreporter.write_sep("-", "join harness reports")
            for path in self.written:
                terminalreporter.write_line(f"  {path}")
            junit = getattr(self.config, "_harness_junit", (None, None))[1]
            if junit is not None:
                terminalreporter.write_line(f"  {junit}")
