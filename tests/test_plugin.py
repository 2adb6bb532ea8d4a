"""The pytest adapter: one-line collection errors per bad file, items per case."""
import json
import textwrap

import pytest

from tests.conftest import MINIMAL

pytest_plugins = ["pytester"]


def make_suite(pytester, files):
    scenarios = pytester.mkdir("scenarios")
    for name, text in files.items():
        (scenarios / name).write_text(textwrap.dedent(text))
    return scenarios


def test_bad_file_fails_alone_with_one_line(pytester, session):
    make_suite(pytester, {
        "good.yaml": MINIMAL,
        "broken.yaml": MINIMAL.replace("id: minimal", "id: broken").replace("right: b", "right: nope"),
        "dup.yaml": MINIMAL,
    })
    result = pytester.runpytest("scenarios", "--no-report", "-p", "no:cacheprovider")
    # the case and its agreement check; its partitions item is not needed (the reference compared)
    result.assert_outcomes(passed=2, skipped=1, errors=2)
    out = result.stdout.str()
    assert "broken.yaml:14: join.right: unknown table 'nope'" in out
    assert "duplicate id 'minimal'" in out
    assert "Traceback" not in out


def test_scenarios_and_python_tests_run_together(pytester, session):
    """Items of both kinds in one selection are ordered without comparing a scenario's
    run number with a test's absent one (it raised in the collection hook)."""
    make_suite(pytester, {"good.yaml": MINIMAL})
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest("scenarios", "test_plain.py", "--no-report", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, skipped=1)


def test_failing_expectation_reads_like_the_rule(pytester, session):
    make_suite(pytester, {"wrong.yaml": MINIMAL.replace("build_side: right", "build_side: left")})
    result = pytester.runpytest("scenarios", "--no-report", "-p", "no:cacheprovider", "-k", "not agree")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["scenarios/wrong.yaml:1: minimal: [[]failed[]] initial plan: expected build side "
                                 "left, observed BroadcastHashJoin (build right)*",
                                 # under the verdict, why Spark chose what it chose
                                 "    expected: BroadcastHashJoin (build left)",
                                 "    model: equi-join · no hint · rule 1: *≤ autoBroadcastJoinThreshold *",
                                 "    estimates: left * B, right * B; spark.sql.autoBroadcastJoinThreshold 10,485,760 B"])


def test_collect_only_writes_no_report_and_no_agree_leaves_checks_out(pytester, session):
    make_suite(pytester, {"good.yaml": MINIMAL})
    pytester.runpytest("scenarios", "--report-dir", "out", "--collect-only", "-p", "no:cacheprovider")
    assert not (pytester.path / "out" / session.versions["spark"]).exists()
    result = pytester.runpytest("scenarios", "--report-dir", "out", "--no-agree", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_last_failed_reruns_only_the_failed_case(pytester, session):
    text = MINIMAL.replace("build_side: right", "build_side: left").replace("id: minimal", "id: lf")
    make_suite(pytester, {"good.yaml": MINIMAL, "wrong.yaml": text})
    pytester.runpytest("scenarios", "--no-report", "-k", "not agree").assert_outcomes(passed=1, failed=1)
    result = pytester.runpytest("scenarios", "--no-report", "--lf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*rerun previous 1 failure*"])


def test_spark_error_is_one_line(pytester, session):
    bad_expr = MINIMAL.replace("k: {sequence: {}}", "k: {expr: \"no_such_function(id)\"}")
    make_suite(pytester, {"err.yaml": bad_expr})
    result = pytester.runpytest("scenarios", "--no-report", "-p", "no:cacheprovider", "-k", "not agree")
    result.assert_outcomes(failed=1)
    line = [ln for ln in result.stdout.lines if "minimal: [error]" in ln]
    assert line and "no_such_function" in line[0]
    assert "at org.apache" not in result.stdout.str()


def test_reports_written_for_a_run(pytester, session):
    make_suite(pytester, {"good.yaml": MINIMAL})
    result = pytester.runpytest("scenarios", "--report-dir", "out", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, skipped=1)
    version = session.versions["spark"]
    records = json.loads((pytester.path / "out" / version / "results.json").read_text())
    partitions = next(r for r in records["cases"] if r["kind"] == "partitions")
    assert partitions["case_id"] == "minimal[inner-partitions]" and partitions["status"] == "skipped"
    assert partitions["message"].startswith("ternary partitioning: not needed (DuckDB ")
    assert records["summary"]["partitions"]["not_needed"] == 1
    # shown in its cross-strategy check's row, not as a row of its own
    page = (pytester.path / "out" / version / "index.html").read_text()
    assert "partitions not needed" in page and 'id="minimal[inner-partitions]"' not in page
    assert (pytester.path / "out" / version / "results.json").exists()
    assert (pytester.path / "out" / version / "index.html").exists()
    assert (pytester.path / "out" / version / "junit.xml").exists()


def test_spark_conf_file_reads_spark_defaults_style(tmp_path):
    from harness.spark.session import read_conf_file
    path = tmp_path / "cluster.conf"
    path.write_text("# executors\nspark.executor.memory 4g\nspark.executor.cores=2\n\nspark.cores.max   8\n")
    assert read_conf_file(str(path)) == {"spark.executor.memory": "4g", "spark.executor.cores": "2",
                                         "spark.cores.max": "8"}
    path.write_text("spark.executor.memory\n")
    with pytest.raises(ValueError, match="cluster.conf:1: expected 'key value' or 'key=value'"):
        read_conf_file(str(path))


def test_progress_eta_weighs_items_by_their_last_durations(tmp_path, monkeypatch):
    import json
    from types import SimpleNamespace

    from harness.plugin_state import previous_durations as _previous_durations
    from harness.report.progress import Progress
    (tmp_path / "4.3.0").mkdir()
    # last run: one long stream file first (60 s), then 99 short cases (0.1 s each)
    took = [{"case_id": "long[x]", "timings": {"total_s": 60.0}}] + \
        [{"case_id": f"short[{i}]", "timings": {"total_s": 0.1}} for i in range(99)]
    (tmp_path / "4.3.0" / "results.json").write_text(json.dumps({"cases": took}))
    config = SimpleNamespace(getoption=lambda name: str(tmp_path))
    monkeypatch.setattr("harness.report.version_report.installed_spark", lambda: "4.3.0")
    lines = []
    progress = Progress("4.3.0", lines.append)
    progress.start(["s/a.yaml::long[x]"] + [f"s/b.yaml::short[{i}]" for i in range(99)], _previous_durations(config))
    assert progress.line(0.0).endswith("ETA estimating · 0 failing")
    progress.seen(SimpleNamespace(failed=False, when="teardown", nodeid="s/a.yaml::long[x]"))
    # by item count: 99 more items like the first = 99 minutes; by last durations: ~10 s
    assert "ETA 10s" in progress.line(60.0), progress.line(60.0)


def test_case_ids_keep_only_the_listed_cases_and_a_refused_file_does_not_stop_the_others(pytester, session):
    """What bisect asks a release: the files that hold its cases, only those cases run;
    a file that release refuses is one collection error."""
    make_suite(pytester, {"good.yaml": MINIMAL,
                          "broken.yaml": MINIMAL.replace("id: minimal", "id: broken").replace("right: b", "right: nope")})
    (pytester.path / "ids.txt").write_text("minimal\nbroken\nminimal[x@y]\n")
    result = pytester.runpytest("scenarios/good.yaml", "scenarios/broken.yaml", "--case-ids", "ids.txt",
                                "--continue-on-collection-errors", "--no-report", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1, deselected=2)  # minimal's two checks are not listed


def test_a_case_id_keeps_the_at_sign_of_its_label_and_drops_a_flake_runs():
    from harness.plugin import _case_id_of
    assert _case_id_of("literal_tables[BROADCAST@right-sql]") == "literal_tables[BROADCAST@right-sql]"
    assert _case_id_of("literal_tables[BROADCAST@right-sql]@2") == "literal_tables[BROADCAST@right-sql]"
    assert _case_id_of("minimal@3") == "minimal"


def test_an_unchecked_item_is_reported_at_its_scenario_file_and_line(pytester, session):
    """An item that compared nothing is shown by pytest as skipped, at the scenario's file and
    line (its `id`), not at the line of the plugin that raised the skip."""
    text = "# a comment first\n" + MINIMAL.replace(
        "  build_side: right\n", "  build_side: right\n  varies: {rows: \"a test\", checksum: \"a test\"}\n")
    make_suite(pytester, {"varies.yaml": text})
    result = pytester.runpytest("scenarios", "--no-report", "-p", "no:cacheprovider", "-rs", "-k", "agree")
    result.assert_outcomes(skipped=2)  # the cross-strategy and the partitions check
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] scenarios/varies.yaml:2: nothing compared*",
                                 "SKIPPED [[]1[]] scenarios/varies.yaml:2: ternary partitioning: not compared (the "
                                 "file declares its answer varies*"])
    assert "plugin_items.py" not in result.stdout.str()


def test_the_projects_scenario_paths_are_collected_whatever_their_folders_are_named(pytester, session):
    (pytester.path / "join-harness.toml").write_text('paths = ["joins"]\nreport_dir = "out"\n')
    (pytester.mkdir("joins") / "good.yaml").write_text(MINIMAL)
    (pytester.mkdir("config") / "not_a_scenario.yaml").write_text("key: value\n")
    result = pytester.runpytest("joins", "config", "--collect-only", "-q", "-p", "no:cacheprovider")
    collected = [line for line in result.stdout.lines if "::" in line]
    assert collected and all(line.startswith("joins/good.yaml::") for line in collected), result.stdout.str()
    result = pytester.runpytest("joins", "-p", "no:cacheprovider", "-k", "not agree and not partitions")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "out" / session.versions["spark"] / "results.json").exists()  # the settings' folder
