"""Derived inputs (SQL, join, steps; own configs; cache; hints) and statistics-only
tables: what a file may say, what Spark is asked, and what the checks report."""
from __future__ import annotations

import json

import pytest

from harness.check import runner
from harness.check.agreement import run_agreement
from harness.scenario.errors import ScenarioError
from harness.scenario.model import expand, load_scenario

BASE = """\
id: derived
description: derived inputs
tables:
  a: {rows: 2000, columns: {k: {key: {cardinality: 100}}, v: {sequence: {}}}}
  b: {rows: 100, columns: {k: {sequence: {}}, w: {uniform: {min: 0, max: 9}}}}
%s
join: {left: a, right: %s, on: [k]}
expect: {}
"""


def scenario_text(tables: str, right: str = "d", expect: str = "{}") -> str:
    return (BASE % (tables, right)).replace("expect: {}", f"expect: {expect}")


def error_of(write_scenario, text: str) -> str:
    with pytest.raises(ScenarioError) as info:
        load_scenario(write_scenario(text))
    return str(info.value)


@pytest.mark.parametrize("tables, says", [
    ("  d: {from: e}\n  e: {from: a}", "case.yaml:6: tables.d.from: 'e' is not declared before 'd'"),
    ("  d: {from: a, sql: 'SELECT * FROM a'}", "tables.d.sql: a derived table has one source: from or sql or join"),
    ("  d: {from: a, rows: 5}", "tables.d.rows: a derived table has no 'rows'"),
    ("  d: {from: a, steps: [{filter: 'k > 1', coalesce: 2}]}", "tables.d.steps[0]: one operation per step"),
    ("  d: {from: a, steps: [persist]}", "tables.d.steps[0]: 'persist' is not allowed (allowed: cache, drop_duplicates)"),
    ("  d: {from: a, steps: [{hint: BRODCAST}]}", "tables.d.steps[0].hint: unknown hint 'BRODCAST' (did you mean"),
    ("  d: {from: a, spark_conf: {spark.sql.warehouse.dir: /tmp}}", "tables.d.spark_conf.spark.sql.warehouse.dir: "),
    ("  d: {join: {left: a, right: b, on: [kk]}}", "tables.d.join.on[0]: unknown column 'kk' in left table 'a'"),
    ("  d: {schema: {k: long}, stats: {size_bytes: 5}, values: [[1]]}", "tables.d.values: a statistics-only table "
                                                                         "has no 'values'"),
    ("  d: {schema: {k: long}, stats: {size_bytes: 5, rows: 5, columns: {kk: {distinct: 3}}}}",
     "tables.d.stats.columns.kk: 'kk' is not a column of the schema"),
    ("  d: {schema: {k: long}, stats: {size_bytes: 5, columns: {k: {distinct: 3}}}}",
     "tables.d.stats.columns: column statistics need `rows`"),
    ("  d: {schema: {k: long, n: string}, stats: {size_bytes: 5, rows: 5, columns: {n: {min: a}}}}",
     "tables.d.stats.columns.n.min: Spark keeps no min/max for string columns"),
    ("  d: {schema: {k: long}, stats: {size_bytes: 5, rows: 5, columns: {k: {min: '2020-01-01'}}}}",
     "tables.d.stats.columns.k.min: '2020-01-01' is not a long"),
    ("  d: {schema: {k: long}, stats: {size_bytes: 5, rows: 5, columns: {k: {nulls: 6}}}}",
     "tables.d.stats.columns.k.nulls: more nulls than rows"),
    ("  d: {schema: {k: long}, stats: {size_bytes: 5}, materialize: catalog}",
     "tables.d.materialize: a statistics-only table has no 'materialize'"),
    ("  d: {from: a, steps: [{cache: {size_bytes: 5}}]}",
     "tables.d.steps[0].cache: a cache sized as Spark sized it replays a plan-only scenario"),
    ("  d: {schema: {k: long}, stats: {size_bytes: 5}}\n  e: {from: d, steps: [{cache: {size_bytes: 5, columns: "
     "{k: {distinct: 1}}}}]}", "tables.e.steps[0].cache.columns: column statistics need `rows`"),
    ("  d: {schema: {k: long, n: string}, stats: {size_bytes: 5, rows: 5, columns: "
     "{n: {histogram: {height: 1, bins: [[0, 1, 1]]}}}}}",
     "tables.d.stats.columns.n.histogram: Spark keeps no histogram for string columns"),
    ("  d: {schema: {k: boolean}, stats: {size_bytes: 5, rows: 5, columns: "
     "{k: {histogram: {height: 1, bins: [[0, 1, 1]]}}}}}",
     "tables.d.stats.columns.k.histogram: Spark keeps no histogram for boolean columns"),
    ("  d: {schema: {k: long}, stats: {size_bytes: 5, rows: 5, columns: "
     "{k: {histogram: {height: 1, bins: [[0, 4, 1], [3, 9, 2]]}}}}}",
     "tables.d.stats.columns.k.histogram.bins[1]: bin [3, 9] starts below the previous bin's hi 4"),
    ("  d: {schema: {k: long}, stats: {size_bytes: 5, rows: 5, columns: "
     "{k: {histogram: {height: 1, bins: [[5, 4, 1]]}}}}}",
     "tables.d.stats.columns.k.histogram.bins[0]: bin [5, 4]: its lo is above its hi"),
    ("  d: {schema: {k: double}, stats: {size_bytes: 5, rows: 5, columns: "
     "{k: {histogram: {height: 1, bins: [[0, .nan, 1]]}}}}}",
     "tables.d.stats.columns.k.histogram.bins[0][1]: .nan is not a finite number"),
    ("  d: {schema: {k: long}, stats: {size_bytes: 5, rows: 5, columns: "
     "{k: {histogram: {height: 1, bins: [[0, 1]]}}}}}",
     "tables.d.stats.columns.k.histogram.bins[0]: "),
])
def test_misuse_is_one_line_naming_the_field(write_scenario, tables, says):
    message = error_of(write_scenario, scenario_text(tables))
    assert says in message and "\n" not in message


def test_a_statistics_only_scenario_cannot_expect_rows_or_a_final_plan(write_scenario):
    stats = "  d: {schema: {k: long}, stats: {size_bytes: 5}}"
    message = error_of(write_scenario, scenario_text(stats, expect="{strategy: BHJ, rows: 5}"))
    assert "case.yaml:8: expect.rows: statistics-only table 'd' has no rows" in message
    message = error_of(write_scenario, scenario_text(stats, expect="{strategy: BHJ, plan: final}"))
    assert "expect.plan: statistics-only table 'd' has no rows" in message


@pytest.mark.parametrize("tables, field", [
    ("  d: {sql: \"SELECT k, java_method('java.lang.System', 'getProperty', 'user.home') AS x FROM a\"}",
     "tables.d.sql: reflection"),
    ("  d: {sql: 'SELECT * FROM e'}\n  e: {from: a}", "tables.d.sql: reads 'e', which is not a table"),
    ("  d: {sql: 'SELECT * FROM default.a'}", "tables.d.sql: reads 'default.a'"),
    ("  d: {sql: 'CACHE TABLE a'}", "tables.d.sql: "),
    ("  d: {from: a, steps: [{select: [\"k\", \"reflect('java.lang.System', 'getProperty', 'user.home') AS x\"]}]}",
     "tables.d.steps[0].select[1]: reflection"),
    ("  d: {from: a, steps: [{filter: \"k IN (SELECT k FROM b)\"}]}", "tables.d.steps[0].filter: "),
    ("  d: {join: {left: a, right: b, condition: \"l.k = r.k AND java_method('java.lang.Math', 'abs', 1) = 1\"}}",
     "tables.d.join.condition: reflection"),
])
def test_derived_sql_is_judged_from_sparks_plans(session, write_scenario, tables, field):
    from harness.spark.sql_guard import check_scenario
    path = write_scenario(scenario_text(tables))
    with pytest.raises(ScenarioError) as info:
        check_scenario(session.spark, load_scenario(path))
    assert field in str(info.value), str(info.value)


def only_case(write_scenario, text, name="case.yaml"):
    cases = expand(load_scenario(write_scenario(text, name)))
    assert len(cases) == 1
    return cases[0]


CACHED_UNDER_OWN_CONF = """\
  d:
    sql: "SELECT k, count(*) AS n, sum(v) AS total FROM a GROUP BY k"
    spark_conf: {spark.sql.shuffle.partitions: 7, spark.sql.adaptive.enabled: false}
    steps:
      - repartition: [k]
      - cache
      - hint: SHUFFLE_HASH
"""


def test_a_derived_table_is_built_and_cached_under_its_own_configs(session, write_scenario):
    text = scenario_text(CACHED_UNDER_OWN_CONF).replace(
        "expect: {}", "spark_conf: {spark.sql.shuffle.partitions: 3, spark.sql.autoBroadcastJoinThreshold: -1}\n"
                      "expect: {strategy: ShuffledHashJoin, build_side: right, rows: 2000}")
    case = only_case(write_scenario, text)
    before = session.conf_value("spark.sql.shuffle.partitions")
    record = runner.run_case(case, session)
    assert record.status == "passed", record.message
    plan = record.observed.final.text
    # cached under 7 partitions (its own configs); the join's own shuffle used the case's 3
    assert "InMemoryRelation" in plan and ", 7)" in plan.split("InMemoryRelation")[1], plan
    assert record.observed.conf["spark.sql.shuffle.partitions"] == "3"
    assert session.conf_value("spark.sql.shuffle.partitions") == before
    agreement = run_agreement(case, session)
    assert agreement.status == "passed", agreement.message
    assert len({(r.strategy, r.build_side) for r in agreement.runs}) >= 3


def test_a_hint_on_a_join_result_and_a_using_join(session, write_scenario):
    tables = ("  c: {rows: 100, columns: {k: {sequence: {}}, z: {sequence: {}}}}\n"
              "  d:\n    join: {left: b, right: c, on: [k]}\n    steps:\n      - hint: BROADCAST\n"
              "      - select: [\"k\", \"w + z AS wz\"]\n")
    text = scenario_text(tables).replace(
        "expect: {}", "spark_conf: {spark.sql.autoBroadcastJoinThreshold: -1}\n"
                      "expect: {strategy: BroadcastHashJoin, build_side: right, rows: 2000}")
    record = runner.run_case(only_case(write_scenario, text), session)
    assert record.status == "passed", record.message


def test_nested_loops_are_afforded_from_the_rows_a_derived_input_really_has(session, write_scenario):
    # 200,000 declared rows, aggregated to 100: nested loops become affordable
    tables = "  big: {rows: 200000, columns: {k: {key: {cardinality: 100}}}}\n" \
             "  d: {sql: \"SELECT k, count(*) AS n FROM big GROUP BY k\"}"
    text = scenario_text(tables).replace("on: [k]}", "condition: \"l.k < r.k\"}")
    text = text.replace("a: {rows: 2000", "a: {rows: 200")
    record = run_agreement(only_case(write_scenario, text), session)
    assert record.status == "passed", record.message
    assert {r.strategy for r in record.runs} >= {"BroadcastNestedLoopJoin", "CartesianProduct"}


def test_a_statistics_only_case_is_plan_only_and_its_agreement_is_skipped(session, write_scenario):
    tables = "  d: {schema: {k: long, name: string}, stats: {size_bytes: 9000000, rows: 300000}}"
    text = scenario_text(tables, expect="{strategy: BroadcastHashJoin, build_side: left}")  # a: 32 KB
    case = only_case(write_scenario, text)
    record = runner.run_case(case, session)
    assert record.status == "passed", record.message
    assert not record.observed.executed and record.observed.final is None
    assert record.observed.final_not_applicable.startswith("plan-only")
    assert record.observed.estimates[0]["right"]["size_in_bytes"] == 9000000
    assert json.loads(json.dumps(record.to_json()))["observed"]["final_not_applicable"]
    agreement = run_agreement(case, session)
    assert agreement.status == "skipped" and "statistics-only" in agreement.message


def test_statistics_min_above_max_is_a_load_error(write_scenario):
    tables = "  d: {schema: {k: long, t: timestamp}, stats: {size_bytes: 5, rows: 5, columns: " \
             "{t: {min: '2021-01-01T02:00:00+02:00', max: '2021-01-01 00:30:00'}, k: {min: 9, max: 3}}}}"
    message = error_of(write_scenario, scenario_text(tables))
    assert "tables.d.stats.columns.k.min: min 9 is above max 3" in message


def test_a_derived_input_spark_rejects_is_a_verdict_not_a_crash(session, write_scenario):
    # the nested-loop budget cannot count it; every forced run reports Spark's refusal
    tables = "  d: {sql: \"SELECT k, no_such_column FROM b\"}"
    text = scenario_text(tables).replace("on: [k]}", "condition: \"l.k < r.k\"}")
    record = run_agreement(only_case(write_scenario, text), session)
    assert record.status == "skipped", record.message
    assert "no_such_column" in record.message
