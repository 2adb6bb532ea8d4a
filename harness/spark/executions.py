"""Each distinct execution once per worker: the rows, checksum and final plan of a
physical query already run under the same configs are shared, not run again.

The key is what decides the answer and the final adaptive plan: Spark's canonical form of
the physical plan (expression ids and names erased; the data's whole lineage is in it:
the seeded generator expressions, literal rows, file paths, cached relations) and every
config of the session (one string from the JVM: an AQE or ANSI setting outside the plan
still separates two runs). Lookup is by the plan's semantic hash, confirmed by Spark's
`sameResult` (canonical equality), never by the hash alone. Under a native engine a hit
is also confirmed by the canonical plans' text: `sameResult` is then the engine's
canonical form, and Comet 0.12.0 canonicalizes a sort-merge join without its join type
(scenarios/engines/comet_semi_anti_exchange_reuse.yaml), while its printed plan says it.

Of a plan that AQE will not re-plan, the configs that only choose the plan (broadcast
threshold, sort-merge preference, hint switch, CBO, shuffle partitions, every AQE
setting) are left out of the key: that plan is fixed, and they have done their part. A
broadcast by threshold and the same broadcast by hint then run once. An adaptive plan
keeps them all: AQE reads them again while the query runs.

A stream-stream join has no single physical plan to key by: its answer is kept by the
scenario (file, id, seed), the case's join and the session's configs, so that the
cross-strategy check's as-written run takes the case's stream answer instead of running
the micro-batches again.

Who shares: a case and its cross-strategy check's as-written run; forced strategies whose
hint Spark cannot apply and which fall back to the plan of another; the DataFrame and SQL
variants of one query when Spark plans them alike; scenarios that join the same tables
the same way. Row-collecting cases run every time.
"""
from __future__ import annotations

import json
import re
from collections import OrderedDict
from dataclasses import dataclass

LIMIT = 1000  # entries kept per worker (each holds one JVM plan object)


@dataclass
class Executed:
    rows: int
    checksum: str
    plan: object  # the executed JVM plan (for AQE: its final plan)
    key_plan: object = None  # the plan it was looked up by, when not `plan` (Connect's printed one)
    cost: dict | None = None  # what the top join of `plan` cost (harness.observe.cost)
    cost_s: float = 0.0  # the time reading it took
    engine_reference: dict | None = None  # under a native engine: Spark's own answer (harness.check.runner)
    canonical: str | None = None  # canonical_text of the plan it was looked up by, once asked


_MEMO: OrderedDict = OrderedDict()
# Which repetition of a flake-finder run is running (0 otherwise): part of every key, so
# that no repetition takes another's answer (within one, a case and its check share).
_ROUND = [0]


def set_round(number: int) -> None:
    _ROUND[0] = number


def session_confs(spark) -> str:
    """Every config of the session in one string, as the JVM prints its map (through Spark
    Connect, the server's GetAll written the same way)."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        confs = getattr(spark.conf, "getAll", None) or {row[0]: row[1] for row in spark.sql("SET").collect()}
        return "Map(" + ", ".join(f"{k} -> {v}" for k, v in sorted(confs.items())) + ")"
    return str(jsession.sessionState().conf().getAllConfs().toString())


# Configs whose whole effect is the choice of a physical plan (absent AQE, which reads them
# again at run time). Values of these keys are numbers, sizes or booleans: no commas.
PLAN_CHOICE = re.compile(r"(?:(?<=\()|, )(?:spark\.sql\.adaptive\.[\w.]+|spark\.sql\.autoBroadcastJoinThreshold|"
                         r"spark\.sql\.join\.preferSortMergeJoin|spark\.sql\.shuffledHashJoinFactor|"
                         r"spark\.sql\.optimizer\.disableHints|spark\.sql\.cbo\.[\w.]+|"
                         r"spark\.sql\.shuffle\.partitions) -> [^,()]*(?=, |\)$)")


def key(spark, plan, adaptive: bool) -> tuple:
    confs = session_confs(spark)
    if not adaptive:
        confs = PLAN_CHOICE.sub("", confs)
    return id(spark), _ROUND[0], int(plan.semanticHash()), confs


# Each exchange's plan id differs between two queries of the same plan.
PLAN_IDS = re.compile(r",? ?\[plan_id=\d+\]")


def canonical_text(plan) -> str:
    """The canonical plan as it prints (ids erased), plan ids left out."""
    return PLAN_IDS.sub("", str(plan.canonicalized().toString()))


def lookup(memo_key: tuple, plan, confirm_text: bool = False) -> Executed | None:
    """The execution stored under `memo_key` that gives `plan`'s result; `confirm_text`:
    only one whose canonical plan also prints as `plan`'s does."""
    text = None
    for stored in _MEMO.get(memo_key, []):
        stored_plan = stored.key_plan if stored.key_plan is not None else stored.plan
        try:
            if not plan.sameResult(stored_plan):
                continue
            if confirm_text:
                text = canonical_text(plan) if text is None else text
                if stored.canonical is None:
                    stored.canonical = canonical_text(stored_plan)
                if stored.canonical != text:
                    continue
        except Exception:  # a plan object of a session that is gone
            continue
        _MEMO.move_to_end(memo_key)
        return stored
    return None


def remember(memo_key: tuple, executed: Executed) -> None:
    _MEMO.setdefault(memo_key, []).append(executed)
    _MEMO.move_to_end(memo_key)
    while len(_MEMO) > LIMIT:
        _MEMO.popitem(last=False)


@dataclass
class Streamed:
    rows: int
    checksum: str
    plan: object  # the last micro-batch's executed plan
    batches: int
    steps: list | None = None  # per declared step (`stream.batches`): harness.spark.streaming._run_steps


_STREAMS: OrderedDict = OrderedDict()


def stream_key(spark, case) -> tuple:
    scenario = case.scenario
    return (id(spark), _ROUND[0], str(scenario.path), scenario.id, scenario.seed, json.dumps(case.join, sort_keys=True),
            session_confs(spark))


def lookup_stream(memo_key: tuple) -> Streamed | None:
    return _STREAMS.get(memo_key)


def remember_stream(memo_key: tuple, streamed: Streamed) -> None:
    _STREAMS[memo_key] = streamed
    while len(_STREAMS) > LIMIT:
        _STREAMS.popitem(last=False)


def forget() -> None:
    """A new session: its plans are not comparable with the old one's."""
    _MEMO.clear()
    _STREAMS.clear()
