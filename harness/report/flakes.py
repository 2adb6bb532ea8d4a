"""Flips: what differed between runs of the same item in a flake-finder run.

`python -m harness flakes` runs every selected item K times in one pytest session, the
result store bypassed (harness.deploy.flakes); the records of each run reach the
controller, and here each item's runs are compared field by field. What is compared is
what Spark showed (strategies, build sides, shuffles, the initial and final plans, the
estimates, warnings, rows, checksum, stream step figures, the join's cost) and the
verdict; never the timings nor the run's stamp. Plan text and the join nodes' expressions are compared with
what changes on every run of the same query taken out: expression ids (`#123`), plan ids,
query and state-store ids, object addresses and the run's temporary paths.

A field the case's expectations declare as Spark's own variation (`expect: {varies:
{field: why}}`) is listed apart, with the file's reason, and does not count as a flip.
"""
from __future__ import annotations

import json
import re

from harness.spark.formats import iceberg

# What differs between two runs of one query however deterministic Spark is.
RUN_IDENTITY = [
    (re.compile(r"#\d+L?"), "#"),
    (re.compile(r"\bplan_id=\d+"), "plan_id="),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"@[0-9a-f]{4,16}\b"), "@"),
    (re.compile(r"(?:file:)?/(?:[\w.+=-]+/)+[\w.+=-]*"), "<path>"),  # a worker's temporary folders
    (re.compile(r"\bepoch: \d+"), "epoch:"),
    # a JVM lambda's class (`Strategy$$Lambda$4741/0x00007f3d492aa308`): numbered per JVM
    (re.compile(r"\$\$Lambda\$?\d*/0x[0-9a-f]+"), "$$Lambda"),
    # each worker process writes its Iceberg tables in a namespace of its own
    (re.compile(rf"\b{iceberg.CATALOG}\.{iceberg.NAMESPACE}_\d+\."), f"{iceberg.CATALOG}.{iceberg.NAMESPACE}_<process>."),
    # which adaptive query stage got which number: the order stages were created in
    (re.compile(r"\b(ResultQueryStage|ShuffleQueryStage|BroadcastQueryStage|TableCacheQueryStage) \d+"), r"\1"),
    (re.compile(r"\b(?:subquery|ReusedSubquery|Subquery) ?#?\d+"), "subquery"),
]

# Observation fields compared, in the words a flip is reported in.
FIELDS = {
    "strategies": "strategies", "initial": "initial plan", "final": "final plan", "estimates": "estimates",
    "warnings": "warnings", "rows": "rows", "checksum": "checksum", "result_rows": "result rows",
    "error": "error", "executed": "executed", "stream_batches": "micro-batches",
    "stream_steps": "stream steps", "agreement": "cross-strategy answers", "partitions": "ternary partitions",
    "adaptive": "adaptive",
    "cost": "cost",  # its timings are left out with every other timing
}
# What a record holds that is not what Spark showed: when and how long, not what.
# (`shared`: whether a worker had run the same plan before: scheduling, not Spark.)
NOT_COMPARED = {"timings", "run", "ran_at", "conf", "join_conf", "seconds", "shared",
                "shown"}  # a join cost's figures that depend on row order (compressed bytes)
MAX_PATHS = 8  # differing places listed per field


# The harness caps plan text (spark.sql.maxPlanStringLength); where the cap falls in the
# plan depends on how many digits the expression ids before it have, so a cut text is
# compared with another run's only as far as both go.
CUT_BY_SPARK = re.compile(r"\.\.\. \d+ more characters$")
CUT = "<cut>"


def normalized(value):
    """A field's value with every run's own identity erased (see RUN_IDENTITY)."""
    if isinstance(value, str):
        value = CUT_BY_SPARK.sub(CUT, value)
        for pattern, stand_in in RUN_IDENTITY:
            value = pattern.sub(stand_in, value)
        return value
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items() if k not in NOT_COMPARED and not k.endswith("_s")}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def _fields_of(record: dict) -> dict:
    observed = record.get("observed") or {}
    fields = {"verdict": record.get("status")}
    for key in FIELDS:
        if key in observed:
            fields[key] = normalized(observed[key])
    return fields


def _differing_paths(values: list, path: str = "") -> list[str]:
    """Where values of one field differ: `[0].state_rows`, not the whole structure."""
    if all(isinstance(v, dict) for v in values):
        keys = sorted({k for v in values for k in v}, key=str)
        return [p for k in keys for p in _differing_paths([v.get(k) for v in values], f"{path}.{k}")]
    if all(isinstance(v, list) for v in values) and len({len(v) for v in values}) == 1:
        return [p for i in range(len(values[0])) for p in _differing_paths([v[i] for v in values], f"{path}[{i}]")]
    if all(isinstance(v, str) and v.endswith(CUT) for v in values):
        shortest = min(len(v) for v in values) - len(CUT)
        values = [v[:shortest] for v in values]
    same = len({json.dumps(v, sort_keys=True, default=str) for v in values}) == 1
    return [] if same else [path]


def _at(value, path: str):
    for part in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path):
        key, index = part
        value = value.get(key) if key and isinstance(value, dict) else \
            value[int(index)] if index and isinstance(value, list) and int(index) < len(value) else None
    return value


def _text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


SHOWN = 240  # characters of a value shown, from a little before where the runs part


def _shown(texts: list[str]) -> list[str]:
    """Each run's value, cut to where the runs differ: a long plan text that differs in
    one operator shows that operator, not the first lines every run shares."""
    start = 0
    while all(start < len(t) for t in texts) and len({t[start] for t in texts}) == 1:
        start += 1
    start = max(0, start - 60)
    return [("..." if start else "") + t[start:start + SHOWN] + ("..." if len(t) > start + SHOWN else "")
            for t in texts]


def flips(runs: dict[str, dict[int, dict]]) -> list[dict]:
    """`runs`: case id → {run number: record}. One entry per item whose runs differ:
    the fields that differ, each with its value per run (`declare` then marks those its
    scenario declares as Spark's own variation)."""
    found = []
    for case_id in sorted(runs):
        by_run = runs[case_id]
        numbers = sorted(by_run)
        per_run = {n: _fields_of(by_run[n]) for n in numbers}
        fields = []
        for key in sorted({k for fields in per_run.values() for k in fields}):
            name = "verdict" if key == "verdict" else FIELDS[key]
            values = [per_run[n].get(key) for n in numbers]
            for path in _differing_paths(values)[:MAX_PATHS]:
                shown = _shown([_text(_at(per_run[n].get(key), path)) for n in numbers])
                fields.append({"key": key, "path": path, "field": name + path,
                               "values": dict(zip(map(str, numbers), shown))})
        if not fields:
            continue
        first = by_run[numbers[0]]
        found.append({"case_id": case_id, "file": first.get("file"), "line": first.get("line"),
                      "runs": len(numbers), "fields": fields, "spark_variation": False})
    return found


# A `varies` entry → the places of a record it covers (`field.path`, as flips name them).
DECLARABLE = {
    "final_plan": r"final(\W.*)?|agreement\[\d+\]\.(strategy|build_side)|strategies(\W.*)?|cost(\W.*)?",
    "plan_text": r"(initial|final)\.text",
    "checksum": r"checksum|result_rows(\W.*)?|agreement\[\d+\]\.checksum|partitions(\W.*)?",
    "rows": r"rows|result_rows(\W.*)?|agreement\[\d+\]\.rows|partitions(\W.*)?",
    "estimates": r"estimates(\W.*)?",
    "warnings": r"warnings(\W.*)?",
    "stream_steps": r"stream_steps(\W.*)?|stream_batches",
}


def declare(found: list[dict], runs: dict[str, dict[int, dict]]) -> list[dict]:
    """Mark the fields each flipped item's expectations declare as Spark's own variation
    (`expect: {varies: {field: why}}`, as resolved for the case: in its record). The
    verdict is never one: a declared field may not be asserted (harness.scenario.checks),
    so it cannot change one."""
    # A cross-strategy check has no expectations of its own: its scenario's cases' apply.
    by_scenario: dict[str, dict] = {}
    for records in runs.values():
        first = next(iter(records.values()))
        by_scenario.setdefault(first.get("scenario_id"), {}).update((first.get("expected") or {}).get("varies") or {})
    for flip in found:
        first = next(iter(runs[flip["case_id"]].values()))
        varies = (first.get("expected") or {}).get("varies") if first.get("kind") == "case" else \
            by_scenario.get(first.get("scenario_id"))
        for field in flip["fields"]:
            for declared, why in (varies or {}).items():
                if re.fullmatch(DECLARABLE[declared], field["key"] + field["path"]):
                    field["spark_variation"] = why
                    break
        flip["spark_variation"] = all("spark_variation" in f for f in flip["fields"])
    for flip in found:
        for field in flip["fields"]:
            del field["key"], field["path"]
    return found


def summary_lines(found: list[dict], items: int, runs: int) -> list[str]:
    """What the terminal and summary.md say of a flake-finder run."""
    real = [f for f in found if not f["spark_variation"]]
    lines = [f"flake finder: {items} item(s) × {runs} runs: {len(real)} flipped"
             + (f", {len(found) - len(real)} vary as their files declare (Spark's own variation)"
                if len(found) > len(real) else "")]
    for flip in found:
        tag = "Spark's own variation" if flip["spark_variation"] else "FLIPPED"
        lines.append(f"  {flip['file']}:{flip['line']}: {flip['case_id']}: {tag}")
        for field in flip["fields"]:
            values = "; ".join(f"run {n}: {v}" for n, v in field["values"].items())
            why = f" (declared: {field['spark_variation']})" if "spark_variation" in field else ""
            lines.append(f"    {field['field']}{why}: {values}")
    return lines
