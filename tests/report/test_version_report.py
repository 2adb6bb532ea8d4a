"""results.json follows schemas/results.schema.json; HTML is written atomically."""
import json
import re

from harness.check.runner import run_case
from harness.report import version_report
from harness.scenario.model import expand, load_scenario
from tests.conftest import MINIMAL, fake_record, fake_results


def test_real_run_writes_valid_reports(session, write_scenario, tmp_path):
    text = MINIMAL.replace("expect:", "matrix:\n  join_type: [inner, full_outer]\nexpect:") + \
        "  overrides:\n    - when: {join_type: full_outer}\n      strategy: SortMergeJoin\n"
    records = [run_case(case, session).to_json() for case in expand(load_scenario(write_scenario(text)))]
    assert [r["status"] for r in records] == ["passed", "passed"]
    records[1]["status"], records[1]["message"] = "failed", "initial plan: expected X"
    written = version_report.write_reports(tmp_path / "reports", records, [{"file": "bad.yaml", "message": "bad.yaml:3: x"}])
    results = json.loads(written[0].read_text())  # validated by write_reports before it was written
    assert results["versions"]["spark"] == session.versions["spark"]
    assert results["summary"]["by_status"] == {"failed": 1, "invalid": 1, "passed": 1}
    assert results["cases"][0]["status"] == "failed"  # failures first
    html = written[1].read_text()
    assert "minimal[full_outer]" in html and "bad.yaml:3: x" in html and "SortMergeJoin" in html
    assert not list(written[0].parent.glob(".*tmp"))  # no temp files left behind


def test_summary_counts_strategies():
    records = [fake_record(f"c{i}", s) for i, s in enumerate(("SortMergeJoin", "SortMergeJoin", "BroadcastHashJoin"))]
    summary = version_report.summarize(records, [])
    assert summary["by_strategy"] == {"SortMergeJoin": 2, "BroadcastHashJoin": 1}
    assert summary["total_case_seconds"] == 3.0


def test_a_case_its_deployment_cannot_run_counts_as_not_run_not_as_no_join():
    from harness.report.version_report import build_results
    from tests.conftest import fake_record
    skipped = fake_record("s[inner]", strategy=None, status="skipped")
    skipped["message"] = "not run through Spark Connect: statistics-only tables ..."
    planned_away = fake_record("n[inner]", strategy=None)
    assert build_results([skipped, planned_away], [])["summary"]["by_strategy"] == {"not run": 1, "no join": 1}


def test_a_skipped_cross_strategy_check_shows_in_its_case_row():
    from tests.conftest import fake_record, fake_results
    case = fake_record("captured_q17[inner]")
    check = dict(fake_record("captured_q17[inner-agree]"), kind="agreement", status="skipped",
                 message="plan-only: statistics-only tables have no rows, so nothing executes \"><script>x</script>")
    other = fake_record("other[inner]")
    page = version_report.render_html(fake_results([case, check, other]))
    rows = re.findall(r'<tr class="case" id="([^"]+)"', page)
    assert rows == ["captured_q17[inner]", "other[inner]"] or sorted(rows) == ["captured_q17[inner]", "other[inner]"]
    case_row = page[page.index('id="captured_q17[inner]"'):page.index('id="other[inner]"')]
    assert "cross-strategy check skipped" in case_row and "plan-only: statistics-only tables" in case_row
    assert "<script>x" not in page and "&lt;script&gt;x" in case_row  # the message is text, never markup
    assert 'data-status="passed skipped"' in case_row  # the status filter `skipped` still finds it
    assert version_report.skipped_checks_by_case([case, check, other]) == {"captured_q17[inner]": check}


def test_strategy_names_may_wrap_between_words():
    from tests.conftest import fake_record, fake_results
    page = version_report.render_html(fake_results([fake_record("c[inner]", "BroadcastNestedLoopJoin", "right")]))
    assert "Broadcast<wbr>Nested<wbr>Loop<wbr>Join" in page and "td.plan { overflow-wrap: anywhere; }" in page


def test_configs_the_version_does_not_declare_are_said_on_both_pages_and_under_a_failure():
    from harness.observe.describe import why_lines
    from harness.report.merged import matrix_data
    record = fake_record("c[inner]", spark="3.0.3", undefined_conf=["spark.sql.adaptive.coalescePartitions.minPartitionSize"])
    words = "not defined on Spark 3.0.3: no effect: spark.sql.adaptive.coalescePartitions.minPartitionSize"
    assert words in version_report.render_html(fake_results([record], spark="3.0.3"))
    cell = matrix_data({"3.0.3": fake_results([record], spark="3.0.3")})["rows"][0]["cells"]["3.0.3"]
    assert cell["detail"]["undefined_conf"] == words
    assert words in why_lines(record)
