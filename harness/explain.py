"""`python -m harness explain PATH...`: why Spark picks each case's join strategy.

For every case of the given scenario files (or folders), builds the query, reads Spark's
estimates, hints and configs (plan-only: nothing executes, except streaming scenarios,
whose plan exists only once the stream runs), and prints harness.model's chain of rules
next to the strategy Spark chose. The last lines give the agreement over all cases and
list every disagreement ("model drift").
"""
from __future__ import annotations

import sys
from pathlib import Path

from . import model
from .scenario import ScenarioError, expand, load_scenario
from .vocab import describe_join


def scenario_files(paths: list[str]) -> list[Path]:
    files = []
    for raw in paths:
        path = Path(raw)
        files += sorted(path.rglob("*.y*ml")) if path.is_dir() else [path]
    return files


def explain_case(case, session) -> dict:
    """Plan the case as its run would (plan-only) and judge the model against it."""
    from .runner import capture, run_case
    if "stream" in case.scenario.data:
        record = run_case(case, session)
        return {"case_id": case.case_id, "observed": record.observed, "model": record.model}
    observed, _ = capture(session, case, execute=False, collect_rows=False)
    return {"case_id": case.case_id, "observed": observed,
            "model": model.evaluate(observed, session.versions["spark"])}


def _observed_text(observed) -> str:
    if observed.error:
        return f"error {observed.error.cls}"
    return describe_join(observed.initial.top)


def main(paths: list[str], out=sys.stdout) -> int:
    from .session import get_session
    files = scenario_files(paths)
    if not files:
        print(f"explain: no scenario files under {' '.join(paths)}", file=out)
        return 2
    session = get_session()
    version = session.versions["spark"]
    judged, drift = 0, []
    for path in files:
        try:
            cases = expand(load_scenario(path))
        except ScenarioError as exc:
            print(f"{exc}", file=out)
            continue
        print(f"{path}", file=out)
        for case in cases:
            record = explain_case(case, session)
            verdict = record.get("model")
            print(f"  {case.case_id}", file=out)
            if verdict is None:
                print(f"    observed: {_observed_text(record['observed'])} (no prediction)", file=out)
                continue
            judged += 1
            mark = "agrees" if verdict["agrees"] else "MODEL DRIFT"
            print(f"    model:    {verdict['explanation']}", file=out)
            print(f"    observed: {_observed_text(record['observed'])}  [{mark}]", file=out)
            if not verdict["agrees"]:
                drift.append(f"{case.case_id}: model {verdict['strategy']} ({verdict['build_side']}), "
                             f"Spark {_observed_text(record['observed'])}")
    share = 100.0 * (judged - len(drift)) / judged if judged else 0.0
    print(f"\nSpark {version}: the model agrees on {judged - len(drift)} of {judged} cases ({share:.1f}%)", file=out)
    for line in drift:
        print(f"  drift: {line}", file=out)
    return 0
