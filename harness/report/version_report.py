"""Reports: reports/<spark-version>/results.json (schemas/results.schema.json) and
index.html, both written atomically (temp file + rename)."""
from __future__ import annotations

import collections
import contextlib
import datetime as dt
import fcntl
import functools
import json
import os
import platform
import re
from pathlib import Path

import jsonschema
from markupsafe import Markup, escape

import harness
from harness.core.files import atomic_write_text, remove_stale_temps
from harness.core.records import NOT_RUN, WARNINGS_UNOBSERVED
from harness.core.text import counted
from harness.report.pages import jinja_env, script_json
from harness.report.plan_pictures import PlanPictures

STATUS_ORDER = {"correctness": 0, "failed": 1, "error": 2, "timeout": 3, "invalid": 4, "known_bug": 5,
                "unchecked": 6, "observed": 7, "skipped": 8, "passed": 9}
RESULTS_SCHEMA_VERSION = 1
# The contract of results.json ships beside this module; the top-level schemas/ holds the same file.
RESULTS_SCHEMA = Path(__file__).resolve().parent / "results.schema.json"


def installed_spark() -> str:
    try:
        from importlib.metadata import version
        return version("pyspark")
    except Exception:
        return "unknown"


def version_dir(report_dir: str | os.PathLike, spark_version: str) -> Path:
    return Path(report_dir) / spark_version


def engine_report_dir(report_dir: str | os.PathLike, engine: str) -> Path:
    """Where a run under a native engine writes its reports: beside the plain ones, in
    REPORT_DIR/<engine>/ (a folder already named for the engine is kept)."""
    report_dir = Path(report_dir)
    return report_dir / engine if engine and report_dir.name != engine else report_dir


def top_join(record: dict, which: str) -> dict | None:
    observed = record.get("observed") or {}
    plan = observed.get(which) or {}
    joins = plan.get("joins") or []
    return joins[0] if joins else None


def summarize(records: list[dict], invalid: list[dict]) -> dict:
    statuses = collections.Counter(r["status"] for r in records)
    if invalid:
        statuses["invalid"] = len(invalid)
    strategies = collections.Counter()
    for record in records:
        if record["kind"] != "case":
            continue
        strategies[_strategy_label(record)] += 1
    return {
        "cases": sum(1 for r in records if r["kind"] == "case"),
        "agreement_checks": sum(1 for r in records if r["kind"] == "agreement"),
        "partition_checks": sum(1 for r in records if r["kind"] == "partitions"),
        "by_status": dict(sorted(statuses.items(), key=lambda kv: STATUS_ORDER.get(kv[0], 99))),
        "by_strategy": dict(strategies.most_common()),
        "total_case_seconds": round(sum(r["timings"]["total_s"] for r in records), 3),
        "reused": sum(1 for r in records if (r.get("run") or {}).get("reused")),
        "warnings_unobserved": sum(1 for r in records if r["status"] == "passed"
                                   and r["message"].startswith(WARNINGS_UNOBSERVED)),
        "model": model_agreement(records),
        "reference": reference_counts(records),
        "partitions": partition_counts(records),
    }


def reason_class(why: str) -> str:
    """A not-compared reason without its particulars (counts, names, an engine's message):
    the words records are counted under."""
    for cut in (" (", ": "):
        if cut in why:
            why = why.split(cut, 1)[0]
    return why


def reference_counts(records: list[dict]) -> dict:
    """How the items' answers fared against the independent engine: compared (agreeing,
    differing) and not compared, by reason."""
    agrees = differs = 0
    reasons: collections.Counter = collections.Counter()
    expressions: collections.Counter = collections.Counter()
    engines = set()
    for record in records:
        reference = (record.get("observed") or {}).get("reference")
        if not reference:
            continue
        engines.add(reference.get("engine", ""))
        if not reference.get("compared"):
            if reference.get("unverified"):
                expressions[reference["unverified"]] += 1
            reasons[UNVERIFIED if reference.get("unverified") and "not verified" in reference.get("why", "")
                    else reason_class(reference.get("why", ""))] += 1
        elif reference.get("agrees"):
            agrees += 1
        else:
            differs += 1
    return {"engines": sorted(e for e in engines if e), "compared": agrees + differs, "agree": agrees,
            "differ": differs, "not_compared": sum(reasons.values()), "by_reason": dict(reasons.most_common()),
            "by_expression": dict(expressions.most_common(10))}


UNVERIFIED = "an expression whose DuckDB translation is not verified"


def partition_counts(records: list[dict]) -> dict:
    """How the partitions items fared: compared (adding up, not); not needed (the reference
    compared the answer); not compared, by reason (an empty answer among them: its
    partitions compared nothing of substance)."""
    add_up = differ = not_needed = 0
    reasons: collections.Counter = collections.Counter()
    for record in records:
        found = (record.get("observed") or {}).get("partitions") if record["kind"] == "partitions" else None
        if not found:
            continue
        if "not_run" in found:
            not_needed += 1
        elif "not_compared" in found:
            reasons[reason_class(found["not_compared"])] += 1
        elif not found["query_rows"] and found["agrees"]:
            reasons["an empty answer"] += 1
        elif found["agrees"]:
            add_up += 1
        else:
            differ += 1
    return {"compared": add_up + differ, "add_up": add_up, "differ": differ, "not_needed": not_needed,
            "not_compared": sum(reasons.values()), "by_reason": dict(reasons.most_common())}


NOT_RUN_LABEL = "not run"


def _strategy_label(record: dict) -> str:
    """The strategy a case counts under; a query that raised counts as an error, named
    "expected error" when its scenario expects exactly that (not a failure)."""
    node = top_join(record, "final") or top_join(record, "initial")
    if node:
        return node["strategy"]
    if record["status"] == "skipped" and record["message"].startswith(NOT_RUN):
        return NOT_RUN_LABEL  # not "no join": nothing was planned
    if not record["observed"].get("error"):
        return "no join"
    expected_error = (record.get("expected") or {}).get("error") and record["status"] == "passed"
    return "expected error" if expected_error else "query error"


def model_agreement(records: list[dict]) -> dict:
    """How often harness.observe.model predicted the initial plan's top join, and where it did not."""
    judged = [r for r in records if r["kind"] == "case" and r.get("model")]
    drift = sorted(r["case_id"] for r in judged if r["model"]["drift"])
    agree = len(judged) - len(drift)
    finals = [r for r in judged if "final_agrees" in r["model"]]
    final_drift = sorted(r["case_id"] for r in finals if not r["model"]["final_agrees"])
    return {"judged": len(judged), "agree": agree,
            "agreement_pct": round(100.0 * agree / len(judged), 1) if judged else None, "drift": drift,
            "final_judged": len(finals), "final_agree": len(finals) - len(final_drift), "final_drift": final_drift,
            "final_not_predicted": sum(1 for r in judged if r["observed"].get("final") and "final_agrees" not in r["model"])}


def build_results(records: list[dict], invalid: list[dict], shard: dict | None = None,
                  flakes: dict | None = None) -> dict:
    records = sorted(records, key=lambda r: (STATUS_ORDER.get(r["status"], 99), r["file"], r["case_id"]))
    versions = records[0]["versions"] if records else {"spark": installed_spark(), "java": "unknown",
                                                       "python": platform.python_version()}
    extra = {"shard": shard} if shard else {}
    if flakes is not None:
        extra["flakes"] = flakes
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "harness": {"release": harness.__version__},
        **extra,
        "generated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions,
        "master": records[0]["master"] if records else None,
        "cluster": records[0].get("cluster") if records else None,
        "summary": summarize(records, invalid),
        "invalid": invalid,
        "cases": records,
    }


class ResultsInvalid(ValueError):
    """A results document that does not follow schemas/results.schema.json."""


@functools.lru_cache(maxsize=1)
def _results_validator():
    """The results schema compiled to Python once (fastjsonschema: a whole suite's
    results in ~0.1 s, where jsonschema's interpreter takes ~1 s); jsonschema where
    fastjsonschema is not installed. The schema uses only draft-7 keywords."""
    schema = json.loads(RESULTS_SCHEMA.read_text())
    try:
        import fastjsonschema
    except ImportError:
        return jsonschema.Draft202012Validator(schema).validate
    return fastjsonschema.compile(schema)


def validate_results(results: dict) -> None:
    try:
        _results_validator()(results)
    except Exception as exc:  # either library's validation error
        raise ResultsInvalid(str(exc).splitlines()[0]) from None


def render_html(results: dict, drawings: PlanPictures | None = None, drawn: dict | None = None) -> str:
    """The version page; `drawn` (case id → pictures), when the caller has them already."""
    from harness.observe.describe import (
        cost_brief,
        cost_words,
        expectation_words,
        runtime_filter_lines,
        runtime_filter_model_line,
        shuffle_words,
        unavailable_words,
        undefined_conf_words,
    )
    drawings = drawings or PlanPictures()
    env = jinja_env()
    env.filters["bytes"] = lambda n: "" if n is None else f"{n:,}"
    env.filters["breakable"] = breakable
    env.filters["counted"] = counted
    env.globals["top_join"] = top_join
    env.globals["expectation_words"] = expectation_words
    env.globals["unavailable_words"] = unavailable_words
    env.globals["shuffle_words"] = shuffle_words
    env.globals["runtime_filter_lines"] = runtime_filter_lines
    env.globals["runtime_filter_model_line"] = runtime_filter_model_line
    env.globals["cost_words"] = cost_words
    env.globals["cost_brief"] = cost_brief
    env.globals["undefined_conf_words"] = undefined_conf_words
    env.filters["estimate"] = lambda side: (f"≈ {side['printed']}" if (side.get("printed") or " B").endswith("iB")
                                            else "" if side.get("size_in_bytes") is None else f"{side['size_in_bytes']:,}")
    drawn = drawn if drawn is not None else drawings.all_of(results)
    skipped_checks = skipped_checks_by_case(results["cases"])
    skipped_parts = skipped_partitions_by_check(results["cases"])
    folded = {check["case_id"] for check in [*skipped_checks.values(), *skipped_parts.values()]}
    return env.get_template("report.html.j2").render(results=results, pictures=drawn, skipped_checks=skipped_checks,
                                                     folded=folded, skipped_parts=skipped_parts, pictures_json=script_json(drawn))


def skipped_checks_by_case(records: list[dict]) -> dict[str, dict]:
    """case id → the skipped cross-strategy check of that case (a plan-only scenario's, or
    one Spark rejects), so the page shows it in the case's own row rather than as a row of
    its own; a check whose case is not in the records keeps its row."""
    checks = {(r["scenario_id"], r["label"]): r for r in records if r["kind"] == "agreement" and r["status"] == "skipped"}
    found = {}
    for record in records:
        if record["kind"] != "case":
            continue
        # the labels harness.check.agreement gives: per join type, or one for a SQL join
        check = checks.get((record["scenario_id"], f"{record['join_type']}-agree")) \
            or checks.get((record["scenario_id"], "agree"))
        if check is not None:
            found[record["case_id"]] = check
    return found


def skipped_partitions_by_check(records: list[dict]) -> dict[str, dict]:
    """cross-strategy check id → its file's skipped partitions item (not needed where the
    reference compared the answer), shown in the check's own row rather than as a row of
    its own."""
    checks = {(r["scenario_id"], r["label"]): r["case_id"] for r in records if r["kind"] == "agreement"}
    found = {}
    for record in records:
        if record["kind"] == "partitions" and record["status"] == "skipped":
            label = record["label"][:-len("partitions")] + "agree"  # harness.check.partitions' labels
            check = checks.get((record["scenario_id"], label))
            if check is not None:
                found[check] = record
    return found


def breakable(text) -> Markup:
    """An id or path that may wrap after `[`, `-`, `_`, `@`, `/`, `,`, `.` and `=` and
    between the words of a camelCase name, never inside a word or a number."""
    escaped = str(escape(str(text)))
    escaped = re.sub(r"([\[\-_@/,=])", "\\1<wbr>", escaped)
    escaped = re.sub(r"(?<=[a-z])\.(?=[a-z])", ".<wbr>", escaped)
    return Markup(re.sub(r"(?<=[a-z])(?=[A-Z])", "<wbr>", escaped))


def write_reports(report_dir: str | os.PathLike, records: list[dict], invalid: list[dict], shard: dict | None = None,
                  keep_previous: bool = True, version: str | None = None,
                  drawings: PlanPictures | None = None, flakes: dict | None = None) -> list[Path]:
    """Write this run's records into reports/<version>/ under a lock, keeping the records
    of cases this run did not run (a partial or concurrent run never erases results);
    `keep_previous=False` (a merge) writes exactly the records given."""
    version = version or (records[0]["versions"]["spark"] if records else installed_spark())
    target = version_dir(report_dir, version)
    json_path, html_path = target / "results.json", target / "index.html"
    with folder_lock(target):
        remove_stale_temps(target)
        ran_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        records = [{**r, "ran_at": r.get("ran_at") or _observed_at(r) or ran_at} for r in records]
        kept, kept_invalid = _kept_from_previous(json_path, records, invalid) if keep_previous else ([], [])
        results = build_results(records + kept, invalid + kept_invalid, shard, flakes)
        validate_results(results)
        text = json.dumps(results, indent=1, default=str)
        drawings = drawings or PlanPictures()
        drawn = drawings.all_of(results)
        atomic_write_text(json_path, text)
        drawings.keep(target, text, drawn)
        atomic_write_text(html_path, render_html(results, drawings, drawn))
    return [json_path, html_path]


def _observed_at(record: dict) -> str | None:
    """When the run that observed the record started (an earlier one for a reused record)."""
    return (record.get("run") or {}).get("at")


@contextlib.contextmanager
def folder_lock(folder: Path):
    """An exclusive lock on a report folder, held while its files are read and replaced."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _kept_from_previous(json_path: Path, records: list[dict], invalid: list[dict]) -> tuple[list, list]:
    """The previous results' records of cases this run did not run and whose scenario still
    defines them; the previous invalid files this run did not touch and that still exist."""
    try:
        previous = json.loads(json_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [], []
    if not isinstance(previous, dict) or previous.get("schema_version") != RESULTS_SCHEMA_VERSION:
        return [], []
    ran = {r["case_id"] for r in records}
    touched = {r["file"] for r in records} | {i["file"].split("::")[0] for i in invalid}
    defined = _CaseIndex()
    kept = [r for r in previous.get("cases", [])
            if isinstance(r, dict) and r.get("case_id") not in ran and defined.has(r.get("file"), r.get("case_id"))]
    kept_invalid = [i for i in previous.get("invalid", [])
                    if isinstance(i, dict) and i.get("file", "").split("::")[0] not in touched
                    and Path(i.get("file", "").split("::")[0]).is_file()]
    return kept, kept_invalid


class _CaseIndex:
    """Which case ids each scenario file defines now (loaded without Spark, once a file)."""

    def __init__(self):
        self.ids: dict[str, set] = {}

    def has(self, file: str | None, case_id: str | None) -> bool:
        if not file or not case_id:
            return False
        if file not in self.ids:
            self.ids[file] = self._ids_of(file)
        return case_id in self.ids[file]

    @staticmethod
    def _ids_of(file: str) -> set:
        from harness.check.file_checks import file_checks
        from harness.scenario.model import expand, load_scenario
        try:
            cases = expand(load_scenario(file))
        except Exception:
            return set()
        return {c.case_id for c in cases} | {item_id for _, _, item_id in file_checks(cases)}
