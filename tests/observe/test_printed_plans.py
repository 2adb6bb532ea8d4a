"""The grammar that reads join nodes, estimates and final plans from what a Spark Connect
server prints and reports — checked against the JVM reader (harness.observe.jvm_plans) on the same
queries, and against Spark's own byte formatting."""
import pytest

from harness.core.text import bytes_text
from harness.core.vocab import spark_version
from harness.observe import jvm_plans, printed_plans
from harness.observe.printed_plans import (
    PrintedPlan,
    join_line,
    plan_from_metrics,
    split_arguments,
)

# Printed by a Spark Connect server (PySpark 4.3.0), explain in simple mode.
PRINTED = {
    "BroadcastHashJoin [id#112L], [k2#117L], LeftAnti, BuildRight, false, false":
        ("BroadcastHashJoin", "right", "LeftAnti", "List(id#112L)", "List(k2#117L)", "", False),
    "ShuffledHashJoin [k#113L], [k2#117L], LeftOuter, BuildRight, (v#114L > v2#118L)":
        ("ShuffledHashJoin", "right", "LeftOuter", "List(k#113L)", "List(k2#117L)", "(v#114L > v2#118L)", False),
    "SortMergeJoin [k#113L], [k2#117L], Inner, (v#114L > v2#118L)":
        ("SortMergeJoin", "none", "Inner", "List(k#113L)", "List(k2#117L)", "(v#114L > v2#118L)", False),
    "BroadcastNestedLoopJoin BuildRight, Inner, (v#114L > v2#118L)":
        ("BroadcastNestedLoopJoin", "right", "Inner", "List()", "List()", "(v#114L > v2#118L)", False),
    "CartesianProduct (v#114L > v2#118L)":
        ("CartesianProduct", "none", "Inner", "List()", "List()", "(v#114L > v2#118L)", False),
    "BroadcastHashJoin [coalesce(k#113L, 0), isnull(k#113L)], [coalesce(k2#117L, 0), isnull(k2#117L)], "
    "LeftAnti, BuildRight, false, false":
        ("BroadcastHashJoin", "right", "LeftAnti", "List(coalesce(k#113L, 0), isnull(k#113L))",
         "List(coalesce(k2#117L, 0), isnull(k2#117L))", "", False),
    "*(2) BroadcastHashJoin [k#1L], [k#2L], LeftAnti, BuildRight, true, false":
        ("BroadcastHashJoin", "right", "LeftAnti", "List(k#1L)", "List(k#2L)", "", True),
}


@pytest.mark.parametrize("text", list(PRINTED))
def test_a_printed_join_line_reads_as_the_jvm_records_it(text):
    from harness.observe.plan_tree import operator_name
    node = join_line(operator_name(text), text)
    got = (node.strategy, node.build_side, node.join_type, node.left_keys, node.right_keys, node.condition,
           node.null_aware)
    assert got == PRINTED[text]


def test_other_operators_are_not_joins():
    assert join_line("Project", "Project [k#1L]") is None
    assert split_arguments("[a, f(b, c)], [d], Inner, (x > y)") == ["[a, f(b, c)]", "[d]", "Inner", "(x > y)"]


QUERIES = [
    "SELECT * FROM a JOIN b ON a.k = b.k",
    "SELECT /*+ SHUFFLE_HASH(b) */ * FROM a LEFT JOIN b ON a.k = b.k AND a.v > b.v",
    "SELECT /*+ MERGE(b) */ * FROM a FULL JOIN b ON a.k = b.k AND a.v > b.v",
    "SELECT /*+ BROADCAST(a) */ * FROM a RIGHT JOIN b ON a.v > b.v",
    "SELECT /*+ SHUFFLE_REPLICATE_NL(b) */ * FROM a JOIN b ON a.v > b.v",
    "SELECT * FROM a LEFT ANTI JOIN b ON a.k <=> b.k",
    "SELECT * FROM a WHERE k NOT IN (SELECT k FROM b)",
    "SELECT * FROM a LEFT SEMI JOIN b ON a.k = b.k JOIN b c ON a.v = c.v",
]


@pytest.mark.parametrize("query", QUERIES)
def test_the_grammar_agrees_with_the_jvm_reader_on_the_same_plan(session, query):
    """The printed plan of a local query, read by the grammar, gives every join node the
    JVM reader gives from the plan objects (strategy, build side, type, keys, condition,
    null-aware), in the same order."""
    spark = session.spark
    spark.range(0, 50).selectExpr("id AS k", "CAST(id * 2 AS BIGINT) AS v", "IF(id % 7 = 0, NULL, id) AS n") \
        .createOrReplaceTempView("a")
    spark.range(0, 20).selectExpr("id AS k", "id AS v").createOrReplaceTempView("b")
    try:
        plan = jvm_plans.current_plan(spark.sql(query))
        from_jvm = [j.to_dict() for j in jvm_plans.join_nodes(plan)]
        text = jvm_plans.plan_text(plan)
        from_text = [j.to_dict() for j in printed_plans.join_nodes(PrintedPlan(text=text))]
    finally:
        spark.catalog.dropTempView("a")
        spark.catalog.dropTempView("b")
    if spark_version(spark.version) < spark_version("3.1"):
        # Measured on 3.0.3: a nested-loop join's plan object has no leftKeys/rightKeys and
        # a Cartesian product's no joinType (BaseJoinExec gives them from 3.1), so the JVM
        # reader leaves them empty where the grammar writes what 3.1+ answers: List(), Inner
        for node in from_text:
            node.update({side: "" for side in ("left_keys", "right_keys") if node[side] == "List()"})
            if node["strategy"] == "CartesianProduct":
                node["join_type"] = ""
    assert from_jvm and from_text == from_jvm


@pytest.mark.parametrize("size", [0, 1, 800, 2047, 2048, 7987, 160_000, 800_000, 899_994, 9_437_184, 36_000_000,
                                  10 ** 10, 2 ** 62, 2 ** 63 - 1])
def test_bytes_text_is_what_spark_prints(session, size):
    jvm = session.spark.sparkContext._jvm
    assert bytes_text(size) == str(jvm.org.apache.spark.util.Utils.bytesToString(size))


def test_estimates_read_from_the_cost_mode_plan():
    text = """== Optimized Logical Plan ==
Aggregate [count(1) AS rows#7L], Statistics(sizeInBytes=24.0 B, rowCount=1)
+- Join Inner, (k#2L = k2#5L), rightHint=(strategy=broadcast), Statistics(sizeInBytes=8.9 GiB)
   :- Project [id#1L AS k#2L], Statistics(sizeInBytes=11.4 MiB)
   :  +- Range (0, 1000000, step=1, splits=Some(2)), Statistics(sizeInBytes=7.6 MiB, rowCount=1.00E+6)
   +- Project [id#4L AS k2#5L], Statistics(sizeInBytes=800.0 B, rowCount=100)
      +- Range (0, 100, step=1, splits=Some(2)), Statistics(sizeInBytes=800.0 B, rowCount=100)

== Physical Plan ==
AdaptiveSparkPlan isFinalPlan=false
"""

    class Frame:
        def _explain_string(self, mode):
            assert mode == "cost"
            return text

    (top,) = printed_plans.join_estimates(Frame())
    assert top["left"] == {"size_in_bytes": round(11.4 * 2 ** 20), "row_count": None, "printed": "11.4 MiB"}
    assert top["right"] == {"size_in_bytes": 800, "row_count": 100, "printed": "800.0 B"}
    assert top["hints"] == {"left": [], "right": ["BROADCAST"]}


# Plan metrics a 4.3.0 server sent: (name, plan id, parent plan id), in its order.
BROADCAST_LEFT = [("BroadcastExchange", 512, 0), ("Exchange", 552, 1), ("WholeStageCodegen (3)", 566, 2),
                  ("Range", 482, 483), ("Range", 484, 485), ("AdaptiveSparkPlan", 490, 490),
                  ("ResultQueryStage", 2, 490), ("Project", 483, 511), ("WholeStageCodegen (1)", 511, 512),
                  ("BroadcastQueryStage", 0, 547), ("InputAdapter", 547, 548), ("Project", 485, 548),
                  ("BroadcastHashJoin", 548, 549), ("Project", 549, 550), ("HashAggregate", 550, 551),
                  ("WholeStageCodegen (2)", 551, 552), ("ShuffleQueryStage", 1, 564), ("InputAdapter", 564, 565),
                  ("HashAggregate", 565, 566)]
SHUFFLED_HASH = [("Exchange", 625, 0), ("Exchange", 631, 1), ("Exchange", 693, 2), ("WholeStageCodegen (4)", 710, 3),
                 ("Range", 590, 591), ("Range", 592, 593), ("AdaptiveSparkPlan", 598, 598),
                 ("ResultQueryStage", 3, 598), ("Project", 591, 624), ("WholeStageCodegen (1)", 624, 625),
                 ("Project", 593, 630), ("WholeStageCodegen (2)", 630, 631), ("ShuffleQueryStage", 0, 681),
                 ("ShuffleQueryStage", 1, 682), ("AQEShuffleRead", 681, 687), ("AQEShuffleRead", 682, 688),
                 ("InputAdapter", 687, 689), ("InputAdapter", 688, 689), ("ShuffledHashJoin", 689, 690),
                 ("Project", 690, 691), ("HashAggregate", 691, 692), ("WholeStageCodegen (3)", 692, 693),
                 ("ShuffleQueryStage", 2, 708), ("InputAdapter", 708, 709), ("HashAggregate", 709, 710)]


def test_final_plan_from_metrics_finds_the_broadcast_side():
    plan = plan_from_metrics(BROADCAST_LEFT)
    assert printed_plans.top_join(plan) == {"strategy": "BroadcastHashJoin", "build_side": "left"}
    from harness.observe.plan_tree import parse
    tree = parse(plan.text)["final"]  # the drawn text reads back as a final adaptive plan
    assert tree["name"] == "HashAggregate"


def test_a_shuffled_hash_joins_final_build_side_is_unavailable_not_guessed():
    plan = plan_from_metrics(SHUFFLED_HASH)
    assert printed_plans.top_join(plan) == {"strategy": "ShuffledHashJoin", "build_side": "unavailable"}


def test_metrics_without_one_root_give_no_plan():
    assert plan_from_metrics([("Project", 1, 7), ("Range", 2, 8)]) is None


def test_printed_plan_before_a_run_reads_its_initial_plan():
    text = """AdaptiveSparkPlan isFinalPlan=false
+- HashAggregate(keys=[], functions=[count(1)])
   +- BroadcastHashJoin [k#2L], [k2#5L], Inner, BuildRight, false, false
      :- Range (0, 10, step=1, splits=2)
      +- BroadcastExchange HashedRelationBroadcastMode(List(input[0, bigint, false]),false), [plan_id=60]
         +- Range (0, 5, step=1, splits=2)"""
    plan = PrintedPlan(text=text)
    assert printed_plans.is_adaptive(plan)
    assert [j.strategy for j in printed_plans.join_nodes(plan)] == ["BroadcastHashJoin"]


def test_two_builds_of_one_query_share_an_execution_only_when_nothing_was_elided():
    first = PrintedPlan(text="BroadcastHashJoin [k#12L], [k#40L], Inner, BuildRight, false, false\n"
                             ":- Range (0, 10, step=1, splits=2)\n"
                             "+- BroadcastExchange HashedRelationBroadcastMode(...), [plan_id=60]")
    again = PrintedPlan(text=first.text.replace("#12L", "#99L").replace("plan_id=60", "plan_id=61"))
    other = PrintedPlan(text=first.text.replace("Range (0, 10", "Range (0, 11"))
    elided = PrintedPlan(text=first.text + "\n   +- Project [a#1, b#2, ... 30 more fields]")
    assert first.sameResult(again) and first.semanticHash() == again.semanticHash()
    assert not first.sameResult(other)
    assert not elided.sameResult(PrintedPlan(text=elided.text))


def test_a_stream_stream_join_reads_as_the_jvm_records_it():
    text = ("StreamingSymmetricHashJoin [k#28L], [k2#15L], Inner, condition = [ leftOnly = null, rightOnly = null, "
            "both = null, full = null ], state info [ checkpoint = file:/tmp/ck/state, runId = ffdf, opId = 0, "
            "ver = 0, numPartitions = 200] stateStoreCkptIds = None, 0, 0, state cleanup [ left = null, "
            "right = null ], 2, Append")
    node = join_line("StreamingSymmetricHashJoin", text)
    assert (node.strategy, node.build_side, node.join_type, node.left_keys, node.right_keys) == \
        ("StreamingSymmetricHashJoin", "none", "Inner", "List(k#28L)", "List(k2#15L)")
    assert node.condition == "condition = [ leftOnly = null, rightOnly = null, both = null, full = null ]"


def test_explain_text_without_the_private_call_is_what_explain_prints():
    class Frame:
        def explain(self, mode):
            print(f"== Physical Plan ==\nRange (0, 1, step=1, splits=1) [{mode}]")

    assert printed_plans.explained(Frame(), "cost").endswith("[cost]\n")


# Printed by PySpark 4.3.0 (explain, simple mode): a partitioned fact pruned on the join's
# broadcast, and a bucketed table read as buckets joined with one read as plain files.
PRUNED = """\
*(2) Project [id#23L, c#27L]
+- *(2) BroadcastHashJoin [p#25L], [p#26L], Inner, BuildRight, false, false
   :- *(2) ColumnarToRow
   :  +- FileScan parquet spark_catalog.default.fact[id#23L,p#25L] Batched: true, DataFilters: [], Format: Parquet, Location: InMemoryFileIndex(20 paths)[file:/tmp/wh/fact/p=3, ...], PartitionFilters: [isnotnull(p#25L), dynamicpruningexpression(p#25L IN dynamicpruning#30)], PushedFilters: [], ReadSchema: struct<id:bigint>
   :        +- SubqueryBroadcast dynamicpruning#30, [0], [p#26L], [id=#192]
   :           +- BroadcastExchange HashedRelationBroadcastMode(List(input[0, bigint, false]),false), [plan_id=191]
   :              +- *(1) Filter ((isnotnull(c#27L) AND (c#27L = 1)) AND isnotnull(p#26L))
   :                 +- *(1) ColumnarToRow
   :                    +- FileScan parquet spark_catalog.default.dim[p#26L,c#27L] Batched: true, DataFilters: [isnotnull(c#27L), (c#27L = 1), isnotnull(p#26L)], Format: Parquet, Location: InMemoryFileIndex(1 paths)[file:/tmp/wh/dim], PartitionFilters: [], PushedFilters: [IsNotNull(c), EqualTo(c,1), IsNotNull(p)], ReadSchema: struct<p:bigint,c:bigint>
   +- ReusedExchange [p#26L, c#27L], BroadcastExchange HashedRelationBroadcastMode(List(input[0, bigint, false]),false), [plan_id=191]
"""
BUCKETED = """\
*(5) SortMergeJoin [k#3L], [k#5L], Inner
:- *(2) Sort [k#3L ASC NULLS FIRST], false, 0
:  +- *(1) Filter isnotnull(k#3L)
:     +- *(1) ColumnarToRow
:        +- FileScan parquet spark_catalog.default.bk[id#2L,k#3L] Batched: true, Bucketed: true, DataFilters: [isnotnull(k#3L)], Format: Parquet, Location: InMemoryFileIndex(1 paths)[file:/tmp/wb/bk], PartitionFilters: [], PushedFilters: [IsNotNull(k)], ReadSchema: struct<id:bigint,k:bigint>, SelectedBucketsCount: 4 out of 4
+- *(4) Sort [k#5L ASC NULLS FIRST], false, 0
   +- Exchange hashpartitioning(k#5L, 4), ENSURE_REQUIREMENTS, [plan_id=40]
      +- *(3) Filter isnotnull(k#5L)
         +- *(3) ColumnarToRow
            +- FileScan parquet spark_catalog.default.bk2[id#4L,k#5L] Batched: true, Bucketed: false (disabled by configuration), DataFilters: [isnotnull(k#5L)], Format: Parquet, Location: InMemoryFileIndex(1 paths)[file:/tmp/wb/bk2], PartitionFilters: [], PushedFilters: [IsNotNull(k)], ReadSchema: struct<id:bigint,k:bigint>
"""


def test_scans_below_each_side_read_from_the_printed_plan_without_the_pruning_subquery():
    top = printed_plans.join_nodes(PrintedPlan(text=PRUNED), {"fact": "sales", "dim": "stores"})[0]
    assert top.scans == {"left": [{"table": "sales", "bucketed": False, "bucket_note": None, "pruning": "broadcast"}],
                         "right": []}  # the dimension's scan is inside the reused broadcast
    assert top.shuffles == {"left": 0, "right": 0}  # the subquery's exchange is not the join's
    dropped = PRUNED.replace("dynamicpruningexpression(p#25L IN dynamicpruning#30)", "dynamicpruningexpression(true)")
    assert printed_plans.join_nodes(PrintedPlan(text=dropped))[0].scans["left"][0]["pruning"] == "dropped"
    # before AQE has run (4.3.0's initial adaptive plan): SubqueryAdaptiveBroadcast, its third field onlyInBroadcast
    for only, kind in (("true", "adaptive_reuse_only"), ("false", "adaptive")):
        adaptive = PRUNED.replace("SubqueryBroadcast dynamicpruning#30, [0], [p#26L], [id=#192]",
                                  f"SubqueryAdaptiveBroadcast dynamicpruning#30, [0], {only}, Filter "
                                  "((isnotnull(c#27L) AND (c#27L = 1)) AND isnotnull(p#26L)), [p#26L]")
        assert printed_plans.join_nodes(PrintedPlan(text=adaptive))[0].scans["left"][0]["pruning"] == kind
    smj = printed_plans.join_nodes(PrintedPlan(text=BUCKETED))[0]
    assert [(s["table"], s["bucketed"], s["bucket_note"]) for side in ("left", "right") for s in smj.scans[side]] == [
        ("bk", True, "true"), ("bk2", False, "false (disabled by configuration)")]
    assert smj.shuffles == {"left": 0, "right": 1}
