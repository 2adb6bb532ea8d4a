"""pytest adapter: scenario files become test items; results become reports.

Thin by design: loading lives in harness.scenario, running in harness.check.runner, reports
in harness.report.version_report. Each matrix expansion is one item (`id[label]`), plus one
`id[<join type>-agree]` item per join type that checks every strategy gives the same
answer. Under xdist, every worker keeps one SparkSession; each item's result record
travels to the controller in `user_properties`, where the reports are written once.
"""
from __future__ import annotations

import json
import os
import platform
import warnings
from pathlib import Path
from typing import Optional

import pytest

from harness.core.files import TEMP_MARK
from harness.core.options import RunOptions
from harness.core.text import display_path, one_line
from harness.report import version_report
from harness.report.plan_pictures import PlanPictures
from harness.report.progress import GUESS_S, Progress
from harness.scenario.errors import ScenarioError
from harness.scenario.model import expand, load_once, load_scenario, scenario_files
from harness.check import expect
from harness.scenario import workload
from harness.scenario.tables import declares_format
from harness.spark.session import NO_SESSION, SessionUnavailable
from harness.store import shards
from harness.store.results_store import DEFAULT_FOLDER, RunStamp, StoreWarning
from harness.store.reuse import AGREEMENT, CASE, Reuse, open_reuse

RECORD_KEY = "harness_record"
REUSED_KEY = "harness_reused"   # which run observed a reused record (also a JUnit property)
SHARD_KEY = "harness_shard"
FLAKE_RUN_KEY = "harness_flake_run"  # which of a flake-finder run's repetitions an item is
OPTIONS = pytest.StashKey[RunOptions]()
REUSE = pytest.StashKey[Optional[Reuse]]()
FAILING = {"failed", "error", "timeout", "correctness"}


REPORTS = "reports"


def pytest_addoption(parser):
    group = parser.getgroup("join-harness", "Spark join scenario harness")
    group.addoption("--report-dir", default=REPORTS,
                    help="where reports/<spark-version>/ are written (default: reports)")
    group.addoption("--no-report", action="store_true", help="do not write JSON/HTML/JUnit reports")
    group.addoption("--spark-master", default=None,
                    help="Spark master URL (default: local[2], or $HARNESS_SPARK_MASTER)")
    group.addoption("--spark-remote", default=None, metavar="sc://HOST:PORT",
                    help="run through a Spark Connect server (Spark 3.5+/4.x) instead of a local JVM")
    group.addoption("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark config for the session, e.g. spark.executor.memory=2g (repeatable)")
    group.addoption("--spark-conf-file", default=None, metavar="PATH",
                    help="Spark configs for the session, spark-defaults.conf style (`key value` per line)")
    group.addoption("--engine", default=None, metavar="NAME",
                    help="run every case under a native engine (comet): reports go to REPORT_DIR/NAME/, "
                         "a Spark version the engine publishes no jar for skips every case")
    group.addoption("--plan-text", choices=("all", "failed"), default=None,
                    help="which cases keep their plan text in the report (default: all)")
    group.addoption("--observe", action="store_true",
                    help="survey: record what Spark does without checking the cases' expectations "
                         "(cross-strategy result checks still run)")
    group.addoption("--no-agree", action="store_true",
                    help="leave out the cross-strategy checks (a fast edit loop; the report keeps their last results)")
    group.addoption("--fresh", action="store_true",
                    help="run every case again, whatever the result store holds (the store is refreshed)")
    group.addoption("--store", default=None, metavar="PATH",
                    help="the result store's folder (default: .harness-cache beside the report folder)")
    group.addoption("--shard", default=None, metavar="I/N",
                    help="run the I-th of N deterministic parts of the suite (whole files, balanced by "
                         "recorded durations); `python -m harness merge` joins the N report folders")
    group.addoption("--no-merged-page", action="store_true",
                    help="do not rewrite the cross-version page reports/index.html (the matrix writes it once at the end)")
    group.addoption("--flake-runs", type=int, default=0, metavar="K",
                    help="(python -m harness flakes) run every item K times, the result store bypassed, and "
                         "report every field that differs between the runs")
    group.addoption("--accept", action="store_true",
                    help="after the run, write what this Spark version observed into the scenario files "
                         "(python -m harness accept)")


def _reporting(config) -> bool:
    """Reports are written by the controller of a run that runs something: `--collect-only`
    writes nothing, not even an empty JUnit file over the last run's."""
    return not config.getoption("no_report") and not hasattr(config, "workerinput") \
        and not config.getoption("collectonly")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config.addinivalue_line("markers", "agreement: cross-strategy result check of a scenario")
    # The Connect client warns once per call that spent its retries; the case says why.
    config.addinivalue_line("filterwarnings", "ignore:.*RETRIES_EXCEEDED:UserWarning")
    config._harness_ids = {}
    # One broken scenario file must not stop the others from running.
    config.option.continue_on_collection_errors = True
    if config.getoption("spark_remote") and config.getoption("report_dir") == REPORTS:
        # Never into the local runs' folder: results merge by case id there.
        config.option.report_dir = str(Path(REPORTS) / "connect")
    engine = _engine_option(config)
    # An engine's reports beside the plain ones, never mixed into them (an xdist worker
    # gets the controller's options, already pointing there).
    config.option.report_dir = str(version_report.engine_report_dir(config.getoption("report_dir"), engine))
    if _reporting(config) and not _report_dir_writable(config):
        config.option.no_report = True
    if _reporting(config):
        config.pluginmanager.register(HarnessReporter(config), "join-harness-reporter")
    # xdist workers get the same command line, so each builds the same options.
    if config.getoption("spark_remote"):
        from harness.deploy import connect  # registers the Spark Connect session kind
        if connect.unsupported_client():
            raise pytest.UsageError(f"--spark-remote: {connect.unsupported_client()}")
    config.stash[OPTIONS] = _run_options(config)
    config._harness_stamp = _stamp(config)
    # A flake-finder run bypasses the store: every run observes, and none is kept.
    config.stash[REUSE] = open_reuse(config.stash[OPTIONS], store_folder(config), config._harness_stamp,
                                     config.getoption("fresh"), _store_warning) \
        if _runs_scenarios(config) and not _flake_runs(config) else None
    config._harness_shard = _shard_option(config)
    if _reporting(config) and getattr(config.option, "xmlpath", None) is None and _runs_scenarios(config):
        # pytest's junitxml writes in place: it writes a temp file beside the target,
        # which the reporter renames into place when the run ends (see pytest_unconfigure).
        target = version_report.version_dir(config.getoption("report_dir"), version_report.installed_spark()) / "junit.xml"
        config._harness_junit = (target.with_name(f".junit.xml{TEMP_MARK}{os.getpid()}-run.tmp"), target)
        config.option.xmlpath = str(config._harness_junit[0])


def _engine_option(config) -> str:
    """`--engine` (else HARNESS_ENGINE), checked: one line for a name the harness does not
    know, or for an engine asked of a Spark Connect server (the server's JVM is its own)."""
    from harness.spark import engines
    name = config.getoption("engine") or os.environ.get("HARNESS_ENGINE", "")
    try:
        engines.named(name)
    except engines.UnknownEngine as exc:
        raise pytest.UsageError(str(exc)) from None
    if name and config.getoption("spark_remote"):
        raise pytest.UsageError("--engine with --spark-remote: a Spark Connect server runs the engine its own "
                                "configs load; start the server with it instead")
    return name


def _run_options(config) -> RunOptions:
    return RunOptions.from_env(
        engine=_engine_option(config),
        master=config.getoption("spark_master"), remote=config.getoption("spark_remote"),
        spark_conf=_session_conf(config),
        plan_text=config.getoption("plan_text"), observe=config.getoption("observe"),
        iceberg=_runs_scenarios(config) and declares_format(_scenario_paths(config), "iceberg"),
        delta=_runs_scenarios(config) and declares_format(_scenario_paths(config), "delta"),
        optimising_jit=_bulk_selection(config))


def _bulk_selection(config) -> bool:
    """Whether this run's scenarios hold more nested-loop work than short cases
    (harness.scenario.workload): decided once by the controller, handed to its workers."""
    given = getattr(config, "workerinput", {}).get("harness_bulk")
    if given is not None:
        return given == "1"
    if not hasattr(config, "_harness_bulk"):
        config._harness_bulk = _runs_scenarios(config) and not config.getoption("spark_remote") and \
            workload.prefers_optimising_jit(_selected_cases(config), lambda case: expect.executes(case.expect))
    return config._harness_bulk


def _selected_cases(config) -> list:
    return [case for cases in _expanded_files(config) for case in cases]


def _expanded_files(config, parsed=None) -> list[list]:
    """Each selected scenario file's cases (a file that does not load is left out:
    collection says why, without Spark)."""
    expanded = []
    for path in scenario_files(config.args or [str(config.rootpath)]):
        try:
            expanded.append(expand(load_once(path, parsed) if parsed is not None else load_scenario(path)))
        except Exception:
            continue
    return expanded


def _scenario_paths(config) -> list[str]:
    return [str(a).split("::")[0] for a in config.args or [config.rootpath]]


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: no worker processes at all when the store holds every item's
    observation (starting them costs more than judging the whole suite), one when a
    single file must run (one JVM builds its tables, not one per worker) or the
    selection is bulk nested-loop work; otherwise xdist's own count
    (PYTEST_XDIST_AUTO_NUM_WORKERS, else the CPUs)."""
    if not _runs_scenarios(config) or config.getoption("spark_remote") or _flake_runs(config):
        return None
    to_run = None  # --fresh: every file
    if not config.getoption("fresh"):
        reuse = open_reuse(_run_options(config), store_folder(config), RunStamp("", "", ""), False, lambda _: None)
        to_run = reuse.files_to_run(_expanded_files(config, reuse.parsed), with_checks=not config.getoption("no_agree"))
        reuse.store.close()
    if to_run != 0 and _bulk_selection(config):
        return 1  # one JVM with every core: two would split the cores the loops need
    return {0: 0, 1: 1}.get(to_run)


def _flake_runs(config) -> int:
    return config.getoption("flake_runs") or 0


def _repetition(name: str) -> tuple[str, int | None]:
    """`case@2` → (`case`, 2): which repetition of a flake-finder run an item name is."""
    base, _, number = name.rpartition("@")
    return (base, int(number)) if base and number.isdigit() else (name, None)


def store_folder(config) -> str:
    """--store, else beside the report folder (an engine's reports are one level down, in
    reports/<engine>/: its store is the plain runs' one, where its keys hold the engine)."""
    report_dir = Path(config.getoption("report_dir"))
    if _engine_option(config) and report_dir.name == _engine_option(config):
        report_dir = report_dir.parent
    return config.getoption("store") or str(report_dir.parent / DEFAULT_FOLDER)


def _store_warning(message: str) -> None:
    warnings.warn(StoreWarning(message), stacklevel=2)


def _stamp(config) -> RunStamp:
    """This run's stamp: made by the controller, handed to its xdist workers."""
    given = getattr(config, "workerinput", {}).get("harness_run")
    return RunStamp.from_json(json.loads(given)) if given else RunStamp.now()


def _shard_option(config) -> shards.Shard | None:
    if not config.getoption("shard"):
        return None
    try:
        return shards.Shard.parse(config.getoption("shard"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """(xdist, on the controller) what every worker must share: the run's stamp."""
    node.workerinput["harness_run"] = json.dumps(node.config._harness_stamp.to_json())
    node.workerinput["harness_bulk"] = "1" if _bulk_selection(node.config) else "0"


def _select_shard(config, items: list) -> list:
    """The items of this run's shard (harness.store.shards); the others are deselected."""
    reuse = config.stash[REUSE]
    spark = version_report.installed_spark()
    took = reuse.store.durations(spark) if reuse is not None else {}
    costs: dict = {}
    for item in items:
        costs[_file_of(item)] = costs.get(_file_of(item), 0.0) + took.get(item.name, _guess_s(item))
    owner, config._harness_split = shards.cut(costs, config._harness_shard, [item.nodeid for item in items],
                                              reuse.store if reuse is not None else None, spark)
    kept = [item for item in items if owner[_file_of(item)] == config._harness_shard.index]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if owner[_file_of(item)] != config._harness_shard.index])
    return kept


def _file_of(item) -> str:
    return item.nodeid.split("::")[0]


def _guess_s(item) -> float:
    return GUESS_S["check" if isinstance(item, AgreementItem) else "case"]


def pytest_collection_modifyitems(session, config, items):
    """(`--lf`/`--ff` act after this: pytest's cache provider wraps this hook.)
    Longest files first, so that no worker is left with a long file at the end (a
    file's cost: what its items took last time in results.json, or a guess), and each
    cross-strategy item right after the case it checks: xdist hands out consecutive
    items together, so the check's as-written run usually finds that case's answer in
    its worker (harness.spark.executions). Not `--dist loadfile`: a crashed worker's file is
    re-queued whole there, the crashing item included, and the run can hang."""
    if not _runs_scenarios(config):
        return
    if config._harness_shard is not None:
        items[:] = _select_shard(config, items)
    took = _previous_durations(config)
    cost: dict = {}
    for item in items:
        guess = 0.0 if getattr(item, "case", None) is None else _guess_s(item)
        cost[item.path] = cost.get(item.path, 0.0) + took.get(item.name, guess)
    checks = {(id(item.case), item.flake_run): item for item in items if isinstance(item, AgreementItem)}
    paired = []
    for item in items:
        if isinstance(item, AgreementItem):
            continue
        paired.append(item)
        check = checks.pop((id(getattr(item, "case", None)), getattr(item, "flake_run", None)), None)
        if check is not None:
            paired.append(check)
    paired.extend(checks.values())  # (none: each check's case is collected too)
    # A flake-finder run: the whole selection once, then again: the runs of one item go
    # to whichever worker is free then, not one after another to the same one.
    items[:] = sorted(paired, key=lambda item: (getattr(item, "flake_run", 1), -cost[item.path]))


def _previous_durations(config) -> dict:
    try:
        path = version_report.version_dir(config.getoption("report_dir"), version_report.installed_spark()) / "results.json"
        records = json.loads(path.read_text(encoding="utf-8"))["cases"]
        return {r["case_id"]: float(r["timings"]["total_s"]) for r in records}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _report_dir_writable(config) -> bool:
    """An unwritable report folder is one line on the terminal, not a traceback: the run
    goes on without reports and its exit code is the tests'."""
    folder = Path(config.getoption("report_dir")) / version_report.installed_spark()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-probe{TEMP_MARK}{os.getpid()}-0.tmp"
        probe.write_text("")
        probe.unlink()
        return True
    except OSError as exc:
        import sys
        sys.stderr.write(one_line(f"join harness: reports are not written: cannot write to {folder} "
                                  f"({exc.strerror or exc})") + "\n")
        return False


def options_of(config) -> RunOptions:
    return config.stash[OPTIONS]


def _session_conf(config) -> dict:
    from harness.spark.session import read_conf_file
    conf = {}
    if config.getoption("spark_conf_file"):
        try:
            conf.update(read_conf_file(config.getoption("spark_conf_file")))
        except (OSError, ValueError) as exc:
            raise pytest.UsageError(f"--spark-conf-file: {exc}") from None
    for item in config.getoption("spark_conf"):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise pytest.UsageError(f"--spark-conf expects KEY=VALUE, got: {item}")
        conf[key] = value
    return conf


def _runs_scenarios(config) -> bool:
    args = config.args or [str(config.rootpath)]
    return any("scenarios" in Path(a.split("::")[0]).resolve().parts or a.endswith((".yaml", ".yml")) for a in args)


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix not in (".yaml", ".yml"):
        return None
    explicit = {Path(a.split("::")[0]).resolve() for a in parent.config.args}
    if "scenarios" in file_path.resolve().parts or file_path.resolve() in explicit:
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


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
        from harness.check.agreement import agreement_id, agreement_representatives
        runs = range(1, _flake_runs(self.config) + 1) if _flake_runs(self.config) else [None]
        for run in runs:
            for case in cases:
                yield self._item(ScenarioItem, case.case_id, case, marks, run)
            if self.config.getoption("no_agree"):
                continue
            for case in agreement_representatives(cases):
                yield self._item(AgreementItem, agreement_id(case), case, marks + ["agreement"], run)

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
        from harness.check.runner import check_sql
        from harness.spark.session import get_session
        reuse = self.config.stash[REUSE]
        for checked in {id(c.scenario): c.scenario for c in cases}.values():  # a synthetic twin too
            if reuse is not None and reuse.sql_checked(checked):
                continue  # the same SQL passed on this Spark and harness: no session needed
            check_sql(get_session(options_of(self.config)), checked)
            if reuse is not None:
                reuse.sql_passed(checked)
        return scenario, cases

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, ScenarioError):
            return str(excinfo.value)
        return one_line(f"{self.path}: cannot be loaded ({excinfo.type.__name__}: {excinfo.value})")


class CaseFailed(Exception):
    """(one-line verdict, lines saying why Spark chose what it chose)"""


def _why(record: dict) -> list[str]:
    from harness.observe.describe import expectation_words, why_lines
    if record["kind"] == "agreement":
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

    def _recall(self, reuse: Reuse):
        return reuse.recall(self.case, self.kind)

    def runtest(self):
        from harness.spark.session import get_session
        reuse = self.config.stash[REUSE]
        record = self._recall(reuse) if reuse is not None else None
        if record is None:
            session = get_session(options_of(self.config))
            from harness.spark import executions
            # Each repetition runs anew: its executions are not shared with another's.
            executions.set_round(self.flake_run or 0)
            # under an engine, Spark's own answer from a plain run the store holds
            session.plain_answers = reuse.plain_answer if reuse is not None else None
            record = self._run(session)
            record.run = self.config._harness_stamp.to_json()
            if reuse is not None:
                reuse.keep(self.case, self.kind, record, session)
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
            pytest.skip(record.message + reused)
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


class AgreementItem(ScenarioItem):
    kind = AGREEMENT

    def _recall(self, reuse: Reuse):
        from harness.check.agreement import nothing_to_compare, skipped_record
        if nothing_to_compare(self.case):  # nothing to compare, nothing to start a session for
            record = skipped_record(self.case, reuse.stand_in())
            record.run = self.config._harness_stamp.to_json()
            return record
        return super()._recall(reuse)

    def _run(self, session):
        from harness.check.agreement import run_agreement
        return run_agreement(self.case, session)


# --------------------------------------------------------------------------- controller

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

    def pytest_collection_finish(self, session):
        self.progress.start([item.nodeid for item in session.items], _previous_durations(self.config))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        if not self.progress.total:
            self.progress.start(ids, _previous_durations(self.config))

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
        if _flake_runs(self.config):
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
        return {"runs": _flake_runs(self.config), "items": len(self.flake_runs),
                "stress": int(os.environ.get("HARNESS_FLAKE_STRESS") or 0),
                "flips": flakes.declare(flakes.flips(self.flake_runs), self.flake_runs)}

    def _add_lost_records(self):
        from harness.check import agreement, runner
        known = next(iter(self.records.values()), None)
        versions = known["versions"] if known else {"spark": version_report.installed_spark(), "java": "unknown",
                                                    "python": platform.python_version()}
        master = known["master"] if known else options_of(self.config).master
        for nodeid, message in self.lost.items():
            path, _, name = nodeid.partition("::")
            name, run = _repetition(name) if _flake_runs(self.config) else (name, None)
            try:
                cases = expand(load_scenario(self.config.rootpath / path))
            except (ScenarioError, OSError):
                continue
            by_id = {c.case_id: c for c in cases}
            checks = {agreement.agreement_id(c): c for c in agreement.agreement_representatives(cases)}
            if name in (self.records if run is None else self.flake_runs.get(name, {})):
                continue
            why = message if message.startswith(NO_SESSION) else f"worker process lost: {message}"
            if name in by_id:
                self._keep(runner.lost_record(by_id[name], versions, master, why).to_json(), run)
            elif name in checks:
                self._keep(agreement.lost_record(checks[name], versions, master, why).to_json(), run)

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


def pytest_report_teststatus(report, config):
    """A passing record judged from a stored observation shows as `r`, `PASSED (reused)`."""
    if report.when == "call" and report.passed and any(k == REUSED_KEY for k, _ in report.user_properties):
        return "passed", "r", ("PASSED (reused)", {"green": True})
    return None
