"""What a join cost, from the SQL metrics of the plan that ran."""
import pytest
from pyspark.sql import functions as F

from harness.observe import cost, jvm_plans


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
    spark = session.spark
    left = spark.range(0, 10000).select((F.col("id") % keys).alias("k"), F.col("id").alias("v"))
    right = spark.range(0, 100).select(F.col("id").alias("k"), F.col("id").alias("w")).hint(hint)
    frame = left.join(right, "k").select(F.count(F.lit(1)).alias("n"), F.sum("v"))
    frame.collect()
    return jvm_plans.current_plan(frame)


def test_a_sort_merge_join_shuffles_both_sides(session, confs):
    found = cost.of(_ran(session, "merge"))
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
    found = cost.of(_ran(session, "broadcast"))
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
    found = cost.of(jvm_plans.current_plan(frame))
    if _smj_reports_spill(session):
        assert found["spill_bytes"] > 0
    else:  # measured: the sort-merge join's spillSize arrived in 3.3
        assert found["spill_bytes"] is None
        assert found["not_reported"]["spill_bytes"] == "SortMergeJoin reports no `spillSize` on this Spark version"


def test_a_plan_without_a_join_costs_nothing(session):
    frame = session.spark.range(10).selectExpr("count(1)")
    frame.collect()
    assert cost.of(jvm_plans.current_plan(frame)) is None
