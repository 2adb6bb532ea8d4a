import pytest

from harness.scenario.errors import ScenarioError
from harness.scenario.model import expand, load_scenario, stable_seed
from tests.conftest import MINIMAL


def error_of(write_scenario, text):
    with pytest.raises(ScenarioError) as info:
        load_scenario(write_scenario(text))
    return str(info.value)


def test_minimal_scenario_loads(write_scenario):
    scenario = load_scenario(write_scenario(MINIMAL))
    assert scenario.id == "minimal"
    assert scenario.data["join"]["on"] == ["k"]  # `on` is not the YAML 1.1 boolean
    assert [c.case_id for c in expand(scenario)] == ["minimal"]


def test_yaml_syntax_error_names_file_and_line(write_scenario):
    message = error_of(write_scenario, MINIMAL.replace("rows: 10\n", "rows: [10\n"))
    assert "case.yaml:" in message and "YAML syntax" in message
    assert "\n" not in message


def test_schema_violation_names_line_and_field(write_scenario):
    message = error_of(write_scenario, MINIMAL.replace("  on: [k]", "  on: [k]\n  type: lefty"))
    assert "case.yaml:16: join.type:" in message
    assert "'lefty' is not allowed" in message


def test_unknown_field_suggests_closest(write_scenario):
    message = error_of(write_scenario, MINIMAL.replace("    rows: 10\n", "    rowz: 10\n"))
    assert "tables.b" in message and "did you mean 'rows'" in message


def test_unknown_table_and_column(write_scenario):
    assert "join.right: unknown table 'c'" in error_of(write_scenario, MINIMAL.replace("right: b", "right: c"))
    message = error_of(write_scenario, MINIMAL.replace("on: [k]", "on: [kk]"))
    assert "join.on[0]" in message and "unknown column 'kk'" in message and "did you mean 'k'" in message
    message = error_of(write_scenario, MINIMAL.replace("on: [k]", "condition: \"l.k < r.zz\""))
    assert "join.condition" in message and "'r.zz'" in message


def test_faker_providers_are_checked_when_the_file_loads(write_scenario):
    pytest.importorskip("faker")  # a matrix environment reads Faker's values from the pool cache
    with_faker = MINIMAL.replace("      k: {sequence: {}}", "      k: {sequence: {}}\n      who: {faker: {provider: %s}}")
    message = error_of(write_scenario, with_faker % "frist_name")
    assert message.endswith("case.yaml:12: tables.b.columns.who.faker.provider: unknown Faker provider 'frist_name' "
                            "(did you mean 'first_name'?)")
    assert "\n" not in message
    assert "not allowed" in error_of(write_scenario, with_faker % "binary")
    assert "unknown Faker provider 'seed_instance'" in error_of(write_scenario, with_faker % "seed_instance")
    load_scenario(write_scenario(with_faker % "first_name"))


def test_unknown_hint_suggests_closest(write_scenario):
    message = error_of(write_scenario, MINIMAL.replace("on: [k]", "on: [k]\n  hints: {right: BRODCAST}"))
    assert "join.hints.right" in message and "did you mean 'BROADCAST'" in message
    # a deliberately unknown hint is allowed
    load_scenario(write_scenario(MINIMAL.replace("on: [k]", "on: [k]\n  hints: {right: {name: FOO, unknown: true}}")))


def test_aliases_duplicate_keys_and_forbidden_things_are_rejected(write_scenario):
    assert "aliases are not allowed" in error_of(write_scenario, MINIMAL + "tags: &t [a]\nx: *t\n") \
        or "anchors are not allowed" in error_of(write_scenario, MINIMAL + "tags: &t [a]\nx: *t\n")
    assert "duplicate key" in error_of(write_scenario, MINIMAL + "id: again\n")
    message = error_of(write_scenario, MINIMAL + "spark_conf: {spark.sql.runSQLOnFiles: true}\n")
    assert "case.yaml:19: spark_conf.spark.sql.runSQLOnFiles: 'spark.sql.runSQLOnFiles' is not a config a " \
           "scenario may set" in message


def test_bad_version_specifier(write_scenario):
    message = error_of(write_scenario, MINIMAL + "  overrides:\n    - when: {spark: 'newer than 3'}\n      strategy: SMJ\n")
    assert "PEP 440" in message and "expect.overrides[0].when.spark" in message


def test_matrix_expansion_ids_and_values(write_scenario):
    text = MINIMAL.replace("expect:", """matrix:
  join_type: [inner, left]
  right_hints: [BROADCAST, [], [MERGE, shuffle_hash]]
  conf:
    spark.sql.adaptive.enabled: [true, false]
expect:""")
    cases = expand(load_scenario(write_scenario(text)))
    assert len(cases) == 2 * 3 * 2
    ids = [c.case_id for c in cases]
    assert "minimal[inner-BROADCAST@right-aqe=on]" in ids
    assert "minimal[left-none@right-aqe=off]" in ids
    assert "minimal[left-MERGE+shuffle_hash@right-aqe=on]" in ids
    case = next(c for c in cases if c.case_id == "minimal[left-BROADCAST@right-aqe=off]")
    assert case.join_type == "left_outer"
    assert case.join["hints"]["right"] == "BROADCAST"
    assert case.spark_conf["spark.sql.adaptive.enabled"] is False


def test_matrix_limit(write_scenario):
    text = MINIMAL.replace("expect:", "matrix:\n  conf:\n" + "".join(
        f"    {key}: [1, 2, 3, 4]\n" for key in (
            "spark.sql.shuffle.partitions", "spark.sql.shuffledHashJoinFactor", "spark.sql.codegen.maxFields",
            "spark.sql.autoBroadcastJoinThreshold", "spark.sql.files.maxPartitionBytes")) + "expect:")
    with pytest.raises(ScenarioError, match="limit is 512"):
        expand(load_scenario(write_scenario(text)))


def test_stable_seed_is_pinned_and_tells_columns_apart():
    assert stable_seed(42, "fact", "k") != stable_seed(42, "fact", "v")
    assert stable_seed(1, "t", "c") == 572583728171711698  # pinned: must never change across releases


STREAM = MINIMAL.replace("      k: {sequence: {}}\n", "      k: {sequence: {}}\n      ts: {expr: \"timestamp_seconds(id)\", type: timestamp}\n") \
    .replace("join:", "stream:\n  watermarks:\n    b: {column: ts, delay: \"5 minutes\"}\njoin:")


def test_stream_watermarks_are_checked(write_scenario):
    assert load_scenario(write_scenario(STREAM)).data["stream"]["watermarks"]["b"]["column"] == "ts"
    with pytest.raises(ScenarioError, match=r"stream.watermarks.b.column: 'k' must be a column of 'b' with type: timestamp"):
        load_scenario(write_scenario(STREAM.replace("column: ts", "column: k")))
    with pytest.raises(ScenarioError, match=r"stream.watermarks.zz: 'zz' is not a side of the join"):
        load_scenario(write_scenario(STREAM.replace("    b: {column", "    zz: {column")))
    with pytest.raises(ScenarioError, match=r"stream.watermarks.b.delay: .*does not match"):
        load_scenario(write_scenario(STREAM.replace('"5 minutes"', '"soon"')))


def test_literal_tables_are_checked_against_their_schema(write_scenario):
    literal = MINIMAL.replace("""  b:
    rows: 10
    columns:
      k: {sequence: {}}""", """  b:
    schema: {k: long, name: "string?"}
    values: [[1, "x"], [2, null]]""")
    load_scenario(write_scenario(literal))
    assert "tables.b.values[1]: 1 value(s) for 2 column(s)" in error_of(write_scenario, literal.replace("[2, null]", "[2]"))
    assert "NULL in column 'k', which is not nullable" in error_of(write_scenario, literal.replace("[2, null]", "[null, null]"))
    assert "'two' is not a long (column 'k')" in error_of(write_scenario, literal.replace("[2, null]", "[two, null]"))
    assert "join.on[0]: unknown column 'k' in right table 'b'" in error_of(
        write_scenario, literal.replace("schema: {k: long", "schema: {kk: long"))


def test_literal_values_out_of_range_or_not_dates_are_load_errors(write_scenario):
    base = MINIMAL.replace("""  b:
    rows: 10
    columns:
      k: {sequence: {}}""", """  b:
    schema: {k: int, d: date}
    values: [[1, "2024-01-31"]]""")
    load_scenario(write_scenario(base))
    assert "'4294967296' is not a int" in error_of(write_scenario, base.replace("[1, ", "[4294967296, "))
    assert "'2024-02-30' is not a date" in error_of(write_scenario, base.replace("2024-01-31", "2024-02-30"))


def test_a_value_over_a_size_limit_is_said_with_its_count_not_quoted(write_scenario):
    rows = "\n".join(f"      - [{i}]" for i in range(10_001))
    message = error_of(write_scenario, MINIMAL.replace("join:", f"  lit:\n    schema: {{k: long}}\n    values:\n{rows}\njoin:"))
    assert message.endswith("tables.lit.values: 10,001 items; at most 10,000")
    tables = "".join(f"  t{i}:\n    rows: 1\n    columns:\n      k: {{sequence: {{}}}}\n" for i in range(400))
    message = error_of(write_scenario, MINIMAL.replace("tables:\n", "tables:\n" + tables))
    assert message.endswith("tables: 402 entries; at most 64") and len(message) < 120


@pytest.mark.parametrize("layout, says", [
    ("    materialize: catalog\n    bucket_by: {columns: [kk], buckets: 4}\n",
     "tables.a.bucket_by.columns[0]: 'kk' is not a column of table 'a' (did you mean 'k'?)"),
    ("    bucket_by: {columns: [k], buckets: 4}\n", "tables.a.bucket_by: a bucketed or partitioned layout needs `materialize: catalog`"),
    ("    materialize: catalog\n    bucket_by: {columns: [k], buckets: 0}\n", "tables.a.bucket_by.buckets: "),
    ("    materialize: catalog\n    bucket_by: {columns: [k], buckets: 100001}\n", "tables.a.bucket_by.buckets: "),
    ("    materialize: catalog\n    bucket_by: {columns: [k], buckets: 4, sort_by: [v]}\n",
     "tables.a.bucket_by.sort_by[0]: 'v' is not a column of table 'a'"),
    ("    materialize: catalog\n    partition_by: [k]\n", "tables.a.partition_by: a table cannot be partitioned by all of its columns"),
])
def test_bucket_and_partition_layouts_are_checked_at_collection(write_scenario, layout, says):
    text = MINIMAL.replace("      k: {key: {cardinality: 10}}\n", "      k: {key: {cardinality: 10}}\n" + layout, 1)
    message = error_of(write_scenario, text)
    assert says in message, message


def test_a_layout_on_a_derived_table_is_refused(write_scenario):
    text = MINIMAL.replace("join:", "  d:\n    from: a\n    bucket_by: {columns: [k], buckets: 4}\njoin:")
    assert "tables.d" in error_of(write_scenario, text)


STATS_ONLY = MINIMAL.replace("""  b:
    rows: 10
    columns:
      k: {sequence: {}}
""", """  b:
    schema: {k: long, v: long}
    stats: {size_bytes: 20000000000, rows: 500000000}
""")


def test_a_statistics_only_table_may_be_bucketed(write_scenario):
    bucketed = STATS_ONLY.replace("rows: 500000000}\n", "rows: 500000000}\n    bucket_by: {columns: [k], buckets: 512}\n")
    load_scenario(write_scenario(bucketed))
    assert "bucket_by.columns[0]: 'kk' is not a column of table 'b'" in error_of(
        write_scenario, bucketed.replace("columns: [k]", "columns: [kk]"))


PARTITIONED = MINIMAL.replace("""  b:
    rows: 10
    columns:
      k: {sequence: {}}
""", """  b:
    schema: {k: long, day: date, region: string}
    stats: {size_bytes: 50 GiB, rows: 500}
    partition_by: [day, region]
    partition_values:
      - {values: ["2024-01-01", eu], size_bytes: 40 GiB, rows: 400}
      - {values: ["2024-01-02", null], size_bytes: 10 GiB, rows: 100}
""")


def test_a_statistics_only_table_may_be_partitioned_with_sizes_as_text(write_scenario):
    scenario = load_scenario(write_scenario(PARTITIONED))
    table = scenario.data["tables"]["b"]
    assert table["stats"]["size_bytes"] == 50 << 30
    assert [p["size_bytes"] for p in table["partition_values"]] == [40 << 30, 10 << 30]


def test_a_partitioned_statistics_only_table_never_analyzed_has_no_table_statistics(write_scenario):
    never = PARTITIONED.replace("stats: {size_bytes: 50 GiB, rows: 500}", "stats: {}")
    assert load_scenario(write_scenario(never)).data["tables"]["b"]["stats"] == {}
    assert "tables.b.stats: statistics need `size_bytes`" in error_of(
        write_scenario, never.replace("stats: {}", "stats: {rows: 500}"))
    assert "tables.b.stats: statistics need `size_bytes`" in error_of(
        write_scenario, STATS_ONLY.replace("stats: {size_bytes: 20000000000, rows: 500000000}", "stats: {}"))


@pytest.mark.parametrize("edit, expected", [
    (("    partition_values:\n      - {values: [\"2024-01-01\", eu], size_bytes: 40 GiB, rows: 400}\n"
      "      - {values: [\"2024-01-02\", null], size_bytes: 10 GiB, rows: 100}\n", ""),
     "tables.b.partition_by: list the table's partitions in `partition_values`"),
    (('["2024-01-01", eu]', '["2024-01-01"]'), "tables.b.partition_values[0].values: 1 value(s) for the 2 column(s)"),
    (('["2024-01-01", eu]', '["2024-13-01", eu]'), "tables.b.partition_values[0].values[0]: "),
    (('["2024-01-01", eu]', '[7, eu]'), "tables.b.partition_values[0].values[0]: "),
    (('["2024-01-01", eu]', '["2024-01-02", null]'), "tables.b.partition_values[1].values: the same partition twice"),
    (("size_bytes: 40 GiB, ", ""), "tables.b.partition_values[0]: a partition of a parquet table needs `size_bytes`"),
    (("size_bytes: 40 GiB", "size_bytes: 41 GiB"), "the partitions hold 54,760,833,024 bytes, stats.size_bytes says "
                                                   "53,687,091,200"),
    (("rows: 400}", "rows: 401}"), "the partitions hold 501 rows, stats.rows says 500"),
    (("size_bytes: 40 GiB", "size_bytes: 40 GB"), "tables.b.partition_values[0].size_bytes"),
    (("size_bytes: 40 GiB", "size_bytes: -1"), "tables.b.partition_values[0].size_bytes"),
    (("size_bytes: 50 GiB", "size_bytes: 9000000 PiB"), "tables.b.stats.size_bytes: '9000000 PiB' is out of range"),
    (("[\"2024-01-02\", null]", "[\"2024-01-02\", \"a\\tb\"]"),
     "tables.b.partition_values[1].values[1]: a partition value cannot hold control characters"),
    (("[\"2024-01-02\", null]", "[\"2024-01-02\", \"\"]"), "tables.b.partition_values[1].values[1]: a string"),
    (("[\"2024-01-02\", null]", "[\"2024-01-02\", __HIVE_DEFAULT_PARTITION__]"),
     "tables.b.partition_values[1].values[1]: __HIVE_DEFAULT_PARTITION__ is Hive's name for the null partition"),
    (("join:\n", "spark_conf: {spark.sql.hive.manageFilesourcePartitions: false}\njoin:\n"),
     "spark_conf.spark.sql.hive.manageFilesourcePartitions: spark.sql.hive.manageFilesourcePartitions=false lists "
     "a table's folder instead of its catalog partitions"),
    (("size_bytes: 40 GiB, rows: 400}", "size_bytes: 40 GiB, rows: 400, location: /etc}"),
     "tables.b.partition_values[0].location: unknown field 'location'"),
])
def test_bad_partitions_of_a_statistics_only_table(write_scenario, edit, expected):
    text = PARTITIONED.replace(*edit)
    assert text != PARTITIONED
    message = error_of(write_scenario, text)
    assert expected in message, message
    assert "\n" not in message and "Traceback" not in message


def test_a_statistics_only_table_holds_at_most_10000_partitions(write_scenario):
    listed = "".join(f"      - {{values: [\"2024-01-01\", r{i}], size_bytes: 1}}\n" for i in range(10_001))
    text = PARTITIONED.replace("stats: {size_bytes: 50 GiB, rows: 500}", "stats: {size_bytes: 10001}")
    text = text[:text.index("    partition_values:\n") + len("    partition_values:\n")] + listed + \
        text[text.index("join:"):]
    assert "tables.b.partition_values: 10,001 items; at most 10,000" in error_of(write_scenario, text)


def test_partition_values_belong_to_a_statistics_only_table(write_scenario):
    text = MINIMAL.replace("      k: {sequence: {}}\n", "      k: {sequence: {}}\n    partition_values: [{values: [1]}]\n", 1)
    assert "partition_values` lists a statistics-only table's partitions" in error_of(write_scenario, text)


STEPPED = """\
id: stepped
description: a stream fed step by step
tables:
  views:
    rows: 0
    columns:
      ad: {sequence: {}}
      vts: {uniform: {min: "2024-01-01 00:00:00", max: "2024-01-01 01:00:00"}, type: timestamp}
  clicks:
    rows: 0
    columns:
      cad: {sequence: {}}
      cts: {uniform: {min: "2024-01-01 00:00:00", max: "2024-01-01 01:00:00"}, type: timestamp}
stream:
  watermarks:
    views: {column: vts, delay: "10 minutes"}
  batches:
    - add:
        views: {rows: [[1, "2024-01-01 00:00:00"]]}
      expect: {new_row_count: 0, watermark: "2023-12-31 23:50:00"}
join:
  left: views
  right: clicks
  condition: "l.ad = r.cad AND r.cts >= l.vts AND r.cts <= l.vts + INTERVAL 10 MINUTES"
expect:
  strategy: StreamingSymmetricHashJoin
"""


@pytest.mark.parametrize("edit, says", [
    (('[[1, "2024-01-01 00:00:00"]]', '[[1, "yesterday"]]'),
     "stream.batches[0].add.views.rows[0]: 'yesterday' is not a timestamp (column 'vts')"),
    (('[[1, "2024-01-01 00:00:00"]]', '[[1]]'), "stream.batches[0].add.views.rows[0]: 1 value(s) for 2 column(s)"),
    (("    - add:\n        views:", "    - add:\n        orders:"),
     "stream.batches[0].add.orders: 'orders' is not a side of the join (views, clicks)"),
    (('watermark: "2023-12-31 23:50:00"', 'watermark: "ten past"'), "stream.batches[0].expect.watermark: "),
    (("expect: {new_row_count: 0,", "expect: {new_row_count: -1,"), "stream.batches[0].expect.new_row_count: "),
])
def test_stream_steps_are_checked_at_collection(write_scenario, edit, says):
    load_scenario(write_scenario(STEPPED))
    message = error_of(write_scenario, STEPPED.replace(*edit))
    assert says in message and message.count("\n") == 0, message


def test_at_most_100_stream_steps(write_scenario):
    steps = "".join("    - add:\n        views: {rows: []}\n" for _ in range(101))
    text = STEPPED.replace("  batches:\n", "  batches:\n" + steps)
    assert "stream.batches: 102 items; at most 100" in error_of(write_scenario, text)


def test_a_stepped_stream_has_nothing_to_compare_so_a_reused_run_needs_no_session(write_scenario):
    from harness.check import agreement
    (case,) = expand(load_scenario(write_scenario(STEPPED)))
    assert agreement.nothing_to_compare(case) == agreement.STEPPED
    (plain,) = expand(load_scenario(write_scenario(MINIMAL)))
    assert agreement.nothing_to_compare(plain) is None


THEN = STEPPED.replace("  batches:\n", "  then:\n    sql: \"SELECT count(*) AS n FROM joined GROUP BY window(vts, '1 hour')\"\n"
                       "  batches:\n")
BATCH_OVERRIDE = """  overrides:
    - when: {spark: "<3.5"}
      batches:
        - {batch: 1, new_row_count: 2}
"""


@pytest.mark.parametrize("edit, says", [
    (("views", "joined"), "stream.then.sql: reads the join as the view 'joined': rename the table 'joined'"),
    (("{batch: 1,", "{batch: 2,"), "expect.overrides[0].batches[0].batch: batch 2: stream.batches has 1 step(s)"),
    (("{batch: 1, new_row_count: 2}", "{batch: 1}"), "expect.overrides[0].batches[0]: "),
    (("sql: \"SELECT", "sql: \"\" #"), "stream.then.sql: "),
])
def test_then_and_per_version_steps_are_checked_at_collection(write_scenario, edit, says):
    text = THEN + BATCH_OVERRIDE
    load_scenario(write_scenario(text))
    message = error_of(write_scenario, text.replace(*edit))
    assert says in message and message.count("\n") == 0, message


def test_batches_in_an_override_need_a_stepped_stream(write_scenario):
    text = MINIMAL + BATCH_OVERRIDE
    assert "expect.overrides[0].batches: only a stream fed step by step" in error_of(write_scenario, text)


def test_an_override_replaces_the_fields_it_names_of_that_step_only(write_scenario):
    from harness.check.expect import resolve
    (case,) = expand(load_scenario(write_scenario(THEN + BATCH_OVERRIDE)))
    assert resolve(case, "4.3.0")["batches"] == [{"new_row_count": 0, "watermark": "2023-12-31 23:50:00"}]
    assert resolve(case, "3.4.4")["batches"] == [{"new_row_count": 2, "watermark": "2023-12-31 23:50:00"}]
    assert case.join["then"].startswith("SELECT count(*)")


def test_stale_statistics_may_disagree_with_the_partitions_they_predate(write_scenario):
    stale = PARTITIONED.replace("size_bytes: 40 GiB", "size_bytes: 41 GiB").replace(
        "    partition_values:\n", "    stale_stats: true\n    partition_values:\n", 1)
    assert load_scenario(write_scenario(stale)).data["tables"]["b"]["stale_stats"] is True
    assert "stale_stats: `stale_stats` says the table's statistics disagree" in error_of(
        write_scenario, stale.replace("stats: {size_bytes: 50 GiB, rows: 500}", "stats: {}"))


ICEBERG_EVOLVED = """\
id: evolved
description: an Iceberg fact whose spec gained a bucket field
tables:
  a:
    schema: {k: long}
    stats: {size_bytes: 100}
  f:
    format: iceberg
    schema: {k: long, day: int}
    stats: {rows: 30, size_bytes: 3000}
    partition_by: [day, "bucket(4, k)"]
    earlier_specs: [[day]]
    partition_values:
      - {values: [0], rows: 10, spec: 0}
      - {values: [1, 0], rows: 10}
      - {values: [1, 3], rows: 10}
join: {left: f, right: a, on: [k]}
expect: {}
"""


@pytest.mark.parametrize("edit, expected", [
    (("{values: [0], rows: 10, spec: 0}", "{values: [0], rows: 10, spec: 1}"),
     "tables.f.partition_values[0].spec: spec 1 is not one of `earlier_specs` (1 listed)"),
    (("{values: [0], rows: 10, spec: 0}", "{values: [0, 1], rows: 10, spec: 0}"),
     "tables.f.partition_values[0].values: 2 value(s) for the 1 field(s) of earlier_specs[0]"),
    (("earlier_specs: [[day]]", "earlier_specs: [[dya]]"),
     "tables.f.earlier_specs[0][0]: 'dya' is not a column of the table (did you mean 'day'?)"),
    (("earlier_specs: [[day]]", "earlier_specs: [[\"years(day\"]]"), "tables.f.earlier_specs[0][0]: "),
    (("    earlier_specs: [[day]]\n", ""), "tables.f.partition_values[0].spec: `spec` names one of `earlier_specs`"),
    (("    format: iceberg\n", "    format: delta\n"), "tables.f.earlier_specs: `earlier_specs` is a statistics-only "
                                                       "Iceberg table's"),
])
def test_an_evolved_iceberg_spec_is_checked_at_collection(write_scenario, edit, expected):
    assert load_scenario(write_scenario(ICEBERG_EVOLVED)).data["tables"]["f"]["earlier_specs"] == [["day"]]
    text = ICEBERG_EVOLVED.replace(*edit)
    assert text != ICEBERG_EVOLVED
    message = error_of(write_scenario, text)
    assert expected in message, message
    assert "\n" not in message and "Traceback" not in message


def test_catalog_statistics_belong_to_a_statistics_only_delta_table(write_scenario):
    text = ICEBERG_EVOLVED.replace("    stats: {size_bytes: 100}\n",
                                   "    stats: {size_bytes: 100}\n    catalog_stats: {size_bytes: 1 MiB}\n", 1)
    assert "tables.a.catalog_stats: `catalog_stats` is a statistics-only Delta table's" in error_of(
        write_scenario, text)
