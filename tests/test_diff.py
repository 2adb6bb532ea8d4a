"""The upgrade diff between two versions' results."""
import json

from harness import diff
from harness.__main__ import main
from tests.conftest import fake_record


def record(case_id, strategy="BroadcastHashJoin", build="right", rows=10, checksum="00000000000000aa",
           warnings=(), error=None, status="passed"):
    return fake_record(case_id, strategy, build, rows=rows, checksum=checksum, warnings=warnings, error=error,
                       status=status)


def test_changes_are_grouped_by_kind():
    old = {"cases": [record("a"), record("b"), record("c"), record("d", warnings=["w1"]), record("gone"),
                     record("e")]}
    new = {"cases": [record("a", strategy="SortMergeJoin", build="none"), record("b", build="left"),
                     record("c", rows=11), record("d", warnings=["w2"]), record("e"), record("added")]}
    grouped = diff.diff_results(old, new)
    assert grouped["strategy"] == [("a", "initial: BroadcastHashJoin (build right) → SortMergeJoin")]
    assert grouped["build side"] == [("b", "initial: BroadcastHashJoin build right → build left")]
    assert grouped["result"] == [("c", "10 rows / 00000000000000aa → 11 rows / 00000000000000aa")]
    assert grouped["warnings"] == [("d", "+ w2; - w1")]
    assert [c for c, _ in grouped["only in one version"]] == ["added", "gone"]
    assert "e" not in {c for entries in grouped.values() for c, _ in entries}


def test_command_reads_report_dirs(tmp_path, capsys):
    for version, strategy in (("3.5.7", "SortMergeJoin"), ("4.3.0", "ShuffledHashJoin")):
        (tmp_path / version).mkdir()
        (tmp_path / version / "results.json").write_text(json.dumps({"cases": [record("x", strategy, "none")]}))
    assert main(["diff", "3.5.7", "4.3.0", "--report-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Spark 3.5.7 → 4.3.0: 1 case(s) differ" in out
    assert "x: initial: SortMergeJoin → ShuffledHashJoin" in out
    assert main(["diff", "3.5.7", "9.9.9", "--report-dir", str(tmp_path)]) == 2
    assert "no results for Spark 9.9.9" in capsys.readouterr().err


def test_a_known_bug_appearing_or_disappearing_is_a_change():
    bug = {"id": "SPARK-9", "affected": "<4.0"}
    old = {"cases": [{**record("a", status="known_bug"), "bug": bug}, {**record("b"), "bug": bug}]}
    new = {"cases": [{**record("a"), "bug": bug}, {**record("b", status="known_bug"), "bug": bug}]}
    grouped = diff.diff_results(old, new)
    assert grouped["known bug"] == [("a", "bug disappears: SPARK-9 (now passed)"), ("b", "bug appears: SPARK-9")]
