"""What a join cost, from the SQL metrics of the plan that ran."""
import pytest
from pyspark.sql import functions as F

from harness.observe import cost, jvm_plans, printed_plans
from harness.spark import stages


class FakeMetrics:
    def __init__(self, text):
        self.text = text

    def toString(self):  # noqa: N802 (the JVM's name)
        return self.text


class FakeNode:
    def __init__(self, text):
        self._metrics = FakeMetrics(text)

    def metrics(self):
        return self._metrics


def test_metrics_are_read_from_the_printed_map_names_with_parentheses_included():
    node = FakeNode("Map(dataSize -> SQLMetric(id: 12, name: Some(data size), value: 4096), "
                    "avgHashProbe -> SQLMetric(id: 13, name: Some(avg hash probe (min, med, max)), value: 7), "
                    "spillSize -> SQLMetric(id: 14, name: Some(spill size), value: -1), "
                    "x -> SQLMetric(id: 15, name: None, value: 0))")
    assert cost.metrics(node) == {"dataSize": {"id": 12, "name": "data size", "value": 4096},
                                  "avgHashProbe": {"id": 13, "name": "avg hash probe (min, med, max)", "value": 7},
                                  "spillSize": {"id": 14, "name": "spill size", "value": None},
                                  "x": {"id": 15, "name": "", "value": 0}}


def _smj_reports_spill(session) -> bool:
    return tuple(int(p) for p in session.spark.version.split(".")[:2]) >= (3, 3)


def _reported(session, value) -> tuple:
    """`value` where the sort-merge join reports its spill, else None (not reported)."""
    return (value,) if _smj_reports_spill(session) else (None,)


@pytest.fixture
def confs(session):
    spark = session.spark
    keys = ("spark.sql.adaptive.enabled", "spark.sql.autoBroadcastJoinThreshold", "spark.sql.shuffle.partitions",
            "spark.sql.sortMergeJoinExec.buffer.in.memory.threshold",
            "spark.sql.sortMergeJoinExec.buffer.spill.threshold")
    before = {key: spark.conf.get(key, None) for key in keys}
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    yield spark.conf
    for key, value in before.items():
        spark.conf.unset(key) if value is None else spark.conf.set(key, value)


def _ran(session, hint, keys=100):
    return _ran_with_stages(session, hint, keys)[0]


def _ran_with_stages(session, hint, keys=100):
    spark = session.spark
    left = spark.range(0, 10000).select((F.col("id") % keys).alias("k"), F.col("id").alias("v"))
    right = spark.range(0, 100).select(F.col("id").alias("k"), F.col("id").alias("w")).hint(hint)
    frame = left.join(right, "k").select(F.count(F.lit(1)).alias("n"), F.sum("v"))
    _, ran_stages = stages.run(spark, frame.collect)
    return jvm_plans.current_plan(frame), ran_stages


def test_a_sort_merge_join_shuffles_both_sides(session, confs):
    found = jvm_plans.cost(_ran(session, "merge"))
    assert found["left"]["shuffle_records"] == 10000 and found["right"]["shuffle_records"] == 100
    assert found["left"]["shuffle_bytes"] > found["right"]["shuffle_bytes"] > 0
    assert found["left"]["broadcast_bytes"] == found["right"]["broadcast_bytes"] == 0
    assert found["output_rows"] == 10000 and found["spill_bytes"] in _reported(session, 0)
    assert found["peak_memory"] > 0   # its two sorts
    for side in ("left", "right"):
        # the exchange's partition count arrived in 3.2: before, not reported, never 0
        assert found[side]["partitions"] == 4 or (found[side]["partitions"] is None
                                                  and f"{side}.partitions" in found["not_reported"])
    assert "sort_s" in found["timings"] and "shuffle_write_s" in found["timings"]


def test_a_broadcast_hash_join_moves_only_its_build_side(session, confs):
    found = jvm_plans.cost(_ran(session, "broadcast"))
    assert found["right"]["broadcast_bytes"] > 0 and found["right"]["shuffle_bytes"] == 0
    assert found["left"] == {"shuffle_bytes": 0, "shuffle_records": 0, "broadcast_bytes": 0, "partitions": None,
                             "coalesced_partitions": 0, "skew_splits": 0}
    assert "left.partitions" not in found["not_reported"]   # nothing to report: no shuffle feeds it
    assert found["peak_memory"] == 0 and found["spill_bytes"] == 0


def test_a_sort_merge_join_that_buffers_more_than_its_threshold_spills(session, confs):
    # 3,000 right rows per key buffered against a spill threshold of 2,000 (thresholds of a
    # few rows make every streamed row open a reader of each spill file: out of memory)
    confs.set("spark.sql.sortMergeJoinExec.buffer.in.memory.threshold", "1000")
    confs.set("spark.sql.sortMergeJoinExec.buffer.spill.threshold", "2000")
    spark = session.spark
    left = spark.range(0, 200).select((F.col("id") % 2).alias("k"), F.col("id").alias("v"))
    right = spark.range(0, 6000).select((F.col("id") % 2).alias("k"), F.col("id").alias("w")).hint("merge")
    frame = left.join(right, "k").select(F.count(F.lit(1)).alias("n"))
    frame.collect()
    found = jvm_plans.cost(jvm_plans.current_plan(frame))
    if _smj_reports_spill(session):
        assert found["spill_bytes"] > 0
    else:  # measured: the sort-merge join's spillSize arrived in 3.3
        assert found["spill_bytes"] is None
        assert found["not_reported"]["spill_bytes"] == "SortMergeJoin reports no `spillSize` on this Spark version"


def test_a_plan_without_a_join_costs_nothing(session):
    frame = session.spark.range(10).selectExpr("count(1)")
    frame.collect()
    assert jvm_plans.cost(jvm_plans.current_plan(frame)) is None


def test_the_join_stage_is_the_map_side_of_the_shuffle_above_the_join(session, confs):
    # 10,000 rows of one key and 100 rows of 99 others, hashed into 4 partitions: the
    # task that reads the big key reads all of its rows from the shuffle
    plan, ran_stages = _ran_with_stages(session, "merge", keys=1)
    found = jvm_plans.cost(plan, ran_stages)
    assert found["tasks"] == 4
    # the key's 10,000 left rows, and the right rows of the keys that hash with it
    assert 10000 < found["max_task_rows"] < 10100
    assert "tasks" not in found["not_reported"]


def test_a_broadcast_join_stage_reads_its_streamed_side_from_the_source(session, confs):
    plan, ran_stages = _ran_with_stages(session, "broadcast")
    found = jvm_plans.cost(plan, ran_stages)
    # range(0, 10000) in the session's default parallelism (local[2]): two splits of 5,000
    assert found["tasks"] == session.spark.sparkContext.defaultParallelism
    assert found["max_task_rows"] == 10000 // found["tasks"]


def test_a_join_without_a_shuffle_above_it_runs_in_the_result_stage(session, confs):
    confs.set("spark.sql.shuffle.partitions", "1")  # one partition: the count needs no exchange
    plan, ran_stages = _ran_with_stages(session, "merge", keys=1)
    found = jvm_plans.cost(plan, ran_stages)
    assert found["tasks"] == 1 and found["max_task_rows"] == 10100


def test_stages_not_read_are_not_reported_never_zero(session, confs):
    found = jvm_plans.cost(_ran(session, "merge"), stages.RunStages.unknown("not read here"))
    assert found["tasks"] is None and found["max_task_rows"] is None
    assert found["not_reported"]["tasks"] == found["not_reported"]["max_task_rows"] == "not read here"


# What a Spark Connect 4.3.0 server sent with a sort-merge join's result (measured), cut
# to the operators the cost reads: (name, plan id, parent plan id, metrics).
CONNECT_SMJ = [
    ("Exchange", 69, 0, {"shuffleRecordsWritten": 100000, "dataSize": 1600000, "shuffleBytesWritten": 50306}),
    ("Exchange", 76, 1, {"shuffleRecordsWritten": 1000, "dataSize": 16000, "shuffleBytesWritten": 27530}),
    ("Exchange", 163, 2, {"shuffleRecordsWritten": 1, "dataSize": 16}),
    ("Range", 25, 69, {"numOutputRows": 100000}),
    ("Range", 28, 76, {"numOutputRows": 1000}),
    ("AdaptiveSparkPlan", 34, 34, {}),
    ("ShuffleQueryStage", 0, 143, {}),
    ("ShuffleQueryStage", 1, 145, {}),
    ("AQEShuffleRead", 143, 152, {"numCoalescedPartitions": 1, "numPartitions": 1, "partitionDataSize": 50306}),
    ("Sort", 152, 159, {"peakMemory": 20971520, "spillSize": 0, "sortTime": 8}),
    ("AQEShuffleRead", 145, 156, {"numCoalescedPartitions": 1, "numPartitions": 1, "partitionDataSize": 27530}),
    ("Sort", 156, 159, {"peakMemory": 16842752, "spillSize": 0, "sortTime": 0}),
    ("SortMergeJoin", 159, 161, {"spillSize": 0, "numOutputRows": 100000}),
    ("HashAggregate", 161, 163, {"spillSize": 0, "peakMemory": 0, "numOutputRows": 1}),
    ("ShuffleQueryStage", 2, 187, {}),
    ("HashAggregate", 187, 34, {"spillSize": 0, "peakMemory": 0, "numOutputRows": 1}),
]


def test_the_cost_through_spark_connect_is_read_from_the_plan_metrics_sent_with_the_result():
    plan = printed_plans.plan_from_metrics(CONNECT_SMJ)
    found = printed_plans.cost(plan, stages.RunStages.unknown("no stages through Connect"))
    assert found["left"]["shuffle_records"] == 100000 and found["left"]["shuffle_bytes"] == 1600000
    assert found["right"]["shuffle_records"] == 1000 and found["right"]["partitions"] == 1
    assert found["left"]["coalesced_partitions"] == 1
    assert found["shown"] == {"left.shuffle_written_bytes": 50306, "right.shuffle_written_bytes": 27530}
    assert found["peak_memory"] == 20971520 + 16842752 and found["spill_bytes"] == 0
    assert found["output_rows"] == 100000
    assert found["not_reported"]["tasks"] == "no stages through Connect"


def test_a_reused_exchange_through_connect_is_not_reported_never_zero():
    entries = [("SortMergeJoin", 1, 0, {"numOutputRows": 5, "spillSize": 0}),
               ("Exchange", 2, 1, {"shuffleRecordsWritten": 5, "dataSize": 80}),
               ("ReusedExchange", 3, 1, {}),
               ("Range", 4, 2, {"numOutputRows": 5})]
    found = printed_plans.cost(printed_plans.plan_from_metrics(entries))
    assert found["left"]["shuffle_records"] == 5
    assert found["right"]["shuffle_records"] is None and "right.shuffle_records" in found["not_reported"]
