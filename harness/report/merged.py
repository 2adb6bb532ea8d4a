"""reports/index.html: every Spark version's results side by side.

One row per case, one column per version (the observed strategy and build side, the
final adaptive plan too where it differs; coloured by status; a cell that changed since
the previous version is marked), a summary per version, and an upgrade view: pick two
versions and see the cases that change, grouped by kind (`harness.report.diff`). The data is
embedded in the page; nothing is fetched.
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.core.files import atomic_write_text
from harness.core.vocab import describe_join, version_sort_key
from harness.observe.describe import (
    conf_bytes,
    expectation_words,
    stream_step_lines,
    undefined_conf_words,
)
from harness.report import diff
from harness.report.pages import jinja_env, script_json
from harness.report.plan_pictures import PlanPictures
from harness.report.version_report import top_join
from harness.spark.engines import ENGINES


# The changed plans whose join nodes a version pair's view shows side by side.
MAX_SIDE_BY_SIDE = 100

def engine_label(version: str, engine: str) -> str:
    """The column of a version's run under a native engine: `4.1.4 comet`."""
    return f"{version} {engine}"


def folder_of(label: str) -> str:
    """A column's report folder, relative to the merged page: `4.1.4`, `comet/4.1.4`."""
    version, _, engine = label.partition(" ")
    return f"{engine}/{version}" if engine in ENGINES else label


def _column_sort_key(label: str):
    version, _, engine = label.partition(" ")
    return (*version_sort_key(version), engine if engine in ENGINES else "")


def load_all(report_dir: str | Path, drawings: PlanPictures | None = None) -> dict[str, dict]:
    """column → results.json, for every reports/<version>/results.json and, beside them,
    every run under a native engine (reports/<engine>/<version>/: column `<version>
    <engine>`), oldest version first, each engine's column after the plain one;
    `drawings` reads back the pictures kept beside each."""
    found = {}
    paths = [(path, path.parent.name) for path in Path(report_dir).glob("*/results.json")]
    paths += [(path, engine_label(path.parent.name, engine)) for engine in ENGINES
              for path in Path(report_dir).glob(f"{engine}/*/results.json")]
    for path, label in paths:
        try:
            text = path.read_text(encoding="utf-8")
            doc = json.loads(text)
        except (OSError, ValueError):
            continue  # not ours, or from an incompatible release: the page shows the others
        if isinstance(doc, dict) and isinstance(doc.get("cases"), list) and isinstance(doc.get("summary"), dict):
            found[label] = doc
            if drawings is not None:
                drawings.read_back(path.parent, doc, text)
    return {v: found[v] for v in sorted(found, key=_column_sort_key)}


def _plan_label(record: dict, which: str) -> str:
    node = top_join(record, which)
    if node is None and record["observed"].get(which) is None:
        return ""
    return describe_join(node)


def _plan_tree(record: dict, results: dict, trees: dict, drawings: PlanPictures) -> tuple[int | None, str]:
    """(index in `trees`, which plan) of the record's plan picture: the final plan where
    the case ran, else the initial one; identical trees are stored once, so many versions
    cost little."""
    drawn = drawings.of(record, results)
    which = "final" if drawn and drawn["final"] else "initial"
    tree = drawn and drawn[which]
    if not tree:
        return None, ""
    key = json.dumps(tree, separators=(",", ":"))
    return trees.setdefault(key, len(trees)), which


def _cell(record: dict, folder: str) -> dict:
    initial, final = _plan_label(record, "initial"), _plan_label(record, "final")
    observed = record["observed"]
    if record["kind"] == "agreement":
        initial, final = _agreement_label(record), ""
    elif record["kind"] == "partitions":
        initial, final = _partitions_label(record), ""
    return {"status": record["status"], "initial": initial, "final": final if final != initial else "",
            "rows": observed.get("rows"), "message": record.get("message", "")[:300],
            "error": (observed.get("error") or {}).get("class", ""), "detail": _detail(record, folder),
            "drift": bool((record.get("model") or {}).get("drift")),
            "reused": _reused_from(record),
            "bug": (record.get("bug") or {}).get("id", "") if record["status"] == "known_bug" else ""}


def _reused_from(record: dict) -> str:
    """"run … at … on …" for a record judged from an earlier run's observation, else ""."""
    run = record.get("run") or {}
    return f"run {run['id']} at {run['at']} on {run['host']}" if run.get("reused") else ""


def _agreement_label(record: dict) -> str:
    """What an agreement cell says, in agreement with its status."""
    count = len(record["observed"].get("strategies") or [])
    return {"passed": f"{count} strategies agree", "correctness": "results differ",
            "unchecked": f"unchecked ({count} strateg{'y' if count == 1 else 'ies'})",
            "known_bug": "known bug"}.get(record["status"], record["status"])


def _partitions_label(record: dict) -> str:
    """What a partitions cell says, in agreement with its status."""
    return {"passed": "partitions add up", "correctness": "partitions do not add up",
            "unchecked": "not compared", "known_bug": "known bug"}.get(record["status"], record["status"])


def _detail(record: dict, folder: str) -> dict:
    """What the per-case panel shows for one version; full plan texts stay in the
    version's own report (linked), so this page stays small with many versions."""
    observed = record["observed"]
    if record["kind"] == "agreement":
        return {"runs": [f"{r['forced']}: " + (r.get("error") or f"{r['strategy']} ({r['build_side']}) "
                                                f"{r['rows']} rows / {r['checksum']}")
                         for r in observed.get("agreement") or []],
                "link": f"{folder}/index.html#{record['case_id']}"}
    if record["kind"] == "partitions":
        return {"runs": [record.get("message", "")], "link": f"{folder}/index.html#{record['case_id']}"}
    estimate = (observed.get("estimates") or [None])[0]
    join_conf = observed.get("join_conf") or {}
    return {
        "joins": {which: [describe_join(n, join_type=True, tables=True) for n in (observed.get(which) or {}).get("joins", [])]
                  for which in ("initial", "final") if observed.get(which)},
        "estimates": {side: estimate[side]["size_in_bytes"] for side in ("left", "right")} if estimate else None,
        "threshold": conf_bytes(join_conf.get("spark.sql.autoBroadcastJoinThreshold") or
                                (observed.get("conf") or {}).get("spark.sql.autoBroadcastJoinThreshold")),
        "conf": observed.get("conf") or {},
        "expected": expectation_words(record.get("expected")),
        "warnings": (observed.get("warnings") or [])[:5],
        "undefined_conf": undefined_conf_words(observed["undefined_conf"], record["versions"]["spark"],
                                               observed.get("removed_conf"))
        if observed.get("undefined_conf") else "",
        "error": f"{observed['error']['class']}: {observed['error']['message'][:400]}" if observed.get("error") else "",
        "prediction": (record.get("model") or {}).get("explanation", ""),
        "steps": stream_step_lines(observed),
        "link": f"{folder}/index.html#{record['case_id']}",
    }


def scenario_texts(rows: dict) -> dict[str, str]:
    """file → its YAML, for the case panels (each file once)."""
    texts = {}
    for row in rows.values():
        path = Path(row["file"])
        if row["file"] not in texts and path.is_file():
            texts[row["file"]] = path.read_text(encoding="utf-8", errors="replace")[:MAX_YAML_CHARS]
    return texts


MAX_YAML_CHARS = 20_000


def matrix_data(results: dict[str, dict], links: dict[str, str] | None = None,
                drawings: PlanPictures | None = None) -> dict:
    versions = list(results)
    drawings = drawings or PlanPictures()
    links = links or {}
    rows: dict[str, dict] = {}
    trees: dict[str, int] = {}
    for version, doc in results.items():
        for record in doc["cases"]:
            row = rows.setdefault(record["case_id"], {"id": record["case_id"], "file": record["file"],
                                                      "folder": record["file"].split("/")[-2] if "/" in record["file"] else "",
                                                      "tags": record.get("tags", []), "cells": {}})
            row["cells"][version] = _cell(record, links.get(version, version))
            cell = row["cells"][version]
            cell["plan"], cell["plan_which"] = _plan_tree(record, doc, trees, drawings)
            # a case cut short says nothing of what Spark would do: never marked changed
            cell["comparable"] = not diff.incomparable(record)
    for row in rows.values():
        previous = None
        for version in versions:
            cell = row["cells"].get(version)
            if cell is None:
                continue
            if not cell["comparable"]:
                cell["changed"] = False
                continue
            signature = (cell["initial"], cell["final"], cell["rows"], cell["error"])
            cell["changed"] = previous is not None and signature != previous
            previous = signature
    summary = {v: {"by_status": doc["summary"]["by_status"], "by_strategy": doc["summary"]["by_strategy"],
                   "model": doc["summary"].get("model") or {},
                   "master": doc.get("master") or "", "shape": doc.get("cluster") or {},
                   "seconds": round(doc["summary"]["total_case_seconds"], 1), "java": doc["versions"]["java"],
                   "reused": doc["summary"].get("reused", 0), "items": len(doc["cases"]),
                   "python": doc["versions"]["python"]} for v, doc in results.items()}
    upgrades, extras, faces = {}, {}, {}
    for i, old in enumerate(versions):
        for new in versions[i + 1:]:
            grouped = diff.diff_results(results[old], results[new], faces)
            upgrades[f"{old}|{new}"] = {kind: entries for kind, entries in grouped.items() if entries}
            largest, nodes = diff.workload_extras(results[old], results[new], grouped, faces=faces)
            # the join nodes side by side for neighbouring versions and the whole span (the
            # page's first views), not for every pair: a workload's page stays small
            sided = new == versions[i + 1] or (i == 0 and new == versions[-1])
            extras[f"{old}|{new}"] = {"largest": [[case, figure.kind, figure.text] for case, figure in largest],
                                      "nodes": dict(list(nodes.items())[:MAX_SIDE_BY_SIDE]) if sided else {},
                                      "nodes_total": len(nodes)}
    return {"versions": versions, "rows": sorted(rows.values(), key=lambda r: (r["file"], r["id"])),
            "summary": summary, "upgrades": upgrades, "upgrade_extras": extras, "files": scenario_texts(rows),
            "strategies": sorted({s for doc in summary.values() for s in doc["by_strategy"]}),
            "trees": [json.loads(key) for key in trees]}


def render(data: dict, title: str = "Join strategies across Spark versions") -> str:
    payload = script_json(data)
    return jinja_env().get_template("matrix.html.j2").render(data=data, payload=payload, title=title)


def write_merged(report_dir: str | Path, drawings: PlanPictures | None = None) -> Path | None:
    from harness.report.version_report import folder_lock
    with folder_lock(Path(report_dir)):
        drawings = drawings or PlanPictures()
        results = load_all(report_dir, drawings)
        if not results:
            return None
        return write_merged_from(results, Path(report_dir) / "index.html", drawings=drawings,
                                 links={label: folder_of(label) for label in results},
                                 upgrade_reports=upgrade_reports(report_dir))


def upgrade_reports(report_dir: str | Path) -> list[dict]:
    """The upgrade reports `bisect` wrote beside the versions' folders: label and link."""
    found = sorted(Path(report_dir).glob("upgrade-*/index.html"))
    return [{"label": page.parent.name[len("upgrade-"):].replace("-", " → ", 1), "href": f"{page.parent.name}/index.html"}
            for page in found]


def write_merged_from(results: dict[str, dict], target: Path, links: dict[str, str] | None = None,
                      title: str = "Join strategies across Spark versions", drawings: PlanPictures | None = None,
                      upgrade_reports: list[dict] | None = None) -> Path:
    """The merged page of any labelled runs (e.g. local and cluster of one version);
    `links`: label → that run's report folder, relative to the page."""
    data = matrix_data(results, links, drawings)
    data["upgrade_reports"] = upgrade_reports or []
    atomic_write_text(target, render(data, title))
    return target
