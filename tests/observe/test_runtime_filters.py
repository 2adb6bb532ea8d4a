"""Runtime filters (InjectRuntimeFilter) as an observation on real Spark: which scan gets
a bloom filter from which table, the IN-subquery variant told from a query's own semi
join, `expect.runtime_filters`, what a release before 3.3 says, and the diff's kind."""
import pytest

from harness.check import expect, runner
from harness.core.records import Observation, PlanView
from harness.core.vocab import spark_version
from harness.observe.describe import undefined_conf_words, why_lines
from harness.observe.runtime_filters import in_subquery_filters, runtime_filter_words
from harness.report import diff
from harness.scenario.model import expand, load_scenario

FACT = """\
id: bloom_fact
description: a fact and a dimension filtered to one region, broadcasts off
tables:
  sales:
    rows: 20000
    materialize: catalog
    columns:
      customer: {key: {cardinality: 2000}}
      amount: {uniform: {min: 0, max: 100}}
  customers:
    rows: 2000
    materialize: catalog
    columns:
      customer: {sequence: {start: 0}}
      region: {values: [EU, US, APAC, LATAM]}
join:
  sql: SELECT s.amount, c.region FROM sales s JOIN customers c ON s.customer = c.customer WHERE c.region = 'EU'
spark_conf:
  spark.sql.autoBroadcastJoinThreshold: -1
  spark.sql.optimizer.runtime.bloomFilter.enabled: BLOOM
  spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold: 1
expect:
  plan: both
  runtime_filters: EXPECTED
"""

BLOOM = {"kind": "bloom_filter", "table": "sales", "key": "customer", "creation": ["customers"],
         "creation_key": "customer"}


def _case(write_scenario, bloom: str, expected: str, name: str = "a.yaml"):
    text = FACT.replace("BLOOM", bloom).replace("EXPECTED", expected)
    return expand(load_scenario(write_scenario(text.replace("bloom_fact", name[:-5]), name)))[0]


def test_a_bloom_filter_is_read_with_its_scan_key_and_creation_side(session, write_scenario):
    if spark_version(session.versions["spark"]) < spark_version("3.3.0"):
        pytest.skip("no runtime filters before Spark 3.3.0")
    case = _case(write_scenario, "true", "{table: sales, filter: bloom_filter, from: customers}")
    record = runner.run_case(case, session)
    assert record.status == "passed", record.message
    assert record.observed.initial.runtime_filters == [BLOOM]
    assert record.observed.final.runtime_filters == [{**BLOOM, "ran": True}]  # its subquery was computed
    assert any(line.startswith("runtime filters: a bloom filter on sales.customer built from customers.customer")
               for line in why_lines(record.to_json()))
    off = runner.run_case(_case(write_scenario, "false", "{table: sales, filter: bloom_filter}", "b.yaml"), session)
    assert off.status == "failed"
    assert "expected a bloom filter on sales's scan, observed none" in off.message
    assert "runtime filters: none (bloom filters off: spark.sql.optimizer.runtime.bloomFilter.enabled=false)" in \
        why_lines(off.to_json())
    none = runner.run_case(_case(write_scenario, "false", "[{table: sales, filter: none}, {table: customers, "
                                                         "filter: none}]", "c.yaml"), session)
    assert none.status == "passed", none.message and none.observed.initial.runtime_filters == []


def test_a_release_before_3_3_says_it_plans_none(session, write_scenario):
    case = _case(write_scenario, "true", "{table: sales, filter: bloom_filter}")
    wanted = expect.resolve(case, "3.2.4")
    observed = Observation(initial=PlanView(runtime_filters=[]))
    assert expect.compare(wanted, observed, "3.2.4") == []
    assert expect.not_checkable(wanted, observed, "3.2.4") == [expect.NO_RUNTIME_FILTERS]
    assert runner._unchecked_words([expect.NO_RUNTIME_FILTERS], "3.2.4") == [
        "no runtime filters on this version: Spark 3.2.4 plans none (3.3.0 added them)"]
    # none asked for: checkable, and true, on any release
    assert expect.not_checkable(expect.resolve(_case(write_scenario, "true", "{table: sales, filter: none}", "n.yaml"),
                                               "3.2.4"), observed, "3.2.4") == []
    # a plan not read (Connect's printed plans): not checkable, never passed
    unread = Observation(initial=PlanView(runtime_filters=None))
    assert expect.not_checkable(wanted, unread, "4.3.0") == ["runtime_filters"]


def test_the_in_subquery_variant_is_told_from_a_query_s_own_semi_join():
    injected = {"strategy": "BroadcastHashJoin", "join_type": "LeftSemi", "left_keys": "List(hash(customer#42L, 42))",
                "right_keys": "List(hash(customer#52L, 42)#70)",
                "scans": {"left": [{"table": "sales"}], "right": [{"table": "customers"}]}}
    written = {**injected, "left_keys": "List(customer#42L)", "right_keys": "List(customer#52L)"}
    assert in_subquery_filters([written]) == []
    assert in_subquery_filters([injected, written]) == [
        {"kind": "in_subquery", "table": "sales", "key": "customer", "creation": ["customers"],
         "creation_key": "customer"}]
    int_key = {**injected, "left_keys": "List(k#1)", "right_keys": "List(k#7#70)"}  # an int key: not hashed
    assert [f["key"] for f in in_subquery_filters([int_key])] == ["k"]


def test_the_diff_lists_a_filter_that_appeared_or_moved():
    def record(filters):
        return {"status": "passed", "message": "", "observed": {"initial": {"joins": [], "runtime_filters": filters},
                                                                 "adaptive": True}}
    assert diff.case_changes(record([]), record([BLOOM])) == [
        ("runtime filter", "initial: appeared: a bloom filter on sales.customer built from customers")]
    moved = {**BLOOM, "creation": ["regions"]}
    assert diff.case_changes(record([BLOOM]), record([moved])) == [
        ("runtime filter", "initial: a bloom filter on sales.customer built from customers → "
                           "a bloom filter on sales.customer built from regions")]
    assert diff.case_changes(record(None), record([BLOOM])) == []  # not read on one side: no change claimed


def test_a_config_a_release_removed_is_said_so(session, write_scenario):
    key = "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled"
    text = FACT.replace("BLOOM", "false").replace("expect:\n  plan: both\n  runtime_filters: EXPECTED\n",
                                                  "expect: {}\n")
    text = text.replace("spark_conf:\n", f"spark_conf:\n  {key}: true\n")
    record = runner.run_case(expand(load_scenario(write_scenario(text)))[0], session)
    if spark_version(session.versions["spark"]) >= spark_version("4.0.0"):
        assert record.observed.undefined_conf == [key] and record.observed.removed_conf == {key: "4.0.0"}
        assert undefined_conf_words([key], "4.3.0", record.observed.removed_conf) == \
            f"removed on Spark 4.3.0, not set: {key} (removed in 4.0.0)"
    else:
        assert record.observed.removed_conf is None
    assert undefined_conf_words(["x.y"], "3.5.9") == "not defined on Spark 3.5.9: no effect: x.y"


def test_filter_words():
    assert runtime_filter_words({**BLOOM, "ran": False}) == \
        "a bloom filter on sales.customer built from customers.customer (its subquery did not run)"


def test_the_capture_self_check_compares_runtime_filters():
    from harness.capturing.fidelity import differences
    real = {"joins": [], "estimates": [], "runtime_filters": [runtime_filter_words(BLOOM)]}
    assert differences(real, {**real, "runtime_filters": []}) == [
        "runtime filters: real a bloom filter on sales.customer built from customers.customer, replay none"]
    assert differences(real, real) == []


# Spark 3.5.9's `explain` (simple) of a bloom filter, as Spark Connect's server prints it.
PRINTED = """\
AdaptiveSparkPlan isFinalPlan=false
+- HashAggregate(keys=[], functions=[count(1), sum(cast(xxhash64(c0#60, c1#61, 42) as decimal(38,0)))], output=[rows#64L, hash_sum#65])
   +- Exchange SinglePartition, ENSURE_REQUIREMENTS, [plan_id=99]
      +- HashAggregate(keys=[], functions=[partial_count(1), partial_sum(cast(xxhash64(c0#60, c1#61, 42) as decimal(38,0)))], output=[count#76L, sum#77, isEmpty#78])
         +- Project [amount#43 AS c0#60, region#53 AS c1#61]
            +- SortMergeJoin [customer#42L], [customer#52L], Inner
               :- Sort [customer#42L ASC NULLS FIRST], false, 0
               :  +- Exchange hashpartitioning(customer#42L, 200), ENSURE_REQUIREMENTS, [plan_id=91]
               :     +- Filter (isnotnull(customer#42L) AND might_contain(Subquery subquery#72, [id=#78], xxhash64(customer#42L, 42)))
               :        :  +- Subquery subquery#72, [id=#78]
               :        :     +- AdaptiveSparkPlan isFinalPlan=false
               :        :        +- ObjectHashAggregate(keys=[], functions=[bloom_filter_agg(xxhash64(customer#52L, 42), 1000000, 8388608, 0, 0)], output=[bloomFilter#71])
               :        :           +- Exchange SinglePartition, ENSURE_REQUIREMENTS, [plan_id=76]
               :        :              +- ObjectHashAggregate(keys=[], functions=[partial_bloom_filter_agg(xxhash64(customer#52L, 42), 1000000, 8388608, 0, 0)], output=[buf#80])
               :        :                 +- Project [customer#52L]
               :        :                    +- Filter ((isnotnull(region#53) AND (region#53 = EU)) AND isnotnull(customer#52L))
               :        :                       +- FileScan parquet spark_catalog.default.customers[customer#52L,region#53] Batched: true, DataFilters: [isnotnull(region#53), (region#53 = EU), isnotnull(customer#52L)], Format: Parquet, PartitionFilters: [], PushedFilters: [IsNotNull(region), EqualTo(region,EU), IsNotNull(customer)], ReadSchema: struct<customer:bigint,region:string>
               :        +- FileScan parquet spark_catalog.default.sales[customer#42L,amount#43] Batched: true, DataFilters: [isnotnull(customer#42L)], Format: Parquet, PartitionFilters: [], PushedFilters: [IsNotNull(customer)], ReadSchema: struct<customer:bigint,amount:double>
               +- Sort [customer#52L ASC NULLS FIRST], false, 0
                  +- Exchange hashpartitioning(customer#52L, 200), ENSURE_REQUIREMENTS, [plan_id=92]
                     +- Filter ((isnotnull(region#53) AND (region#53 = EU)) AND isnotnull(customer#52L))
                        +- FileScan parquet spark_catalog.default.customers[customer#52L,region#53] Batched: true, DataFilters: [isnotnull(region#53), (region#53 = EU), isnotnull(customer#52L)], Format: Parquet, PartitionFilters: [], PushedFilters: [IsNotNull(region), EqualTo(region,EU), IsNotNull(customer)], ReadSchema: struct<customer:bigint,region:string>

"""


def test_a_bloom_filter_is_read_from_a_printed_plan_too():
    from harness.observe import printed_plans
    plan = printed_plans.PrintedPlan(text=PRINTED)
    assert printed_plans.runtime_filters(plan) == [BLOOM]
    assert printed_plans.runtime_filters(printed_plans.PrintedPlan(text="", final=True)) is None  # metrics only


def test_the_plan_picture_draws_a_bloom_filter_as_one():
    from harness.observe.plan_tree import BLOOM_FILTER_NAME, parse

    def names(node):
        return [node["name"]] + [n for child in node["children"] for n in names(child)]
    drawn = names(next(iter(parse(PRINTED).values())))
    assert drawn.count(BLOOM_FILTER_NAME) == 1 and drawn.count("Filter") == 2


def test_a_semi_join_is_called_a_runtime_filter_only_where_spark_can_inject_one():
    """A query's own IN subquery whose column a file named like Spark's alias (`x#1`)
    prints like the injected one: with semi-join reduction off it is no runtime filter."""
    from harness.observe import filter_plans, printed_plans
    lookalike = {"strategy": "BroadcastHashJoin", "join_type": "LeftSemi", "left_keys": "List(customer#42L)",
                 "right_keys": "List(x#1#70)", "scans": {"left": [{"table": "sales"}], "right": [{"table": "customers"}]}}
    plan = printed_plans.PrintedPlan(text=PRINTED)
    assert [f["kind"] for f in filter_plans.read(plan, [lookalike])] == ["bloom_filter"]
    assert [f["kind"] for f in filter_plans.read(plan, [lookalike], semi_join_reduction=True)] == \
        ["bloom_filter", "in_subquery"]
    assert filter_plans.semi_join_reduction_on({filter_plans.SEMI_JOIN_REDUCTION: "true"}.get)
    assert not filter_plans.semi_join_reduction_on({}.get)
