"""Expectations: which apply to a case on a Spark version, and how observations compare.

`resolve` merges the scenario's base expectations with every override whose `when`
matches the case (Spark version by PEP 440 specifier, matrix values); later overrides
win. `compare` returns one short line per mismatch, so a failing case reads like the
rule it broke.
"""
from __future__ import annotations

import math
import re

from packaging.specifiers import SpecifierSet

from harness.core.records import BYTE_UNITS, UNAVAILABLE, Observation, SparkError
from harness.core.rows import normalize_rows
from harness.core.vocab import (
    COST_SIZES,
    JOIN_TYPES,
    describe_join,
    normalize_build_side,
    normalize_strategy,
    spark_version,
)
from harness.scenario.model import Case
from harness.scenario.tables import as_hint_list, hint_name

EXPECTATION_KEYS = ("strategy", "build_side", "joins", "plan", "rows", "checksum", "result_rows",
                    "error", "warnings", "estimates", "operators", "shuffles", "bucketed_scan",
                    "key_grouped", "dynamic_pruning", "cost", "native")
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
    if isinstance(expected.get("dynamic_pruning"), dict):
        expected["dynamic_pruning"] = [expected["dynamic_pruning"]]
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


# --------------------------------------------------------------------------- compare

def _node_matches(want: dict, got: dict) -> bool:
    return (want["strategy"] == got["strategy"]
            and want.get("build_side", got["build_side"]) == got["build_side"]
            and want.get("skew", got.get("skew", False)) == got.get("skew", False)
            and want.get("native", got.get("native")) == got.get("native")
            and want.get("null_aware", got["null_aware"]) == got["null_aware"]
            and ("tables" not in want or want["tables"] == sorted(got.get("tables") or [])))


def _compare_plan(expected: dict, joins: list[dict], which: str) -> list[str]:
    problems = []
    top = joins[0] if joins else None
    if "strategy" in expected:
        want = expected["strategy"]
        got = top["strategy"] if top else "none"
        if want != got:
            problems.append(f"{which} plan: expected {want}, observed {describe_join(top, tables=True)}")
    if "build_side" in expected and top is not None:
        if expected["build_side"] != top["build_side"] and ("strategy" not in expected or not problems):
            problems.append(f"{which} plan: expected build side {expected['build_side']}, observed {describe_join(top, tables=True)}")
    if "joins" in expected:
        want_nodes = expected["joins"]
        if len(want_nodes) != len(joins):
            problems.append(f"{which} plan: expected {len(want_nodes)} join(s), observed {len(joins)}: "
                            + ", ".join(describe_join(j, tables=True) for j in joins))
        else:
            for i, (want, got) in enumerate(zip(want_nodes, joins)):
                if not _node_matches(want, got):
                    problems.append(f"{which} plan join #{i + 1}: expected {describe_join(want, tables=True)}, observed {describe_join(got, tables=True)}")
    return problems


def _rows_equal(expected: list, observed: list) -> bool:
    if len(expected) != len(observed):
        return False
    for e_row, o_row in zip(expected, observed):
        if len(e_row) != len(o_row):
            return False
        for e, o in zip(e_row, o_row):
            if isinstance(e, float) and isinstance(o, float):
                if not math.isclose(e, o, rel_tol=1e-9, abs_tol=1e-9):
                    return False
            elif e != o:
                return False
    return True


PATTERN_TIMEOUT_S = 1.0


class PatternTooSlow(Exception):
    pass


def search(pattern: str, text: str) -> bool:
    """re.search, bounded in time: a scenario's pattern is untrusted, and a pattern that
    backtracks catastrophically must not hang the worker (the `regex` module stops it)."""
    try:
        import regex
    except ImportError:  # an environment without it (an old matrix venv): bounded input only
        return re.search(pattern, text[:2000]) is not None
    try:
        return regex.search(pattern, text, timeout=PATTERN_TIMEOUT_S) is not None
    except TimeoutError:
        raise PatternTooSlow(f"pattern /{pattern}/ took over {PATTERN_TIMEOUT_S:g} s on the text "
                             "(catastrophic backtracking?)") from None


def _compare_error(expected: dict, observed_error: SparkError | None) -> list[str]:
    want = expected.get("error")
    if want is None:
        if observed_error:
            return [f"unexpected error {observed_error.cls}: {observed_error.message}"]
        return []
    if not observed_error:
        return [f"expected error {want.get('class', '')} /{want.get('message', '')}/ but the query succeeded"]
    problems = []
    if "class" in want and want["class"] not in (observed_error.cls, observed_error.java_class) \
            and not observed_error.java_class.endswith("." + want["class"]):
        problems.append(f"expected error class {want['class']}, observed {observed_error.cls}")
    if "message" in want and not search(want["message"], observed_error.message):
        problems.append(f"error message /{want['message']}/ not found in: {observed_error.message}")
    return problems


def _compare_warnings(want, seen: list[str]) -> list[str]:
    """`[patterns]`: each matches a logged hint warning (`[]`: none was logged);
    `{match, absent, count}`: as named."""
    if want == []:
        return [f"expected no hint warnings, observed: {seen[0]}"] if seen else []
    if isinstance(want, list):
        want = {"match": want}
    problems = []
    if "count" in want and len(seen) != want["count"]:
        problems.append(f"expected {want['count']} hint warning(s), observed {len(seen)}"
                        + (f": {seen[0]}" if seen else ""))
    for pattern in want.get("match", []):
        if not any(search(pattern, line) for line in seen):
            problems.append(f"no hint warning matches /{pattern}/ (observed: {seen or 'none'})")
    for pattern in want.get("absent", []):
        hit = next((line for line in seen if search(pattern, line)), None)
        if hit is not None:
            problems.append(f"a hint warning matches /{pattern}/, which must be absent: {hit}")
    return problems


def _within(value: int, bounds) -> bool:
    if isinstance(bounds, int):
        return value == bounds
    return bounds.get("min", value) <= value <= bounds.get("max", value)


def _cost_values(expected: dict, cost: dict):
    """(field, side or None, the bounds, the observed value, the name in words) of each
    bound; a bound for both sides compares their sum."""
    for field, bounds in expected.items():
        words = field.replace("_", " ")
        if "min" in bounds or "max" in bounds:
            yield field, None, bounds, cost.get(field), words
            continue
        for side, bound in bounds.items():
            values = [cost[s][field] for s in (("left", "right") if side == "both" else (side,))]
            total = None if None in values else sum(values)
            yield field, side, bound, total, words + ("" if side == "both" else f" {side}")


def _cost_unreported(expected: dict, observed: Observation) -> list[str]:
    """Cost bounds this run cannot decide: the deployment read no cost, or this Spark
    version does not report the metric (named, with why)."""
    if not observed.executed or observed.error:
        return []
    if observed.cost is None:
        gone = set(observed.unavailable or [])
        if "cost" in gone:
            return ["cost"]
        # a Spark Connect result sent without plan metrics: no final plan to measure
        return ["cost (no plan metrics came with the result)"] if "final" in gone else []
    out = []
    for field, side, _, value, words in _cost_values(expected, observed.cost):
        if value is None:
            keys = [field] if side is None else [f"{s}.{field}" for s in (("left", "right") if side == "both"
                                                                          else (side,))]
            why = "; ".join(dict.fromkeys(observed.cost["not_reported"][k] for k in keys
                                          if k in observed.cost["not_reported"])) or (
                "no shuffle feeds that side" if side else "not in this record")
            out.append(f"cost {words} ({why})")
    return out


def engine_answer_differs(observed: Observation) -> str | None:
    """Under a native engine: the engine's answer against Spark's own (None: the same, or
    no engine, or nothing ran)."""
    reference = observed.engine_reference
    if not reference or not observed.executed or observed.error:
        return None
    if (observed.rows, observed.checksum) == (reference["rows"], reference["checksum"]):
        return None
    return (f"the engine's answer is not Spark's: {observed.rows} rows, checksum {observed.checksum}; "
            f"Spark ({reference['source']}): {reference['rows']} rows, checksum {reference['checksum']}")


def _compare_native(wanted: bool, joins: list[dict], which: str) -> list[str]:
    """Whether the top join ran natively under the run's engine (harness.spark.engines)."""
    top = joins[0] if joins else None
    if top is None:
        return [f"{which} plan: no join to run natively"]
    got = top.get("native")
    if got is None:
        return [f"native: this run has no native engine (run with --engine comet): {which} plan's "
                f"{top['strategy']} cannot be checked for it"]
    if got == wanted:
        return []
    if wanted:
        reasons = "; ".join(top.get("fallback") or []) or "the engine gave no reason"
        return [f"{which} plan: expected a native {top['strategy']}, Spark ran it ({reasons})"]
    return [f"{which} plan: expected {top['strategy']} left to Spark, it ran natively"]


def _cost_text(field: str, value: int) -> str:
    return f"{value:,} B" if field in COST_SIZES else f"{value:,}"


def _compare_cost(expected: dict, observed: Observation, unchecked: set) -> list[str]:
    if observed.cost is None:
        return [] if "cost" in unchecked else ["cost: the plan that ran has no join to measure"]
    problems = []
    for field, _, bound, value, words in _cost_values(expected, observed.cost):
        if value is None:
            continue  # named by not_checkable
        if "min" in bound and value < bound["min"]:
            problems.append(f"cost: {words} {_cost_text(field, value)} is below the expected minimum "
                            f"{_cost_text(field, bound['min'])}")
        if "max" in bound and value > bound["max"]:
            problems.append(f"cost: {words} {_cost_text(field, value)} is above the expected maximum "
                            f"{_cost_text(field, bound['max'])}")
    return problems


def _compare_operators(expected: dict, counts: dict) -> list[str]:
    problems = []
    for name, bounds in expected.items():
        seen = counts.get(name, 0)
        if not _within(seen, bounds):
            problems.append(f"expected {bounds} {name} operator(s), observed {seen}")
    return problems


def _final_build_side_unseen(observed: Observation) -> bool:
    view = observed.final
    return bool(view and view.joins and view.joins[0].get("build_side") == UNAVAILABLE)


def _estimate_range(side: dict) -> tuple[int, int]:
    """The sizes an estimate can be: exact from the JVM; through Spark Connect, the printed
    value ± half its last decimal (`9.8 MiB`: 9.75 to 9.85 MiB)."""
    size, printed = side["size_in_bytes"], side.get("printed")
    step = BYTE_UNITS[printed.split(" ")[-1]] if printed else 1
    return size - step // 20, size + step // 20


def _plan_names(plan_mode: str) -> list[str]:
    return {"initial": ["initial"], "final": ["final"], "both": ["initial", "final"]}[plan_mode]


def _checked_views(expected: dict, observed: Observation) -> list:
    return [observed.checked_plan(which) for which in _plan_names(expected.get("plan", "initial"))]


def _compare_shuffles(expected: dict, joins: list[dict], which: str) -> list[str]:
    top = joins[0] if joins else None
    if top is None:
        return [f"{which} plan: no join to count the shuffles below"]
    got = top.get("shuffles") or {}
    return [f"{which} plan: expected {want} shuffle exchange(s) below the {side} side of "
            f"{describe_join(top)}, observed {got.get(side)}"
            for side, want in expected.items() if got.get(side) != want]


def _top_scans(joins: list[dict]) -> dict | None:
    return (joins[0].get("scans") if joins else None) or None


def _compare_side_scans(expected: dict, joins: list[dict], which: str, read_as: str) -> list[str]:
    """Whether every scan below each named side of the top join reads its table's layout:
    `bucketed` (a bucketed file table read as its buckets) or `key_grouped` (a V2 table
    reporting its partitioning: a storage-partitioned join)."""
    words = LAYOUT_READS[read_as]
    top = joins[0] if joins else None
    if top is None:
        return [f"{which} plan: no join whose sides' scans to check"]
    problems = []
    for side, want in expected.items():
        scans = [scan for scan in (top.get("scans") or {}).get(side) or [] if read_as in scan]
        if not scans:
            problems.append(f"{which} plan: no {words['scan']} below the {side} side of {describe_join(top)} "
                            f"to {words['read']} (expected {words['a'] if want else words['a_not']} scan)")
            continue
        got = all(scan[read_as] for scan in scans)
        if got != want:
            notes = "; ".join(sorted({f"{scan['table']}: Bucketed: {scan['bucket_note']}" for scan in scans
                                      if scan.get("bucket_note")}))
            problems.append(f"{which} plan: expected the {side} side of {describe_join(top)} to "
                            f"{words['read'] if want else words['read_not']}, observed "
                            f"{words['got'] if got else words['got_not']} scan(s)" + (f" ({notes})" if notes else ""))
    return problems


LAYOUT_READS = {
    "bucketed": {"scan": "file scan", "read": "read buckets", "read_not": "read plain files", "a": "a bucketed",
                 "a_not": "a plain", "got": "bucketed", "got_not": "not bucketed"},
    "key_grouped": {"scan": "V2 (Iceberg) scan", "read": "read its partitions as groups",
                    "read_not": "read ungrouped", "a": "a key-grouped", "a_not": "an ungrouped",
                    "got": "key-grouped", "got_not": "not key-grouped"},
}


def _compare_bucketed_scan(expected: dict, joins: list[dict], which: str) -> list[str]:
    return _compare_side_scans(expected, joins, which, "bucketed")


def _compare_key_grouped(expected: dict, joins: list[dict], which: str) -> list[str]:
    return _compare_side_scans(expected, joins, which, "key_grouped")


STEP_FIELDS = ("new_rows", "new_row_count", "watermark", "state_rows", "late_rows_dropped", "micro_batches")


def _steps_unreported(expected: dict, observed: Observation) -> list[str]:
    """Step expectations whose figure this Spark does not report (late rows before 3.1)."""
    steps = observed.stream_steps or []
    return [f"batch {i + 1} {key}" for i, (want, got) in enumerate(zip(expected.get("batches") or [], steps))
            for key in ("late_rows_dropped", "state_rows", "watermark") if key in want and got.get(key) is None]


def _compare_steps(expected: list[dict], steps: list[dict], unchecked) -> list[str]:
    if len(steps) != len(expected):
        return [f"the stream ran {len(steps)} of its {len(expected)} steps"]
    problems = []
    for i, (want, got) in enumerate(zip(expected, steps), start=1):
        if "new_rows" in want:
            rows = normalize_rows(want["new_rows"])
            if not _rows_equal(rows, got.get("new_rows") or []):
                problems.append(f"batch {i}: expected new rows {rows[:5]}{'...' if len(rows) > 5 else ''}, "
                                f"observed {(got.get('new_rows') or [])[:5]}"
                                f"{'...' if len(got.get('new_rows') or []) > 5 else ''}")
        if "new_row_count" in want and got["emitted"] != want["new_row_count"]:
            problems.append(f"batch {i}: expected {want['new_row_count']} new row(s), observed {got['emitted']}")
        for key, words in (("watermark", "watermark"), ("state_rows", "state rows"),
                           ("late_rows_dropped", "late rows dropped"), ("micro_batches", "micro-batches")):
            if key in want and f"batch {i} {key}" not in unchecked and got.get(key) != want[key]:
                wanted = want[key].replace("T", " ") if key == "watermark" else want[key]
                if got.get(key) != wanted:
                    problems.append(f"batch {i}: expected {words} {wanted}, observed {got.get(key)}")
    return problems


PRUNED = ("broadcast", "subquery")
# Before AQE has run, a pruning filter's fate is AQE's to decide: the join's broadcast when
# the join is (or becomes) a broadcast join, else a subquery of its own (`adaptive`) or
# dropped (`adaptive_reuse_only`: reuseBroadcastOnly).
ADAPTIVE = ("adaptive", "adaptive_reuse_only")
AQE_DECIDES = "(decided by AQE at run time)"


def _pruning_kinds(scans: list[dict], top: dict | None, side: str) -> list[str]:
    """The pruning of a table's scans below one side of the top join; a decision AQE has
    still to make is made here when the plan already fixes it: a broadcast hash join that
    builds the other side is the broadcast AQE reuses (it never turns a broadcast join
    back into a shuffled one)."""
    other = "right" if side == "left" else "left"
    reused = top is not None and top.get("strategy") == "BroadcastHashJoin" and top.get("build_side") == other
    return sorted({("broadcast" if reused and scan["pruning"] in ADAPTIVE else scan["pruning"]) for scan in scans})


def _table_pruning(table: str, joins: list[dict]) -> list[str]:
    """The pruning kinds of a table's scans below the top join (`_pruning_kinds`)."""
    scans, top = _top_scans(joins) or {}, joins[0] if joins else None
    return sorted({kind for side in ("left", "right")
                   for kind in _pruning_kinds([s for s in scans.get(side) or [] if s["table"] == table], top, side)})


def _undecided(kinds: list[str], want: dict) -> bool:
    """AQE may still drop the filter, or may still make the reuse the expectation asks about."""
    return ("adaptive_reuse_only" in kinds and not set(kinds) & set(PRUNED)) or \
        ("adaptive" in kinds and "reuses_broadcast" in want and "broadcast" not in kinds)


def undecided_pruning(expected: list[dict], joins: list[dict]) -> list[str]:
    """The tables whose expected pruning this (initial adaptive) plan leaves to AQE."""
    return [want["table"] for want in expected if _undecided(_table_pruning(want["table"], joins), want)]


def _compare_pruning(expected: list[dict], joins: list[dict], which: str) -> list[str]:
    problems = []
    for want in expected:
        kinds = _table_pruning(want["table"], joins)
        if not kinds:
            problems.append(f"{which} plan: no scan of table {want['table']} below the top join to check its "
                            f"dynamic partition pruning")
            continue
        if _undecided(kinds, want):
            continue  # not checkable: said by not_checkable
        pruned = any(kind in PRUNED + ("adaptive",) for kind in kinds)
        said = ", ".join(PRUNING_WORDS[kind] for kind in kinds)
        if pruned != want["pruned"]:
            problems.append(f"{which} plan: expected {want['table']} {'' if want['pruned'] else 'not '}"
                            f"dynamically pruned, observed {said}")
        elif "reuses_broadcast" in want and pruned and ("broadcast" in kinds) != want["reuses_broadcast"]:
            problems.append(f"{which} plan: expected {want['table']}'s pruning filter "
                            f"{'to reuse' if want['reuses_broadcast'] else 'not to reuse'} the join's broadcast, "
                            f"observed {said}")
    return problems


PRUNING_WORDS = {"none": "no pruning filter", "broadcast": "a pruning filter on the join's broadcast",
                 "subquery": "a pruning filter with a subquery of its own",
                 "dropped": "a pruning filter Spark dropped (no broadcast to reuse)",
                 "adaptive": "a pruning filter AQE keeps at run time (on the join's broadcast if the join becomes "
                             "a broadcast join, else by a subquery of its own)",
                 "adaptive_reuse_only": "a pruning filter AQE decides at run time (kept on the join's broadcast if "
                                        "the join becomes a broadcast join, else dropped)"}


def not_checkable(expected: dict, observed: Observation) -> list[str]:
    """The expectations this observation cannot decide (what the deployment or this Spark
    version could not see), each named: never passed, never failed, reported as not checkable."""
    if observed.error:
        return []
    out = _steps_unreported(expected, observed)
    plan_mode = expected.get("plan")
    if "dynamic_pruning" in expected and plan_mode == "initial" and observed.initial is not None:
        wanted = expected["dynamic_pruning"]
        undecided = undecided_pruning(wanted if isinstance(wanted, list) else [wanted], observed.initial.joins)
        if undecided:
            out.append(f"dynamic_pruning of {', '.join(undecided)} {AQE_DECIDES}")
    if "cost" in expected:
        out += _cost_unreported(expected["cost"], observed)
    gone = set(observed.unavailable or [])
    if not gone:
        return out
    if "warnings" in expected and "warnings" in gone:
        out.append("warnings")
    if "operators" in expected and "operators" in gone:
        out.append("operators")
    if "shuffles" in expected and not all((view.joins[0].get("shuffles") if view.joins else {}) is not None
                                          for view in _checked_views(expected, observed)):
        out.append("shuffles")
    for key in ("bucketed_scan", "key_grouped", "dynamic_pruning"):
        if key in expected and (key in gone or any(view.joins and view.joins[0].get("scans") is None
                                                   for view in _checked_views(expected, observed))):
            out.append(key)
    final_checked = plan_mode in ("final", "both") and any(k in expected for k in ("strategy", "build_side", "joins"))
    if final_checked and observed.final is None and "final" in gone:
        out.append("final plan")
    elif final_checked and "build_side" in expected and _final_build_side_unseen(observed):
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
            low, high = _estimate_range(top[side])
            lo_ok = "min" not in bounds or low >= bounds["min"] or high < bounds["min"]
            hi_ok = "max" not in bounds or high <= bounds["max"] or low > bounds["max"]
            if not (lo_ok and hi_ok):
                out.append(f"{side} estimate (printed {top[side].get('printed')})")
    return out


def compare(expected: dict, observed: Observation) -> list[str]:
    """Mismatches between what a case expects and what Spark did, one line each; what
    cannot be checked (`not_checkable`) is left out."""
    try:
        return _compare(expected, observed, set(not_checkable(expected, observed)))
    except PatternTooSlow as exc:
        return [str(exc)]


def _compare(expected: dict, observed: Observation, unchecked: set = frozenset()) -> list[str]:
    if observed.error or "error" in expected:
        problems = _compare_error(expected, observed.error)
        if problems or observed.error:
            return problems
    problems: list[str] = []
    plan_mode = expected["plan"]
    if plan_mode in ("initial", "both"):
        problems += _compare_plan(expected, observed.initial.joins, "initial")
    if plan_mode in ("final", "both") and "final plan" not in unchecked:
        final_expected = expected
        if unchecked & {"build side (final plan)", "joins' build sides (final plan)"}:
            final_expected = {k: v for k, v in expected.items() if k not in ("build_side", "joins")}
        problems += _compare_plan(final_expected, observed.checked_plan("final").joins, "final")
    if "rows" in expected and observed.rows != expected["rows"]:
        problems.append(f"expected {expected['rows']} rows, observed {observed.rows}")
    if "checksum" in expected and observed.checksum != expected["checksum"]:
        problems.append(f"expected checksum {expected['checksum']}, observed {observed.checksum}")
    if "result_rows" in expected:
        want = normalize_rows(expected["result_rows"])
        got = observed.result_rows
        if got is None or not _rows_equal(want, got):
            problems.append(f"result rows differ: expected {want[:5]}{'...' if len(want) > 5 else ''}, "
                            f"observed {(got or [])[:5]}{'...' if got and len(got) > 5 else ''}")
    if "warnings" in expected and "warnings" not in unchecked:
        problems += _compare_warnings(expected["warnings"], observed.warnings or [])
    if "operators" in expected and "operators" not in unchecked:
        problems += _compare_operators(expected["operators"], observed.checked_plan(plan_mode).operators or {})
    if "shuffles" in expected and "shuffles" not in unchecked:
        for which, view in zip(_plan_names(plan_mode), _checked_views(expected, observed)):
            problems += _compare_shuffles(expected["shuffles"], view.joins, which)
    for key, check in (("bucketed_scan", _compare_bucketed_scan), ("key_grouped", _compare_key_grouped),
                       ("dynamic_pruning", _compare_pruning)):
        if key in expected and key not in unchecked:
            for which, view in zip(_plan_names(plan_mode), _checked_views(expected, observed)):
                problems += check(expected[key], view.joins, which)
    if "batches" in expected:
        problems += _compare_steps(expected["batches"], observed.stream_steps or [], unchecked)
    if "cost" in expected and observed.executed:
        problems += _compare_cost(expected["cost"], observed, unchecked)
    if "native" in expected:
        for which, view in zip(_plan_names(plan_mode), _checked_views(expected, observed)):
            problems += _compare_native(expected["native"], view.joins, which)
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


# --------------------------------------------------------------------------- known bugs

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
