"""harness.observe.reference and harness.observe.spark_hash on real Spark: the independent
engine's answer against Spark's, what is not compared and why, Spark's checksum computed in
Python, and the verdicts the cases and cross-strategy checks draw from them."""
import pytest

from harness.check import answers, runner
from harness.check.agreement import run_agreement
from harness.observe import reference, spark_hash
from harness.scenario.model import expand, load_scenario
from harness.spark.expression_walk import nodes_of
from harness.spark.query import checksum_frame, checksum_text

pytest.importorskip("duckdb")


def spark_checksum(frame) -> tuple:
    row = checksum_frame(frame).collect()[0]
    return int(row["rows"]), checksum_text(row["hash_sum"])


@pytest.mark.parametrize("rows_per_length", [1, 1_000_000])  # strings hashed per length group, or one by one
def test_sparks_checksum_in_python_equals_sparks_for_every_primitive_type(session, monkeypatch, rows_per_length):
    import pyarrow as pa
    monkeypatch.setattr(spark_hash, "_ROWS_PER_LENGTH", rows_per_length)
    spark = session.spark
    frame = spark.sql("""
        SELECT id, CAST(id AS INT) i, CAST(id % 100 AS SMALLINT) s, CAST(id % 100 AS TINYINT) t, id % 3 = 0 b,
               IF(id % 7 = 0, NULL, CAST(id AS DOUBLE) * 1.5) d, CAST(id AS FLOAT) * 0.25 f,
               CAST(id * 1.37 AS DECIMAL(10,2)) d10, CAST(-id * 1.37 AS DECIMAL(30,3)) d30,
               concat('s', id, 'ü') str, IF(id % 5 = 0, NULL, CAST(id AS STRING)) nstr,
               date_add(DATE'2020-01-01', CAST(id AS INT)) dt, CAST(date_add(DATE'2020-01-01', CAST(id AS INT)) AS TIMESTAMP) ts,
               CAST(CAST(id AS STRING) AS BINARY) bin, IF(id = 3, double('NaN'), 1.0D) nan,
               repeat(IF(id % 2 = 0, 'aü', 'b'), CAST(abs(id) % 40 AS INT)) long_str,
               CAST(repeat('x', CAST(abs(id) % 70 AS INT)) AS BINARY) long_bin,
               CAST(id AS DECIMAL(18,0)) d18, CAST(id * -1.5 AS DECIMAL(18,1)) d18n
        FROM range(-50, 600)""")
    table = pa.Table.from_batches(frame._collect_as_arrow())
    assert (table.num_rows, spark_hash.checksum(table)) == spark_checksum(frame)
    for name in table.column_names:  # each type on its own: a wrong one cannot hide in the sum
        assert spark_hash.checksum(table.select([name])) == spark_checksum(frame.select(name))[1], name


def test_a_type_not_hashed_here_gives_no_checksum_never_a_guess():
    import pyarrow as pa
    table = pa.table({"a": pa.array([[1, 2]], type=pa.list_(pa.int32()))})
    assert spark_hash.checksum(table) is None


def test_translation_leaves_hints_out_and_writes_a_cross_join_with_a_condition_as_inner():
    assert reference.translate("SELECT /*+ BROADCAST(r), MERGE(l) */ * FROM a l CROSS JOIN b r ON l.k = r.k") == \
        "SELECT * FROM a AS l JOIN b AS r ON l.k = r.k"
    assert reference.translate("SELECT * FROM a l LEFT SEMI JOIN b r ON l.k = r.k") == \
        "SELECT * FROM a AS l SEMI JOIN b AS r ON l.k = r.k"
    with pytest.raises(reference.NotCompared, match="sqlglot cannot read the query"):
        reference.translate("SELECT * FROM (((")
    with pytest.raises(reference.NotCompared, match="not one statement"):
        reference.translate("SELECT 1; SELECT 2")


def test_rows_compare_as_multisets_with_float_tolerance_nan_and_negative_zero():
    only_spark, only_reference = reference.row_differences(
        [(1, 0.1 + 0.2), (2, float("nan")), (3, -0.0), (4, None), (4, None)],
        [(1, 0.3), (2, float("nan")), (3, 0.0), (4, None)])
    assert only_spark == [(4, None)] and only_reference == []
    assert reference.row_differences([(1, 1.0)], [(1, 1.0001)]) == ([(1, 1.0)], [(1, 1.0001)])


TWO_TABLES = """\
id: reference_two_tables
description: a fact and a dimension of rows with NULLs, decimals, strings and dates
tables:
  fact:
    rows: 3000
    columns:
      k: {key: {cardinality: 120}, nulls: 0.05}
      amount: {uniform: {min: 0, max: 1000}, type: "decimal(10,2)"}
      day: {uniform: {min: "2020-01-01", max: "2020-12-31"}, type: date}
  dim:
    rows: 100
    columns:
      k: {sequence: {start: 0}}
      name: {faker: {provider: country, pool: 30}}
join: {left: fact, right: dim, on: [k], type: JOIN_TYPE}
expect: {}
"""


@pytest.mark.parametrize("join_type", ["inner", "left_outer", "full_outer", "left_semi", "left_anti"])
def test_sparks_answer_agrees_with_the_reference_for_every_join_type(session, write_scenario, join_type):
    case = expand(load_scenario(write_scenario(TWO_TABLES.replace("JOIN_TYPE", join_type))))[0]
    record = runner.run_case(case, session)
    assert record.observed.reference["compared"] and record.observed.reference["agrees"], record.observed.reference
    assert record.observed.reference["how"] == "row count and checksum"  # no rows collected
    assert record.status == "passed" and record.message.startswith("nothing declared; DuckDB")


def test_a_wrong_answer_is_correctness_showing_both_answers(session, write_scenario):
    """The reference is fed other rows than Spark's query reads (one row of `dim` gone): the
    case's answer differs, and the record shows the rows only one engine returned."""
    case = expand(load_scenario(write_scenario(TWO_TABLES.replace("JOIN_TYPE", "inner"))))[0]
    with session.case_scope(120) as scope:
        tables = runner.prepare_inputs(session, scope, case, {})
        query = runner.sized_query(session, scope, case.join, {}, tables)
        rows, checksum = spark_checksum(query)
        fed = {**tables, "dim": tables["dim"].where("k <> 7")}
        found = reference.observe(session.spark, ("wrong", "answer"), "SELECT * FROM fact l JOIN dim r ON l.k = r.k",
                                  fed, query, rows, checksum, analysed=lambda: answers.analysed_alone(
                                      session, scope, case.join, tables, nodes_of))
    assert found["compared"] and not found["agrees"]
    assert found["only_spark_count"] == rows - found["rows"] > 0 and found["only_reference_count"] == 0
    assert all(row[0] == 7 and row[3] == 7 for row in found["only_spark"])
    observed = runner.Observation(executed=True, rows=rows, checksum=checksum, reference=found)
    record = runner.make_record(case, session, {"plan": "initial"}, observed, 0.0)
    assert record.status == "correctness"
    assert record.message.startswith(f"Spark's answer is not {found['engine']}'s: Spark {rows:,} rows")


def test_what_cannot_be_compared_says_why_and_is_never_an_error(session, write_scenario, monkeypatch):
    text = TWO_TABLES.replace("JOIN_TYPE", "inner")
    # inputs over the bound handed over
    monkeypatch.setattr(reference, "MAX_INPUT_ROWS", 1000)
    moved, arrow_of = [], reference.arrow_of
    monkeypatch.setattr(reference, "arrow_of", lambda frame: moved.append(frame) or arrow_of(frame))
    record = runner.run_case(expand(load_scenario(write_scenario(text, "a.yaml")))[0], session)
    assert record.status == "observed" and "inputs over the bound" in record.observed.reference["why"]
    assert moved == []  # refused before a row was handed over
    assert "reference: not compared (inputs over the bound" in record.message
    # Spark's answer over the bound compared: said before an input is moved
    monkeypatch.setattr(reference, "MAX_INPUT_ROWS", 1_000_000)
    monkeypatch.setattr(reference, "MAX_ANSWER_ROWS", 100)
    record = runner.run_case(expand(load_scenario(write_scenario(text.replace("reference_two_tables", "wide"),
                                                                  "w.yaml")))[0], session)
    assert record.observed.reference["why"] == f"an answer over 100 rows (Spark's: {record.observed.rows:,})"
    assert moved == []
    monkeypatch.undo()
    # a function not verified; one sqlglot cannot write for DuckDB, one DuckDB does not know
    # (were they let through); a verified one DuckDB refuses on these rows (an overflow
    # Spark wraps): the case is fine, and says why nothing was compared
    unverified = "its DuckDB translation is not verified"
    for select, why, gate_open in (("soundex(r.name)", unverified, False),
                                   ("soundex(r.name)", "sqlglot cannot translate the query", True),
                                   ("crc32(r.name)", "the reference failed", True),
                                   ("l.k + 9223372036854775807", "the reference failed", False)):
        if gate_open:
            monkeypatch.setattr(reference, "gate_refusal", lambda *args: None)
        name = "".join(c for c in select if c.isalnum())
        sql = text.replace("join: {left: fact, right: dim, on: [k], type: inner}",
                           f"join: {{sql: \"SELECT l.k, {select} AS s FROM fact l JOIN dim r ON l.k = r.k\"}}")
        sql = sql.replace("reference_two_tables", f"reference_{name}{gate_open}")
        sql = sql.replace("expect: {}", "spark_conf: {spark.sql.ansi.enabled: false}\nexpect: {}")  # Spark wraps
        record = runner.run_case(expand(load_scenario(write_scenario(sql, f"{name}{gate_open}.yaml")))[0], session)
        monkeypatch.undo()
        assert record.status == "observed" and not record.observed.error, record.message
        assert why in record.observed.reference["why"], (select, record.observed.reference)
    # a file that turns it off, saying why
    off = text.replace("expect: {}", "reference: {skip: \"compared elsewhere\"}\nexpect: {}")
    off = off.replace("reference_two_tables", "reference_off")
    record = runner.run_case(expand(load_scenario(write_scenario(off, "c.yaml")))[0], session)
    assert record.observed.reference == {"engine": "DuckDB", "compared": False,
                                         "why": "the file turns it off: compared elsewhere"}


def test_a_reference_cut_at_its_timeout_is_not_compared(session, write_scenario, monkeypatch):
    # 3,000 x 6,000 pairs: seconds for one DuckDB thread, so the 0.3 s cut lands while it runs
    text = TWO_TABLES.replace("JOIN_TYPE", "cross").replace("on: [k], ", "").replace(
        "reference_two_tables", "reference_timeout").replace("rows: 100", "rows: 6000")
    monkeypatch.setattr(reference, "TIMEOUT_S", 0.3)
    monkeypatch.setattr(reference, "MAX_ANSWER_ROWS", 50_000_000)
    case = expand(load_scenario(write_scenario(text)))[0]
    with session.case_scope(120) as scope:
        tables = runner.prepare_inputs(session, scope, case, {})
        query = runner.sized_query(session, scope, case.join, {}, tables)
        found = answers.reference_answer(session, scope, case, case.join, query, tables, 18_000_000, "0" * 16)
    assert not found["compared"] and "took over" in found["why"]


def test_the_cross_strategy_check_compares_with_the_reference(session, write_scenario):
    case = expand(load_scenario(write_scenario(TWO_TABLES.replace("JOIN_TYPE", "left_outer"))))[0]
    record = run_agreement(case, session)
    assert record.status == "passed", record.message
    assert f"DuckDB {reference.engine().version} gives the same" in record.message
    assert record.to_json()["observed"]["reference"]["agrees"]


def test_the_reference_engine_reads_no_file_and_cannot_be_opened_up():
    con = reference.engine().con
    for text in ("SELECT * FROM read_csv('/etc/passwd')", "SET enable_external_access = true"):
        with pytest.raises(Exception, match="Permission|Cannot enable|external access"):
            con.sql(text).fetchall()


def test_rows_at_most_reads_the_plans_bound_or_counts_past_it(session):
    spark = session.spark
    assert reference.rows_at_most(spark.range(10), 100) == 10                      # the range's own bound
    assert reference.rows_at_most(spark.range(5000), 100) == 101                   # more than the bound
    assert reference.rows_at_most(spark.range(5000).filter("id % 1000 = 0"), 100) == 5  # counted
    assert reference.rows_at_most(spark.createDataFrame([(1,), (2,)], "a int"), 100) == 2


def test_the_files_own_row_counts_spare_counting_the_inputs(session, write_scenario, monkeypatch):
    # fact written to parquet (its plan has no bound on rows): its 3,000 rows are the file's;
    # dim filtered: only Spark knows how many rows it keeps, so it is counted
    text = TWO_TABLES.replace("JOIN_TYPE", "inner").replace("reference_two_tables", "reference_known_rows")
    text = text.replace("  fact:\n    rows: 3000\n", "  fact:\n    rows: 3000\n    materialize: parquet\n")
    text = text.replace("  dim:\n    rows: 100\n", "  dim:\n    rows: 100\n    filter: \"k % 2 = 0\"\n")
    case = expand(load_scenario(write_scenario(text)))[0]
    assert answers.exact_rows(case) == {"fact": 3000}
    counted, rows_at_most = [], reference.rows_at_most
    monkeypatch.setattr(reference, "rows_at_most", lambda frame, bound: counted.append(frame) or
                        rows_at_most(frame, bound))
    record = runner.run_case(case, session)
    assert record.observed.reference["agrees"], record.observed.reference
    assert len(counted) == 1  # dim only
