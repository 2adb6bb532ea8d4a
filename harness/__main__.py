"""Command line: `python -m harness diff|matrix|accept ...` (see --help of each)."""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness", description="Spark join strategy harness")
    commands = parser.add_subparsers(dest="command", required=True)
    diff = commands.add_parser("diff", help="what changed between two Spark versions' results")
    diff.add_argument("old", help="Spark version, e.g. 3.5.7 (reads <report-dir>/<version>/results.json)")
    diff.add_argument("new", help="Spark version, e.g. 4.3.0")
    diff.add_argument("--report-dir", default="reports")
    diff.add_argument("--fail-on", default="", metavar="KINDS",
                      help="exit 1 when a case changed in one of these kinds, comma-separated "
                           "(e.g. 'strategy,build side,result'; for CI)")
    matrix = commands.add_parser("matrix", help="run the suite on several Spark versions, one environment each")
    matrix.add_argument("versions", nargs="*", help="PySpark versions (default: latest patch of 3.0 ... 4.3)")
    matrix.add_argument("--report-dir", default="reports")
    matrix.add_argument("--workers", default="2")
    matrix.add_argument("-k", dest="keyword", default=None, help="only cases matching this pytest -k expression")
    matrix.add_argument("--observe", action="store_true",
                        help="survey: record what each version does without checking expectations")
    matrix.add_argument("--spark-master", default=None,
                        help="run every version against this master (it must run a matching Spark)")
    accept = commands.add_parser("accept", help="write observed strategies and results into the scenario files")
    accept.add_argument("versions", nargs="*", help="Spark versions whose results to accept (default: all in report-dir)")
    accept.add_argument("--report-dir", default="reports")
    accept.add_argument("-k", dest="keyword", default=None, help="only cases whose id contains this text")
    accept.add_argument("--dry-run", action="store_true", help="print the diff, change nothing")
    explain = commands.add_parser("explain", help="why Spark picks each case's strategy (the join-selection model)")
    explain.add_argument("paths", nargs="+", help="scenario files or folders")
    connect = commands.add_parser("connect-test", help="the suite through a local Spark Connect server, "
                                                      "compared with local mode")
    connect.add_argument("--report-dir", default="reports")
    connect.add_argument("-k", dest="keyword", default=None, help="only cases matching this pytest -k expression")
    cluster = commands.add_parser("cluster-test", help="the suite on a local standalone cluster, compared with local mode")
    cluster.add_argument("--report-dir", default="reports")
    cluster.add_argument("--workers", type=int, default=2, help="worker JVMs (1 core each)")
    cluster.add_argument("-k", dest="keyword", default=None, help="only cases matching this pytest -k expression")
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
    baseline = commands.add_parser("baseline", help="the join nodes of each SQL execution in a Spark event log")
    baseline.add_argument("path", help="an event log file, or a folder (rolling logs)")
    baseline.add_argument("--out", default=None, help="write the baseline JSON here (default: print it)")
    args = parser.parse_args(argv)
    if args.command == "baseline":
        from . import baseline as production
        return production.main(args.path, args.out)
    if args.command == "capture":
        return _capture(args, parser)
    if args.command == "connect-test":
        from . import connecttest
        return connecttest.main(args.report_dir, ["-k", args.keyword] if args.keyword else [])
    if args.command == "cluster-test":
        from . import cluster as standalone
        return standalone.main(args.report_dir, ["-k", args.keyword] if args.keyword else [], args.workers)
    if args.command == "explain":
        from . import explain as why
        return why.main(args.paths)
    if args.command == "accept":
        from . import accept as golden
        try:
            return golden.main(args.versions, args.report_dir, args.keyword, write=not args.dry_run)
        except FileNotFoundError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if args.command == "matrix":
        from . import matrix as version_matrix
        extra = (["-k", args.keyword] if args.keyword else []) + (["--observe"] if args.observe else []) \
            + (["--spark-master", args.spark_master] if args.spark_master else [])
        return version_matrix.main(args.versions, args.report_dir, args.workers, extra)
    if args.command == "diff":
        from . import diff as upgrade_diff
        try:
            return upgrade_diff.main(args.old, args.new, args.report_dir, upgrade_diff.parse_kinds(args.fail_on))
        except (FileNotFoundError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except BrokenPipeError:  # e.g. piped into `head`
            return 0
    return 1


def _capture(args, parser) -> int:
    from . import capturing as capture_tool
    from .session import read_conf_file
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
    return capture_tool.main(args.paths, args.out, args.sql, args.analyze, args.spark_master, conf, baseline,
                             synthetic=args.synthetic)


def _scale(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"a scale is a number in (0, 1], not {text}")
    return value


if __name__ == "__main__":
    sys.exit(main())
