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


SKEWED = """\
id: skewed
description: half the orders in ten of 10,000 stores and in the first quarter, half the amounts under 10
tables:
  orders:
    schema: {order_id: long, store_id: long, day: date, amount: double, at: timestamp}
    stats:
      size_bytes: 600000000
      rows: 25000000
      columns:
        order_id: {distinct: 25000000, nulls: 0, min: 1, max: 25000000}
        store_id:
          distinct: 10000
          min: 1
          max: 10000
          histogram:
            height: 2500000
            bins: [[1, 2, 2], [2, 4, 2], [4, 6, 2], [6, 8, 2], [8, 10, 2], [10, 2008, 1998], [2008, 4006, 1998],
                   [4006, 6004, 1998], [6004, 8002, 1998], [8002, 10000, 1998]]
        day:
          min: '2024-01-01'
          max: '2024-12-31'
          histogram: {height: 12500000, bins: [[19723, 19813, 91], [19813, 20088, 275]]}
        amount:
          min: 0.5
          max: 999.5
          histogram: {height: 12500000, bins: [[0.5, 10.0, 900], [10.0, 999.5, 9000]]}
        at:
          min: '2024-01-01 00:00:00'
          max: '2024-01-02 00:00:00'
          histogram: {height: 12500000, bins: [[1704067200000000, 1704070800000000, 3600],
                                               [1704070800000000, 1704153600000000, 82800]]}
  stores:
    schema: {id: long}
    stats:
      size_bytes: 80000
      rows: 10000
      columns:
        id: {distinct: 10000, nulls: 0, min: 1, max: 10000}
join: {left: orders, right: stores, on: [[store_id, id]]}
synthetic: {scale: 0.001}
expect: {strategy: SortMergeJoin}
"""


def test_a_twin_holds_the_skew_of_its_histograms(session, write_scenario):
    """Equal shares of rows in each bin, on the key grid the dimension's own ids use: the
    skew a filter or a join meets in production, and every order still finds its store."""
    twin = expand(load_scenario(write_scenario(SKEWED)))[1]
    spec = twin.scenario.data["tables"]
    store_id = spec["orders"]["columns"]["store_id"]["key"]
    assert store_id["cardinality"] == 1000 and store_id["step"] == 10  # the stores' grid: 1, 11, 21, ...
    assert store_id["bins"][:5] == [[0, 0]] * 5 and store_id["bins"][5] == [1, 200]
    assert spec["orders"]["columns"]["day"]["uniform"]["bins"] == [["2024-01-01", "2024-03-31"],
                                                                   ["2024-03-31", "2024-12-31"]]
    assert spec["orders"]["columns"]["at"]["uniform"]["bins"] == [["2024-01-01 00:00:00", "2024-01-01 01:00:00"],
                                                                  ["2024-01-01 01:00:00", "2024-01-02 00:00:00"]]
    spark = session.spark
    orders = datagen.build_table(spark, twin.scenario.seed, "orders", spec["orders"], session.workdir)
    stores = datagen.build_table(spark, twin.scenario.seed, "stores", spec["stores"], session.workdir)
    shares = orders.selectExpr("avg(CAST(store_id <= 10 AS INT)) AS big_stores",
                               "avg(CAST(day <= DATE'2024-03-31' AS INT)) AS first_quarter",
                               "avg(CAST(amount < 10 AS INT)) AS small", "min(day) AS first", "max(day) AS last",
                               "avg(CAST(at < TIMESTAMP'2024-01-01 01:00:00' AS INT)) AS first_hour",
                               "count(DISTINCT store_id) AS keys").first()
    assert 0.47 < shares["big_stores"] < 0.53  # five bins of ten, all on store 1 (the grid's key at or below them)
    assert 0.47 < shares["first_quarter"] < 0.53 and 0.47 < shares["small"] < 0.53
    assert 0.47 < shares["first_hour"] < 0.53
    assert str(shares["first"]) >= "2024-01-01" and str(shares["last"]) <= "2024-12-31"
    assert shares["keys"] <= 1000
    assert orders.join(stores, orders.store_id == stores.id).count() == 25000  # every order meets its store
    record = runner.run_case(twin, session)
    assert record.status == "passed" and record.observed.reference["agrees"], record.message


@pytest.mark.parametrize("column, says", [
    ('{key: {cardinality: 10, zipf: 1.1, bins: [[0, 3]]}}', "key.bins: bins shape the keys themselves"),
    ('{key: {cardinality: 10, bins: [[0, 10]]}}', "key.bins[0]: outside [0, 9]"),
    ('{key: {cardinality: 10, bins: [[4, 6], [2, 3]]}}', "key.bins[1]: bins must be ascending"),
    ('{uniform: {min: 0, max: 100, bins: [[50, 20]]}}', "uniform.bins[0]: the first bound is above the last"),
    ('{uniform: {min: "2024-01-01", max: "2024-12-31", bins: [["2023-12-01", "2024-02-01"]]}, type: date}',
     "uniform.bins[0]: outside"),
    ('{uniform: {min: "2024-01-01", max: "2024-12-31", bins: [[1, 2]]}, type: date}',
     "uniform.bins[0][0]: a date bound is written as a quoted ISO string"),
])
def test_bins_a_generator_cannot_make_are_load_errors(write_scenario, column, says):
    text = f"""\
id: bins
description: d
tables:
  a: {{rows: 10, columns: {{k: {column}}}}}
join: {{left: a, right: a, on: [k]}}
expect: {{}}
"""
    with pytest.raises(ScenarioError) as info:
        load_scenario(write_scenario(text))
    assert says in str(info.value), str(info.value)


def test_histogram_bounds_past_any_calendar_take_the_statistics_own():
    table = {"schema": {"d": "date", "ts": "timestamp"},
             "stats": {"size_bytes": 1000, "rows": 100, "columns": {
                 "d": {"min": "2024-01-01", "max": "2024-12-31",
                       "histogram": {"height": 50, "bins": [[-1e15, 19800, 1], [19800, 1e15, 1]]}},
                 "ts": {"min": "2024-01-01 00:00:00", "max": "2024-12-31 00:00:00",
                        "histogram": {"height": 50, "bins": [[-1e300, 0, 1], [0, 1e300, 1]]}}}}}
    columns = generated(table, 1.0, 1000)["columns"]
    assert columns["d"]["uniform"]["bins"] == [["2024-01-01", "2024-03-18"], ["2024-03-18", "2024-12-31"]]
    assert columns["ts"]["uniform"]["bins"] == [["2024-01-01 00:00:00", "2024-01-01 00:00:00"],
                                                ["2024-01-01 00:00:00", "2024-12-31 00:00:00"]]


def test_a_bin_outside_the_statistics_bounds_shrinks_to_the_nearer_one():
    table = {"schema": {"x": "double", "n": "long"},
             "stats": {"size_bytes": 1000, "rows": 100, "columns": {
                 "x": {"min": 0.0, "max": 10.0, "histogram": {"height": 50, "bins": [[-5.0, 4.0, 1], [20.0, 30.0, 1]]}},
                 "n": {"min": 0, "max": 10, "histogram": {"height": 50, "bins": [[-5, 4, 1], [20, 30, 1]]}}}}}
    columns = generated(table, 1.0, 1000)["columns"]
    assert columns["x"]["uniform"]["bins"] == [[0.0, 4.0], [10.0, 10.0]]
    assert columns["n"]["uniform"]["bins"] == [[0, 4], [10, 10]]
