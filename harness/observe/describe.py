"""Records in words, the one way the terminal, the pages, `explain` and summary.md say
them: what a case expects ("BroadcastHashJoin (build right), final plan; 1,000 rows")
and why Spark did what it did (the model's rule chain, the estimates against the
broadcast threshold, the case's configs, Spark's warnings)."""
from __future__ import annotations

from harness.core.text import bytes_text
from harness.core.vocab import (
    APPLICATION_SIDE_THRESHOLD,
    BLOOM_ENABLED,
    COST_SIZES,
    CREATION_SIDE_THRESHOLD,
    SPJ_CONFS,
    describe_join,
)
from harness.core.text import parse_bytes
from harness.observe.runtime_filters import FILTER_WORDS, runtime_filter_words

THRESHOLD = "spark.sql.autoBroadcastJoinThreshold"
PLAN_WORDS = {"initial": "", "final": "final plan", "both": "initial and final plan"}


def expectation_words(expected: dict | None) -> str:
    """`expect:` (resolved for one version) in words; "nothing (observed only)" when it
    asserts nothing."""
    expected = expected or {}
    parts = []
    error = expected.get("error")
    if error:
        text = "error " + str(error.get("class", "")).strip()
        if error.get("message"):
            text += f" matching /{error['message']}/"
        parts.append(text.strip())
    plan = PLAN_WORDS.get(expected.get("plan", "initial"), "")
    if "strategy" in expected:
        node = {"strategy": expected["strategy"], "build_side": expected.get("build_side", "none")}
        parts.append(describe_join(node) + (f", {plan}" if plan else ""))
    elif "build_side" in expected:
        parts.append(f"build {expected['build_side']}" + (f", {plan}" if plan else ""))
    if "joins" in expected:
        parts.append("joins " + ", ".join(describe_join(j, tables=True) for j in expected["joins"]))
    if "rows" in expected:
        parts.append(f"{expected['rows']:,} rows")
    if "checksum" in expected:
        parts.append(f"checksum {expected['checksum']}")
    if "result_rows" in expected:
        parts.append(f"{len(expected['result_rows']):,} listed result rows")
    if "columns" in expected:
        parts.append("columns " + ", ".join(f"{name} {kind}" for name, kind in expected["columns"]))
    parts += _warning_words(expected.get("warnings"))
    if "operators" in expected:
        parts.append("operators " + ", ".join(f"{k} {v}" for k, v in expected["operators"].items()))
    if "shuffles" in expected:
        parts.append("shuffles below " + ", ".join(f"{side} {n}" for side, n in expected["shuffles"].items()))
    if "bucketed_scan" in expected:
        parts.append("bucketed scan " + ", ".join(f"{side} {'yes' if on else 'no'}"
                                                  for side, on in expected["bucketed_scan"].items()))
    if "key_grouped" in expected:
        parts.append("key-grouped scan " + ", ".join(f"{side} {'yes' if on else 'no'}"
                                                     for side, on in expected["key_grouped"].items()))
    for want in expected.get("dynamic_pruning") or []:
        parts.append(f"{want['table']} {'' if want['pruned'] else 'not '}dynamically pruned" +
                     {True: " on the join's broadcast", False: " by a subquery of its own"}.get(want.get("reuses_broadcast"), ""))
    for want in expected.get("runtime_filters") or []:
        parts.append(f"no runtime filter on {want['table']}" if want["filter"] == "none" else
                     f"{FILTER_WORDS[want['filter']]} on {want['table']}" +
                     (f" built from {want['from']}" if "from" in want else ""))
    if expected.get("batches"):
        parts.append(f"per-batch expectations on {sum(1 for b in expected['batches'] if b)} of "
                     f"{len(expected['batches'])} stream steps")
    for side, bounds in (expected.get("estimates") or {}).items():
        limits = [f"≥ {bounds['min']:,} B" if "min" in bounds else "", f"≤ {bounds['max']:,} B" if "max" in bounds else ""]
        parts.append(f"{side} estimate " + " and ".join(x for x in limits if x))
    parts += _cost_bound_words(expected.get("cost") or {})
    words = "; ".join(parts) or "nothing (observed only)"
    varies = expected.get("varies")
    if varies:  # not an assertion: what the file says Spark itself changes between runs
        words += " (varies between runs, not compared: " + "; ".join(
            f"{field.replace('_', ' ')}: {why}" for field, why in varies.items()) + ")"
    return words


def _cost_bound_words(cost: dict) -> list[str]:
    """`cost: shuffle bytes left ≤ 2.0 MiB, spill bytes = 0.0 B` (bounds as
    harness.scenario.checks reads them)."""
    def shown(field, n):
        return bytes_text(n) if field in COST_SIZES else f"{n:,}"

    def limits(field, bound):
        if "min" in bound and bound.get("max") == bound["min"]:
            return f"= {shown(field, bound['min'])}"
        return " and ".join(x for x in (f"≥ {shown(field, bound['min'])}" if "min" in bound else "",
                                        f"≤ {shown(field, bound['max'])}" if "max" in bound else "") if x)
    words = []
    for field, bounds in cost.items():
        name = field.replace("_", " ")
        if "min" in bounds or "max" in bounds:
            words.append(f"{name} {limits(field, bounds)}")
        else:
            words += [f"{name}{'' if side == 'both' else ' ' + side} {limits(field, bound)}"
                      for side, bound in bounds.items()]
    return ["cost: " + ", ".join(words)] if words else []


def _warning_words(spec) -> list[str]:
    if spec is None:
        return []
    if not isinstance(spec, dict):
        spec = {"match": spec}
    words = [f"a warning matching /{p}/" for p in _as_list(spec.get("match"))]
    words += [f"no warning matching /{p}/" for p in _as_list(spec.get("absent"))]
    if "count" in spec:
        words.append(f"exactly {spec['count']} warning{'s' if spec['count'] != 1 else ''}")
    return words


def _as_list(value) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _bytes(value) -> str:
    return "unknown" if value is None else f"{int(value):,} B"


def _forced_run_words(run: dict) -> str:
    if run.get("error"):
        return f"{run['forced']}: {run['error']}"
    node = {"strategy": run.get("strategy") or "none", "build_side": run.get("build_side") or "none"}
    return f"{run['forced']}: {describe_join(node)} → {run.get('rows')} rows, checksum {run.get('checksum')}"


def conf_bytes(value) -> str:
    """The broadcast threshold as Spark reports it (`10485760b`, `-1`) in the words of the
    estimates; a negative one disables broadcasting."""
    text = "unknown" if value is None else str(value)
    digits = text[:-1] if text.lower().endswith("b") else text
    if not digits.lstrip("-").isdigit():
        return text
    return f"{digits} (broadcasting disabled)" if int(digits) < 0 else _bytes(digits)


def why_lines(record: dict) -> list[str]:
    """Why Spark chose what it chose, for a case record (JSON form): a few lines; for a
    cross-strategy check, what each forced strategy answered."""
    observed = record.get("observed") or {}
    if record.get("kind") == "agreement":
        return [_forced_run_words(run) for run in observed.get("agreement") or []]
    if record.get("kind") == "partitions":
        found = observed.get("partitions") or {}
        return [f"{part['where']}: {part['rows']:,} rows / {part['checksum']}" for part in found.get("parts") or []] + \
            ([f"{found['predicate']}"] if found.get("predicate") else [])
    lines = []
    verdict = record.get("model") or {}
    if verdict.get("explanation"):
        mark = "" if verdict.get("agrees", True) else " (Spark did otherwise: model drift)"
        lines.append(f"model: {verdict['explanation']}{mark}")
    if verdict.get("final"):
        lines.append(f"model, final plan: {verdict['final']}")
    filters_line = runtime_filter_model_line(record)
    if filters_line:
        lines.append(filters_line)
    estimates = (observed.get("estimates") or [None])[0]
    threshold = (observed.get("join_conf") or {}).get(THRESHOLD)
    if estimates:
        sizes = ", ".join(f"{side} {_estimate(estimates[side])}" for side in ("left", "right"))
        lines.append(f"estimates: {sizes}; {THRESHOLD} {conf_bytes(threshold)}")
    runtime = (observed.get("final") or {}).get("runtime")
    if runtime:
        sizes = ", ".join(f"{side} {_bytes(runtime[side].get('size_in_bytes'))}" for side in ("left", "right")
                          if runtime.get(side))
        lines.append(f"run-time sizes (AQE): {sizes}")
    shuffles = shuffle_words(observed)
    if shuffles:
        lines.append(shuffles)
    lines += subquery_lines(observed)
    lines += runtime_filter_lines(observed)
    lines += engine_lines(observed)
    lines += stream_step_lines(observed)
    conf = observed.get("conf") or {}
    if conf:
        lines.append("configs: " + ", ".join(f"{k}={v}" for k, v in conf.items()))
    if "adaptive" in observed:
        lines.append("adaptive plan (AQE)" if observed["adaptive"] else "static plan (AQE off or not applicable)")
    for warning in (observed.get("warnings") or [])[:5]:
        lines.append(f"warning: {warning}")
    if observed.get("unavailable"):
        lines.append(unavailable_words(observed["unavailable"]))
    if observed.get("undefined_conf"):
        lines.append(undefined_conf_words(observed["undefined_conf"], (record.get("versions") or {}).get("spark", "?"),
                                          observed.get("removed_conf")))
    return lines


def runtime_filter_lines(observed: dict) -> list[str]:
    """The runtime filters of the plan Spark chose (the final plan's where it ran: whether
    each subquery ran shows there); where a shuffled top join got none on a release that
    plans them, the configs that decided it. Nothing where none was read."""
    view = observed.get("final") if (observed.get("final") or {}).get("runtime_filters") is not None \
        else observed.get("initial") or {}
    found = view.get("runtime_filters")
    if found:
        return ["runtime filters: " + "; ".join(runtime_filter_words(f) for f in found)]
    join_conf = observed.get("join_conf") or {}
    top = (view.get("joins") or [None])[0] or {}
    if found is None or join_conf.get(BLOOM_ENABLED) is None or top.get("strategy") not in SHUFFLED_JOINS:
        return []
    if str(join_conf[BLOOM_ENABLED]).lower() != "true":
        return [f"runtime filters: none (bloom filters off: {BLOOM_ENABLED}={join_conf[BLOOM_ENABLED]})"]
    return ["runtime filters: none (bloom filters on: a side gets one where the other is a selective filter over a "
            f"scan of at most {_size_words(join_conf.get(CREATION_SIDE_THRESHOLD))} and its own largest scan is at "
            f"least {_size_words(join_conf.get(APPLICATION_SIDE_THRESHOLD))})"]


SHUFFLED_JOINS = ("SortMergeJoin", "ShuffledHashJoin")


def runtime_filter_model_line(record: dict) -> str | None:
    """What the runtime-filter model says of the top join, where a filter was there to
    decide: one was planned or predicted, the model drifted, or the join shuffles (where a
    reader asks why it got none); None elsewhere (a broadcast join with none, as expected)."""
    filters = (record.get("model") or {}).get("runtime_filters")
    if not filters:
        return None
    observed = record.get("observed") or {}
    top = ((observed.get("initial") or {}).get("joins") or [None])[0] or {}
    predicted = filters["why"].startswith("bloom filter on")
    if not (filters["observed"] or predicted or not filters["agrees"] or top.get("strategy") in SHUFFLED_JOINS):
        return None
    found = " and ".join(filters["observed"]) or "neither"
    mark = "" if filters["agrees"] else f" (Spark did otherwise: a bloom filter on {found} side: model drift)"
    return f"model, runtime filters: {filters['why']}{mark}"


def _size_words(value) -> str:
    """A size config as Spark reports it (`10485760b`, `10GB`), in readable units."""
    try:
        return bytes_text(parse_bytes(value)) if value is not None else "unknown"
    except (TypeError, ValueError):
        return str(value)


def subquery_lines(observed: dict, limit: int = 5) -> list[str]:
    """The joins inside the initial plan's subqueries, one line per subquery."""
    found = (observed.get("initial") or {}).get("subqueries") or []
    lines = [f"subquery #{i} ({s['subquery']}): " + ", ".join(describe_join(j, join_type=True, tables=True)
                                                               for j in s["joins"])
             for i, s in enumerate(found[:limit], start=1)]
    if len(found) > limit:
        lines.append(f"... {len(found) - limit} more subqueries with joins (the report lists them all)")
    return lines


def engine_lines(observed: dict, limit: int = 5) -> list[str]:
    """Under a native engine: where the top join ran, why the engine left it to Spark,
    and the engine's answer against Spark's own."""
    view = observed.get("final") or observed.get("initial") or {}
    top = (view.get("joins") or [None])[0]
    lines = []
    if top and top.get("native") is not None:
        lines.append(f"engine: {top['strategy']} ran " + ("natively" if top["native"] else "in Spark"))
        reasons = top.get("fallback") or []
        lines += [f"engine left it to Spark: {reason}" for reason in reasons[:limit]]
        if len(reasons) > limit:
            lines.append(f"... {len(reasons) - limit} more reasons")
    reference = observed.get("engine_reference")
    if reference:
        same = (observed.get("rows"), observed.get("checksum")) == (reference["rows"], reference["checksum"])
        lines.append(f"Spark's own answer ({reference['source']}): {reference['rows']} rows, checksum "
                     f"{reference['checksum']}" + (" — the same" if same else " — DIFFERENT"))
    return lines


def stream_step_lines(observed: dict, limit: int = 20) -> list[str]:
    """One line per step of a stream fed step by step (`stream.batches`)."""
    steps = observed.get("stream_steps") or []
    lines = [f"batch {i}: {step_words(step)}" for i, step in enumerate(steps[:limit], start=1)]
    if len(steps) > limit:
        lines.append(f"… {len(steps) - limit} more batches (the report lists them all)")
    return lines


def step_words(step: dict) -> str:
    added = ", ".join(f"+{n} {name}" for name, n in step["added"].items()) or "nothing added"
    late = "not reported" if step["late_rows_dropped"] is None else step["late_rows_dropped"]
    state = "not reported" if step["state_rows"] is None else step["state_rows"]
    return (f"{added} → {step['emitted']} row(s) out in {step['micro_batches']} micro-batch(es); "
            f"watermark {step['watermark'] or 'none'}; state rows {state}; late rows dropped {late}")


BROADCASTS = ("BroadcastHashJoin", "BroadcastNestedLoopJoin")
SHUFFLED = ("SortMergeJoin", "ShuffledHashJoin")


def shuffle_words(observed: dict) -> str:
    """Why each side of the top join of the plan that ran (else the initial plan) is or
    is not shuffled, from the exchanges and file scans observed below it; "" where the
    plan says nothing of it (no counts, or a join that never shuffles for itself)."""
    view = observed.get("final") or observed.get("initial") or {}
    top = (view.get("joins") or [None])[0]
    if not top or top.get("shuffles") is None or top["strategy"] not in BROADCASTS + SHUFFLED:
        return ""
    sides = [f"{side} {_side_words(top, side, observed.get('join_conf') or {})}" for side in ("left", "right")]
    return "shuffles: " + "; ".join(sides)


def _side_words(top: dict, side: str, join_conf: dict) -> str:
    count = top["shuffles"][side]
    scans = (top.get("scans") or {}).get(side) or []
    if top["strategy"] in SHUFFLED and scans and all("key_grouped" in scan for scan in scans):
        return _v2_side_words(count, scans, join_conf)
    tables = ", ".join(sorted({scan["table"] or "a file table" for scan in scans}))
    exchanges = f"{count} exchange{'s' if count != 1 else ''} below"
    if top["strategy"] in BROADCASTS:
        role = "broadcast" if top["build_side"] == side else "streamed"
        return (f"{role}: none (the join needs no shuffle)" if count == 0
                else f"{role}: {exchanges}, for operators under the join (the join itself needs none)")
    if count == 0:
        if scans and all(scan["bucketed"] for scan in scans):
            return f"none: {tables} read as buckets, already partitioned as the join needs"
        return "none: its input is already partitioned as the join needs"
    if scans and all(scan["bucketed"] for scan in scans):
        return (f"{exchanges} although {tables} is read as buckets: its buckets do not give the partitioning "
                f"the join needs (not on the join keys, or not matching the other side)")
    notes = sorted({f"{scan['table']}: Bucketed: {scan['bucket_note']}" for scan in scans
                    if (scan.get("bucket_note") or "").startswith("false")})
    if notes:
        return f"{exchanges}: bucketed but not read as buckets ({'; '.join(notes)})"
    return f"{exchanges}: {tables} not read as buckets" if scans else exchanges


def _v2_side_words(count: int, scans: list, join_conf: dict) -> str:
    """A side read from V2 (Iceberg) tables: whether its scans report their partitioning
    and, where the side is still shuffled, which of the configs a storage-partitioned join
    needs are off or absent on this version."""
    tables = ", ".join(sorted({scan["table"] or "a V2 table" for scan in scans}))
    exchanges = f"{count} exchange{'s' if count != 1 else ''} below"
    grouped = all(scan["key_grouped"] for scan in scans)
    if count == 0 and grouped:
        values = {scan["partition_values"] for scan in scans if scan.get("partition_values") is not None}
        extra = [f"{max(values)} partition values pushed"] if values else []
        extra += ["partially clustered"] if any(scan.get("partially_clustered") for scan in scans) else []
        return f"none: {tables} grouped by its partitions (storage-partitioned join" + \
            "".join(f"; {e}" for e in extra) + ")"
    if count == 0:
        return "none: its input is already partitioned as the join needs"
    if grouped:
        settings = _spj_settings(join_conf, SPJ_CONFS[2:])
        return (f"{exchanges} although {tables} is grouped by its partitions: the two sides' partitionings are "
                "not compatible (different transforms or bucket counts, partition values on one side only, or "
                "join keys that do not cover the partition keys)" + (f"; {settings}" if settings else ""))
    settings = _spj_settings(join_conf, SPJ_CONFS[:2])
    return f"{exchanges}: {tables} not grouped by its partitions" + (f" ({settings})" if settings else "")


def _spj_settings(join_conf: dict, keys: tuple) -> str:
    """The storage-partitioned join configs among `keys` that are off or absent here."""
    off = [key for key in keys if str(join_conf.get(key)).lower() == "false"]
    absent = [key for key in keys if key in join_conf and join_conf[key] is None]
    words = ([f"off: {', '.join(off)}"] if off else []) + \
        ([f"unset or not on this version: {', '.join(absent)}"] if absent else [])
    return "; ".join(words)


def undefined_conf_words(keys: list, spark: str, removed: dict | None = None) -> str:
    """Configs of a case that this Spark does not declare (the case ran without them): a
    config a release removed is said so (Spark raises where it is set), the rest never
    existed here."""
    removed = removed or {}
    gone = [f"{key} (removed in {removed[key]})" for key in keys if key in removed]
    never = [key for key in keys if key not in removed]
    return "; ".join(([f"removed on Spark {spark}, not set: " + ", ".join(gone)] if gone else []) +
                     ([f"not defined on Spark {spark}: no effect: " + ", ".join(never)] if never else []))


def unavailable_words(unavailable: list) -> str:
    return "not observable on this deployment (Spark Connect): " + ", ".join(unavailable)


def _estimate(side: dict) -> str:
    """Exact bytes; a size Spark printed rounded (through Spark Connect) as printed."""
    printed = side.get("printed")
    if printed and not printed.endswith(" B"):
        return f"≈ {printed} (as printed)"
    return _bytes(side.get("size_in_bytes"))


def reuse_words(records: list[dict]) -> tuple[int, str]:
    """(how many records an earlier run observed, which runs: "run ID at WHEN on HOST",
    or "N earlier runs, FIRST … LAST")."""
    reused = [r["run"] for r in records if (r.get("run") or {}).get("reused")]
    runs = sorted({(run["at"], run["id"], run["host"]) for run in reused})
    if not runs:
        return 0, ""
    if len(runs) == 1:
        return len(reused), f"run {runs[0][1]} at {runs[0][0]} on {runs[0][2]}"
    return len(reused), f"{len(runs)} earlier runs, {runs[0][0]} … {runs[-1][0]}"


def _size(n) -> str:
    return "not reported" if n is None else bytes_text(n)


def _count(n) -> str:
    return "not reported" if n is None else f"{n:,}"


def _cost_side(side: dict, written: int | None) -> str:
    moved = []
    if side["shuffle_bytes"] != 0:
        moved.append(f"shuffled {_count(side['shuffle_records'])} rows of {_size(side['shuffle_bytes'])}"
                     + (f" ({_size(written)} written, compressed)" if written is not None else ""))
    if side["broadcast_bytes"] != 0:
        moved.append(f"broadcast {_size(side['broadcast_bytes'])}")
    if side["partitions"] is not None:
        read = f"the join read {side['partitions']:,} partitions"
        aqe = [f"{side[key]} {words}" for key, words in (("coalesced_partitions", "coalesced"),
                                                        ("skew_splits", "skew splits")) if side[key]]
        moved.append(read + (f" ({', '.join(aqe)})" if aqe else ""))
    return "; ".join(moved) or "nothing moved"


def cost_words(observed: dict) -> list[str]:
    """What the top join cost when it ran, as the Spark UI's SQL tab shows it for the
    join: a line per side, one for the join, one for its timings (never compared)."""
    cost = observed.get("cost")
    if not cost:
        return []
    written = cost.get("shown") or {}
    lines = [f"{side}: {_cost_side(cost[side], written.get(f'{side}.shuffle_written_bytes'))}"
             for side in ("left", "right")]
    lines.append(f"join: {_count(cost['output_rows'])} rows out, spill {_size(cost['spill_bytes'])}, "
                 f"peak memory {_size(cost['peak_memory'])} (summed over its stage's tasks); "
                 f"{_count(cost.get('tasks'))} tasks, the largest read {_count(cost.get('max_task_rows'))} rows")
    if cost.get("not_reported"):
        lines.append("not reported: " + "; ".join(
            f"{field} ({why})" for field, why in sorted(cost["not_reported"].items())))
    if cost.get("timings"):
        lines.append("timings (shown, never compared): " + ", ".join(
            f"{name[:-2].replace('_', ' ')} {seconds:.3f} s" for name, seconds in cost["timings"].items()))
    return lines


def cost_brief(observed: dict) -> str:
    """The bytes each side moved, for the report's table: `L ⇄ 3.0 MiB · R ⇢ 1.0 MiB`."""
    cost = observed.get("cost")
    if not cost:
        return ""
    parts = []
    for side, letter in (("left", "L"), ("right", "R")):
        moved = cost[side]
        if moved["broadcast_bytes"]:
            parts.append(f"{letter} broadcast {_size(moved['broadcast_bytes'])}")
        elif moved["shuffle_bytes"]:
            parts.append(f"{letter} shuffled {_size(moved['shuffle_bytes'])}")
    if cost["spill_bytes"]:
        parts.append(f"spill {_size(cost['spill_bytes'])}")
    return " · ".join(parts)
