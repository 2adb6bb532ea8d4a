"""reports/<spark-version>/summary.md: one version's run in Markdown for a CI job summary
(GitHub's $GITHUB_STEP_SUMMARY and the like): counts by status and strategy, each case
that did not pass with its one-line why, and what changed against the previous Spark
version whose results are in the same report folder."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from harness.core.files import atomic_write_text
from harness.core.text import counted
from harness.core.vocab import spark_version
from harness.observe.describe import reuse_words
from harness.report import diff
from harness.report.version_report import folder_lock, version_dir

LISTED = 60  # lines per section; the rest is counted, and the HTML page has everything
NOT_PASSING = ("correctness", "failed", "error", "timeout", "known_bug")


def _escape(text: str) -> str:
    """Markdown-inert inline text: no table pipes, emphasis, links or HTML."""
    return "".join(f"\\{c}" if c in "\\`*_[]<>|#" else c for c in str(text)).replace("\n", " ")


def _listed(lines: list[str]) -> list[str]:
    if len(lines) <= LISTED:
        return lines
    return lines[:LISTED] + [f"- … and {len(lines) - LISTED} more (see index.html)"]


def previous_version(version: str, available: list[str]) -> str | None:
    """The newest version below `version` among those with results."""
    older = [v for v in available if spark_version(v) < spark_version(version)]
    return max(older, key=spark_version) if older else None


def markdown(results: dict, previous: tuple[str, dict] | None = None) -> str:
    version = results["versions"]["spark"]
    summary = results["summary"]
    lines = [f"## Spark {_escape(version)} join scenarios",
             "",
             f"{counted(summary['cases'], 'case')}, {counted(summary['agreement_checks'], 'cross-strategy check')} and "
             f"{counted(summary.get('partition_checks', 0), 'partitions check')} on "
             f"{_escape(results.get('master') or '')} (Java {_escape(results['versions']['java'])}), "
             f"{summary['total_case_seconds']:.0f} s in cases; harness "
             f"{_escape((results.get('harness') or {}).get('release', 'unknown'))}.",
             *_reuse_lines(results),
             "",
             "| status | items |", "|---|---:|"]
    lines += [f"| {_escape(status.replace('_', ' '))} | {count} |" for status, count in summary["by_status"].items()]
    lines += ["", "| top join (final plan, else initial) | cases |", "|---|---:|"]
    lines += [f"| {_escape(strategy)} | {count} |" for strategy, count in summary["by_strategy"].items()]
    lines += _engine_lines(results)
    failing = [r for r in results["cases"] if r["status"] in NOT_PASSING]
    lines += ["", f"### Not passing ({len(failing)})", ""]
    lines += _listed([f"- **{r['status'].replace('_', ' ')}** `{r['case_id'].replace('`', '')}` "
                      f"({_escape(r['file'])}:{r['line']}): {_escape(r.get('message') or '')[:300]}"
                      for r in failing]) or ["none"]
    if results.get("invalid"):
        lines += ["", f"### Invalid scenario files ({len(results['invalid'])})", ""]
        lines += _listed([f"- {_escape(i['message'])[:300]}" for i in results["invalid"]])
    if previous is not None:
        lines += ["", *_changes(previous, version, results)]
    return "\n".join(lines) + "\n"


REASONS_LISTED = 10
# A scenario's table as Spark names it (`sales_b8416e357ccd0c041389`, in a catalog and
# database or not): one reason per kind of operator, not per table.
TABLE_NAME = re.compile(r"\b(?:\w+\.)*\w+_[0-9a-f]{16,}\b")


def _engine_lines(results: dict) -> list[str]:
    """Under a native engine: the top joins it ran and those it left to Spark, by
    strategy; its reasons, each counted once per join left to Spark; and the answers
    compared with Spark's own."""
    engine = results["versions"].get("engine")
    if not engine:
        return []
    where: dict[str, list[int]] = {}  # strategy → [native, in Spark]
    reasons: Counter = Counter()
    compared = differ = 0
    for record in results["cases"]:
        observed = record.get("observed") or {}
        joins = (observed.get("final") or observed.get("initial") or {}).get("joins") or []
        if joins and joins[0].get("native") is not None:
            where.setdefault(joins[0]["strategy"], [0, 0])[0 if joins[0]["native"] else 1] += 1
        for join in joins:
            if join.get("native") is False:
                reasons.update({TABLE_NAME.sub("<table>", reason) for reason in join.get("fallback") or []})
        reference = observed.get("engine_reference")
        if reference and observed.get("rows") is not None:
            compared += 1
            differ += (reference["rows"], reference["checksum"]) != (observed["rows"], observed["checksum"])
    lines = ["", f"### Under {_escape(engine)}", "",
             f"{compared} answers compared with Spark's own, {differ} differ.", "",
             "| top join | native | in Spark |", "|---|---:|---:|"]
    lines += [f"| {_escape(strategy)} | {native} | {spark} |" for strategy, (native, spark) in sorted(where.items())]
    if reasons:
        lines += ["", "| joins left to Spark | the engine's reason |", "|---:|---|"]
        lines += [f"| {count} | {_escape(reason)[:200]} |" for reason, count in reasons.most_common(REASONS_LISTED)]
        if len(reasons) > REASONS_LISTED:
            lines.append(f"| … | {len(reasons) - REASONS_LISTED} more reasons (see index.html) |")
    return lines


def _reuse_lines(results: dict) -> list[str]:
    """Which shard this is, and how much of the run was judged from stored observations."""
    lines = []
    if results.get("shard"):
        lines.append(f"Shard {results['shard']['index']}/{results['shard']['count']} of the suite.")
    reused, origin = reuse_words(results["cases"])
    if reused:
        lines.append(f"{reused} of {len(results['cases'])} items reused (observed by {_escape(origin)}; "
                     "judged by today's expectations).")
    unobserved = results["summary"].get("warnings_unobserved")
    if unobserved:
        lines.append(f"{unobserved} passed cases expect hint warnings, which Spark Connect does not show: "
                     "their strategy, build side and rows were checked.")
    return lines


def _changes(previous: tuple[str, dict], version: str, results: dict) -> list[str]:
    old_version, old_results = previous
    faces: dict = {}  # each record read once, for the kinds and the workload's extras
    grouped = diff.diff_results(old_results, results, faces)
    changed = {case for entries in grouped.values() for case, _ in entries}
    lines = [f"### Changes since Spark {_escape(old_version)} ({len(changed)} cases)", ""]
    counts = diff.kind_counts(grouped)
    if counts:
        lines += ["Cases by kind: " + " · ".join(f"{_escape(kind)} {count}" for kind, count in counts.items()), ""]
    for kind in diff.KINDS:
        entries = grouped[kind]
        if entries:
            lines.append(f"**{_escape(kind)}** ({len(entries)})")
            lines += _listed([f"- `{case.replace('`', '')}`: {_escape(text)[:300]}" for case, text in entries])
            lines.append("")
    largest, nodes = diff.workload_extras(old_results, results, grouped, faces=faces)
    if largest:
        lines.append(f"**largest estimate and cost changes** ({len(largest)})")
        lines += [f"- `{case.replace('`', '')}`: {figure.kind}: {_escape(figure.text)}" for case, figure in largest]
        lines.append("")
    if nodes:
        lines += [f"**join nodes side by side** ({len(nodes)} changed plans"
                  + (f", the first {MAX_SIDE_BY_SIDE}" if len(nodes) > MAX_SIDE_BY_SIDE else "") + ")", ""]
        for case, rows in list(nodes.items())[:MAX_SIDE_BY_SIDE]:
            lines += [f"`{case.replace('`', '')}`", "", f"| | {_escape(old_version)} | {_escape(version)} |",
                      "|---|---|---|"]
            lines += [f"| {'**≠** ' if differs else ''}{place} | {_escape(before)} | {_escape(after)} |"
                      for place, before, after, differs in rows]
            lines.append("")
    return lines if changed else lines + ["none"]


# The changed plans whose join nodes summary.md shows side by side.
MAX_SIDE_BY_SIDE = 100


def write_summary(report_dir, version: str) -> Path | None:
    """Write reports/<version>/summary.md from that folder's results.json (and the
    previous version's, when the folder has one)."""
    target = version_dir(report_dir, version)
    with folder_lock(target):
        try:
            results = json.loads((target / "results.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        path = target / "summary.md"
        atomic_write_text(path, markdown(results, _previous_results(report_dir, version)))
    return path


def _previous_results(report_dir, version: str) -> tuple[str, dict] | None:
    available = [p.parent.name for p in Path(report_dir).glob("*/results.json")]
    older = previous_version(version, available)
    if older is None:
        return None
    try:
        return older, json.loads((version_dir(report_dir, older) / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
