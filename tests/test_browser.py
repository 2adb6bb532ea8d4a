"""The merged report in a real headless Chromium: it renders, filters and shows an upgrade.

Skipped when Chromium is not installed (`make test-browser` installs it and runs this)."""
import json
import re
import shutil
import subprocess

import pytest

from harness import merged
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
