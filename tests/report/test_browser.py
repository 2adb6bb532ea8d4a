"""The merged report in a real headless Chromium: it renders, filters and shows an upgrade.

Skipped when Chromium is not installed (`make test-browser` installs it and runs this)."""
import json
import re
import shutil
import subprocess

import pytest

from harness.report import merged
from tests.conftest import fake_record, fake_results

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (make test-browser installs it)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-quic"]


def _result(version, cases):
    records = [fake_record(case_id, strategy, "none", spark=version,
                           expected={"strategy": strategy, "plan": "initial"},
                           estimates=[{"left": {"size_in_bytes": 1234567, "row_count": None},
                                       "right": {"size_in_bytes": 52000, "row_count": None}}],
                           conf={"spark.sql.autoBroadcastJoinThreshold": "10485760"})
               for case_id, strategy in cases.items()]
    return fake_results(records, spark=version)


def _chromium(tmp_path, url, *extra):
    profile = tmp_path / "profile"
    done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--window-size=1400,900", *extra, url],
                          capture_output=True, text=True, timeout=90)
    return done.stdout


@pytest.fixture
def report(tmp_path):
    cases_old = {"a[inner]": "SortMergeJoin", "b[inner]": "BroadcastHashJoin", "c[inner]": "ShuffledHashJoin"}
    cases_new = {**cases_old, "a[inner]": "ShuffledHashJoin"}
    for version, cases in (("3.5.7", cases_old), ("4.3.0", cases_new)):
        (tmp_path / version).mkdir()
        (tmp_path / version / "results.json").write_text(json.dumps(_result(version, cases)))
    return merged.write_merged(tmp_path)


def test_matrix_renders_with_the_right_counts(report, tmp_path):
    dom = _chromium(tmp_path, report.as_uri(), "--dump-dom")
    assert "3 shown" in dom
    assert "1 case(s) change from 3.5.7 to 4.3.0" in dom
    assert len(re.findall(r'class="cell passed changed"', dom)) == 1


def test_filter_and_upgrade_view(report, tmp_path):
    dom = _chromium(tmp_path, report.as_uri() + "#filter=ShuffledHash&from=4.3.0&to=3.5.7", "--dump-dom")
    assert "2 shown" in dom  # a (in 4.3.0) and c
    assert "initial: SortMergeJoin → ShuffledHashJoin" in dom
    dom = _chromium(tmp_path, report.as_uri() + "#changed=1", "--dump-dom")
    assert "1 shown" in dom


def test_screenshot(report, tmp_path):
    shot = tmp_path / "matrix.png"
    _chromium(tmp_path, report.as_uri(), f"--screenshot={shot}")
    assert shot.exists() and shot.stat().st_size > 10_000
    shutil.copy(shot, report.parent / "matrix-screenshot.png")


def test_case_panel_shows_each_version(report, tmp_path):
    dom = _chromium(tmp_path, report.as_uri() + "#open=a%5Binner%5D", "--dump-dom")
    assert dom.count('<td class="detail" colspan="3">') == 1  # one case, two versions
    assert "left 1,234,567 B" in dom and "right 52,000 B" in dom
    assert 'href="4.3.0/index.html#a[inner]"' in dom and 'href="3.5.7/index.html#a[inner]"' in dom
    assert "spark.sql.autoBroadcastJoinThreshold=10485760" in dom


# Plan texts as Spark printed them (tests/data): 3.1.3 and 4.3.0 of one adaptive case.
DATA = __import__("pathlib").Path(__file__).parents[1] / "data"


def _planned(version, case_id, strategy, text_file, **extra):
    from harness.core.records import PlanView
    text = (DATA / text_file).read_text()
    return fake_record(case_id, strategy, "none", spark=version, rows=4, checksum="00000000000000aa", adaptive=True,
                       expected={"strategy": "BroadcastHashJoin", "build_side": "right", "plan": "final"},
                       initial=PlanView(joins=[], text=text), final=PlanView(joins=[], text=text),
                       estimates=[{"left": {"size_in_bytes": 36000000, "row_count": None},
                                   "right": {"size_in_bytes": 24000000, "row_count": None}}],
                       join_conf={"spark.sql.autoBroadcastJoinThreshold": "10485760b"},
                       conf={"spark.sql.adaptive.enabled": "true"}, **extra)


def _measured(page, tmp_path, script):
    """The page's DOM after `script` ran at its end (it writes what it measured into the DOM)."""
    probe = page.with_name(".probe.html")
    probe.write_text(page.read_text().replace("</body>", f"<script>{script}</script></body>"))
    return _chromium(tmp_path, probe.as_uri(), "--dump-dom", "--virtual-time-budget=10000")


@pytest.fixture
def planned_reports(tmp_path):
    from harness.report import version_report
    long_id = "aqe_empty_partition_demotion[nonEmptyPartitionRatioForBroadcastJoin=0.0-with-a-long-tail]"
    for version, text_file in (("3.1.3", "plan-3.1.3-aqe-final.txt"), ("4.3.0", "plan-4.3.0-aqe-final.txt")):
        records = [_planned(version, "smj[aqe=on]", "SortMergeJoin", text_file),
                   _planned(version, long_id, "SortMergeJoin", "plan-4.3.0-nested-aqe.txt"),
                   fake_record("plain[inner]", "BroadcastHashJoin", spark=version)]
        results = fake_results(records, spark=version)
        (tmp_path / version).mkdir()
        (tmp_path / version / "results.json").write_text(json.dumps(results))
        (tmp_path / version / "index.html").write_text(version_report.render_html(results))
    return tmp_path


DRAWN = re.compile(r'<svg class="plan-pic" xmlns="[^"]+" width="\d')  # drawn, not the script's template
WIDTH_PROBE = "document.body.dataset.width = document.documentElement.scrollWidth;"


def test_version_page_opened_cases_fit_and_every_case_with_a_plan_has_its_picture(planned_reports, tmp_path):
    page = planned_reports / "4.3.0" / "index.html"
    dom = _measured(page, tmp_path, "document.querySelectorAll('tr.case').forEach(row => toggle(row));"
                                    "document.body.dataset.pictures = Object.keys(pictures).filter("
                                    "id => renderPictures(id).querySelector('svg.plan-pic')).length;" + WIDTH_PROBE)
    assert int(re.search(r'data-width="(\d+)"', dom).group(1)) <= 1400  # every case open, plan texts included
    assert re.search(r'data-pictures="(\d+)"', dom).group(1) == "2"  # both cases with plan text
    assert len(DRAWN.findall(dom)) == 3  # initial and final of the adaptive one, the static one once
    assert "est. 36,000,000 B" in dom and "broadcast threshold 10,485,760 B" in dom
    assert "BroadcastHashJoin (build right), final plan" in dom  # the expectation in words
    assert "pas<wbr>sed" not in dom and "24,000,0" + "<" not in dom


def test_merged_page_shows_two_versions_pictures_with_changes_marked(planned_reports, tmp_path):
    page = merged.write_merged(planned_reports)
    dom = _measured(page, tmp_path, "location.hash = '';" + WIDTH_PROBE)
    assert int(re.search(r'data-width="(\d+)"', dom).group(1)) <= 1400
    assert 'id="strategy-chart"' in dom and 'data-strategy="BroadcastHashJoin" data-version="3.1.3"' in dom
    dom = _chromium(tmp_path, page.as_uri() + "#open=smj%5Baqe%3Don%5D&from=3.1.3&to=4.3.0", "--dump-dom")
    assert len(DRAWN.findall(dom)) == 2
    assert "Spark 3.1.3: final plan" in dom and "Spark 4.3.0: final plan" in dom
    assert dom.count("pic-changed") >= 2  # CustomShuffleReader (3.1) against AQEShuffleRead (4.x)
    assert "— differs" in dom


def test_a_partial_run_keeps_the_other_cases_on_the_page(tmp_path, monkeypatch):
    from harness.report import version_report
    monkeypatch.setattr(version_report._CaseIndex, "has", lambda self, file, case_id: True)  # their scenarios still exist
    full = [fake_record(f"c{i}[inner]", "SortMergeJoin") for i in range(5)]
    version_report.write_reports(tmp_path, full, [])
    rerun = [fake_record("c1[inner]", "ShuffledHashJoin")]  # e.g. `pytest scenarios/equi/c1.yaml`
    json_path, page = version_report.write_reports(tmp_path, rerun, [])
    dom = _chromium(tmp_path, page.as_uri(), "--dump-dom")
    assert "5 shown" in dom
    assert len(json.loads(json_path.read_text())["cases"]) == 5
    assert re.search(r'id="c1\[inner\]".*?Shuffled(<wbr>)?Hash(<wbr>)?Join', dom, re.S)  # may wrap between words
