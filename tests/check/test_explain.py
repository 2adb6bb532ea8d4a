"""The join-selection model on real Spark: explain, and `strategy: predicted`."""
import io

from harness.check import expect, explain
from harness.check.runner import run_case
from harness.observe import model
from harness.scenario.model import expand, load_scenario
from tests.conftest import MINIMAL


def test_explain_prints_the_rules_next_to_what_spark_chose(write_scenario, session):
    path = write_scenario(MINIMAL)
    out = io.StringIO()
    assert explain.main([str(path)], out=out) == 0
    text = out.getvalue()
    assert "model:    equi-join · no hint · rule 1: right estimate" in text
    assert "≤ autoBroadcastJoinThreshold 10,485,760 B (both fit: the smaller) → BroadcastHashJoin, build right" in text
    assert "observed: BroadcastHashJoin (build right)  [agrees]" in text
    assert "the model agrees on 1 of 1 cases (100.0%)" in text
    assert "expected: BroadcastHashJoin (build right) → holds" in text


def test_explain_says_whether_the_expectation_holds_and_what_it_cannot_check(write_scenario, session):
    wrong = MINIMAL.replace("  build_side: right\n", "  build_side: left\n  rows: 100\n")
    out = io.StringIO()
    explain.main([str(write_scenario(wrong))], out=out)
    assert ("expected: BroadcastHashJoin (build left); 100 rows → DOES NOT HOLD: initial plan: expected build side "
            "left, observed BroadcastHashJoin (build right) (needs the query to run, not checked here: rows)") in out.getvalue()
    final_only = MINIMAL.replace("  build_side: right\n", "  build_side: right\n  plan: final\n")
    out = io.StringIO()
    explain.main([str(write_scenario(final_only, "final.yaml"))], out=out)
    assert "→ needs the query to run (strategy, build_side): pytest checks it" in out.getvalue()


def test_strategy_predicted_holds_spark_to_the_rules(write_scenario, session):
    text = MINIMAL.replace("  strategy: BroadcastHashJoin\n  build_side: right\n", "  strategy: predicted\n")
    case = expand(load_scenario(write_scenario(text)))[0]
    record = run_case(case, session).to_json()
    assert record["status"] == "passed", record["message"]
    assert record["expected"]["strategy"] == model.BHJ and record["expected"]["build_side"] == "right"
    assert record["model"]["agrees"] and not record["model"]["drift"]
    # With the threshold disabled the prediction moves with Spark: sort-merge, still passing.
    text = text.replace("expect:", "spark_conf:\n  spark.sql.autoBroadcastJoinThreshold: -1\nexpect:")
    case = expand(load_scenario(write_scenario(text, "off.yaml")))[0]
    record = run_case(case, session).to_json()
    assert record["status"] == "passed" and record["expected"]["strategy"] == model.SMJ
    assert "autoBroadcastJoinThreshold -1 disables broadcasting" in record["model"]["explanation"]
    assert expect.resolve(case, "4.3.0")["strategy"] == "predicted"
