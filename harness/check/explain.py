"""`python -m harness explain PATH...`: why Spark picks each case's join strategy.

For every case of the given scenario files (or folders), builds the query, reads Spark's
estimates, hints and configs (plan-only: nothing executes, except streaming scenarios,
whose plan exists only once the stream runs), and prints the case's expectation and
whether it holds on that plan, harness.observe.model's chain of rules and the strategy Spark chose. The last lines give the agreement over all cases and
list every disagreement ("model drift").
"""
from __future__ import annotations

import sys
from pathlib import Path

from harness.check import expect
from harness.core.vocab import describe_join
from harness.observe import model
from harness.observe.describe import expectation_words, shuffle_words
from harness.scenario.errors import ScenarioError
from harness.scenario.model import expand, load_scenario


def scenario_files(paths: list[str]) -> list[Path]:
    files = []
    for raw in paths:
        path = Path(raw)
        files += sorted(path.rglob("*.y*ml")) if path.is_dir() else [path]
    return files


def explain_case(case, session) -> dict:
    """Plan the case as its run would (plan-only) and judge the model against it."""
    from harness.check.runner import capture, run_case
    if "stream" in case.scenario.data:
        record = run_case(case, session)
        return {"case_id": case.case_id, "observed": record.observed, "model": record.model}
    observed, _ = capture(session, case, execute=False, collect_rows=False)
    return {"case_id": case.case_id, "observed": observed,
            "model": model.evaluate(observed, session.versions["spark"])}


PLAN_KEYS = ("strategy", "build_side", "joins", "operators")


def plan_only_expectations(expected: dict) -> tuple[dict, list[str]]:
    """The expectations a plan-only look can check, and the names of those it cannot
    (rows, checksums, the final adaptive plan need the query to run)."""
    checkable = {k: v for k, v in expected.items() if k not in expect.EXECUTION_KEYS}
    unchecked = [k for k in expected if k in expect.EXECUTION_KEYS]
    if expected.get("plan") == "final":
        unchecked += [k for k in PLAN_KEYS if k in checkable]
        checkable = {k: v for k, v in checkable.items() if k not in PLAN_KEYS}
        checkable["plan"] = "initial"
    elif expected.get("plan") == "both":
        checkable["plan"] = "initial"
        unchecked += ["final plan"]
    return checkable, unchecked


def expectation_verdict(case, session, observed) -> str:
    """Whether the case's expectation holds on what was planned, in one line."""
    expected = expect.resolve(case, session.versions["spark"], session.deployment, expect.engine_of(session.versions))
    words = expectation_words(expected)
    if "stream" in case.scenario.data:  # the stream ran: everything is checkable
        checkable, unchecked = expected, []
    else:
        checkable, unchecked = plan_only_expectations(expected)
    if not expect.has_assertions(expected):
        return f"{words}"
    if not expect.has_assertions(checkable):
        return f"{words} → needs the query to run ({', '.join(unchecked)}): pytest checks it"
    problems = expect.compare(checkable, observed)
    held = "DOES NOT HOLD: " + "; ".join(problems) if problems else "holds"
    later = f" (needs the query to run, not checked here: {', '.join(unchecked)})" if unchecked else ""
    return f"{words} → {held}{later}"


def _observed_text(observed) -> str:
    if observed.error:
        return f"error {observed.error.cls}"
    return describe_join(observed.initial.top)


def main(paths: list[str], out=sys.stdout) -> int:
    from harness.spark.session import get_session
    files = scenario_files(paths)
    if not files:
        print(f"explain: no scenario files under {' '.join(paths)}", file=out)
        return 2
    session = get_session()
    version = session.versions["spark"]
    judged, drift, filters_judged, filters_drift = 0, [], 0, []
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
            print(f"    expected: {expectation_verdict(case, session, record['observed'])}", file=out)
            if verdict is None:
                print(f"    observed: {_observed_text(record['observed'])} (no prediction)", file=out)
                continue
            judged += 1
            mark = "agrees" if verdict["agrees"] else "MODEL DRIFT"
            print(f"    model:    {verdict['explanation']}", file=out)
            print(f"    observed: {_observed_text(record['observed'])}  [{mark}]", file=out)
            shuffles = shuffle_words(record["observed"].to_json())
            if shuffles:
                print(f"    {shuffles}", file=out)
            filters = verdict.get("runtime_filters")
            if filters:
                filters_judged += 1
                found = " and ".join(filters["observed"]) or "none"
                print(f"    runtime filters: {filters['why']}; observed: bloom filter on {found}"
                      f"  [{'agrees' if filters['agrees'] else 'MODEL DRIFT'}]", file=out)
                if not filters["agrees"]:
                    filters_drift.append(f"{case.case_id}: {filters['why']}; Spark: bloom filter on {found}")
            if not verdict["agrees"]:
                drift.append(f"{case.case_id}: model {verdict['strategy']} ({verdict['build_side']}), "
                             f"Spark {_observed_text(record['observed'])}")
    share = 100.0 * (judged - len(drift)) / judged if judged else 0.0
    print(f"\nSpark {version}: the model agrees on {judged - len(drift)} of {judged} cases ({share:.1f}%)", file=out)
    for line in drift:
        print(f"  drift: {line}", file=out)
    if filters_judged:
        print(f"Spark {version}: the runtime-filter model agrees on {filters_judged - len(filters_drift)} of "
              f"{filters_judged} cases", file=out)
        for line in filters_drift:
            print(f"  runtime-filter drift: {line}", file=out)
    return 0
