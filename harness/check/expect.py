"""Expectations: which apply to a case on a Spark version, and how observations compare.

`resolve` merges the scenario's base expectations with every override whose `when`
matches the case (Spark version by PEP 440 specifier, matrix values); later overrides
win. `compare` returns one short line per mismatch, so a failing case reads like the
rule it broke.
"""
from __future__ import annotations

from packaging.specifiers import SpecifierSet

from harness.check.compare_cost import compare_cost, cost_unreported
from harness.check.compare_plans import (
    AQE_DECIDES,
    RUNTIME_FILTERS_SINCE,
    checked_views,
    compare_bucketed_scan,
    compare_key_grouped,
    compare_native,
    compare_operators,
    compare_plan,
    compare_pruning,
    compare_runtime_filters,
    compare_shuffles,
    compare_subqueries,
    estimate_range,
    final_build_side_unseen,
    plan_names,
    runtime_filters_wanted,
    undecided_pruning,
)
from harness.check.compare_results import (
    PatternTooSlow,
    compare_error,
    compare_steps,
    compare_warnings,
    rows_equal,
    steps_unreported,
)
from harness.core.records import UNAVAILABLE, Observation
from harness.core.rows import normalize_rows
from harness.core.vocab import JOIN_TYPES, normalize_build_side, normalize_strategy, spark_version
from harness.scenario.model import Case
from harness.scenario.tables import as_hint_list, hint_name


EXPECTATION_KEYS = ("strategy", "build_side", "joins", "plan", "rows", "checksum", "result_rows", "columns",
                    "error", "warnings", "estimates", "operators", "shuffles", "bucketed_scan",
                    "key_grouped", "dynamic_pruning", "runtime_filters", "cost", "native")


# Keys that can only be checked by running the query.
EXECUTION_KEYS = ("rows", "checksum", "result_rows", "cost")


def _hint_names(value) -> list[str]:
    return [hint_name(h).upper() for h in as_hint_list(value)]


def _conf_equal(expected, actual) -> bool:
    if isinstance(expected, dict) or isinstance(actual, dict):
        return expected == actual

    def norm(v):
        return ("true" if v else "false") if isinstance(v, bool) else str(v).strip().lower()
    return norm(expected) == norm(actual)


def _version_in(specifier, version: str) -> bool:
    """Whether `version` is in a PEP 440 specifier, or in any of a list of them."""
    if isinstance(specifier, list):
        return any(_version_in(one, version) for one in specifier)
    return SpecifierSet(specifier).contains(spark_version(version), prereleases=True)


def affected_words(affected) -> str:
    return " or ".join(affected) if isinstance(affected, list) else affected


def engine_of(versions: dict) -> str:
    """The native engine a record's versions name (`comet 1.2.0` → comet), "" for none."""
    return (versions.get("engine") or "").split(" ")[0]


def when_matches(when: dict, case: Case, version: str, deployment: str = "local", engine: str = "") -> bool:
    if "spark" in when and not _version_in(when["spark"], version):
        return False
    if "engine" in when and when["engine"] != (engine or "none"):
        return False
    if "join_type" in when:
        wanted = when["join_type"] if isinstance(when["join_type"], list) else [when["join_type"]]
        if case.join_type not in {JOIN_TYPES[w] for w in wanted}:
            return False
    if "api" in when and case.join.get("api", "dataframe") != when["api"]:
        return False
    if "deployment" in when and when["deployment"] != deployment:
        return False
    for side in ("left", "right"):
        key = f"{side}_hints"
        if key in when and _hint_names(when[key]) != _hint_names(case.join.get("hints", {}).get(side)):
            return False
    for key, value in when.get("conf", {}).items():
        if key not in case.spark_conf or not _conf_equal(value, case.spark_conf[key]):
            return False
    return True


def resolve(case: Case, version: str, deployment: str = "local", engine: str = "") -> dict:
    """The expectations in force for this case on this Spark version, deployment (`local`
    or `cluster`) and native engine ("" for none)."""
    base_applies = "spark" not in case.expect or _version_in(case.expect["spark"], version)
    expected = {k: case.expect[k] for k in EXPECTATION_KEYS if k in case.expect and base_applies}
    varies = case.expect.get("varies")  # what Spark itself makes differ between runs: on every version
    steps = (case.scenario.data.get("stream") or {}).get("batches") or []
    step_expects = [dict(step.get("expect") or {}) if base_applies else {} for step in steps]
    for override in case.overrides:
        if when_matches(override["when"], case, version, deployment, engine):
            for changed in override.get("batches", []):
                step_expects[changed["batch"] - 1].update({k: v for k, v in changed.items() if k != "batch"})
            if "strategy" in override and "build_side" not in override:
                expected.pop("build_side", None)  # a build side belongs to the strategy it was written for
            for key in EXPECTATION_KEYS:
                if key in override:
                    expected[key] = override[key]
            varies = override.get("varies", varies)
    if expected.get("error") is None:
        expected.pop("error", None)
    if "strategy" in expected:
        expected["strategy"] = normalize_strategy(expected["strategy"])
    if "build_side" in expected:
        expected["build_side"] = normalize_build_side(expected["build_side"])
    if "joins" in expected:
        expected["joins"] = [_normalize_node(j) for j in expected["joins"]]
    if "subqueries" in expected:
        expected["subqueries"] = [{"joins": [_normalize_node(j) for j in s["joins"]]} for s in expected["subqueries"]]
    for listed in ("dynamic_pruning", "runtime_filters"):
        if isinstance(expected.get(listed), dict):
            expected[listed] = [expected[listed]]
    if any(step_expects):
        expected["batches"] = step_expects
    expected.setdefault("plan", "initial")
    if varies:
        expected["varies"] = varies  # not an assertion: what is not compared between runs
    return expected


def _normalize_node(node: dict) -> dict:
    normalized = {**node, "strategy": normalize_strategy(node["strategy"])}
    if "build_side" in node:
        normalized["build_side"] = normalize_build_side(node["build_side"])
    if "tables" in node:
        normalized["tables"] = sorted(t.lower() for t in node["tables"])
    return normalized


def needs_execution(expected: dict) -> bool:
    return any(k in expected for k in EXECUTION_KEYS) or expected.get("plan") in ("final", "both")


def executes(expected: dict) -> bool:
    """A case runs its query when an expectation needs the answer, or when it has none
    (then what it did is the record)."""
    return needs_execution(expected) or not has_assertions(expected)


def has_assertions(expected: dict) -> bool:
    return any(k in expected for k in EXPECTATION_KEYS if k != "plan") or "batches" in expected


# How not_checkable names runtime filters asked of a release that plans none.
NO_RUNTIME_FILTERS = "runtime filters"


def not_checkable(expected: dict, observed: Observation, version: str | None = None) -> list[str]:
    """The expectations this observation cannot decide (what the deployment or this Spark
    version could not see), each named: never passed, never failed, reported as not checkable.
    `version`: the Spark release observed, where known (a release before 3.3.0 plans no
    runtime filter, so one asked for is not checkable there)."""
    if observed.error:
        return []
    out = steps_unreported(expected, observed)
    if "runtime_filters" in expected:
        if version and spark_version(version) < spark_version(RUNTIME_FILTERS_SINCE):
            if runtime_filters_wanted(expected["runtime_filters"]):
                out.append(NO_RUNTIME_FILTERS)
        elif any(view is not None and view.runtime_filters is None for view in checked_views(expected, observed)):
            out.append("runtime_filters")  # not read: Connect's printed plans, a stream's plan
    plan_mode = expected.get("plan")
    if "dynamic_pruning" in expected and plan_mode == "initial" and observed.initial is not None:
        wanted = expected["dynamic_pruning"]
        undecided = undecided_pruning(wanted if isinstance(wanted, list) else [wanted], observed.initial.joins)
        if undecided:
            out.append(f"dynamic_pruning of {', '.join(undecided)} {AQE_DECIDES}")
    if "cost" in expected:
        out += cost_unreported(expected["cost"], observed)
    if "columns" in expected and observed.columns is None:
        out.append("columns")  # a stream's answer, or a record made before columns were read
    gone = set(observed.unavailable or [])
    if "subqueries" in expected and ("subqueries" in gone or any(
            view is not None and view.subqueries is None for view in checked_views(expected, observed))):
        out.append("subqueries")  # not read: Connect's printed plans, a stream's plan
    if not gone:
        return out
    if "warnings" in expected and "warnings" in gone:
        out.append("warnings")
    if "operators" in expected and "operators" in gone:
        out.append("operators")
    if "shuffles" in expected and not all((view.joins[0].get("shuffles") if view.joins else {}) is not None
                                          for view in checked_views(expected, observed)):
        out.append("shuffles")
    for key in ("bucketed_scan", "key_grouped", "dynamic_pruning"):
        if key in expected and (key in gone or any(view.joins and view.joins[0].get("scans") is None
                                                   for view in checked_views(expected, observed))):
            out.append(key)
    final_checked = plan_mode in ("final", "both") and any(k in expected for k in ("strategy", "build_side", "joins"))
    if final_checked and observed.final is None and "final" in gone:
        out.append("final plan")
    elif final_checked and "build_side" in expected and final_build_side_unseen(observed):
        out.append("build side (final plan)")
    elif final_checked and "joins" in expected and observed.final is not None and any(
            "build_side" in want and got.get("build_side") == UNAVAILABLE
            for want, got in zip(expected["joins"], observed.final.joins)):
        out.append("joins' build sides (final plan)")
    if "estimates" in expected and "estimates" in gone:
        out.append("estimates")
    elif "estimates" in expected and observed.estimates:
        top = observed.estimates[0]
        for side, bounds in expected["estimates"].items():
            if top[side].get("size_in_bytes") is None:  # the printed plan gave no size for it
                out.append(f"{side} estimate")
                continue
            low, high = estimate_range(top[side])
            lo_ok = "min" not in bounds or low >= bounds["min"] or high < bounds["min"]
            hi_ok = "max" not in bounds or high <= bounds["max"] or low > bounds["max"]
            if not (lo_ok and hi_ok):
                out.append(f"{side} estimate (printed {top[side].get('printed')})")
    return out


def rows_text(rows: list) -> str:
    """Rows as a file declares them: numbers compare as numbers (an int 1 equals 1.0), so
    a whole number is shown as one (`1`, not `1.0`); NULL as null, text quoted."""
    def value(v):
        if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        if v is None:
            return "null"
        return repr(v) if isinstance(v, str) else str(v)
    return "[" + ", ".join("[" + ", ".join(value(v) for v in row) + "]" for row in rows) + "]"


def columns_differ(expected: list, observed: list) -> str:
    """The answer's columns against the declared ones, naming the first that differs."""
    def words(columns):
        return ", ".join(f"{name} {kind}" for name, kind in columns)
    if len(expected) != len(observed):
        return (f"expected {len(expected)} columns ({words(expected)}), observed {len(observed)} "
                f"({words(observed)})")
    at = next(i for i, (e, o) in enumerate(zip(expected, observed)) if list(e) != list(o))
    return (f"column {at + 1} differs: expected {words([expected[at]])}, observed {words([observed[at]])} "
            f"(observed columns: {words(observed)})")


def compare(expected: dict, observed: Observation, version: str | None = None) -> list[str]:
    """Mismatches between what a case expects and what Spark did, one line each; what
    cannot be checked (`not_checkable`) is left out."""
    try:
        return _compare(expected, observed, set(not_checkable(expected, observed, version)))
    except PatternTooSlow as exc:
        return [str(exc)]


def _compare(expected: dict, observed: Observation, unchecked: set = frozenset()) -> list[str]:
    if observed.error or "error" in expected:
        problems = compare_error(expected, observed.error)
        if problems or observed.error:
            return problems
    problems: list[str] = []
    plan_mode = expected["plan"]
    if plan_mode in ("initial", "both"):
        problems += compare_plan(expected, observed.initial.joins, "initial")
    if "subqueries" in expected and "subqueries" not in unchecked:
        for which, view in zip(plan_names(plan_mode), checked_views(expected, observed)):
            problems += compare_subqueries(expected["subqueries"], view.subqueries or [], which)
    if plan_mode in ("final", "both") and "final plan" not in unchecked:
        final_expected = expected
        if unchecked & {"build side (final plan)", "joins' build sides (final plan)"}:
            final_expected = {k: v for k, v in expected.items() if k not in ("build_side", "joins")}
        problems += compare_plan(final_expected, observed.checked_plan("final").joins, "final")
    if "columns" in expected and observed.columns is not None and \
            [list(c) for c in observed.columns] != [list(c) for c in expected["columns"]]:
        problems.append(columns_differ(expected["columns"], observed.columns))
    if "rows" in expected and observed.rows != expected["rows"]:
        problems.append(f"expected {expected['rows']} rows, observed {observed.rows}")
    if "checksum" in expected and observed.checksum != expected["checksum"]:
        problems.append(f"expected checksum {expected['checksum']}, observed {observed.checksum}")
    if "result_rows" in expected:
        want = normalize_rows(expected["result_rows"])
        got = observed.result_rows
        if got is None or not rows_equal(want, got):
            problems.append(f"result rows differ: expected {rows_text(want[:5])}{'...' if len(want) > 5 else ''}, "
                            f"observed {rows_text((got or [])[:5])}{'...' if got and len(got) > 5 else ''}")
    if "warnings" in expected and "warnings" not in unchecked:
        problems += compare_warnings(expected["warnings"], observed.warnings or [])
    if "operators" in expected and "operators" not in unchecked:
        problems += compare_operators(expected["operators"], observed.checked_plan(plan_mode).operators or {})
    if "shuffles" in expected and "shuffles" not in unchecked:
        for which, view in zip(plan_names(plan_mode), checked_views(expected, observed)):
            problems += compare_shuffles(expected["shuffles"], view.joins, which)
    for key, check in (("bucketed_scan", compare_bucketed_scan), ("key_grouped", compare_key_grouped),
                       ("dynamic_pruning", compare_pruning)):
        if key in expected and key not in unchecked:
            for which, view in zip(plan_names(plan_mode), checked_views(expected, observed)):
                problems += check(expected[key], view.joins, which)
    if "runtime_filters" in expected and not unchecked & {"runtime_filters", NO_RUNTIME_FILTERS}:
        for which, view in zip(plan_names(plan_mode), checked_views(expected, observed)):
            problems += compare_runtime_filters(expected["runtime_filters"], view.runtime_filters or [], which)
    if "batches" in expected:
        problems += compare_steps(expected["batches"], observed.stream_steps or [], unchecked)
    if "cost" in expected and observed.executed:
        problems += compare_cost(expected["cost"], observed, unchecked)
    if "native" in expected:
        for which, view in zip(plan_names(plan_mode), checked_views(expected, observed)):
            problems += compare_native(expected["native"], view.joins, which)
    if "estimates" in expected and "estimates" not in unchecked:
        estimates = observed.estimates or []
        top = estimates[0] if estimates else None
        for side, bounds in expected["estimates"].items():
            if top is None:
                problems.append(f"no join estimate to check {side} against")
                continue
            if any(u.startswith(f"{side} estimate") for u in unchecked):
                continue
            size = top[side]["size_in_bytes"]
            if "min" in bounds and size < bounds["min"]:
                problems.append(f"{side} estimate {size:,} B is below the expected minimum {bounds['min']:,} B")
            if "max" in bounds and size > bounds["max"]:
                problems.append(f"{side} estimate {size:,} B is above the expected maximum {bounds['max']:,} B")
    return problems


BUG_FAILURES = ("failed", "error", "correctness")


def bug_in_force(case: Case, version: str, deployment: str = "local", engine: str = "") -> dict | None:
    """The scenario's `bug` when this version is declared affected and the bug concerns
    this case; None otherwise."""
    bug = case.scenario.data.get("bug") or {}
    if not bug.get("affected") or not _version_in(bug["affected"], version):
        return None
    if "when" in bug and not when_matches(bug["when"], case, version, deployment, engine):
        return None
    return bug


def bug_verdict(bug: dict | None, status: str, message: str, version: str, case_item: bool = True) -> tuple[str, str]:
    """A known bug is never green and never plain red: on a version declared affected, a
    failure is `known_bug` (counted apart), and a case that behaves correctly fails, since
    the declaration is then wrong. The expectations describe the correct behaviour."""
    if bug is None:
        return status, message
    where = f"{bug['id']} (affected {affected_words(bug['affected'])})"
    if status in BUG_FAILURES:
        return "known_bug", f"known bug {where}: {message}"
    if status == "passed" and case_item:
        return "failed", (f"declared affected by {where} but behaves correctly on Spark {version}: "
                          "the declaration is wrong")
    return status, message
