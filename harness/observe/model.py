"""A model of Spark's JoinSelection: which strategy the planner picks for a join, and why.

Pure Python, no Spark: given what the planner reads (the logical join type, whether
ExtractEquiJoinKeys matches and its keys are orderable, the strategy hints on each side,
the size estimates of both inputs, and the configs), `predict` walks the same rules in
the same order as JoinSelection (seed 001; Spark's SparkStrategies.scala and
JoinSelectionHelper) and returns the strategy, the build side and the chain of rules it
walked, in words. Where Spark's code changed between versions, the difference is one
small named function below, with its SPARK JIRA.

The harness runs it beside every case: a prediction that disagrees with the observed
initial plan is "model drift" (a model bug or a Spark behaviour change), reported apart
from pass/fail. The final adaptive plan is predicted only where no run-time size is
needed (AQE off, or nothing for AQE to re-plan); elsewhere the model says so.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.core.text import parse_bytes
from harness.core.vocab import (
    HINTED_STRATEGIES,
    JOIN_OPERATORS,
    LOGICAL_JOIN_NAMES,
    NO_JOIN,
    spark_version,
)
from harness.observe import filter_model

BHJ, SHJ, SMJ, BNLJ, CP, SSHJ = JOIN_OPERATORS
# The configs Settings reads; the runner records their values with every case.
CONF_KEYS = ("spark.sql.autoBroadcastJoinThreshold", "spark.sql.join.preferSortMergeJoin",
             "spark.sql.shuffle.partitions", "spark.sql.shuffledHashJoinFactor", "spark.sql.adaptive.enabled",
             "spark.sql.adaptive.coalescePartitions.enabled",
             "spark.sql.adaptive.coalescePartitions.initialPartitionNum",
             "spark.sql.adaptive.autoBroadcastJoinThreshold",
             "spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin",
             "spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold",
             "spark.sql.adaptive.advisoryPartitionSizeInBytes")


@dataclass
class JoinInputs:
    """What JoinSelection reads about one logical join."""
    join_type: str                  # Spark's name: Inner, Cross, LeftOuter, RightOuter, FullOuter, LeftSemi, LeftAnti, ExistenceJoin(...)
    equi: bool                      # ExtractEquiJoinKeys matches
    left_size: int                  # plan.stats.sizeInBytes
    right_size: int
    orderable: bool | None = True   # RowOrdering.isOrderable(leftKeys) (equi-joins)
    left_hints: list = field(default_factory=list)   # BROADCAST, MERGE, SHUFFLE_HASH, SHUFFLE_REPLICATE_NL, NO_BROADCAST_HASH ...
    right_hints: list = field(default_factory=list)
    null_aware_candidate: bool = False   # NOT IN subquery as a single-column null-aware anti join
    streaming: bool = False              # both sides are streams


@dataclass
class Settings:
    """The configs JoinSelection consults, already parsed."""
    broadcast_threshold: int = 10 * 1024 * 1024      # spark.sql.autoBroadcastJoinThreshold
    prefer_sort_merge: bool = True                    # spark.sql.join.preferSortMergeJoin
    shuffle_partitions: int = 200                     # spark.sql.shuffle.partitions
    shuffle_hash_factor: int = 3                      # spark.sql.shuffledHashJoinFactor (3.3+)
    adaptive: bool = True                             # spark.sql.adaptive.enabled
    adaptive_threshold: int | None = None             # spark.sql.adaptive.autoBroadcastJoinThreshold (3.2+)
    non_empty_ratio: float = 0.2                      # ...nonEmptyPartitionRatioForBroadcastJoin
    local_map_threshold: int = 0                      # ...maxShuffledHashJoinLocalMapThreshold (3.2+)
    advisory_partition_size: int = 64 * 1024 * 1024   # ...advisoryPartitionSizeInBytes

    @classmethod
    def from_conf(cls, conf: dict, version: str) -> "Settings":
        """From Spark's own strings (`spark.conf.get`), with each version's defaults."""
        def get(key, parse, default):
            value = conf.get(key)
            return default if value in (None, "") else parse(value)
        partitions = get("spark.sql.shuffle.partitions", int, 200)
        initial = get("spark.sql.adaptive.coalescePartitions.initialPartitionNum", int, None)
        adaptive = get("spark.sql.adaptive.enabled", _bool, aqe_on_by_default(version))
        coalesce = get("spark.sql.adaptive.coalescePartitions.enabled", _bool, True)
        return cls(
            broadcast_threshold=get("spark.sql.autoBroadcastJoinThreshold", parse_bytes, 10 * 1024 * 1024),
            prefer_sort_merge=get("spark.sql.join.preferSortMergeJoin", _bool, True),
            # conf.numShufflePartitions: the initial partition number when AQE coalesces.
            shuffle_partitions=initial if adaptive and coalesce and initial else partitions,
            shuffle_hash_factor=get("spark.sql.shuffledHashJoinFactor", int, 3),
            adaptive=adaptive,
            adaptive_threshold=get("spark.sql.adaptive.autoBroadcastJoinThreshold", parse_bytes, None),
            non_empty_ratio=get("spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin", float, 0.2),
            local_map_threshold=get("spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold", parse_bytes, 0),
            advisory_partition_size=get("spark.sql.adaptive.advisoryPartitionSizeInBytes", parse_bytes,
                                        64 * 1024 * 1024),
        )


@dataclass
class Prediction:
    strategy: str
    build_side: str                 # left, right or none
    steps: list[str]
    null_aware: bool = False

    @property
    def explanation(self) -> str:
        outcome = self.strategy + (f", build {self.build_side}" if self.build_side != "none" else "")
        return " · ".join(self.steps) + f" → {outcome}"

    def to_dict(self) -> dict:
        return {"strategy": self.strategy, "build_side": self.build_side, "null_aware": self.null_aware,
                "steps": self.steps, "explanation": self.explanation}


# --------------------------------------------------------------------------- version rules

# Where Spark's join selection changed: rule → (first version, JIRA, what changed).
RULES_SINCE = {
    "null_aware_anti_join": ("3.1", "SPARK-32290", "a single-column NOT IN becomes a null-aware broadcast hash anti join"),
    "shuffle_hash_full_outer": ("3.1", "SPARK-32399", "shuffled hash join supports full outer joins, building either side"),
    "aqe_on_by_default": ("3.2", "SPARK-33679", "spark.sql.adaptive.enabled defaults to true"),
    "adaptive_broadcast_threshold": ("3.2", "SPARK-35264",
                                     "spark.sql.adaptive.autoBroadcastJoinThreshold applies to run-time sizes"),
    "local_map_shuffle_hash": ("3.2", "SPARK-35282", "AQE prefers shuffled hash join when every partition of a "
                                                     "side is under maxShuffledHashJoinLocalMapThreshold"),
    "shuffle_hash_factor_conf": ("3.3", "SPARK-36898", "spark.sql.shuffledHashJoinFactor (before: the literal 3)"),
    "demotion_spares_outer_joins": ("3.3", "SPARK-37193", "many empty partitions demote a broadcast only where "
                                                          "the join can short-circuit; before, for any join type"),
    "shuffle_hash_builds_outer_side": ("3.5", "SPARK-36612", "shuffled hash join may build the left side of a left "
                                                             "outer join and the right side of a right outer join"),
    "naaj_elimination": ("3.1", "SPARK-32573", "AQE replaces a null-aware anti join by an empty result when its "
                                               "build side holds a NULL key"),
    "aqe_empty_relation": ("3.2", "SPARK-35455", "AQE propagates empty relations: a join with an empty side is "
                                                 "removed from the final plan"),
}


def since(rule: str, version: str) -> bool:
    """Does this Spark version have the change named `rule` (see RULES_SINCE)?"""
    return spark_version(version) >= spark_version(RULES_SINCE[rule][0])


def aqe_on_by_default(version: str) -> bool:
    return since("aqe_on_by_default", version)


def shuffle_hash_factor(settings: Settings, version: str) -> int:
    return settings.shuffle_hash_factor if since("shuffle_hash_factor_conf", version) else 3


def adaptive_broadcast_threshold(settings: Settings, version: str) -> int:
    if since("adaptive_broadcast_threshold", version) and settings.adaptive_threshold is not None:
        return settings.adaptive_threshold
    return settings.broadcast_threshold


# --------------------------------------------------------------------------- join types

def _inner_like(join_type: str) -> bool:
    return join_type in ("Inner", "Cross")


def can_broadcast_left(join_type: str) -> bool:
    return _inner_like(join_type) or join_type == "RightOuter"


def can_broadcast_right(join_type: str) -> bool:
    return _inner_like(join_type) or join_type in ("LeftOuter", "LeftSemi", "LeftAnti") \
        or join_type.startswith("ExistenceJoin")


def can_shuffle_hash_left(join_type: str, version: str) -> bool:
    return (can_broadcast_left(join_type)
            or (join_type == "FullOuter" and since("shuffle_hash_full_outer", version))
            or (join_type == "LeftOuter" and since("shuffle_hash_builds_outer_side", version)))


def can_shuffle_hash_right(join_type: str, version: str) -> bool:
    return (can_broadcast_right(join_type)
            or (join_type == "FullOuter" and since("shuffle_hash_full_outer", version))
            or (join_type == "RightOuter" and since("shuffle_hash_builds_outer_side", version)))


def _join_name(join_type: str) -> str:
    return LOGICAL_JOIN_NAMES.get(join_type, "an existence join" if join_type.startswith("ExistenceJoin") else join_type)


# --------------------------------------------------------------------------- the rules

def _b(n: int) -> str:
    return f"{n:,} B"


def _smaller_side(inputs: JoinInputs) -> str:
    # getSmallerSide: right on a tie.
    return "right" if inputs.right_size <= inputs.left_size else "left"


def _fits(size: int, settings: Settings) -> bool:
    # canBroadcastBySize: 0 <= sizeInBytes <= autoBroadcastJoinThreshold (-1 disables).
    return 0 <= size <= settings.broadcast_threshold


def _pick(left: bool, right: bool, inputs: JoinInputs) -> str | None:
    # getBuildSide: both possible → the smaller one by estimate.
    if left and right:
        return _smaller_side(inputs)
    return "left" if left else "right" if right else None


def _hints(inputs: JoinInputs, side: str) -> list:
    return inputs.left_hints if side == "left" else inputs.right_hints


def _hint_on(inputs: JoinInputs, name: str) -> dict[str, bool]:
    return {"left": name in inputs.left_hints, "right": name in inputs.right_hints}


def _hints_text(inputs: JoinInputs) -> str:
    parts = [f"{'+'.join(h)} on {side}" for side, h in (("left", inputs.left_hints), ("right", inputs.right_hints)) if h]
    return "hints " + ", ".join(parts) if parts else "no hint"


def predict(inputs: JoinInputs | None, settings: Settings, version: str) -> Prediction:
    """The strategy JoinSelection picks for this join on this Spark version."""
    if inputs is None:
        return Prediction(NO_JOIN, "none", ["no join in the optimized logical plan (the optimizer removed it)"])
    if inputs.streaming:
        return Prediction(SSHJ, "none", ["stream-stream join: StreamingJoinStrategy plans it before JoinSelection"])
    if inputs.null_aware_candidate and since("null_aware_anti_join", version):
        if _fits(inputs.right_size, settings):
            return Prediction(BHJ, "right", [
                f"NOT IN as a single-column null-aware anti join (SPARK-32290): right estimate "
                f"{_b(inputs.right_size)} ≤ autoBroadcastJoinThreshold {_b(settings.broadcast_threshold)}"],
                null_aware=True)
    if inputs.equi:
        return _equi(inputs, settings, version)
    return _non_equi(inputs, settings)


def _equi(inputs: JoinInputs, settings: Settings, version: str) -> Prediction:
    steps = ["equi-join" + ("" if inputs.orderable is not False else " (keys not orderable)"), _hints_text(inputs)]
    hinted = bool(inputs.left_hints or inputs.right_hints)
    if hinted:
        found = _equi_hinted(inputs, version, steps)
        if found:
            return found
        steps.append("no hint applies → no-hint rules")
    return _equi_without_hint(inputs, settings, version, steps)


def _ignored(hint: str, side: str, jt: str) -> str:
    return f"{hint} hint on {side} ignored: {_join_name(jt)} cannot build {side}"


def _hinted_build(inputs: JoinInputs, hint: str, strategy: str, rule: str, allowed: dict,
                  steps: list[str]) -> Prediction | None:
    """A BROADCAST or SHUFFLE_HASH hint: the hinted side the join type can build (both
    hinted → the smaller); a hint on a side it cannot build is ignored, and said so."""
    hinted = _hint_on(inputs, hint)
    steps += [_ignored(hint, s, inputs.join_type) for s in ("left", "right") if hinted[s] and not allowed[s]]
    side = _pick(hinted["left"] and allowed["left"], hinted["right"] and allowed["right"], inputs)
    if not side:
        return None
    both = " (both hinted: the smaller estimate)" if all(hinted.values()) else ""
    return Prediction(strategy, side, steps + [f"{rule}: {hint} on {side}{both}"])


def _equi_hinted(inputs: JoinInputs, version: str, steps: list[str]) -> Prediction | None:
    jt = inputs.join_type
    found = _hinted_build(inputs, "BROADCAST", BHJ, "hint 1",
                          {"left": can_broadcast_left(jt), "right": can_broadcast_right(jt)}, steps)
    if found:
        return found
    if any(_hint_on(inputs, "MERGE").values()):
        if inputs.orderable is not False:
            return Prediction(SMJ, "none", steps + ["hint 2: MERGE"])
        steps.append("MERGE hint ignored: keys not orderable")
    found = _hinted_build(inputs, "SHUFFLE_HASH", SHJ, "hint 3",
                          {"left": can_shuffle_hash_left(jt, version), "right": can_shuffle_hash_right(jt, version)},
                          steps)
    if found:
        return found
    if any(_hint_on(inputs, "SHUFFLE_REPLICATE_NL").values()):
        if _inner_like(jt):
            return Prediction(CP, "none", steps + ["hint 4: SHUFFLE_REPLICATE_NL on an inner join"])
        steps.append(f"SHUFFLE_REPLICATE_NL hint ignored: {_join_name(jt)} is not inner")
    return None


def _equi_without_hint(inputs: JoinInputs, settings: Settings, version: str, steps: list[str]) -> Prediction:
    jt, threshold = inputs.join_type, settings.broadcast_threshold
    fits = {"left": _fits(inputs.left_size, settings) and "NO_BROADCAST_HASH" not in inputs.left_hints,
            "right": _fits(inputs.right_size, settings) and "NO_BROADCAST_HASH" not in inputs.right_hints}
    allowed = {"left": can_broadcast_left(jt), "right": can_broadcast_right(jt)}
    side = _pick(fits["left"] and allowed["left"], fits["right"] and allowed["right"], inputs)
    size = {"left": inputs.left_size, "right": inputs.right_size}
    if side:
        both = fits["left"] and allowed["left"] and fits["right"] and allowed["right"]
        return Prediction(BHJ, side, steps + [
            f"rule 1: {side} estimate {_b(size[side])} ≤ autoBroadcastJoinThreshold {_b(threshold)}"
            + (" (both fit: the smaller)" if both else "")])
    demoted = [s for s in ("left", "right") if "NO_BROADCAST_HASH" in _hints(inputs, s)
               and _fits(size[s], settings)]
    if threshold < 0:
        steps.append("rule 1: autoBroadcastJoinThreshold -1 disables broadcasting")
    elif demoted:
        steps.append(f"rule 1: {demoted[0]} size {_b(size[demoted[0]])} fits, but NO_BROADCAST_HASH forbids it")
    elif any(fits.values()):
        small = "left" if fits["left"] else "right"
        steps.append(f"rule 1: {small} estimate {_b(size[small])} fits, but {_join_name(jt)} cannot build {small}")
    else:
        steps.append(f"rule 1: neither estimate ({_b(inputs.left_size)}, {_b(inputs.right_size)}) "
                     f"≤ autoBroadcastJoinThreshold {_b(threshold)}")
    prefer = _hint_on(inputs, "PREFER_SHUFFLE_HASH")  # set by AQE only, bypasses preferSortMergeJoin
    if any(prefer.values()):
        allowed = {"left": can_shuffle_hash_left(jt, version), "right": can_shuffle_hash_right(jt, version)}
        side = _pick(prefer["left"] and allowed["left"], prefer["right"] and allowed["right"], inputs)
        if side:
            return Prediction(SHJ, side, steps + [f"rule 2: AQE prefers shuffle hash on {side} "
                                                  "(every partition under the local map threshold)"])
    if settings.prefer_sort_merge:
        steps.append("rule 2: preferSortMergeJoin=true skips shuffle hash")
    else:
        factor = shuffle_hash_factor(settings, version)
        local_map = threshold * settings.shuffle_partitions
        other = {"left": "right", "right": "left"}

        def buildable(s: str) -> bool:
            return size[s] < local_map and size[s] * factor <= size[other[s]]
        allowed = {"left": can_shuffle_hash_left(jt, version), "right": can_shuffle_hash_right(jt, version)}
        side = _pick(buildable("left") and allowed["left"], buildable("right") and allowed["right"], inputs)
        if side:
            return Prediction(SHJ, side, steps + [
                f"rule 2: preferSortMergeJoin=false, {side} estimate {_b(size[side])} < threshold × "
                f"{settings.shuffle_partitions} partitions ({_b(local_map)}) and ×{factor} ≤ {other[side]} "
                f"{_b(size[other[side]])}"])
        reasons = []
        for s in ("left", "right"):
            if buildable(s) and not allowed[s]:
                reasons.append(f"{_join_name(jt)} cannot build {s}")
        steps.append("rule 2: no side small enough for a local hash map and ×"
                     f"{factor} smaller than the other" + (f" ({'; '.join(reasons)})" if reasons else ""))
    if inputs.orderable is not False:
        return Prediction(SMJ, "none", steps + ["rule 3: keys orderable"])
    if _inner_like(jt):
        return Prediction(CP, "none", steps + ["rule 4: keys not orderable, inner join"])
    side = _smaller_side(inputs)
    return Prediction(BNLJ, side, steps + ["rule 5: last resort, the smaller side"])


def _non_equi(inputs: JoinInputs, settings: Settings) -> Prediction:
    jt = inputs.join_type
    steps = ["no equi-join keys", _hints_text(inputs)]
    if _inner_like(jt) or jt == "FullOuter":
        desired = _smaller_side(inputs)
    else:
        desired = "left" if can_broadcast_left(jt) else "right"
    if inputs.left_hints or inputs.right_hints:
        broadcast = _hint_on(inputs, "BROADCAST")
        side = desired if all(broadcast.values()) else _pick(broadcast["left"], broadcast["right"], inputs)
        if side:
            return Prediction(BNLJ, side, steps + [f"hint 1: BROADCAST on {side}"])
        if any(_hint_on(inputs, "SHUFFLE_REPLICATE_NL").values()):
            if _inner_like(jt):
                return Prediction(CP, "none", steps + ["hint 2: SHUFFLE_REPLICATE_NL on an inner join"])
            steps.append(f"SHUFFLE_REPLICATE_NL hint ignored: {_join_name(jt)} is not inner")
        steps.append("no hint applies → no-hint rules")
    fits = {"left": _fits(inputs.left_size, settings) and "NO_BROADCAST_HASH" not in inputs.left_hints,
            "right": _fits(inputs.right_size, settings) and "NO_BROADCAST_HASH" not in inputs.right_hints}
    # Unlike the hash join, the nested loop join builds whichever side fits, whatever the join type.
    side = desired if all(fits.values()) else _pick(fits["left"], fits["right"], inputs)
    if side:
        size = inputs.left_size if side == "left" else inputs.right_size
        return Prediction(BNLJ, side, steps + [
            f"rule 1: {side} estimate {_b(size)} ≤ autoBroadcastJoinThreshold {_b(settings.broadcast_threshold)}"])
    steps.append("rule 1: no side ≤ autoBroadcastJoinThreshold")
    if _inner_like(jt):
        return Prediction(CP, "none", steps + ["rule 2: inner join"])
    return Prediction(BNLJ, desired, steps + [f"rule 3: last resort, {_join_name(jt)} builds {desired}"])


# --------------------------------------------------------------------------- AQE

def _many_empty(side: dict, settings: Settings, version: str) -> bool:
    # shouldDemoteBroadcastHashJoin: some partitions non-empty, but fewer than the ratio.
    total, non_empty = side.get("partitions") or 0, side.get("non_empty_partitions") or 0
    return total > 0 and non_empty > 0 and non_empty / total < settings.non_empty_ratio


def _all_small(side: dict, settings: Settings) -> bool:
    limit = settings.local_map_threshold
    return (limit > 0 and settings.advisory_partition_size <= limit
            and (side.get("max_partition_bytes") or 0) <= limit)


def _aqe_hint(side: str, inputs: JoinInputs, runtime: dict, settings: Settings, version: str) -> tuple[str, str] | None:
    """The strategy hint DynamicJoinSelection (DemoteBroadcastHashJoin before 3.2) puts on
    one side, and why."""
    other = "right" if side == "left" else "left"
    jt = inputs.join_type
    buildable = can_broadcast_left(jt) if side == "left" else can_broadcast_right(jt)
    if since("demotion_spares_outer_joins", version):
        outer = jt in ("LeftOuter", "RightOuter", "LeftAnti")
        if _many_empty(runtime[side], settings, version) and buildable:
            demote = not outer
        elif _many_empty(runtime[other], settings, version) and buildable:
            demote = outer
        else:
            demote = False
    else:
        demote = _many_empty(runtime[side], settings, version)
    prefer = since("local_map_shuffle_hash", version) and _all_small(runtime[side], settings)
    ratio = f"non-empty partitions {runtime[side].get('non_empty_partitions')}/{runtime[side].get('partitions')}"
    if demote and prefer:
        return "SHUFFLE_HASH", f"AQE: {side} has few non-empty partitions ({ratio}) and all are small → SHUFFLE_HASH on {side}"
    if demote:
        return "NO_BROADCAST_HASH", f"AQE demotes broadcast of {side}: {ratio} < {settings.non_empty_ratio}"
    if prefer:
        return "PREFER_SHUFFLE_HASH", f"AQE: every {side} partition ≤ {_b(settings.local_map_threshold)}"
    return None


def predict_final(initial: Prediction, inputs: JoinInputs | None, settings: Settings, runtime: dict | None,
                  version: str) -> tuple[Prediction | None, str]:
    """The top join of the final adaptive plan, from the run-time sizes the harness read;
    None (with the reason) where the model cannot say."""
    if not settings.adaptive:
        return initial, "AQE off: the final plan is the initial plan"
    if initial.null_aware and since("naaj_elimination", version):
        return None, ("not predicted: AQE replaces the null-aware anti join by an empty result if the "
                      "broadcast side holds a NULL key (SPARK-32573); the harness does not see its keys")
    if inputs is None or inputs.streaming or initial.strategy in (BHJ, BNLJ, NO_JOIN):
        return initial, "AQE keeps a join it did not plan with a shuffle"
    if runtime is None and initial.strategy == CP:
        return initial, "no shuffle below the cartesian product: no run-time size for AQE to re-plan with"
    if runtime is None:
        return None, ("not predicted: the final plan shows no run-time size for both inputs "
                      "(AQE removed the join, or a side has no shuffle stage)")
    if any(runtime[s].get("size_in_bytes") is None for s in ("left", "right")):
        return None, "not predicted: a shuffle stage reported no run-time size"
    empty = [s for s in ("left", "right") if runtime[s].get("row_count") == 0 or runtime[s].get("size_in_bytes") == 0]
    if empty and not since("aqe_empty_relation", version):
        # Measured on 3.0.3 and 3.1.3 (aqe/empty_side): an inner join builds the non-empty side,
        # a left semi join broadcasts the empty one; no rule here reproduces both.
        return None, f"not predicted: the {empty[0]} side is empty at run time, and before 3.2 AQE's choice then is not modelled"
    hints = {"left": list(inputs.left_hints), "right": list(inputs.right_hints)}
    notes = []
    for side in ("left", "right"):
        if not any(h in HINTED_STRATEGIES for h in hints[side]):  # a user's hint wins over AQE's
            added = _aqe_hint(side, inputs, runtime, settings, version)
            if added:
                hints[side].append(added[0])
                notes.append(added[1])
    at_runtime = JoinInputs(join_type=inputs.join_type, equi=inputs.equi, orderable=inputs.orderable,
                            left_size=runtime["left"]["size_in_bytes"], right_size=runtime["right"]["size_in_bytes"],
                            left_hints=hints["left"], right_hints=hints["right"])
    threshold = adaptive_broadcast_threshold(settings, version)
    replanned = predict(at_runtime, Settings(**{**settings.__dict__, "broadcast_threshold": threshold}), version)
    replanned.steps = ["AQE re-plans with run-time sizes"] + notes + replanned.steps
    return replanned, replanned.explanation


# --------------------------------------------------------------------------- from a record

def _bool(text) -> bool:
    return str(text).strip().lower() == "true"


def inputs_from_estimate(estimate: dict | None, streaming: bool = False) -> JoinInputs | None:
    """JoinInputs from the harness's estimate of the top join (plans.join_estimates)."""
    if estimate is None or "logical" not in estimate:
        return None
    logical = estimate["logical"]
    return JoinInputs(join_type=logical["join_type"], equi=logical["equi"], orderable=logical.get("orderable"),
                      left_size=estimate["left"]["size_in_bytes"], right_size=estimate["right"]["size_in_bytes"],
                      left_hints=logical["hints"]["left"], right_hints=logical["hints"]["right"],
                      null_aware_candidate=logical.get("null_aware_candidate", False), streaming=streaming)


def judge(prediction: Prediction, observed_top: dict | None) -> bool:
    """Does the observed top join match the prediction (strategy and build side)?"""
    if observed_top is None:
        return prediction.strategy == NO_JOIN
    return (prediction.strategy == observed_top["strategy"]
            and prediction.build_side == observed_top.get("build_side", "none"))


def evaluate(observed, version: str, streaming: bool = False) -> dict | None:
    """The model's record for one observed case (a harness.core.records.Observation):
    prediction, explanation, whether Spark agreed on the initial plan ("drift" when not),
    and what it says of the final plan."""
    if observed.error:
        return None
    estimates = observed.estimates or []
    inputs = inputs_from_estimate(estimates[0] if estimates else None, streaming)
    if inputs is None and estimates and not streaming:
        return None  # recorded by a harness without the logical inputs
    if streaming and inputs is None:
        inputs = JoinInputs(join_type="", equi=True, left_size=-1, right_size=-1, streaming=True)
    settings = Settings.from_conf(observed.join_conf or {}, version)
    prediction = predict(inputs, settings, version)
    agrees = judge(prediction, observed.initial.top)
    verdict = {**prediction.to_dict(), "agrees": agrees, "drift": not agrees}
    top_estimate = estimates[0] if estimates else None
    filters = filter_model.judge(filter_model.predict(version, observed.join_conf or {}, top_estimate), top_estimate)
    if filters is not None:
        verdict["runtime_filters"] = filters
    final_plan = observed.final
    if final_plan is not None:  # executed: the final plan exists to be predicted
        settings.adaptive = bool(observed.adaptive)
        final, why = predict_final(prediction, inputs, settings, final_plan.runtime_sizes, version)
        verdict["final"] = why
        if final is not None:
            verdict["final_strategy"], verdict["final_build_side"] = final.strategy, final.build_side
            verdict["final_agrees"] = judge(final, final_plan.top)
    return verdict
