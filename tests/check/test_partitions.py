"""The ternary-partitioning item (harness.check.partitions): run inside the cross-strategy
check where no reference compared, judged as an item of its own; a real partition that
loses rows is red, an answer that cannot rightly add up compares nothing and says why."""
import contextlib

from harness.check import agreement, partitions, runner, ternary
from harness.check.file_checks import file_checks
from harness.scenario.model import expand, load_scenario
from harness.spark.query import checksum_frame, checksum_text
from tests.check.test_answers import FACT, _query

NO_REFERENCE = FACT.replace("expect: {}", "reference: {skip: \"a test of the oracle\"}\nexpect: {}")


def _case(write_scenario, text, name="s.yaml"):
    return expand(load_scenario(write_scenario(text, name)))[0]


def _judged(case, session):
    """(the cross-strategy check's record, the partitions item's record judged from it)"""
    check = agreement.run_agreement(case, session)
    return check, partitions.judged_from_check(case, check)


def test_the_three_partitions_add_up_to_the_query(session, write_scenario):
    case, scope, query = _query(session, write_scenario)
    try:
        row = checksum_frame(query).collect()[0]
        rows, checksum = int(row["rows"]), checksum_text(row["hash_sum"])
        columns = [[f.name, f.dataType.simpleString()] for f in query.schema.fields]
        found = ternary.partition(query, columns, case.join, rows, checksum)
        wrong = ternary.partition(query, columns, case.join, rows + 1, checksum)
    finally:
        scope.__exit__(None, None, None)
    assert found["agrees"] and found["column"] == "k" and found["rows"] == rows == 2000
    assert [part["where"] for part in found["parts"]] == ["p", "NOT p", "p IS NULL"]
    assert all(part["rows"] > 0 for part in found["parts"])  # the NULL keys fall in the third
    assert not wrong["agrees"]


def test_the_item_passes_where_the_parts_add_up_and_fails_where_one_loses_rows(session, write_scenario, monkeypatch):
    case = _case(write_scenario, NO_REFERENCE)
    check, record = _judged(case, session)
    assert check.status == "passed" and "ternary" not in check.message  # the check judges strategies only
    assert record.status == "passed", record.message
    assert record.case_id == "answers_fact[left_outer-partitions]"
    assert record.message.startswith("ternary partitioning on k agrees: ") and "= 2,000 rows" in record.message
    assert record.timings["total_s"] > 0 and check.timings["partitions_s"] == record.timings["total_s"]
    # a partition that loses its NULL rows, as a wrong rewrite of `p IS NULL` would
    monkeypatch.setattr(ternary, "PARTS", ternary.PARTS[:2] + (("p IS NULL", "({p}) IS NULL AND false"),))
    check, wrong = _judged(case, session)
    assert check.status == "passed" and wrong.status == "correctness", wrong.message
    assert "does not add up" in wrong.message and "the query gives 2,000 rows" in wrong.message


def test_where_the_reference_compared_no_partitions_run_and_the_item_says_so(session, write_scenario):
    check, record = _judged(_case(write_scenario, FACT), session)
    assert check.forced.reference["compared"] and "partitions_s" in check.timings
    assert record.status == "skipped"
    assert record.message.startswith("ternary partitioning: not needed (DuckDB ") and \
        record.message.endswith(" compared this answer)")


def test_what_cannot_add_up_is_not_compared_and_says_why(session, write_scenario):
    sql = NO_REFERENCE.replace("join: {left: fact, right: dim, on: [k], type: left_outer}",
                               "join: {sql: \"SELECT f.k, rand(7) AS r FROM fact f JOIN dim d ON f.k = d.k\"}") \
        .replace("expect: {}", "expect: {varies: {checksum: \"a random column\"}}")
    _, record = _judged(_case(write_scenario, sql), session)
    assert record.status == "unchecked"
    assert record.message == "ternary partitioning: not compared (the file declares its answer varies between runs)"
    limited = sql.replace("rand(7) AS r FROM fact f JOIN dim d ON f.k = d.k",
                          "f.v FROM fact f JOIN dim d ON f.k = d.k LIMIT 5").replace(
        "expect: {varies: {checksum: \"a random column\"}}", "expect: {}")
    _, record = _judged(_case(write_scenario, limited, "b.yaml"), session)
    assert record.status == "unchecked" and "a LIMIT, OFFSET or sample picks rows" in record.message


def test_an_empty_answer_is_never_green(session, write_scenario):
    empty = NO_REFERENCE.replace("type: left_outer}", "type: inner, condition: \"l.v < 0\"}")
    _, record = _judged(_case(write_scenario, empty), session)
    assert record.status == "unchecked", record.message
    assert record.message.endswith("an empty answer, nothing to partition")


def test_cut_at_the_timeout_is_not_compared_and_the_check_keeps_its_verdict(session, write_scenario, monkeypatch):
    """The strategies answered in time and the partitions did not (measured: an Iceberg
    check on a busy machine was cut there, and the exception lost its worker)."""
    scopes = []
    real_scope = session.case_scope

    @contextlib.contextmanager
    def remembered(*args, **kwargs):
        with real_scope(*args, **kwargs) as scope:
            scopes.append(scope)
            yield scope

    def cut(*args, **kwargs):
        scopes[-1].timed_out.set()  # what the watchdog does when the scenario's time runs out
        raise RuntimeError("Job 993 cancelled part of cancelled job group")
    monkeypatch.setattr(session, "case_scope", remembered)
    monkeypatch.setattr(ternary, "partition", cut)
    check, record = _judged(_case(write_scenario, NO_REFERENCE), session)
    assert check.status == "passed", check.message
    assert record.status == "unchecked"
    assert record.message == "ternary partitioning: not compared (cut at the scenario's timeout (120 s))"


def test_a_file_gets_one_partitions_item_per_join_type_but_a_plan_only_file_none(write_scenario):
    two_types = FACT.replace("type: left_outer}", "type: inner}\nmatrix: {join_type: [inner, left_outer]}")
    cases = expand(load_scenario(write_scenario(two_types)))
    assert [(kind, item) for kind, _, item in file_checks(cases)] == [
        ("agreement", "answers_fact[inner-agree]"), ("partitions", "answers_fact[inner-partitions]"),
        ("agreement", "answers_fact[left_outer-agree]"), ("partitions", "answers_fact[left_outer-partitions]")]
    assert [kind for kind, _, _ in file_checks(cases, reference="off")] == ["agreement", "agreement"]
    plan_only = FACT.replace("""  fact:
    rows: 2000
    columns:
      k: {key: {cardinality: 50}, nulls: 0.1}
      v: {uniform: {min: 0, max: 100}}""", """  fact:
    schema: {k: bigint, v: bigint}
    stats: {size_bytes: 1 GiB, rows: 100000000}""")
    cases = expand(load_scenario(write_scenario(plan_only, "b.yaml")))
    assert [kind for kind, _, _ in file_checks(cases)] == ["agreement"]


def test_a_stored_observation_is_judged_again_by_todays_bug_declaration(write_scenario):
    found = {"column": "k", "predicate": "p", "parts": [{"where": w, "rows": 1, "checksum": "0" * 16}
                                                        for w in ("p", "NOT p", "p IS NULL")],
             "rows": 3, "checksum": "0" * 16, "query_rows": 4, "query_checksum": "0" * 16, "agrees": False}
    who = runner.absent_session({"spark": "3.5.1", "java": "17", "python": "3.11"}, "local[2]")
    case = _case(write_scenario, FACT)
    assert partitions.judge_partitions(case, who, found, 1.0).status == "correctness"
    declared = FACT.replace("join: {", "bug: {id: SPARK-1, affected: \">=3.5.0\"}\njoin: {")
    judged = partitions.judge_partitions(_case(write_scenario, declared, "b.yaml"), who, found, 1.0)
    assert judged.status == "known_bug" and judged.message.startswith("known bug SPARK-1")


def test_a_check_that_observed_nothing_leaves_its_partitions_skipped_with_its_reason(session, write_scenario):
    case = _case(write_scenario, NO_REFERENCE)
    check = agreement._agreement_record(case, session, "skipped", "not available on Spark 4.3 (no Iceberg runtime)",
                                        [], [], 0.0)
    record = partitions.judged_from_check(case, check)
    assert record.status == "skipped"
    assert record.message == ("ternary partitioning: not run (its cross-strategy check is skipped: not available on "
                              "Spark 4.3 (no Iceberg runtime))")
