"""The upgrade report: every change `bisect` found between two Spark versions, grouped by
the release that made it and the config that restores it, most serious first (answers
that differ, then cost that grew, then plans that changed without cost), each with the
`spark_conf` that pins the old behaviour. Written as OUT/summary.md and OUT/index.html."""
from __future__ import annotations

import html
from pathlib import Path

from harness.core.files import atomic_write_text
from harness.core.vocab import spark_version

# Most serious first: what a platform team must look at before it upgrades.
GROUPS = (("Answers differ", ("result", "error", "known bug", "status")),
          ("Cost grew or estimates moved", ("cost", "estimates")),
          ("Plans changed", ("strategy", "build side", "join order", "join type", "subqueries", "adaptive",
                             "condition", "warnings")))


def group_of(kind: str) -> str:
    return next((name for name, kinds in GROUPS if kind in kinds), GROUPS[-1][0])


def restoring_words(restoring: dict) -> str:
    settings = " and ".join(f"{s['key']}={s['value']} ({s['why']}" + (f"; “{s['doc']}”" if s.get("doc") else "") + ")"
                            for s in restoring["settings"])
    return f"restored by {settings}" + ("" if restoring["exactly"] else " (that change; others remain)")


def snippet(restorings: list[dict]) -> str:
    """The spark_conf that pins the old behaviour: the first setting (or pair) that restores it."""
    if not restorings:
        return ""
    lines = ["spark_conf:"] + [f"  {s['key']}: {s['value']}" for s in restorings[0]["settings"]]
    return "\n".join(lines)


def _attribution_words(found: dict) -> str:
    attribution = found.get("attribution")
    if attribution is None:
        return "configs not tried"
    if attribution.get("why_not"):
        return f"configs not tried: {attribution['why_not']}"
    restored = "; ".join(restoring_words(r) for r in attribution["restored_by"])
    tried, not_run = attribution.get("tried", 0), attribution.get("not_run") or {}
    ran = tried - len(not_run)
    if tried and not ran:
        return restored or f"nothing compared: none of the {tried} setting(s) could run ({_reasons(not_run)})"
    if restored:
        return restored
    if attribution.get("candidates") == 0:
        return f"no config that a scenario can set changed its default between {found['good']} and {found['bad']}"
    which = " (those that moved the first case of its kind and releases)" if attribution.get("as_first_case") else ""
    pairs = attribution.get("pairs_tried", 0)
    words = f"no config restores it ({ran} setting(s) run one at a time{which}" + (f", {pairs} pairs" if pairs else "")
    return words + (f"; {len(not_run)} could not run: {_reasons(not_run)})" if not_run else ")")


def _reasons(not_run: dict) -> str:
    """Why settings could not run, most common first: `3 × a scenario may not set it`."""
    counts: dict[str, int] = {}
    for why in not_run.values():
        short = why.split(": ", 1)[-1][:90]
        counts[short] = counts.get(short, 0) + 1
    return "; ".join(f"{n} × {why}" for why, n in sorted(counts.items(), key=lambda item: -item[1])[:3])


def grouped(document: dict) -> list[tuple[str, list[tuple[tuple[str, str], list[dict]]]]]:
    """[(group, [((good, bad), findings)])], groups in GROUPS order, release pairs oldest first."""
    out = []
    for name, _ in GROUPS:
        pairs: dict[tuple[str, str], list[dict]] = {}
        for found in document["findings"]:
            if group_of(found["kind"]) == name:
                pairs.setdefault((found["good"], found["bad"]), []).append(found)
        if pairs:
            ordered = sorted(pairs.items(), key=lambda item: (spark_version(item[0][1]), spark_version(item[0][0])))
            out.append((name, ordered))
    return out


def figures(document: dict) -> dict:
    findings = document["findings"]
    cases = {f["case_id"] for f in findings}
    adjacent = [f for f in findings if f["adjacent"]]
    restored = [f for f in findings if (f.get("attribution") or {}).get("restored_by")]
    single = [f for f in restored if any(len(r["settings"]) == 1 for r in f["attribution"]["restored_by"])]
    return {"cases": len(cases), "findings": len(findings), "adjacent": len(adjacent), "restored": len(restored),
            "restored_by_one": len(single)}


def summary_md(document: dict) -> str:
    numbers = figures(document)
    lines = [f"# Upgrade {document['good']} → {document['bad']}", "",
             f"Releases searched: {', '.join(document['line'])}.",
             f"{numbers['cases']} case(s) changed in {numbers['findings']} way(s); {numbers['adjacent']} bisected to two "
             f"adjacent releases; {numbers['restored']} restored by a config ({numbers['restored_by_one']} by one "
             f"alone). Search {document.get('seconds', 0)} s, configs {document.get('attribution_seconds', 0)} s.", ""]
    if document.get("untestable"):
        lines += ["Releases that could not be tested: " + "; ".join(f"{v}: {why}" for v, why in
                                                                   document["untestable"].items()), ""]
    if not document["findings"]:
        lines.append("No case differs.")
    for name, pairs in grouped(document):
        lines += [f"## {name}", ""]
        for (good, bad), findings in pairs:
            lines += [f"### changed between {good} and {bad}", ""]
            for found in findings:
                lines.append(f"- `{found['case_id']}` ({found['file']}): {found['kind']}: {found['change']}")
                if not found["adjacent"]:
                    lines.append("  - untested between them: " + ", ".join(f"{v} ({why})" for v, why in found["untested"].items()))
                lines.append(f"  - {_attribution_words(found)}")
                pin = snippet((found.get("attribution") or {}).get("restored_by") or [])
                if pin:
                    lines += ["", "    ```yaml"] + [f"    {ln}" for ln in pin.splitlines()] + ["    ```", ""]
            lines.append("")
    return "\n".join(lines) + "\n"


def page(document: dict) -> str:
    numbers = figures(document)
    esc = html.escape
    body = [f"<h1>Upgrade {esc(document['good'])} → {esc(document['bad'])}</h1>",
            f"<p>Releases searched: {esc(', '.join(document['line']))}.</p>",
            f"<p class=figures>{numbers['cases']} case(s) changed in {numbers['findings']} way(s) · "
            f"{numbers['adjacent']} bisected to two adjacent releases · {numbers['restored']} restored by a config "
            f"({numbers['restored_by_one']} by one alone)</p>"]
    if document.get("untestable"):
        body.append("<p class=warn>Could not be tested: " + esc("; ".join(f"{v}: {w}" for v, w in
                                                                        document["untestable"].items())) + "</p>")
    if not document["findings"]:
        body.append("<p>No case differs.</p>")
    for name, pairs in grouped(document):
        body.append(f"<h2>{esc(name)}</h2>")
        for (good, bad), findings in pairs:
            body.append(f"<h3>changed between {esc(good)} and {esc(bad)}</h3><table><tr><th>case</th><th>kind</th>"
                        "<th>what changed</th><th>config that restores it</th></tr>")
            for found in findings:
                pin = snippet((found.get("attribution") or {}).get("restored_by") or [])
                untested = "" if found["adjacent"] else \
                    "<br><small>untested between: " + esc(", ".join(found["untested"])) + "</small>"
                body.append(f"<tr><td><code>{esc(found['case_id'])}</code><br><small>{esc(found['file'])}</small></td>"
                            f"<td>{esc(found['kind'])}</td><td>{esc(found['change'])}{untested}</td>"
                            f"<td>{esc(_attribution_words(found))}"
                            + (f"<pre>{esc(pin)}</pre>" if pin else "") + "</td></tr>")
            body.append("</table>")
    style = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:1300px}table{border-collapse:collapse;"
             "width:100%;margin-bottom:1.5em}td,th{border:1px solid #ccc;padding:.4em;vertical-align:top;text-align:left}"
             "th{background:#f3f3f3}pre{background:#f7f7f7;padding:.4em}.warn{color:#a40}.figures{font-weight:600}")
    return (f"<!doctype html><html><head><meta charset=utf-8><title>Upgrade {esc(document['good'])} → "
            f"{esc(document['bad'])}</title><style>{style}</style></head><body>" + "\n".join(body) + "</body></html>\n")


def write(document: dict, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / "summary.md", out_dir / "index.html"]
    atomic_write_text(written[0], summary_md(document))
    atomic_write_text(written[1], page(document))
    return written
