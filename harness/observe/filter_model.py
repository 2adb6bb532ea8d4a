"""Why a runtime bloom filter was or was not injected on a join's side: Spark's
InjectRuntimeFilter (3.3+) as rules, over what harness.observe.filter_sides read of the
join's sides, the join's size estimates and the session's configs.

For each side in Spark's order (left, then right where the left got none), as the
application side of a filter built from the other (the creation side):
1. bloom filters on (`spark.sql.optimizer.runtime.bloomFilter.enabled`: off by default on
   3.3, on from 3.4.0);
2. equi-join keys, and a join type that keeps the application side's unmatched rows out
   (inner and left semi: both; left outer: right; right outer: left);
3. a shuffle to save: neither side broadcast by a hint or by its size, or an aggregate,
   window or join below the application side;
4. the application side's largest scan at least
   `runtime.bloomFilter.applicationSideScanSizeThreshold` (10 GB);
5. the creation side a selective filter over a scan, of at most
   `runtime.bloomFilter.creationSideThreshold` (10 MB).
Not modelled (said where they decide): the IN-subquery variant (semi-join reduction,
3.3–3.5), the number of filters, a creation side reached through another join on a
transitive key (3.5+), and a materialized creation side (4.3). A dynamic partition pruning
filter on the join's key (either side) leaves it without a bloom filter."""
from __future__ import annotations

from harness.core.text import parse_bytes
from harness.core.vocab import (
    APPLICATION_SIDE_THRESHOLD,
    BLOOM_ENABLED,
    CREATION_SIDE_THRESHOLD,
    SEMI_JOIN_REDUCTION,
    spark_version,
)

SINCE = "3.3.0"
THRESHOLD = "spark.sql.autoBroadcastJoinThreshold"
# JoinSelectionHelper.canPruneLeft / canPruneRight
PRUNABLE = {"left": ("Inner", "LeftSemi", "RightOuter", "Cross"), "right": ("Inner", "LeftSemi", "LeftOuter", "Cross")}
DEFAULTS = {APPLICATION_SIDE_THRESHOLD: 10 * 1024 ** 3, CREATION_SIDE_THRESHOLD: 10 * 1024 ** 2}


def _bytes(value, default: int) -> int:
    try:
        return parse_bytes(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def _on(value) -> bool:
    return str(value).strip().lower() == "true"


def _b(n: int) -> str:
    return f"{n:,} B"


def predict(version: str, join_conf: dict, estimate: dict | None) -> dict | None:
    """{left: bool, right: bool, why: str}: whether each side gets a bloom filter from the
    other, and why; None where nothing is modelled (a release before 3.3, an estimate read
    without the sides' facts)."""
    logical = (estimate or {}).get("logical") or {}
    sides = logical.get("filter_sides")
    if spark_version(version) < spark_version(SINCE) or not sides:
        return None
    if not _on(join_conf.get(BLOOM_ENABLED)):
        if _on(join_conf.get(SEMI_JOIN_REDUCTION)):
            return None  # the IN-subquery variant: not modelled
        return {"left": False, "right": False, "why": f"bloom filters off ({BLOOM_ENABLED}={join_conf.get(BLOOM_ENABLED)})"}
    if not logical.get("equi"):
        return {"left": False, "right": False, "why": "no equi-join keys to build a filter from"}
    pruned = [side for side in ("left", "right") if sides[side].get("dynamic_pruning")]
    if pruned:
        return {"left": False, "right": False,
                "why": f"dynamic partition pruning already filters the {pruned[0]} side on this key"}
    reasons = []
    for application, creation in (("left", "right"), ("right", "left")):
        why = _why_not(application, creation, logical, sides, estimate, join_conf)
        if why is None:
            return {"left": application == "left", "right": application == "right",
                    "why": f"bloom filter on the {application} side from the {creation} side: "
                           f"{_why_yes(application, creation, logical, sides, estimate, join_conf)}"}
        reasons.append(f"not on the {application} side: {why}")
    return {"left": False, "right": False, "why": "; ".join(reasons)}


def _shuffled(logical: dict, estimate: dict, join_conf: dict) -> bool:
    """InjectRuntimeFilter's isProbablyShuffleJoin: no broadcast hint, no side small enough."""
    hints = logical.get("hints") or {}
    if any("BROADCAST" in h for side in ("left", "right") for h in hints.get(side, [])):
        return False
    threshold = _bytes(join_conf.get(THRESHOLD), 10 * 1024 ** 2)
    return not any(0 <= estimate[side]["size_in_bytes"] <= threshold for side in ("left", "right"))


def _why_not(application: str, creation: str, logical: dict, sides: dict, estimate: dict,
             join_conf: dict) -> str | None:
    join_type = logical.get("join_type") or ""
    if join_type not in PRUNABLE[application]:
        return f"a {join_type} join keeps the {application} side's unmatched rows"
    if not (_shuffled(logical, estimate, join_conf) or sides[application]["shuffle_below"]):
        return "a broadcast join with no shuffle below that side (a filter saves no shuffle)"
    largest = sides[application]["max_scan_bytes"]
    needed = _bytes(join_conf.get(APPLICATION_SIDE_THRESHOLD), DEFAULTS[APPLICATION_SIDE_THRESHOLD])
    if largest < needed:
        return f"its largest scan {_b(largest)} < {APPLICATION_SIDE_THRESHOLD.rsplit('.', 1)[-1]} {_b(needed)}"
    if not sides[creation]["selective_filter"]:
        return f"the {creation} side is no selective filter over a scan"
    size = estimate[creation]["size_in_bytes"]
    most = _bytes(join_conf.get(CREATION_SIDE_THRESHOLD), DEFAULTS[CREATION_SIDE_THRESHOLD])
    if size > most:
        return f"the {creation} side {_b(size)} > {CREATION_SIDE_THRESHOLD.rsplit('.', 1)[-1]} {_b(most)}"
    return None


def _why_yes(application: str, creation: str, logical: dict, sides: dict, estimate: dict, join_conf: dict) -> str:
    needed = _bytes(join_conf.get(APPLICATION_SIDE_THRESHOLD), DEFAULTS[APPLICATION_SIDE_THRESHOLD])
    most = _bytes(join_conf.get(CREATION_SIDE_THRESHOLD), DEFAULTS[CREATION_SIDE_THRESHOLD])
    shuffle = "the join shuffles" if _shuffled(logical, estimate, join_conf) else \
        f"a join or aggregate below the {application} side shuffles"
    return (f"its largest scan {_b(sides[application]['max_scan_bytes'])} ≥ {_b(needed)}, the {creation} side a "
            f"selective filter over a scan of {_b(estimate[creation]['size_in_bytes'])} ≤ {_b(most)}, and {shuffle}")


def judge(predicted: dict | None, estimate: dict | None) -> dict | None:
    """The prediction against what the optimized plan holds: {why, agrees, observed}."""
    if predicted is None:
        return None
    sides = ((estimate or {}).get("logical") or {}).get("filter_sides") or {}
    observed = {side: bool((sides.get(side) or {}).get("bloom_filter")) for side in ("left", "right")}
    agrees = observed == {side: predicted[side] for side in ("left", "right")}
    return {"why": predicted["why"], "agrees": agrees,
            "observed": [side for side in ("left", "right") if observed[side]]}
