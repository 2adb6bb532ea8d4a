"""The synthetic twin of a statistics-only scenario: generated data shaped by the
statistics (rows, distinct keys, nulls, ranges scaled), executed, its strategies compared
with each other; never the file's expectations."""
from __future__ import annotations

import pytest

from harness.check import runner
from harness.check.agreement import run_agreement
from harness.scenario.errors import ScenarioError
from harness.scenario.model import expand, load_scenario
from harness.scenario.twin import generated
from harness.spark import datagen

SCENARIO = """\
id: shop
description: a captured query
tables:
  orders:
    schema: {order_id: long, customer_id: long, amount: 'decimal(10,2)', day: date, note: string,
             score: float, tags: 'array<int>'}
    stats:
      size_bytes: 900000000
      rows: 20000000
      columns:
        order_id: {distinct: 20000000, nulls: 0, min: 1, max: 20000000}
        customer_id: {distinct: 500000, nulls: 2000000, min: 1, max: 500000}
        amount: {distinct: 90000, nulls: 0, min: 0.5, max: 999.5}
        day: {distinct: 366, nulls: 0, min: '2024-01-01', max: '2024-12-31'}
        note: {distinct: 1000, nulls: 0, avg_len: 12, max_len: 40}
  customers:
    schema: {id: long, country: string}
    stats:
      size_bytes: 30000000
      rows: 500000
      columns:
        id: {distinct: 500000, nulls: 0, min: 1, max: 500000}
        country: {distinct: 20, nulls: 0, avg_len: 8, max_len: 8}
  recent:
    from: orders
    steps: [{filter: "order_id > 19800000"}]
join:
  sql: |
    SELECT c.country, count(*) AS n, sum(r.amount) AS paid
    FROM recent r JOIN customers c ON r.customer_id = c.id
    GROUP BY c.country
synthetic: {scale: 0.001}
expect: {strategy: SortMergeJoin}
"""


def test_the_twin_is_shaped_by_the_statistics(write_scenario):
    scenario = load_scenario(write_scenario(SCENARIO))
    tables = scenario.data["tables"]
    orders = generated(tables["orders"], 0.001, 1_000_000)
    assert orders["rows"] == 20000
    columns = orders["columns"]
    # 20M distinct ids over 1..20M scaled to 20,000 keys: every 1,000th id (a range filter keeps its share)
    assert columns["order_id"] == {"sequence": {"start": 1, "step": 1000}, "type": "long"}  # unique: each once
    # 500k customers: 1,000 kept (never fewer), on the same grid as the customers' own ids
    assert columns["customer_id"] == {"key": {"cardinality": 1000, "start": 1, "step": 500}, "type": "long",
                                      "nulls": 0.1}
    customers = generated(tables["customers"], 0.001, 1_000_000)
    assert customers["rows"] == 1000 and customers["columns"]["id"]["sequence"] == {"start": 1, "step": 500}
    assert customers["columns"]["country"] == {"key": {"cardinality": 20}, "type": "string"}  # all kept
    assert columns["amount"] == {"uniform": {"min": 0.5, "max": 999.5}, "type": "decimal(10,2)"}
    assert columns["day"] == {"uniform": {"min": "2024-01-01", "max": "2024-12-31"}, "type": "date"}
    assert columns["note"] == {"key": {"cardinality": 1000}, "type": "string"}
    assert columns["score"] == {"uniform": {"min": 0.0, "max": 1.0}, "type": "double"}
    assert columns["tags"] == {"expr": "CAST(NULL AS array<int>)"}
    assert generated(tables["orders"], 0.5, 1000)["rows"] == 1000  # max_rows bounds it


def test_a_twin_case_follows_each_case_and_never_takes_the_expectations(write_scenario):
    cases = expand(load_scenario(write_scenario(SCENARIO)))
    assert [c.case_id for c in cases] == ["shop", "shop.synthetic"]
    twin = cases[1]
    assert twin.scenario.twin_of == "shop" and twin.expect == {}
    assert twin.scenario.data["tables"]["recent"] == cases[0].scenario.data["tables"]["recent"]
    assert not twin.scenario.plan_only and cases[0].scenario.plan_only
    from harness.check.agreement import agreement_id, agreement_representatives
    assert [agreement_id(c) for c in agreement_representatives(cases)] == ["shop[agree]", "shop.synthetic[agree]"]


def test_a_twin_runs_its_data_and_its_cross_strategy_check(session, write_scenario):
    twin = expand(load_scenario(write_scenario(SCENARIO)))[1]
    record = runner.run_case(twin, session)
    # nothing declared, and the independent engine gave the same rows: passed, saying so
    assert record.status == "passed" and record.observed.reference["agrees"], record.message
    assert record.message.startswith("nothing declared; DuckDB")
    assert record.observed.rows == 20  # one row per country: the keys met
    spark = session.spark
    spec = twin.scenario.data["tables"]
    orders = datagen.build_table(spark, twin.scenario.seed, "orders", spec["orders"], session.workdir)
    customers = datagen.build_table(spark, twin.scenario.seed, "customers", spec["customers"], session.workdir)
    counts = orders.selectExpr("count(*) AS n", "count(customer_id) AS keyed", "count(DISTINCT customer_id) AS d",
                               "sum(CAST(order_id > 19800000 AS INT)) AS recent").first()
    assert counts["n"] == 20000 and 0.08 < 1 - counts["keyed"] / 20000 < 0.12 and counts["d"] == 1000
    assert 150 <= counts["recent"] <= 250  # the filter keeps ~1%, as on 20M rows
    matched = orders.join(customers, orders.customer_id == customers.id).count()
    assert matched == counts["keyed"]  # every non-null key has its customer
    agreement = run_agreement(twin, session)
    assert agreement.status == "passed", agreement.message


def test_a_twin_without_statistics_only_tables_is_a_load_error(write_scenario):
    text = """\
    id: plain
    description: d
    tables:
      a: {rows: 10, columns: {k: {sequence: {}}}}
    join: {left: a, right: a, on: [k]}
    synthetic: {scale: 0.5}
    expect: {}
    """
    with pytest.raises(ScenarioError) as info:
        load_scenario(write_scenario(text))
    assert "case.yaml:6: synthetic: a synthetic twin replaces statistics-only tables" in str(info.value)


def test_extreme_statistics_give_keys_inside_a_long(session, write_scenario):
    """Statistics spanning the whole long range: keys stay longs (no overflow of
    rank × step under ANSI, no -2^63 literal), and the twin runs."""
    text = SCENARIO.replace("order_id: {distinct: 20000000, nulls: 0, min: 1, max: 20000000}",
                            "order_id: {distinct: 20000000, nulls: 0, min: -9223372036854775808, "
                            "max: 9223372036854775807}")
    twin = expand(load_scenario(write_scenario(text)))[1]
    spec = twin.scenario.data["tables"]["orders"]["columns"]["order_id"]
    assert spec["sequence"]["start"] == -(2 ** 63 - 1)
    assert spec["sequence"]["step"] * (20000 - 1) <= 2 ** 63 - 1
    record = runner.run_case(twin, session)
    assert record.status == "passed" and record.observed.reference["agrees"], record.message
