"""The verification suite on the installed Spark, DuckDB and sqlglot, for the entries the
shipped scenarios rely on (read from the analysed plans of every scenario the reference
compares on 4.3.0: comparisons, AND/OR/NOT, integer arithmetic, widening casts, coalesce,
count and max) and the translations fixed in harness.observe.spark_meaning: every entry
the list says is verified here must still agree on every edge value, so a new DuckDB or
sqlglot that changes a translation fails the build, not a team's verdicts."""
import pytest

from harness.observe import reference_gate as gate, reference_verify as suite

pytest.importorskip("duckdb")

SUITE_NEEDS = {
    ("EqualTo", ("bigint", "bigint")), ("EqualTo", ("int", "int")), ("EqualTo", ("string", "string")),
    ("EqualTo", ("date", "date")), ("EqualTo", ("decimal", "decimal")), ("And", ("boolean", "boolean")),
    ("Or", ("boolean", "boolean")), ("Not", ("boolean",)), ("GreaterThan", ("int", "int")),
    ("GreaterThan", ("bigint", "bigint")), ("GreaterThanOrEqual", ("bigint", "bigint")),
    ("LessThan", ("bigint", "bigint")), ("LessThan", ("int", "int")), ("LessThan", ("decimal", "decimal")),
    ("Add", ("int", "int")), ("Add", ("bigint", "bigint")), ("Subtract", ("int", "int")),
    ("Cast", ("int",)), ("Cast", ("bigint",)), ("Cast", ("decimal",)), ("Coalesce", ("bigint",)),
    ("Count", ("int",)), ("Max", ("int",)), ("Max", ("bigint",)),
}
FIXED = {"DayOfWeek", "WeekDay", "Like", "MonthsBetween", "IsNaN", "StringLocate"}
CASTS_NEEDED = {("int", "bigint"), ("decimal", "decimal"), ("bigint", "decimal")}


def needed(entry: dict) -> bool:
    key = (entry["expression"], tuple(entry["inputs"]))
    if entry["expression"] == "MonthsBetween":  # of dates; of timestamps DuckDB drops the time of day
        return entry["inputs"][0] == "timestamp<-date"
    if entry["expression"] == "Cast":
        return (entry["inputs"][0], entry.get("output")) in CASTS_NEEDED
    return key in SUITE_NEEDS or entry["expression"] in FIXED


def test_the_entries_the_suite_needs_are_verified_here_and_still_agree(session):
    spark = session.spark
    entries = [e for e in gate.VerifiedList.load().data["entries"] if needed(e)]
    claimed = [e for e in entries if gate.verified_here(e, spark.version, False, "UTC")
               and gate.verified_here(e, spark.version, True, suite.EDGE_ZONE)]
    # every entry the suite needs is verified on this version (else its answers go uncompared)
    assert [gate.entry_key(e) for e in claimed] == [gate.entry_key(e) for e in entries]
    cases = 0
    for ansi, zone in (("off", "UTC"), ("on", suite.EDGE_ZONE)):
        results = suite.verify(spark, claimed, ansi_modes=(ansi,), zones=(zone,))
        for i, entry in enumerate(claimed):
            outcome = results[i][(ansi, zone)]
            assert outcome.agrees, (entry["expression"], entry["inputs"], ansi, zone,
                                    outcome.error, outcome.differed[:2])
            cases += outcome.cases
    assert cases > 1000
