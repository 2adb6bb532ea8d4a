"""Reports: reports/<spark-version>/results.json (schemas/results.schema.json) and
index.html, both written atomically (temp file + rename)."""
from __future__ import annotations

import collections
import datetime as dt
import json
import os
import platform
from pathlib import Path

import jsonschema

from .datagen import atomic_write_text
from .scenario import SCHEMA_DIR

STATUS_ORDER = {"correctness": 0, "failed": 1, "error": 2, "timeout": 3, "invalid": 4,
                "observed": 5, "skipped": 6, "passed": 7}
RESULTS_SCHEMA_VERSION = 1


def installed_spark() -> str:
    try:
        from importlib.metadata import version
        return version("pyspark")
    except Exception:
        return "unknown"


def clock(seconds: float) -> str:
    """2m05s / 42s: durations in progress lines and timing tables."""
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def version_dir(report_dir: str | os.PathLike, spark_version: str) -> Path:
    return Path(report_dir) / spark_version


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
        node = top_join(record, "final") or top_join(record, "initial")
        strategies[node["strategy"] if node else ("error" if record["observed"].get("error") else "none")] += 1
    return {
        "cases": sum(1 for r in records if r["kind"] == "case"),
        "agreement_checks": sum(1 for r in records if r["kind"] == "agreement"),
        "by_status": dict(sorted(statuses.items(), key=lambda kv: STATUS_ORDER.get(kv[0], 99))),
        "by_strategy": dict(strategies.most_common()),
        "total_case_seconds": round(sum(r["timings"]["total_s"] for r in records), 3),
        "model": model_agreement(records),
    }


def model_agreement(records: list[dict]) -> dict:
    """How often harness.model predicted the initial plan's top join, and where it did not."""
    judged = [r for r in records if r["kind"] == "case" and r.get("model")]
    drift = sorted(r["case_id"] for r in judged if r["model"]["drift"])
    agree = len(judged) - len(drift)
    finals = [r for r in judged if "final_agrees" in r["model"]]
    final_drift = sorted(r["case_id"] for r in finals if not r["model"]["final_agrees"])
    return {"judged": len(judged), "agree": agree,
            "agreement_pct": round(100.0 * agree / len(judged), 1) if judged else None, "drift": drift,
            "final_judged": len(finals), "final_agree": len(finals) - len(final_drift), "final_drift": final_drift,
            "final_not_predicted": sum(1 for r in judged if r["observed"].get("final") and "final_agrees" not in r["model"])}


def build_results(records: list[dict], invalid: list[dict]) -> dict:
    records = sorted(records, key=lambda r: (STATUS_ORDER.get(r["status"], 99), r["file"], r["case_id"]))
    versions = records[0]["versions"] if records else {"spark": installed_spark(), "java": "unknown",
                                                       "python": platform.python_version()}
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "generated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions,
        "master": records[0]["master"] if records else None,
        "cluster": records[0].get("cluster") if records else None,
        "summary": summarize(records, invalid),
        "invalid": invalid,
        "cases": records,
    }


def validate_results(results: dict) -> None:
    schema = json.loads((SCHEMA_DIR / "results.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(results)


def render_html(results: dict) -> str:
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    env = Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"),
                      autoescape=select_autoescape(["html", "j2"]), trim_blocks=True, lstrip_blocks=True)
    env.filters["bytes"] = lambda n: "" if n is None else f"{n:,}"
    env.globals["top_join"] = top_join
    return env.get_template("report.html.j2").render(results=results)


def write_reports(report_dir: str | os.PathLike, records: list[dict], invalid: list[dict]) -> list[Path]:
    results = build_results(records, invalid)
    validate_results(results)
    target = version_dir(report_dir, results["versions"]["spark"])
    json_path, html_path = target / "results.json", target / "index.html"
    atomic_write_text(json_path, json.dumps(results, indent=1, default=str))
    atomic_write_text(html_path, render_html(results))
    return [json_path, html_path]
