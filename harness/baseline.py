"""The join nodes production ran with, read from a Spark event log.

`python -m harness baseline EVENTLOG_DIR_OR_FILE --out baseline.json`: for each SQL
execution of the log, the join nodes of its initial physical plan (the plan of
SparkListenerSQLExecutionStart) and, under AQE, of its final plan (the last
SparkListenerSQLAdaptiveExecutionUpdate), pre-order like harness.plans, with the
execution's description and the configs it modified. The Spark version comes from the
log's SparkListenerLogStart. Event logs of 3.x and 4.x are read: plain, zstd (4.x's
default) or gzip, single files or rolling logs (a folder of events_N files); lz4, lzf
and snappy streams use framing only Spark's Java libraries read, and are refused by name.
"""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from .util import atomic_write_text
from .vocab import JOIN_OPERATORS

START = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"
ADAPTIVE_UPDATE = "org.apache.spark.sql.execution.ui.SparkListenerSQLAdaptiveExecutionUpdate"
LOG_START = "SparkListenerLogStart"
BUILD = re.compile(r"\bBuild(Left|Right)\b")


class BaselineError(Exception):
    """One line: which log, which line, what is wrong."""


def log_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted((p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")),
                       key=lambda p: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.name)])
        if not files:
            raise BaselineError(f"{path}: no event log files in this folder")
        return files
    if not path.exists():
        raise BaselineError(f"{path}: no such file or folder")
    return [path]


def _lines(path: Path):
    """The log's lines: plain, zstd (Spark 4's default codec for event logs) or gzip.
    Spark's lz4, lzf and snappy streams use their Java libraries' own framing."""
    if path.suffix in (".lz4", ".snappy", ".lzf"):
        raise BaselineError(f"{path}: compressed with Spark's {path.suffix[1:]} codec, which only Spark reads; "
                            "write the log with spark.eventLog.compression.codec=zstd or uncompressed")
    if path.suffix in (".zstd", ".zst"):
        import io

        import zstandard
        raw = open(path, "rb")
        handle = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True),
                                  encoding="utf-8", errors="replace")
    else:
        handle = (gzip.open if path.suffix == ".gz" else open)(path, "rt", encoding="utf-8", errors="replace")
    with handle:
        try:
            yield from enumerate(handle, start=1)
        except (OSError, EOFError) as exc:  # a cut-off compressed stream
            raise BaselineError(f"{path}: cannot read on: {exc}") from None


SCAN = re.compile(r"^Scan \S+ (?:\S+\.)?([^.\s]+)$")


def scanned_tables(plan_info: dict) -> list[str]:
    """The catalog tables a SparkPlanInfo tree scans (to tell executions apart)."""
    found, stack = set(), [plan_info]
    while stack:
        node = stack.pop()
        match = SCAN.match(str(node.get("nodeName", "")))
        if match:
            found.add(match.group(1))
        stack.extend(node.get("children") or [])
    return sorted(found)


def join_nodes(plan_info: dict) -> list[dict]:
    """Join operators of a SparkPlanInfo tree, pre-order (codegen stages and AQE
    wrappers are walked through)."""
    found, stack = [], [plan_info]
    while stack:
        node = stack.pop()
        name = str(node.get("nodeName", ""))
        if name in JOIN_OPERATORS:
            build = BUILD.search(str(node.get("simpleString", "")))
            found.append({"strategy": name, "build_side": build.group(1).lower() if build else "none"})
        stack.extend(reversed(node.get("children") or []))
    return found


def read_log(path: Path) -> dict:
    """{spark, executions: [{id, description, initial, final, modified_configs}]} of one log."""
    version, executions = None, {}
    for file in log_files(path):
        for number, line in _lines(file):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                raise BaselineError(f"{file}:{number}: not a JSON event (a truncated or foreign log?)") from None
            kind = event.get("Event") if isinstance(event, dict) else None
            if kind == LOG_START:
                version = event.get("Spark Version")
            elif kind == START:
                executions[event["executionId"]] = {
                    "id": event["executionId"], "description": event.get("description", ""),
                    "tables": scanned_tables(event.get("sparkPlanInfo") or {}),
                    "initial": join_nodes(event.get("sparkPlanInfo") or {}), "final": None,
                    "modified_configs": event.get("modifiedConfigs") or {}}
            elif kind == ADAPTIVE_UPDATE and event.get("executionId") in executions:
                # each update replaces the plan; the last one is the final plan
                executions[event["executionId"]]["final"] = join_nodes(event.get("sparkPlanInfo") or {})
    if version is None:
        raise BaselineError(f"{path}: no SparkListenerLogStart event: not a Spark event log, or an unknown version")
    if not re.match(r"[34]\.\d+", version):
        raise BaselineError(f"{path}: written by Spark {version}; baseline reads logs of Spark 3.x and 4.x")
    return {"spark": version, "executions": list(executions.values())}


def main(path: str, out: str | None) -> int:
    try:
        baseline = read_log(Path(path))
    except BaselineError as exc:
        print(f"error: {exc}")
        return 2
    text = json.dumps(baseline, indent=2) + "\n"
    if out:
        atomic_write_text(Path(out), text)
        with_joins = sum(1 for e in baseline["executions"] if e["initial"] or e["final"])
        print(f"{len(baseline['executions'])} SQL executions ({with_joins} with joins) of Spark {baseline['spark']} "
              f"-> {out}")
    else:
        print(text, end="")
    return 0


def expectation(baseline_path: str, execution: int) -> dict:
    """An override for `expect.overrides`: the initial join nodes production planned on
    its version for one execution (a captured scenario is plan-only)."""
    baseline = json.loads(Path(baseline_path).read_text(encoding="utf-8"))
    chosen = [e for e in baseline["executions"] if e["id"] == execution]
    if not chosen:
        raise BaselineError(f"{baseline_path}: no SQL execution {execution} "
                            f"(it has {', '.join(str(e['id']) for e in baseline['executions'][:20])})")
    joins = chosen[0]["initial"]
    override = {"when": {"spark": f"=={baseline['spark']}"}}
    if joins:
        override["joins"] = joins
    else:
        override["strategy"] = "none"
    return override
