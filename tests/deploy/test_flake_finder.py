"""`python -m harness flakes`: bad input in one line each; K runs of every item in one
session, the store bypassed; a flip found, reported per field, and the exit says so."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.deploy import flakes
from tests.conftest import MINIMAL

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]


def test_bad_input_is_one_line_each():
    assert flakes.problems(1, 0, cores=2) == ["--runs 1: between 2 and 100 (a flip needs two runs to compare)"]
    assert flakes.problems(101, 0, cores=2)[0].startswith("--runs 101: between 2 and 100")
    assert flakes.problems(3, 9, cores=2) == ["--stress 9: between 0 and 8 (4 × this machine's 2 cores)"]
    assert flakes.problems(2, 8, cores=2) == [] and flakes.problems(100, 0, cores=2) == []


def test_the_command_refuses_bad_input_and_an_empty_selection(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "harness", "flakes", *args], capture_output=True, text=True,
                              cwd=tmp_path, timeout=300)
    done = run("--runs", "1", "--stress", "1000")
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["flakes: --runs 1: between 2 and 100 (a flip needs two runs to compare)",
                                        f"flakes: --stress 1000: between 0 and {4 * (__import__('os').cpu_count() or 1)}"
                                        f" (4 × this machine's {__import__('os').cpu_count() or 1} cores)"]
    assert run("nowhere").stderr.strip() == "flakes: nowhere: no such file or folder"
    (tmp_path / "scenarios").mkdir()
    done = run("scenarios", "--workers", "0")
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1] == "flakes: no item selected by scenarios"


def test_busy_processes_stop_with_the_finder():
    busy = flakes.start_stress(2)
    assert all(p.poll() is None for p in busy)
    flakes.stop_stress(busy)
    assert all(p.returncode is not None for p in busy)


def test_every_item_runs_k_times_and_a_flip_is_reported(pytester, session, monkeypatch):
    scenarios = pytester.mkdir("scenarios")
    (scenarios / "good.yaml").write_text(MINIMAL)
    result = pytester.runpytest("scenarios", "--flake-runs", "3", "--report-dir", "out", "-p", "no:cacheprovider")
    # the case and its cross-strategy check, three times each; the partitions item not needed
    result.assert_outcomes(passed=6, skipped=3)
    results = json.loads((pytester.path / "out" / session.versions["spark"] / "results.json").read_text())
    assert results["flakes"] == {"runs": 3, "items": 3, "stress": 0, "flips": []}
    assert sorted(c["case_id"] for c in results["cases"]) == ["minimal", "minimal[inner-agree]",
                                                               "minimal[inner-partitions]"]
    result.stdout.fnmatch_lines(["flake finder: 3 item(s) × 3 runs: 0 flipped"])
    page = (pytester.path / "out" / session.versions["spark"] / "index.html").read_text()
    assert "Flake finder: 3 items × 3 runs" in page and "<b>0 flipped</b>" in page

    # a harness whose observation depends on the run: the finder names the field and values
    from harness.check import runner
    real, calls = runner.run_case, []

    def drifting(case, session):
        record = real(case, session)
        calls.append(1)
        if len(calls) == 2:
            record.status, record.message = "failed", "drifted"
        return record
    monkeypatch.setattr(runner, "run_case", drifting)
    result = pytester.runpytest("scenarios", "--flake-runs", "2", "--report-dir", "out", "-p", "no:cacheprovider",
                                "-k", "not agree")
    results = json.loads((pytester.path / "out" / session.versions["spark"] / "results.json").read_text())
    flip = results["flakes"]["flips"][0]
    assert flip["case_id"] == "minimal" and flip["file"].endswith("good.yaml")
    assert flip["fields"] == [{"field": "verdict", "values": {"1": "passed", "2": "failed"}}]
    result.stdout.fnmatch_lines(["flake finder: 1 item(s) × 2 runs: 1 flipped", "*good.yaml:1: minimal: FLIPPED",
                                 "    verdict: run 1: passed; run 2: failed"])
    page = (pytester.path / "out" / session.versions["spark"] / "index.html").read_text()
    assert "<b>1 flipped</b>" in page and '<td class="msg">failed</td>' in page


def test_the_store_is_bypassed(pytester, session):
    scenarios = pytester.mkdir("scenarios")
    (scenarios / "good.yaml").write_text(MINIMAL)
    pytester.runpytest("scenarios", "--report-dir", "out", "-p", "no:cacheprovider", "-k", "not agree")
    result = pytester.runpytest("scenarios", "--flake-runs", "2", "--report-dir", "out", "-p", "no:cacheprovider",
                                "-k", "not agree")
    result.assert_outcomes(passed=2)
    assert "reused" not in result.stdout.str()
