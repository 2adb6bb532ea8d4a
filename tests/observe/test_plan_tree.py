"""Plan text → operator trees for the plan pictures, on plan texts Spark printed (tests/data:
4.3.0 and 3.1.3, adaptive and static, an adaptive plan nested in a cached relation)."""
from pathlib import Path

from harness.observe import plan_tree

DATA = Path(__file__).parents[1] / "data"


def _text(name):
    return (DATA / name).read_text()


def _names(node, depth=0):
    out = [("  " * depth) + node["name"] + (f" [{node['join']['build_side']}]" if "join" in node else "")]
    for child in node["children"]:
        out += _names(child, depth + 1)
    return out


def test_an_adaptive_plan_gives_its_final_and_initial_trees():
    trees = plan_tree.parse(_text("plan-4.3.0-aqe-final.txt"))
    assert set(trees) == {"final", "initial"}
    final = _names(trees["final"])
    assert final[:7] == ["ResultQueryStage", "  HashAggregate", "    ShuffleQueryStage", "      Exchange",
                         "        HashAggregate", "          Project", "            BroadcastHashJoin [right]"]
    join = trees["final"]["children"][0]["children"][0]["children"][0]["children"][0]["children"][0]["children"][0]
    assert [c["name"] for c in join["children"]] == ["AQEShuffleRead", "BroadcastQueryStage"]
    assert "        SortMergeJoin [none]" in _names(trees["initial"])
    assert trees["initial"]["name"] == "HashAggregate"


def test_spark_3_1_names_and_a_static_plan():
    final = _names(plan_tree.parse(_text("plan-3.1.3-aqe-final.txt"))["final"])
    assert any("CustomShuffleReader" in line for line in final)  # 3.1's name of AQEShuffleRead
    static = plan_tree.parse(_text("plan-4.3.0-static.txt"))
    assert set(static) == {"plan"}
    names = _names(static["plan"])
    assert "        SortMergeJoin [none]" in names and names.count("          Sort") == 2


def test_a_nested_adaptive_plan_stays_inside_its_parent():
    names = _names(plan_tree.parse(_text("plan-4.3.0-nested-aqe.txt"))["plan"])
    at = names.index("                InMemoryRelation")
    assert names[at + 1].strip() == "AdaptiveSparkPlan"
    assert names[at + 2].strip() == "== Final Plan ==" and names[at + 3].strip() == "ResultQueryStage"
    assert names[-4:] == ["          Sort", "            Exchange", "              Project", "                Range"]


def test_pictures_of_a_record_and_text_that_is_not_a_plan():
    record = {"kind": "case", "observed": {"initial": {"text": _text("plan-4.3.0-aqe-final.txt")},
                                           "final": {"text": _text("plan-4.3.0-aqe-final.txt"),
                                                     "runtime": {"left": {"size_in_bytes": 5}}},
                                           "estimates": [{"left": {"size_in_bytes": 36}, "right": {"size_in_bytes": 24}}],
                                           "join_conf": {"spark.sql.autoBroadcastJoinThreshold": "10485760b"}}}
    drawn = plan_tree.pictures(record)
    assert drawn["initial"][0] == "HashAggregate" and drawn["final"][0] == "ResultQueryStage"
    assert drawn["estimates"] == {"left": 36, "right": 24} and drawn["runtime"] == {"left": 5, "right": None}
    assert drawn["threshold"] == "10,485,760 B"
    assert plan_tree.pictures({"observed": {}}) is None
    assert plan_tree.parse("") == {} and plan_tree.parse("<script>alert(1)</script>")["plan"]["name"] == "<script>alert(1)</script>"  # escaped when drawn
    deep = "\n".join(("   " * i) + "+- Project" for i in range(5000))
    assert len(_names(plan_tree.parse("Root\n" + deep)["plan"])) == plan_tree.MAX_NODES


def test_spark_3_0_prints_only_the_final_plan_after_the_run():
    text = _text("plan-3.0.3-aqe-final.txt")  # smj_to_bhj_runtime[aqe=on] on 3.0.3, printed after the run
    drawn = plan_tree.pictures({"observed": {"initial": {"text": text}, "final": {"text": text}}})
    assert drawn["initial"] is None  # not drawn as the initial plan: it is the final one
    assert "          BroadcastHashJoin [right]" in _names(plan_tree.parse(text)["plan"])
    assert drawn["final"][0] == "HashAggregate"


def test_join_nodes_read_from_text_as_from_the_jvm():
    # what harness.observe.jvm_plans read from the JVM for these runs (initial plans, pre-order)
    static = plan_tree.parse(_text("plan-4.3.0-static.txt"))["plan"]
    assert plan_tree.join_nodes(static) == [{"strategy": "SortMergeJoin", "build_side": "none"}]
    final = plan_tree.parse(_text("plan-4.3.0-aqe-final.txt"))
    assert plan_tree.join_nodes(final["final"]) == [{"strategy": "BroadcastHashJoin", "build_side": "right"}]
    assert plan_tree.join_nodes(final["initial"]) == [{"strategy": "SortMergeJoin", "build_side": "none"}]
    assert plan_tree.join_of("ShuffledHashJoin", "ShuffledHashJoin [k#1L], [k#2L], LeftOuter, BuildLeft") == \
        {"strategy": "ShuffledHashJoin", "build_side": "left"}
    assert plan_tree.join_of("Project", "Project [BuildLeft#1]") is None
