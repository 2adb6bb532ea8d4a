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
    cluster = commands.add_parser("cluster-test", help="the suite on a local standalone cluster, compared with local mode")
    cluster.add_argument("--report-dir", default="reports")
    cluster.add_argument("--workers", type=int, default=2, help="worker JVMs (1 core each)")
    cluster.add_argument("-k", dest="keyword", default=None, help="only cases matching this pytest -k expression")
    args = parser.parse_args(argv)
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
            return upgrade_diff.main(args.old, args.new, args.report_dir)
        except (FileNotFoundError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except BrokenPipeError:  # e.g. piped into `head`
            return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
