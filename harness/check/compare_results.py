"""How a case's answer compares with the one expected: rows (exactly, as a multiset),
errors and warnings by regular expressions bounded in time, each stream step's emitted
rows, watermark and state, and a native engine's answer against Spark's own. One short
line per mismatch."""
from __future__ import annotations

import math
import re

from harness.core.records import Observation, SparkError
from harness.core.rows import normalize_rows


def rows_equal(expected: list, observed: list) -> bool:
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


def compare_error(expected: dict, observed_error: SparkError | None) -> list[str]:
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


def compare_warnings(want, seen: list[str]) -> list[str]:
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


STEP_FIELDS = ("new_rows", "new_row_count", "watermark", "state_rows", "late_rows_dropped", "micro_batches")


def steps_unreported(expected: dict, observed: Observation) -> list[str]:
    """Step expectations whose figure this Spark does not report (late rows before 3.1)."""
    steps = observed.stream_steps or []
    return [f"batch {i + 1} {key}" for i, (want, got) in enumerate(zip(expected.get("batches") or [], steps))
            for key in ("late_rows_dropped", "state_rows", "watermark") if key in want and got.get(key) is None]


def compare_steps(expected: list[dict], steps: list[dict], unchecked) -> list[str]:
    if len(steps) != len(expected):
        return [f"the stream ran {len(steps)} of its {len(expected)} steps"]
    problems = []
    for i, (want, got) in enumerate(zip(expected, steps), start=1):
        if "new_rows" in want:
            rows = normalize_rows(want["new_rows"])
            if not rows_equal(rows, got.get("new_rows") or []):
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


def reference_differs(observed: Observation) -> str | None:
    """Spark's answer against the independent engine's (harness.observe.reference): the
    line that shows both, None when they agree or were not compared."""
    reference = observed.reference
    if not reference or not reference.get("compared") or reference.get("agrees") or observed.error:
        return None
    return reference_words(reference)


def reference_words(reference: dict) -> str:
    """A reference that disagrees, in one line: both counts and the first differing rows."""
    parts = [f"Spark's answer is not {reference['engine']}'s: Spark {reference['spark_rows']:,} rows, "
             f"{reference['engine']} {reference['rows']:,} rows"]
    if reference.get("only_spark_count"):
        parts.append(f"{reference['only_spark_count']:,} only in Spark's, e.g. "
                     f"{_rows_text(reference['only_spark'])}")
    if reference.get("only_reference_count"):
        parts.append(f"{reference['only_reference_count']:,} only in {reference['engine']}'s, e.g. "
                     f"{_rows_text(reference['only_reference'])}")
    if reference.get("columns"):
        parts.append(f"columns that differ: {', '.join(reference['columns'])}")
    if reference.get("sql"):
        parts.append(f"{reference['engine'].split()[0]} ran the translation in the record's observed.reference.sql; "
                     "if the translation is at fault, add `reference: {skip: \"why\"}` to the file")
    return "; ".join(parts)


def _rows_text(rows: list) -> str:
    return ", ".join("(" + ", ".join("NULL" if v is None else str(v) for v in row) + ")" for row in rows[:3])


def reference_note(reference: dict | None) -> str | None:
    """What a record says of a reference that compared nothing (None: it compared)."""
    if not reference or reference.get("compared"):
        return None
    return f"reference: not compared ({reference['why']})"


def answers_disagree(observed: Observation, limit: int) -> str | None:
    """Two observations of one answer that disagree: the count Spark gave with its checksum
    against the rows it collected for the same query (None: they agree, or one is missing
    or the collection stopped at `limit`)."""
    if observed.error or observed.rows is None or observed.result_rows is None:
        return None
    collected = len(observed.result_rows)
    if collected > limit or collected == observed.rows:
        return None
    return (f"Spark's two observations of one answer disagree: counted {observed.rows:,} rows with the checksum, "
            f"collected {collected:,}")


def output_changed(observed: Observation) -> str | None:
    """An optimizer rewrite that changed the query's output: the plan that runs returns other
    columns than the query was analysed with (`collect()` then returns them, or nothing)."""
    change = observed.output_change
    if not change:
        return None
    def words(columns):
        return ", ".join(f"{name} {kind}" for name, kind in columns)
    return (f"the optimized plan's output is not the query's: analysed ({words(change['analysed'])}), "
            f"optimized ({words(change['optimized'])})")
