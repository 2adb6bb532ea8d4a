"""Scenario files are untrusted: each attack or fault found in review, reproduced, and
refused or survived. Every attack targets only a temp directory."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from harness.scenario.errors import ScenarioError
from harness.scenario.model import expand, load_scenario
from tests.conftest import MINIMAL, fake_record

pytest_plugins = ["pytester"]

REFLECT_CALLS = [
    "`reflect`('java.lang.System', 'getProperty', 'user.home')",
    "reflect /* a comment */ ('java.lang.System', 'getProperty', 'user.home')",
    "system.builtin.`reflect`('java.lang.System', 'getProperty', 'user.home')",
    "java_method('java.lang.System', 'getProperty', 'user.home')",
    "IDENTIFIER('reflect')('java.lang.System', 'getProperty', 'user.home')",
]


def refusal(session, write_scenario, text, sql: str | None = None, expression: bool = False) -> str:
    """The one-line refusal a scenario gets when its file is collected. A statement the
    running Spark cannot even parse (EXECUTE IMMEDIATE before 4.0) cannot run either:
    then that is what is asserted, and the refusal is taken as given."""
    from harness.spark.sql_guard import check_scenario, parsed_expression, parsed_query
    if sql is not None:
        try:
            (parsed_expression if expression else parsed_query)(session.spark, sql)
        except Exception as exc:
            assert "ParseException" in type(exc).__name__ or "Parse" in str(exc)[:200], exc
            return "join.sql: unparseable on this version: " + sql
    path = write_scenario(text)
    with pytest.raises(ScenarioError) as info:
        scenario = load_scenario(path)
        expand(scenario)
        check_scenario(session.spark, scenario)
    return str(info.value)


def with_sql(sql: str) -> str:
    body = MINIMAL.split("join:")[0]
    return body + f"join:\n  sql: {json.dumps(sql)}\nexpect:\n  strategy: BroadcastHashJoin\n"


# --------------------------------------------------------------------------- SQL

@pytest.mark.parametrize("call", REFLECT_CALLS)
def test_reflection_is_refused_in_every_field_and_spelling(session, write_scenario, call):
    quoted = json.dumps(call)
    expr = MINIMAL.replace("k: {sequence: {}}", f"k: {{sequence: {{}}}}\n      x: {{expr: {quoted}}}")
    message = refusal(session, write_scenario, expr, call, expression=True)
    if "unparseable" in message:
        return  # a spelling this version's parser does not know (qualified names, IDENTIFIER: 3.x)
    if call.startswith("IDENTIFIER"):  # a name computed at analysis is refused as such
        assert "case.yaml:12: tables.b.columns.x.expr: the IDENTIFIER() clause is not allowed" in message
        return
    assert "case.yaml:12: tables.b.columns.x.expr: reflection" in message
    filt = MINIMAL.replace("    rows: 10\n", f"    rows: 10\n    filter: {json.dumps(call + ' IS NOT NULL')}\n")
    assert "tables.b.filter: reflection" in refusal(session, write_scenario, filt)
    cond = MINIMAL.replace("on: [k]", f"on: [k]\n  condition: {json.dumps(call + ' IS NOT NULL')}")
    assert "case.yaml:16: join.condition: reflection" in refusal(session, write_scenario, cond)
    sql = f"SELECT {call} AS home, * FROM a JOIN b ON a.k = b.k"
    message = refusal(session, write_scenario, with_sql(sql), sql)
    assert "join.sql: reflection" in message or "unparseable" in message


@pytest.mark.parametrize("sql, construct", [
    ("EXECUTE IMMEDIATE 'SET spark.sql.shuffle.partitions=3'", "UnresolvedExecuteImmediate"),
    ("SET spark.sql.shuffle.partitions=3", "SetCommand"),
    ("SELECT TRANSFORM(k) USING 'id' AS (x) FROM a", "ScriptTransformation"),
    ("SELECT * FROM read_files('/etc/hostname')", "table function 'read_files'"),
    ("SELECT * FROM parquet.`/tmp`", "reads 'parquet\\./tmp'"),
    ("SELECT * FROM default.a", "reads 'default\\.a'"),
    ("SELECT * FROM IDENTIFIER('default.a')", "IDENTIFIER\\(\\) clause|table function 'identifier'|reads 'default\\.a'"),
    ("CACHE TABLE a", "not a query operator"),
    ("SELECT * FROM VALUES (java_method('java.lang.System', 'getProperty', 'user.home')) AS t(x)", "reflection"),
    ("SELECT /*+ REPARTITION(reflect('java.lang.System', 'getProperty', 'user.home')) */ * FROM a", "reflection"),
    ("SELECT * FROM a WHERE k IN (SELECT java_method('java.lang.System', 'exit', 0))", "reflection"),
])
def test_only_queries_over_the_scenarios_tables(session, write_scenario, sql, construct):
    message = refusal(session, write_scenario, with_sql(sql), sql)
    assert ("case.yaml:13: join.sql: " in message and re.search(construct, message)) or "unparseable" in message


@pytest.mark.parametrize("sql, construct", [
    ("SELECT reflect('java.lang.System', 'getProperty', 'user.home') AS h FROM joined", "reflection"),
    ("SELECT * FROM views", "reads 'views', which is not a table of this scenario \\(joined\\)"),
    ("SET spark.sql.shuffle.partitions=3", "SetCommand"),
    ("SELECT * FROM joined WHERE ad IN (SELECT java_method('java.lang.System', 'exit', 0))", "reflection"),
])
def test_a_streams_then_query_reads_only_the_join(session, write_scenario, sql, construct):
    from tests.scenario.test_scenario import THEN
    text = THEN.replace("SELECT count(*) AS n FROM joined GROUP BY window(vts, '1 hour')", sql.replace('"', '\\"'))
    message = refusal(session, write_scenario, text, sql)
    assert ("stream.then.sql: " in message and re.search(construct, message)) or "unparseable" in message, message


def test_a_streams_then_query_over_the_join_is_accepted(session, write_scenario):
    from harness.spark.sql_guard import check_scenario
    from tests.scenario.test_scenario import THEN
    check_scenario(session.spark, load_scenario(write_scenario(THEN)))


def test_execute_immediate_cannot_write_a_directory_or_change_the_session(session, write_scenario, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    attacks = [f"EXECUTE IMMEDIATE 'INSERT OVERWRITE DIRECTORY ''{victim}'' SELECT 1'",
               f"INSERT OVERWRITE DIRECTORY '{victim}' USING parquet SELECT 1",
               "EXECUTE IMMEDIATE 'SET spark.sql.shuffle.partitions=3'"]
    for sql in attacks:
        assert "join.sql" in refusal(session, write_scenario, with_sql(sql), sql)
    assert sorted(p.name for p in victim.iterdir()) == ["keep.txt"]
    assert session.spark.conf.get("spark.sql.shuffle.partitions") == "200"


def _jar(tmp_path: Path, marker: Path) -> Path:
    """A jar whose static method writes `marker`: what a stranger's ADD JAR would load."""
    if not shutil.which("javac"):
        pytest.skip("javac is needed to build the attacker's jar")
    source = tmp_path / "Evil.java"
    source.write_text(textwrap.dedent(f"""\
        public class Evil {{
          public static String run() throws Exception {{
            java.nio.file.Files.write(java.nio.file.Paths.get("{marker}"), "pwned".getBytes());
            return "done";
          }}
        }}"""))
    subprocess.run(["javac", "-d", str(tmp_path), str(source)], check=True, capture_output=True)
    jar = tmp_path / "evil.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.write(tmp_path / "Evil.class", "Evil.class")
    return jar


def test_add_jar_and_a_call_into_it_are_refused(session, write_scenario, tmp_path):
    marker = tmp_path / "pwned.txt"
    jar = _jar(tmp_path, marker)
    for sql in (f"EXECUTE IMMEDIATE 'ADD JAR {jar}'", f"ADD JAR {jar}",
                f"CREATE TEMPORARY FUNCTION evil AS 'Evil' USING JAR '{jar}'"):
        assert "join.sql" in refusal(session, write_scenario, with_sql(sql), sql)
    call = MINIMAL.replace("k: {sequence: {}}", "k: {sequence: {}}\n      x: {expr: \"java_method('Evil', 'run')\"}")
    assert "reflection" in refusal(session, write_scenario, call)
    assert not marker.exists()
    assert "evil.jar" not in str(session.spark.sparkContext._jsc.sc().listJars().mkString(","))


@pytest.mark.parametrize("text, field", [
    (with_sql("SELECT * FROM a JOIN b ON a.k = b.k; SELECT 1"), "join.sql"),
    (with_sql("SELEC * FROM a"), "join.sql"),
    (MINIMAL.replace("join:", "  fa:\n    from: a\n    steps:\n      - filter: \"k >\"\njoin:"), "tables.fa.steps[0].filter"),
    (MINIMAL.replace("join:", "  fa:\n    from: a\n    steps:\n      - select: [\"k +\"]\njoin:"), "tables.fa.steps[0].select[0]"),
])
def test_sql_that_does_not_parse_is_a_collection_error(session, write_scenario, text, field):
    message = refusal(session, write_scenario, text)
    assert f": {field}: does not parse on Spark {session.spark.version}: " in message, message
    assert len(message) < 500


def test_sql_that_does_not_parse_runs_when_the_file_expects_an_error(session, write_scenario):
    """A syntax some versions refuse is what those versions observe, when expected."""
    from harness.spark.sql_guard import check_scenario
    text = with_sql("SELEC * FROM a").replace("expect:\n  strategy: BroadcastHashJoin\n",
                                               "expect:\n  error: {class: ParseException}\n")
    check_scenario(session.spark, load_scenario(write_scenario(text)))


def test_plain_scenario_sql_still_passes(session, write_scenario):
    from harness.spark.sql_guard import check_scenario
    sql = ("WITH hot AS (SELECT k, count(*) AS n FROM a GROUP BY k) "
           "SELECT /*+ BROADCAST(b) */ * FROM hot JOIN b ON hot.k = b.k "
           "WHERE EXISTS (SELECT 1 FROM range(3) r WHERE r.id = b.k) "
           "AND b.k IN (SELECT explode(array(1, 2, 3)))")
    check_scenario(session.spark, load_scenario(write_scenario(with_sql(sql))))


# --------------------------------------------------------------------------- configs

@pytest.mark.parametrize("key, value, says", [
    ("spark.sql.warehouse.dir", "/tmp/elsewhere", "is not a config a scenario may set"),
    ("spark.sql.extensions", "com.evil.Ext", "is not a config a scenario may set"),
    ("spark.sql.catalog.evil", "com.evil.Catalog", "is not a config a scenario may set"),
    ("spark.sql.session.timeZone", "UTC; DROP", "takes a time zone id"),
    ("spark.sql.codegen.factoryMode", "FAST", "FALLBACK/CODEGEN_ONLY/NO_CODEGEN"),
    ("spark.sql.shuffle.partitions", "x" * 10_001, "a value of 10001 characters"),
])
def test_configs_refused_from_the_file_alone(write_scenario, key, value, says):
    text = MINIMAL + f"spark_conf:\n  {key}: {json.dumps(value)}\n"
    with pytest.raises(ScenarioError) as info:
        load_scenario(write_scenario(text))
    assert f"case.yaml:20: spark_conf.{key}: " in str(info.value) and says in str(info.value)
    assert len(str(info.value)) < 300


@pytest.mark.parametrize("key, value, says", [
    ("spark.sql.adaptive.enable", "true", "did you mean 'spark.sql.adaptive.enabled'"),
    ("spark.sql.autoBroadcastJoinThreshold", "not-a-number", "refuses 'not-a-number' for"),
    ("spark.sql.adaptive.enabled", "maybe", "refuses 'maybe'"),
    ("spark.sql.shuffle.partitions", 1.5, "refuses '1.5'"),
    ("spark.sql.shuffle.partitions", 0, "must be positive"),
    ("spark.sql.globalTempDatabase", "elsewhere", "is a static config"),
    ("spark.sql.parquet.compression.codec", "snappy", "takes a string"),
    ("spark.sql.shuffle.partitions", {"estimate_of": "left"}, "does not take a size in bytes"),
])
def test_configs_refused_by_the_running_sparks_registry(session, write_scenario, key, value, says):
    """Decided by Spark's own config entries (harness.spark.conf_registry), at collection."""
    message = refusal(session, write_scenario, MINIMAL + f"spark_conf:\n  {key}: {json.dumps(value)}\n")
    assert f"case.yaml:20: spark_conf.{key}: " in message and says in message, message


def test_matrix_config_values_are_checked_too(session, write_scenario):
    text = MINIMAL + "matrix:\n  conf:\n    spark.sql.adaptive.enabled: [true, sometimes]\n"
    assert re.search(r"case.yaml:21: matrix.conf.spark.sql.adaptive.enabled\[1\]: .*'sometimes'",
                     refusal(session, write_scenario, text))


def test_any_typed_config_the_running_spark_declares_may_be_set(session, write_scenario):
    """Not a hand-kept list: a boolean, a duration, a size and a double from the registry."""
    from harness.spark.sql_guard import check_scenario
    text = MINIMAL + ("spark_conf:\n  spark.sql.optimizer.canChangeCachedPlanOutputPartitioning: true\n"
                      "  spark.sql.broadcastTimeout: 90s\n  spark.sql.files.maxPartitionBytes: 64MB\n"
                      "  spark.sql.cbo.joinReorder.card.weight: 0.5\n")
    check_scenario(session.spark, load_scenario(write_scenario(text)))


def test_the_stream_correctness_check_and_the_watermark_policy_may_be_set(session, write_scenario):
    """What a stream chain's verdict depends on: the correctness check (a boolean of the
    registry) and the multiple-watermark policy (a vetted string)."""
    from harness.spark.sql_guard import check_scenario
    from tests.scenario.test_scenario import THEN
    text = THEN + ("spark_conf:\n  spark.sql.streaming.statefulOperator.checkCorrectness.enabled: false\n"
                   "  spark.sql.streaming.multipleWatermarkPolicy: max\n")
    check_scenario(session.spark, load_scenario(write_scenario(text)))


def test_a_key_of_another_spark_version_is_not_set_and_is_said_so(session, write_scenario):
    """A key this Spark does not declare but a measured version does: the case runs
    without it, and its record says so; set, it would have done nothing."""
    from harness.check import runner
    from harness.scenario import confs
    elsewhere = [k for k, versions in confs.measured_keys().items()
                 if k.startswith("spark.sql.") and session.spark.version not in versions]
    if not elsewhere:
        pytest.skip(f"every measured key is declared by Spark {session.spark.version}")
    text = MINIMAL + f"spark_conf:\n  {elsewhere[0]}: true\n"
    scenario = load_scenario(write_scenario(text))
    observed, _ = runner.capture(session, expand(scenario)[0], execute=False, collect_rows=False)
    assert observed.error is None and observed.undefined_conf == [elsewhere[0]]
    assert session.spark.conf.get(elsewhere[0], None) is None


def test_a_config_changed_behind_the_harness_back_is_undone(session):
    aqe = session.spark.conf.get("spark.sql.adaptive.enabled")
    with session.case_scope(30) as scope:
        scope.set_conf("spark.sql.shuffle.partitions", 5)
        session.spark.conf.set("spark.sql.adaptive.enabled", str(aqe != "true").lower())  # not through the scope
        session.spark.conf.set("spark.sql.leaked.key", "x")
    assert session.spark.conf.get("spark.sql.shuffle.partitions") == "200"
    assert session.spark.conf.get("spark.sql.adaptive.enabled") == aqe
    assert session.spark.conf.get("spark.sql.leaked.key", None) is None
    assert not session.abandoned


def test_time_zone_and_ansi_shape_generated_data(session, write_scenario):
    from harness.check.runner import run_case
    hour_of_epoch = MINIMAL.replace("k: {sequence: {}}", "k: {sequence: {}}\n      h: {expr: \"hour(from_unixtime(0))\"}")
    hour_of_epoch = hour_of_epoch.replace("expect:\n  strategy: BroadcastHashJoin\n  build_side: right\n",
                                          "expect:\n  result_rows: [[16]]\n")
    hour_of_epoch = hour_of_epoch.replace("join:\n  left: a\n  right: b\n  on: [k]\n",
                                          "join:\n  sql: \"SELECT DISTINCT h FROM b\"\n")
    utc = hour_of_epoch.replace("id: minimal", "id: utc").replace("[[16]]", "[[0]]")
    la = hour_of_epoch.replace("id: minimal", "id: la") + "spark_conf:\n  spark.sql.session.timeZone: America/Los_Angeles\n"
    for text, name in ((utc, "utc.yaml"), (la, "la.yaml"), (utc, "utc_again.yaml")):
        record = run_case(expand(load_scenario(write_scenario(text, name)))[0], session).to_json()
        assert record["status"] == "passed", record["message"]
    ansi = MINIMAL.replace("k: {sequence: {}}", "k: {sequence: {}}\n      bad: {expr: \"CAST(concat('x', id) AS INT)\"}")
    ansi = ansi.replace("id: minimal", "id: ansi") + \
        "spark_conf:\n  spark.sql.ansi.enabled: true\n".replace("expect:", "expect:")
    ansi = ansi.replace("  strategy: BroadcastHashJoin\n  build_side: right\n",
                        "  plan: final\n  error: {message: \"CAST|cast|NumberFormat\"}\n")
    record = run_case(expand(load_scenario(write_scenario(ansi, "ansi.yaml")))[0], session).to_json()
    assert record["status"] == "passed", record["message"]
    lenient = ansi.replace("id: ansi", "id: lenient").replace("spark.sql.ansi.enabled: true", "spark.sql.ansi.enabled: false")
    lenient = lenient.replace("  error: {message: \"CAST|cast|NumberFormat\"}\n", "  rows: 100\n")
    record = run_case(expand(load_scenario(write_scenario(lenient, "lenient.yaml")))[0], session).to_json()
    assert record["status"] == "passed", record["message"]


# --------------------------------------------------------------------------- collection

HOSTILE_FILES = {
    "date.yaml": (MINIMAL.replace("description: two small tables", "description: 2024-02-30"),
                  "date.yaml:2: description: cannot read the value '2024-02-30'"),
    "digits.yaml": (MINIMAL.replace("seed", "seed").replace("id: minimal", "id: digits\nseed: " + "9" * 5000),
                    "digits.yaml:2: seed: cannot read the value"),
    "float.yaml": (MINIMAL.replace("id: minimal", "id: fl\ntimeout: !!float abc"),
                   "float.yaml:2: timeout: cannot read the value 'abc'"),
    "nan.yaml": (MINIMAL.replace("id: minimal", "id: nan\ntimeout: .nan"), "nan.yaml:2: timeout: .nan is not a finite number"),
    "deep.yaml": ("id: deep\ndescription: x\nexpect: " + "[" * 5000 + "]" * 5000 + "\n",
                  "deep.yaml:3: (file): YAML syntax: nesting deeper than 40 levels"),
    "huge_matrix.yaml": (MINIMAL.replace("id: minimal", "id: huge") + "matrix:\n  conf:\n" + "".join(
        f"    {key}: [{', '.join(str(v) for v in range(16))}]\n" for key in (
            "spark.sql.shuffle.partitions", "spark.sql.autoBroadcastJoinThreshold",
            "spark.sql.shuffledHashJoinFactor", "spark.sql.adaptive.coalescePartitions.initialPartitionNum",
            "spark.sql.adaptive.advisoryPartitionSizeInBytes", "spark.sql.files.maxPartitionBytes",
            "spark.sql.cbo.joinReorder.dp.threshold", "spark.sql.codegen.maxFields")),
        "huge_matrix.yaml:19: matrix: expands to 4,294,967,296 cases; the limit is 512"),
    "numbers_as_text.yaml": (MINIMAL.replace("id: minimal", "id: nat").replace(
        "k: {key: {cardinality: 10}}", "k: {key: {cardinality: 10}}\n      u: {uniform: {min: not-a-number, max: 5}}"),
        "numbers_as_text.yaml:8: tables.a.columns.u.uniform.min: a long bound must be a number"),
}


def test_hostile_files_fail_alone_with_one_line(pytester, session):
    scenarios = pytester.mkdir("scenarios")
    (scenarios / "good.yaml").write_text(MINIMAL)
    for name, (text, _) in HOSTILE_FILES.items():
        (scenarios / name).write_text(text)
    (scenarios / "garbage.yaml").write_bytes(b"id: g\ndescription: x\n\x00\x01\xff\xfe binary")
    (scenarios / "latin1.yaml").write_bytes(b"id: l\ndescription: caf\xe9\n")
    (scenarios / "escape.yaml").write_text("id: esc\ndescription: \"\\e[31mred\"\nbogus: 1\n")
    wip = pytester.mkdir("scenarios/_wip")
    (wip / "wip.yaml").write_text(MINIMAL.replace("id: minimal", "id: wip"))
    result = pytester.runpytest("scenarios", "--no-report")
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out
    # the good files' partitions checks: not needed (the reference compared)
    result.assert_outcomes(passed=4, skipped=2, errors=len(HOSTILE_FILES) + 3)
    for _, expected in HOSTILE_FILES.values():
        assert expected in out, expected
    assert "garbage.yaml:3: (file): not a text file (NUL byte)" in out
    assert "latin1.yaml:2: (file): not UTF-8 text (byte 0xe9)" in out
    assert "\x1b" not in out


def test_reserved_marker_names_are_not_applied(pytester, session):
    skip = pytester.path / "scenarios" / "skip"
    skip.mkdir(parents=True)
    (skip / "s.yaml").write_text(MINIMAL)
    result = pytester.runpytest("scenarios", "--no-report", "-k", "not agree")
    result.assert_outcomes(passed=1)  # a folder named `skip` does not skip its cases


def test_lost_agreement_record_renders_in_the_merged_page(write_scenario):
    from harness.check.agreement import lost_record
    from harness.report.merged import matrix_data
    from harness.report.version_report import build_results
    case = expand(load_scenario(write_scenario(MINIMAL)))[0]
    versions = {"spark": "4.3.0", "java": "17", "python": "3.11"}
    lost = lost_record(case, versions, "local[2]", "worker process lost: crashed").to_json()
    assert lost["kind"] == "agreement" and lost["status"] == "error"
    data = matrix_data({"4.3.0": build_results([lost], [])})
    assert data["rows"][0]["cells"]["4.3.0"]["status"] == "error"


# --------------------------------------------------------------------------- reports

def _record(case_id: str, file: str) -> dict:
    return fake_record(case_id, file=file)


def test_partial_and_concurrent_writes_keep_every_case(tmp_path, monkeypatch):
    from harness.report.version_report import write_reports
    monkeypatch.chdir(tmp_path)
    Path("one.yaml").write_text(MINIMAL.replace("id: minimal", "id: one"))
    Path("two.yaml").write_text(MINIMAL.replace("id: minimal", "id: two"))
    write_reports("out", [_record("one", "one.yaml"), _record("two", "two.yaml")], [])
    write_reports("out", [_record("one", "one.yaml")], [])  # a run of one file
    cases = json.loads(Path("out/4.3.0/results.json").read_text())["cases"]
    assert sorted(c["case_id"] for c in cases) == ["one", "two"]
    assert all(c["ran_at"] for c in cases)
    Path("two.yaml").unlink()  # a scenario that no longer exists is dropped
    write_reports("out", [_record("one", "one.yaml")], [])
    assert [c["case_id"] for c in json.loads(Path("out/4.3.0/results.json").read_text())["cases"]] == ["one"]
    assert not list(Path("out/4.3.0").glob(".*.tmp"))


def test_two_runs_at_once_on_one_report_dir_keep_both(pytester):
    for name in ("left", "right"):
        folder = pytester.mkdir(f"scenarios_{name}")
        (folder / f"{name}.yaml").write_text(MINIMAL.replace("id: minimal", f"id: {name}"))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    runs = [subprocess.Popen([sys.executable, "-m", "pytest", f"scenarios_{name}/{name}.yaml", "-p", "no:cacheprovider",
                              "--report-dir", "out", "-q", "-k", "not agree"], cwd=pytester.path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for name in ("left", "right")]
    outputs = [run.communicate(timeout=300)[0].decode() for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    results = json.loads(next((pytester.path / "out").glob("*/results.json")).read_text())
    assert sorted(c["case_id"] for c in results["cases"]) == ["left", "right"]
    assert not [p for p in (pytester.path / "out").rglob("*.tmp")]


def test_unwritable_report_dir_is_one_line_and_the_tests_decide_the_exit_code(pytester, session):
    scenarios = pytester.mkdir("scenarios")
    (scenarios / "good.yaml").write_text(MINIMAL)
    (pytester.path / "blocked").write_text("a file where the report folder should be")
    result = pytester.runpytest("scenarios", "--report-dir", "blocked/reports", "-k", "not agree")
    assert result.ret == 0
    result.assert_outcomes(passed=1)
    lines = [ln for ln in result.stderr.lines + result.stdout.lines if "reports are not written" in ln]
    assert len(lines) == 1 and "blocked/reports" in lines[0]
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_stale_temp_files_of_dead_processes_are_removed(tmp_path):
    from harness.core.files import atomic_write_text, remove_stale_temps
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".results.json.tmp-{dead.stdout.strip()}-x.tmp"
    live = tmp_path / f".results.json.tmp-{os.getpid()}-y.tmp"
    stale.write_text("{")
    live.write_text("{")
    assert remove_stale_temps(tmp_path) == 1
    assert not stale.exists() and live.exists()
    atomic_write_text(tmp_path / "r.json", "{}")
    assert (tmp_path / "r.json").read_text() == "{}"


def test_scenario_text_cannot_break_the_merged_page(tmp_path, monkeypatch):
    from html.parser import HTMLParser

    from harness.report.merged import matrix_data, render
    from harness.report.version_report import build_results
    monkeypatch.chdir(tmp_path)
    hostile = "# <!--<script> </script><script>alert(1)</script>\n" + MINIMAL
    Path("x.yaml").write_text(hostile)
    record = _record("minimal", "x.yaml")
    record["message"] = "</script><!--<script>"
    page = render(matrix_data({"4.3.0": build_results([record], [])}))

    class Scripts(HTMLParser):
        def __init__(self):
            super().__init__()
            self.inside, self.blocks = False, []

        def handle_starttag(self, tag, attrs):
            if tag == "script":
                self.inside = True
                self.blocks.append([dict(attrs), ""])

        def handle_endtag(self, tag):
            self.inside = False if tag == "script" else self.inside

        def handle_data(self, data):
            if self.inside:
                self.blocks[-1][1] += data

    parser = Scripts()
    parser.feed(page)
    data_blocks = [text for attrs, text in parser.blocks if attrs.get("id") == "data"]
    assert len(data_blocks) == 1 and len(parser.blocks) == 2
    payload = json.loads(data_blocks[0])
    assert payload["files"]["x.yaml"] == hostile  # the text survives, inert
    assert "<!--" not in data_blocks[0] and "<script" not in data_blocks[0]


def test_control_characters_from_spark_errors_are_escaped(session, write_scenario):
    from harness.check.runner import run_case
    # Spark's message names the unknown function: ESC [31m and BEL come back from the JVM.
    text = MINIMAL.replace("k: {sequence: {}}", "k: {expr: \"`no_such\\e[31mred\\a`(id)\"}")
    text = text.replace("  build_side: right\n", "  rows: 1\n")
    record = run_case(expand(load_scenario(write_scenario(text)))[0], session).to_json()
    assert record["status"] == "error"
    assert "\\x1b[31mred\\x07" in record["message"]
    assert "\x1b" not in json.dumps(record, ensure_ascii=False)


def test_a_catastrophic_pattern_cannot_hang_the_worker():
    import time

    from harness.check import expect
    from harness.core.records import Observation, SparkError
    observed = Observation(error=SparkError("AnalysisException", "a" * 60 + "b"))
    started = time.perf_counter()
    problems = expect.compare({"plan": "initial", "error": {"message": "(a|aa)+$"}}, observed)
    # unbounded, this pattern would backtrack for years over 60 a's; bounded, it stops after
    # 1 s of matching, which on two loaded cores took 6.4 s of wall time (a fresh clone's
    # make test, with the class-data archive building beside it)
    assert time.perf_counter() - started < 60
    assert problems and "took over 1 s" in problems[0]


def test_a_pattern_that_does_not_compile_is_a_collection_error(write_scenario):
    text = MINIMAL + "  warnings: ['(unclosed']\n"
    with pytest.raises(ScenarioError, match=r"case.yaml:19: expect.warnings\[0\]: not a regular expression"):
        load_scenario(write_scenario(text))
