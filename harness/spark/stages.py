"""The stages an action ran and what their tasks read, from Spark's status store: what
the Spark UI's Stages tab shows (kept with the UI off), read through Py4J.

The store is filled by a listener on Spark's listener bus, which runs behind the jobs:
the bus is drained before it is read, so a figure is never one of a stage half recorded.
SQL metrics are not in a stage's record (the status store leaves them out), so a stage is
found by the RDD it ran: the map side of the shuffle above the join.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

DRAIN_MS = 10_000
COMPLETE = "COMPLETE"


@dataclass
class StageTasks:
    stage: str                 # "<id>.<attempt>", as the UI names it
    tasks: int
    max_task_rows: int | None  # rows the largest task read from files and shuffles


class RunStages:
    """The stages one action's jobs ran (`stage_ids`), or why they are not known (`why`)."""

    def __init__(self, spark, job_ids: list[int], why: str = ""):
        self.spark, self.job_ids, self.why = spark, sorted(job_ids), why

    @classmethod
    def unknown(cls, why: str) -> "RunStages":
        return cls(None, [], why)

    def tasks_of(self, rdd_id: int | None) -> StageTasks | str:
        """The completed stage that ran `rdd_id` (None: the last job's result stage) and
        what its tasks read; a string says why there is none."""
        if self.why:
            return self.why
        if not self.job_ids:
            return "the run started no Spark job"
        store = self.spark._jsc.sc().statusStore()
        tracker = self.spark.sparkContext.statusTracker()
        if rdd_id is None:  # a job's result stage is created after its parents: the highest id
            stage_ids = sorted(_stage_ids(tracker, self.job_ids[-1]), reverse=True)[:1]
        else:
            stage_ids = sorted({stage for job in self.job_ids for stage in _stage_ids(tracker, job)}, reverse=True)
        for stage_id in stage_ids:
            stage = store.lastStageAttempt(stage_id)
            if str(stage.status().toString()) != COMPLETE:
                continue  # skipped: its shuffle had been written by another stage
            if rdd_id is not None and rdd_id not in _rdd_ids(stage):
                continue
            return StageTasks(f"{stage_id}.{stage.attemptId()}", int(stage.numTasks()),
                              _max_task_rows(self.spark, store, stage))
        return "no completed stage of the run ran the join"


def _stage_ids(tracker, job_id: int) -> list[int]:
    info = tracker.getJobInfo(job_id)
    return list(info.stageIds) if info is not None else []


def _rdd_ids(stage) -> set[int]:
    return {int(found) for found in re.findall(r"\d+", str(stage.rddIds().toString()))}


def _max_task_rows(spark, store, stage) -> int | None:
    """The most rows one task read, from files and shuffles together: the stage summary's
    maxima when only one of the two fed the stage (one call), else task by task."""
    quantiles = spark.sparkContext._gateway.new_array(spark._jvm.double, 1)
    quantiles[0] = 1.0
    summary = store.taskSummary(stage.stageId(), stage.attemptId(), quantiles)
    if not summary.isDefined():
        return None
    metrics = summary.get()
    from_files = int(metrics.inputMetrics().recordsRead().apply(0))
    from_shuffles = int(metrics.shuffleReadMetrics().readRecords().apply(0))
    if not (from_files and from_shuffles):
        return from_files + from_shuffles
    tasks = store.taskList(stage.stageId(), stage.attemptId(), int(stage.numTasks()))
    most = 0
    for index in range(tasks.size()):
        task_metrics = tasks.apply(index).taskMetrics()
        if task_metrics.isDefined():
            read = task_metrics.get()
            most = max(most, int(read.inputMetrics().recordsRead()) + int(read.shuffleReadMetrics().recordsRead()))
    return most


def _group(spark) -> str | None:
    return spark.sparkContext.getLocalProperty("spark.jobGroup.id")


def run(spark, action):
    """(what `action()` returned, the stages its jobs ran)."""
    tracker = spark.sparkContext.statusTracker()
    drain(spark)
    before = set(tracker.getJobIdsForGroup(_group(spark)))
    result = action()
    if not drain(spark):
        return result, RunStages.unknown(f"Spark's listener bus did not drain in {DRAIN_MS // 1000} s")
    after = set(tracker.getJobIdsForGroup(_group(spark)))
    return result, RunStages(spark, list(after - before))


def drain(spark) -> bool:
    try:
        spark._jsc.sc().listenerBus().waitUntilEmpty(DRAIN_MS)
        return True
    except Exception:  # a TimeoutException: the listeners are far behind
        return False
