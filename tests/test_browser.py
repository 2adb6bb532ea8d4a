"""The merged report in a real headless Chromium: it renders, filters and shows an upgrade.

Skipped when Chromium is not installed (`make test-browser` installs it and runs this)."""
import json
import re
import shutil
import subprocess

import pytest

from harness import merged

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (make test-browser installs it)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-quic"]


def _result(version, cases):
    records = []
    for case_id, strategy in cases.items():
        node = {"strategy": strategy, "build_side": "none"}
        records.append({"kind": "case", "case_id": case_id, "file": f"scenarios/equi/{case_id.split('[')[0]}.yaml",
                        "tags": [], "status": "passed", "message": "",
                        "expected": {"strategy": strategy, "plan": "initial"},
                        "observed": {"initial": {"joins": [node]}, "final": None, "executed": False, "rows": None,
                                     "checksum": None, "warnings": [], "error": None,
                                     "estimates": [{"left": {"size_in_bytes": 1234567}, "right": {"size_in_bytes": 52000}}],
                                     "conf": {"spark.sql.autoBroadcastJoinThreshold": "10485760"}}})
    return {"versions": {"spark": version, "java": "17", "python": "3.11"}, "cases": records,
            "summary": {"by_status": {"passed": len(records)}, "by_strategy": {}, "total_case_seconds": 1.0}}


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
