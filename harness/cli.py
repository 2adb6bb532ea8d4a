"""Command line: `python -m harness diff|matrix|merge|accept|explain|capture|baseline|cluster-test|connect-test|flakes|
bisect|upgrade|init`
(see --help of each). Thin: each command parses its arguments and calls its stage."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness import __version__


REPORT_DIR_HELP = "the report folder (default: the project's, reports/ at its root)"


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="python -m harness", description="Spark join strategy harness")
    root.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = root.add_subparsers(dest="command", required=True)
    for add in (_diff_parser, _matrix_parser, _accept_parser, _explain_parser, _connect_parser, _cluster_parser,
                _capture_parser, _baseline_parser, _merge_parser, _conf_keys_parser, _flakes_parser, _bisect_parser,
                _upgrade_parser, _init_parser, _verify_reference_parser):
        add(commands)
    return root


def main(argv: list[str] | None = None) -> int:
    from harness.core.project import ProjectError, find
    root = parser()
    args = root.parse_args(argv)
    try:
        if args.command != "init":
            _project_defaults(args, find())  # settings that cannot be used are said before anything runs
        return COMMANDS[args.command](args, root)
    except ProjectError as exc:  # the project's settings: one line, never a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _project_defaults(args, here) -> None:
    """The report folder and result store the project names (harness.core.project), where
    the command line names none: every command reads and writes in the team's repository."""
    if getattr(args, "report_dir", "") is None:
        folder = here.path(here.report_dir)
        args.report_dir = str(folder / "flakes" if args.command == "flakes" else folder)
    if getattr(args, "store", "") is None and here.store:
        args.store = str(here.path(here.store))


def _with_k(args) -> list[str]:
    return ["-k", args.keyword] if args.keyword else []


def _diff_parser(commands) -> None:
    diff = commands.add_parser("diff", help="what changed between two Spark versions' results")
    diff.add_argument("old", help="Spark version, e.g. 3.5.7 (reads <report-dir>/<version>/results.json)")
    diff.add_argument("new", help="Spark version, e.g. 4.3.0")
    diff.add_argument("--report-dir", default=None, help=REPORT_DIR_HELP)
    diff.add_argument("--fail-on", default="", metavar="KINDS",
                      help="exit 1 when a case changed in one of these kinds, comma-separated "
                           "(e.g. 'strategy,build side,result'; for CI)")
    diff.add_argument("--cost-threshold", default="20%", metavar="PERCENT",
                      help="a cost figure that moved less than this is no change (default: 20%%)")
    diff.add_argument("--cost-floor", default="64 KiB", metavar="SIZE",
                      help="nor a size that moved by fewer bytes (default: 64 KiB)")


def _matrix_parser(commands) -> None:
    matrix = commands.add_parser("matrix", help="run the suite on several Spark versions, one environment each")
    matrix.add_argument("versions", nargs="*", metavar="VERSION|PATH",
                        help="PySpark versions (default: latest patch of 3.0 ... 4.3), and scenario files or "
                             "folders to run (default: scenarios/), in any order")
    matrix.add_argument("--report-dir", default=None, help=REPORT_DIR_HELP)
    matrix.add_argument("--workers", default="2")
    matrix.add_argument("--engine", default=None, metavar="NAME",
                        help="every version under a native engine (comet): reports in REPORT_DIR/NAME/")
    matrix.add_argument("-k", dest="keyword", default=None, help="only cases matching this pytest -k expression")
    matrix.add_argument("--observe", action="store_true",
                        help="survey: record what each version does without checking expectations")
    matrix.add_argument("--spark-master", default=None,
                        help="run every version against this master (it must run a matching Spark)")
    matrix.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="versions run side by side, each with its own --workers (default: 1)")
    matrix.add_argument("--fresh", action="store_true", help="run every case again, whatever the result store holds")
    matrix.add_argument("--store", default=None, metavar="PATH",
                        help="the result store's folder (default: .harness-cache beside the report folder)")
    matrix.add_argument("--shard", default=None, metavar="I/N",
                        help="run the I-th of N parts of the suite on every version (merge the N report folders)")


def _accept_parser(commands) -> None:
    accept = commands.add_parser("accept", help="write observed strategies and results into the scenario files")
    accept.add_argument("versions", nargs="*", help="Spark versions whose results to accept (default: all in report-dir)")
    accept.add_argument("--report-dir", default=None, help=REPORT_DIR_HELP)
    accept.add_argument("-k", dest="keyword", default=None, help="only cases whose id contains this text")
    accept.add_argument("--dry-run", action="store_true", help="print the diff, change nothing")


def _explain_parser(commands) -> None:
    explain = commands.add_parser("explain", help="why Spark picks each case's strategy (the join-selection model)")
    explain.add_argument("paths", nargs="+", help="scenario files or folders")


def _connect_parser(commands) -> None:
    connect = commands.add_parser("connect-test", help="the suite through a local Spark Connect server, "
                                                      "compared with local mode")
    connect.add_argument("--report-dir", default=None, help=REPORT_DIR_HELP)
    connect.add_argument("-k", dest="keyword", default=None, help="only cases matching this pytest -k expression")


def _cluster_parser(commands) -> None:
    cluster = commands.add_parser("cluster-test", help="the suite on a local standalone cluster, compared with local mode")
    cluster.add_argument("--report-dir", default=None, help=REPORT_DIR_HELP)
    cluster.add_argument("--workers", type=int, default=2, help="worker JVMs (1 core each)")
    cluster.add_argument("-k", dest="keyword", default=None, help="only cases matching this pytest -k expression")


def _capture_parser(commands) -> None:
    capture = commands.add_parser("capture", help="write your own queries as scenario files: their tables' "
                                                  "statistics and plans, no data")
    capture.add_argument("paths", nargs="*", help=".sql files or folders of them")
    capture.add_argument("--sql", default=None, help="a query given inline")
    capture.add_argument("--out", required=True, help="the scenario file, or a folder (ending in /) for several")
    capture.add_argument("--analyze", action="store_true",
                         help="ANALYZE TABLE ... COMPUTE STATISTICS FOR ALL COLUMNS on every table first")
    capture.add_argument("--spark-master", default=None)
    capture.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                         help="session configs, e.g. the metastore and warehouse (repeatable)")
    capture.add_argument("--spark-conf-file", default=None, help="spark-defaults style file of session configs")
    capture.add_argument("--baseline", default=None, metavar="BASELINE.json:EXECUTION",
                         help="add what production planned (from `baseline`) for that SQL execution id, "
                              "as the expectation on production's version")
    capture.add_argument("--synthetic", type=_scale, default=None, metavar="SCALE",
                         help="add a synthetic twin with generated data at this scale (0 < SCALE <= 1), "
                              "so that results and the cross-strategy check run locally")
    capture.add_argument("--catalog", nargs="?", const="catalog.yaml", default=None, metavar="NAME",
                         help="write the tables of every query once, into the shared catalog NAME (default "
                              "catalog.yaml) in the --out folder; each query file names it and holds only its "
                              "query and expectations. Capturing again refreshes the tables captured")
    setup = capture.add_mutually_exclusive_group()
    setup.add_argument("--setup", default=None, metavar="FILE",
                       help="statements run in the capturing session before its queries, as production's "
                            "session ran them: CACHE [LAZY] TABLE, SET key=value, CREATE TEMPORARY VIEW ... AS "
                            "SELECT (any other statement is refused and nothing runs)")
    setup.add_argument("--setup-sql", default=None, metavar="SQL", help="the same, given inline")
    capture.add_argument("--no-self-check", action="store_true",
                         help="do not plan each written file again in the capturing session (its self-check "
                              "creates and drops a scratch database in the session's catalog); the file says so")


def _baseline_parser(commands) -> None:
    baseline = commands.add_parser("baseline", help="the join nodes of each SQL execution in a Spark event log")
    baseline.add_argument("path", help="an event log file, or a folder (rolling logs)")
    baseline.add_argument("--out", default=None, help="write the baseline JSON here (default: print it)")


def _merge_parser(commands) -> None:
    merge = commands.add_parser("merge", help="merge report folders made anywhere (per version, or shards) into one")
    merge.add_argument("folders", nargs="+", help="report folders (each with <version>/results.json) or version folders")
    merge.add_argument("--into", default="reports", help="the merged report folder (default: reports)")


def _conf_keys_parser(commands) -> None:
    keys = commands.add_parser("conf-keys", help="measure the SQL config keys each Spark version declares "
                                                 "(harness/scenario/spark_sql_conf_keys.json)")
    keys.add_argument("versions", nargs="*", help="Spark versions (default: the matrix's)")
    keys.add_argument("--engine", help="measure this native engine's own configs instead, on each Spark it "
                                       "publishes a jar for (harness/spark/<engine>_conf_keys.json)")


def _verify_reference_parser(commands) -> None:
    verify = commands.add_parser("verify-reference", help="evaluate each verified expression of the reference "
                                 "engine over edge values in Spark and in DuckDB (harness/observe/"
                                 "reference_verified.json)")
    verify.add_argument("versions", nargs="*", help="Spark versions, each in its matrix environment "
                                                    "(default: the installed one, here)")
    verify.add_argument("--only", action="append", default=[], metavar="EXPRESSION",
                        help="only entries of this expression class (repeatable), e.g. DayOfWeek")
    verify.add_argument("--ansi", default="off,on", help="ANSI modes: off, on or off,on (default)")
    verify.add_argument("--zones", default="UTC,America/Los_Angeles",
                        help="session time zones (default: UTC,America/Los_Angeles)")
    verify.add_argument("--write", action="store_true", help="record what agreed in the verified list")
    verify.add_argument("--json", action="store_true", help=argparse.SUPPRESS)


def _verify_reference(args, root) -> int:
    from harness.deploy import verify_reference
    return verify_reference.main(args.versions, args.only, args.ansi, args.zones, args.write, args.json)


def _flakes_parser(commands) -> None:
    flakes = commands.add_parser("flakes", help="run the selected items K times each and report every observation "
                                                "or verdict that differs between the runs")
    flakes.add_argument("paths", nargs="*", help="scenario files or folders (default: scenarios)")
    flakes.add_argument("--runs", type=int, default=3, metavar="K", help="runs of each item, 2 to 100 (default 3)")
    flakes.add_argument("--stress", type=int, default=0, metavar="N",
                        help="busy processes beside the run, each spinning on one core (at most 4 × cores)")
    flakes.add_argument("--workers", default="2", help="pytest-xdist workers (0: none; default 2)")
    flakes.add_argument("-k", dest="keyword", default=None, help="only items matching this pytest -k expression")
    flakes.add_argument("--report-dir", default=None,
                        help="where <version>/results.json and index.html go (default: the project's report "
                             "folder's flakes/)")


def _bisect_parser(commands) -> None:
    bisect = commands.add_parser("bisect", help="the release in which each change between two versions appeared, "
                                                "and the config that restores the earlier behaviour")
    bisect.add_argument("paths", nargs="*", help="scenario files or folders whose cases to search (default: all that differ)")
    bisect.add_argument("--good", required=True, metavar="VERSION", help="the earlier PySpark release, e.g. 3.5.9")
    bisect.add_argument("--bad", required=True, metavar="VERSION", help="the later one, e.g. 4.3.0")
    bisect.add_argument("--report-dir", default=None,
                        help="where <version>/results.json of --good and --bad are read (run over PATHS when missing)")
    bisect.add_argument("--good-dir", default=None, metavar="DIR",
                        help="--good's results from this report folder instead (made elsewhere: CI, another machine)")
    bisect.add_argument("--bad-dir", default=None, metavar="DIR", help="--bad's results from this report folder instead")
    bisect.add_argument("--out", default=None, help="where bisect.json and the report go (default: REPORT_DIR/upgrade-GOOD-BAD)")
    bisect.add_argument("--store", default=None, metavar="PATH", help="the result store (default: the matrix's)")
    bisect.add_argument("--workers", default="2")
    bisect.add_argument("--no-configs", action="store_true", help="search releases only; try no config")
    bisect.add_argument("--max-variants", type=int, default=None, metavar="N",
                        help="config tries run in one go up to N variants (default 3000); beyond, the findings "
                             "of one kind at one pair of releases share their first case's answer to which "
                             "settings matter")
    bisect.add_argument("--write", action="store_true",
                        help="a bug file whose case flips between two adjacent releases: its `affected` range "
                             "checked against them, and its bound moved where it disagrees (said in the file)")


def _upgrade_parser(commands) -> None:
    upgrade = commands.add_parser("upgrade", help="what an upgrade changes, in which release, and which config restores it: "
                                                  "the suite on both versions, their diff, bisect and configs, one report")
    upgrade.add_argument("old", metavar="FROM", help="the version you run, e.g. 3.3.4")
    upgrade.add_argument("new", metavar="TO", help="the version you upgrade to, e.g. 3.5.9")
    upgrade.add_argument("paths", nargs="*", help="scenario files or folders (default: scenarios)")
    upgrade.add_argument("--report-dir", default=None, help=REPORT_DIR_HELP)
    upgrade.add_argument("--workers", default="2")


def _init_parser(commands) -> None:
    init = commands.add_parser("init", help="set the harness up in your own repository: scenarios/ with an example, "
                                            "a [tool.join-harness] table, a CI workflow (never overwrites)")
    init.add_argument("folder", nargs="?", default=None, help="the repository (default: the current folder)")


def _init(args, root) -> int:
    from harness.deploy import init_project
    return init_project.main(args.folder)


def _bisect(args, root) -> int:
    from harness.deploy import bisect
    return bisect.main(args.paths, args.good, args.bad, args.report_dir, args.out, args.store, args.workers,
                       attribution=not args.no_configs, write=args.write, max_variants=args.max_variants,
                       good_dir=args.good_dir, bad_dir=args.bad_dir)


def _upgrade(args, root) -> int:
    from harness.deploy import bisect, matrix
    from harness.report import version_report
    missing = [v for v in (args.old, args.new)
               if not (version_report.version_dir(args.report_dir, v) / bisect.RESULTS).exists()]
    if missing:
        code = matrix.main(missing, args.report_dir, args.workers)
        if code not in (0, 1):
            return code
    return bisect.main(args.paths, args.old, args.new, args.report_dir, workers=args.workers)


def _flakes(args, root) -> int:
    from harness.deploy import flakes
    return flakes.main(args.paths, args.runs, args.stress, args.report_dir, args.workers, args.keyword)


def _conf_keys(args, root) -> int:
    from harness.deploy import conf_keys
    if args.engine:
        from harness.spark.engines import UnknownEngine
        try:
            return conf_keys.engine_main(args.engine)
        except UnknownEngine as exc:
            print(exc)
            return 2
    return conf_keys.main(args.versions)


def _merge(args, root) -> int:
    from harness.report import merge
    return merge.main(args.folders, args.into)


def _baseline(args, root) -> int:
    from harness.capturing import event_log
    return event_log.main(args.path, args.out)


def _connect_test(args, root) -> int:
    from harness.deploy import connect_server
    return connect_server.main(args.report_dir, _with_k(args))


def _cluster_test(args, root) -> int:
    from harness.deploy import cluster
    return cluster.main(args.report_dir, _with_k(args), args.workers)


def _explain(args, root) -> int:
    from harness.check import explain
    return explain.main(args.paths)


def _accept(args, root) -> int:
    from harness.report import accept
    try:
        return accept.main(args.versions, args.report_dir, args.keyword, write=not args.dry_run)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _matrix(args, root) -> int:
    from harness.deploy import matrix
    from harness.store.shards import Shard
    if args.shard:
        try:
            Shard.parse(args.shard)
        except ValueError as exc:
            root.error(str(exc))
    extra = _with_k(args) + (["--observe"] if args.observe else []) + (["--fresh"] if args.fresh else []) \
        + (["--spark-master", args.spark_master] if args.spark_master else []) \
        + (["--shard", args.shard] if args.shard else [])
    report_dir, store = args.report_dir, args.store
    if args.engine:
        from pathlib import Path

        from harness.spark import engines
        try:
            engines.named(args.engine)
        except engines.UnknownEngine as exc:
            root.error(str(exc))
        extra += ["--engine", args.engine]
        # the engine's reports beside the plain ones; one store for both (keys hold the engine)
        store = store or str(Path(report_dir).resolve().parent / ".harness-cache")
        report_dir = str(Path(report_dir) / args.engine)
    try:
        versions, paths = matrix.versions_and_paths(args.versions)
    except ValueError as exc:
        root.error(str(exc))
    if not paths:
        from harness.core import project
        missing = project.find().missing_scenarios()
        if missing:
            print(f"error: {missing}", file=sys.stderr)
            return 2
    return matrix.main(versions, report_dir, args.workers, extra, jobs=max(1, args.jobs), store=store, paths=paths)


def _diff(args, root) -> int:
    from harness.report import diff
    try:
        threshold = diff.parse_threshold(args.cost_threshold, args.cost_floor)
        return diff.main(args.old, args.new, args.report_dir, diff.parse_kinds(args.fail_on), threshold)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into `head`
        return 0


def _capture(args, parser) -> int:
    from harness.capturing import to_scenario as capture_tool
    from harness.spark.session import read_conf_file
    conf = {}
    try:
        if args.spark_conf_file:
            conf.update(read_conf_file(args.spark_conf_file))
    except (OSError, ValueError) as exc:
        parser.error(f"--spark-conf-file: {exc}")
    for item in args.spark_conf:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--spark-conf expects KEY=VALUE, got: {item}")
        conf[key] = value
    if not args.paths and not args.sql:
        parser.error("capture needs .sql files, a folder or --sql")
    baseline = None
    if args.baseline:
        path, sep, execution = args.baseline.rpartition(":")
        if not sep or not execution.isdigit():
            parser.error(f"--baseline expects BASELINE.json:EXECUTION_ID, got: {args.baseline}")
        baseline = (path, int(execution))
    setup = ("--setup-sql", args.setup_sql) if args.setup_sql else None
    if args.setup:
        try:
            setup = (args.setup, Path(args.setup).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            parser.error(f"--setup: {exc}")
    return capture_tool.main(args.paths, args.out, args.sql, args.analyze, args.spark_master, conf, baseline,
                             synthetic=args.synthetic, self_check=not args.no_self_check, catalog=args.catalog,
                             setup_text=setup)


def _scale(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"a scale is a number in (0, 1], not {text}")
    return value


COMMANDS = {"verify-reference": _verify_reference, "diff": _diff, "matrix": _matrix, "accept": _accept, "explain": _explain, "connect-test": _connect_test,
            "cluster-test": _cluster_test, "capture": _capture, "baseline": _baseline, "merge": _merge,
            "conf-keys": _conf_keys, "flakes": _flakes, "bisect": _bisect, "upgrade": _upgrade,
            "init": _init}
