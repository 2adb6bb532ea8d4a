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
import warnings
from pathlib import Path

import pytest

from harness.check import expect
from harness.core.files import TEMP_MARK
from harness.core.options import RunOptions
from harness.core.text import one_line
from harness.plugin_items import CheckItem, ScenarioFile, judge_own_share
from harness.plugin_reporter import HarnessReporter
from harness.plugin_state import OPTIONS, REUSE, REUSED_KEY, flake_runs, previous_durations
from harness.report import version_report
from harness.report.progress import GUESS_S
from harness.scenario import workload
from harness.scenario.catalog import is_catalog_file
from harness.scenario.model import expand, in_scenario_tree, load_once, load_scenario, scenario_files
from harness.scenario.tables import declared_formats
from harness.store import shards
from harness.store.results_store import DEFAULT_FOLDER, RunStamp, StoreWarning
from harness.store.reuse import open_reuse


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
                    help="leave out the cross-strategy and partitions checks (a fast edit loop; the report keeps "
                         "their last results)")
    group.addoption("--reference", choices=("on", "off", "partitions"), default=None,
                    help="answers nobody declared: `on` (default) compares them with an independent engine's "
                         "(DuckDB) in each case and cross-strategy check, and partitions each file's answer "
                         "(TLP, an item per file and join type); `partitions` only the partitions items; `off` "
                         "neither (HARNESS_REFERENCE)")
    group.addoption("--no-reference", action="store_true", help="the same as --reference off")
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
    group.addoption("--case-ids", default=None, metavar="PATH",
                    help="only the cases (and cross-strategy checks) whose ids PATH lists, one per line; the "
                         "others are deselected (python -m harness bisect asks a release for its cases so)")
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
    _project_defaults(config)
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
        if _runs_scenarios(config) and not flake_runs(config) else None
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
        reference="off" if config.getoption("no_reference") else config.getoption("reference"),
        formats=declared_formats(_scenario_paths(config)) if _runs_scenarios(config) else (),
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
    for path in scenario_files(config.args or [str(config.rootpath)], _scenario_roots(config)):
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
    if not _runs_scenarios(config) or config.getoption("spark_remote") or flake_runs(config):
        return None
    to_run = None  # --fresh: every file
    if not config.getoption("fresh"):
        reuse = open_reuse(_run_options(config), store_folder(config), RunStamp("", "", ""), False, lambda _: None)
        to_run = reuse.files_to_run(_expanded_files(config, reuse.parsed), with_checks=not config.getoption("no_agree"))
        reuse.store.close()
    if to_run != 0 and _bulk_selection(config):
        return 1  # one JVM with every core: two would split the cores the loops need
    return {0: 0, 1: 1}.get(to_run)


def _project_defaults(config) -> None:
    """The report folder and result store the project's settings name (harness.core.project),
    where the command line names none."""
    from harness.core.project import ProjectError, find
    try:
        here = find(config.invocation_params.dir)
    except ProjectError as exc:
        raise pytest.UsageError(str(exc)) from None
    config._harness_scenario_roots = tuple(path.resolve() for path in here.scenario_paths())
    if config.getoption("report_dir") == REPORTS and here.report_dir != REPORTS:
        config.option.report_dir = str(here.path(here.report_dir))
    if config.getoption("store") is None and here.store:
        config.option.store = str(here.path(here.store))


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
    return GUESS_S["check" if isinstance(item, CheckItem) else "case"]


def _case_id_of(name: str) -> str:
    """An item's case id: its name without a flake run's `@K` (a label's own `@`, as in
    `BROADCAST@right`, stays)."""
    head, at, run = name.rpartition("@")
    return head if at and run.isdigit() else name


def _listed_cases(config, items) -> list:
    """The items `--case-ids` lists."""
    from pathlib import Path
    try:
        wanted = set(Path(config.getoption("case_ids")).read_text(encoding="utf-8").split())
    except OSError as exc:
        raise pytest.UsageError(f"--case-ids: {exc}") from None
    kept = [item for item in items if _case_id_of(item.name) in wanted]
    dropped = [item for item in items if _case_id_of(item.name) not in wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    return kept


def pytest_collection_modifyitems(session, config, items):
    """(`--lf`/`--ff` act after this: pytest's cache provider wraps this hook.)
    Longest files first, so that no worker is left with a long file at the end (a
    file's cost: what its items took last time in results.json, or a guess), and each
    cross-strategy and partitions item right after the case it checks: xdist hands out consecutive
    items together, so the check's as-written run usually finds that case's answer in
    its worker (harness.spark.executions). Not `--dist loadfile`: a crashed worker's file is
    re-queued whole there, the crashing item included, and the run can hang."""
    if not _runs_scenarios(config):
        return
    if config._harness_shard is not None:
        items[:] = _select_shard(config, items)
    if config.getoption("case_ids"):
        items[:] = _listed_cases(config, items)
    took = previous_durations(config)
    cost: dict = {}
    for item in items:
        guess = 0.0 if getattr(item, "case", None) is None else _guess_s(item)
        cost[item.path] = cost.get(item.path, 0.0) + took.get(item.name, guess)
    checks: dict = {}
    for item in items:
        if isinstance(item, CheckItem):
            checks.setdefault((id(item.case), item.flake_run), []).append(item)
    paired = []
    for item in items:
        if isinstance(item, CheckItem):
            continue
        paired.append(item)
        paired.extend(checks.pop((id(getattr(item, "case", None)), getattr(item, "flake_run", None)), []))
    paired.extend(check for pair in checks.values() for check in pair)  # (none: each check's case is collected too)
    # A flake-finder run: the whole selection once, then again: the runs of one item go
    # to whichever worker is free then, not one after another to the same one.
    items[:] = sorted(paired, key=lambda item: (getattr(item, "flake_run", None) or 1, -cost[item.path]))


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


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session):
    """An xdist worker judges the SQL of its share of the files before collecting them all."""
    if _runs_scenarios(session.config) and REUSE in session.config.stash:
        judge_own_share(session.config, scenario_files(session.config.args or [str(session.config.rootpath)],
                                                       _scenario_roots(session.config)))


def _explicit_paths(config) -> set:
    """The files named on the command line, resolved once per run (per collected file, it
    was a path resolution per argument: minutes for a run given 2,000 files)."""
    if getattr(config, "_harness_explicit", None) is None:
        config._harness_explicit = {Path(a.split("::")[0]).resolve() for a in config.args}
    return config._harness_explicit


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix not in (".yaml", ".yml") or is_catalog_file(file_path):
        return None
    if in_scenario_tree(file_path, _scenario_roots(parent.config)) or \
            file_path.resolve() in _explicit_paths(parent.config):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def _scenario_roots(config) -> tuple:
    """The scenario paths the project's settings name (harness.core.project)."""
    return getattr(config, "_harness_scenario_roots", ())


def pytest_report_teststatus(report, config):
    """A passing record judged from a stored observation shows as `r`, `PASSED (reused)`."""
    if report.when == "call" and report.passed and any(k == REUSED_KEY for k, _ in report.user_properties):
        return "passed", "r", ("PASSED (reused)", {"green": True})
    return None
