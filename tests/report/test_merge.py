"""`python -m harness merge`: report folders from anywhere into one, or one line saying
which folder cannot be merged and why."""
import json

import pytest

import harness
from harness.report import merge
from tests.conftest import fake_record, fake_results


def _folder(root, name, records, spark="4.3.0", shard=None, release=None):
    results = fake_results(records, spark=spark)
    if shard:
        results["shard"] = shard
    if release:
        results["harness"]["release"] = release
    target = root / name / spark
    target.mkdir(parents=True)
    (target / "results.json").write_text(json.dumps(results))
    return root / name


def _merged(into, spark="4.3.0"):
    return {r["case_id"]: r for r in json.loads((into / spark / "results.json").read_text())["cases"]}


SPLIT = {"count": 2, "split": "abc"}


def test_shards_merge_into_the_whole_and_versions_side_by_side(tmp_path):
    a = _folder(tmp_path, "a", [fake_record("x[inner]")], shard={"index": 1, **SPLIT})
    b = _folder(tmp_path, "b", [fake_record("y[inner]", "SortMergeJoin")], shard={"index": 2, **SPLIT})
    old = _folder(tmp_path, "c", [fake_record("x[inner]", "SortMergeJoin", spark="3.5.9")], spark="3.5.9")
    written = merge.merge([a, b, old / "3.5.9"], tmp_path / "reports")
    assert set(_merged(tmp_path / "reports")) == {"x[inner]", "y[inner]"}
    whole = json.loads((tmp_path / "reports" / "4.3.0" / "results.json").read_text())
    assert "shard" not in whole and whole["summary"]["cases"] == 2
    names = {p.relative_to(tmp_path / "reports").as_posix() for p in written}
    assert {"4.3.0/results.json", "4.3.0/index.html", "4.3.0/summary.md", "3.5.9/results.json", "index.html",
            "upgrade-diff.txt"} <= names
    assert "x[inner]: initial: SortMergeJoin → BroadcastHashJoin" in (tmp_path / "reports" / "upgrade-diff.txt").read_text()


def test_an_overlap_that_agrees_is_merged_once(tmp_path):
    a = _folder(tmp_path, "a", [fake_record("x[inner]")])
    b = _folder(tmp_path, "b", [fake_record("x[inner]")])
    merge.merge([a, b], tmp_path / "out")
    assert list(_merged(tmp_path / "out")) == ["x[inner]"]


def _refusal(tmp_path, *folders) -> str:
    with pytest.raises(merge.MergeRefused) as refused:
        merge.merge(list(folders), tmp_path / "out")
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_refusals_are_one_line_naming_the_folder(tmp_path):
    assert "not a folder" in _refusal(tmp_path, tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    assert "empty: not a report folder" in _refusal(tmp_path, tmp_path / "empty")
    (tmp_path / "junk" / "4.3.0").mkdir(parents=True)
    (tmp_path / "junk" / "4.3.0" / "results.json").write_text("{not json")
    assert "junk/4.3.0/results.json: not readable results" in _refusal(tmp_path, tmp_path / "junk")
    (tmp_path / "other" / "4.3.0").mkdir(parents=True)
    (tmp_path / "other" / "4.3.0" / "results.json").write_text(json.dumps({"cases": []}))
    assert "other/4.3.0/results.json" in _refusal(tmp_path, tmp_path / "other")


def test_another_release_is_refused(tmp_path):
    old = _folder(tmp_path, "old", [fake_record("x[inner]")], release="0.1.0")
    message = _refusal(tmp_path, old)
    assert "written by harness 0.1.0" in message and harness.__version__ in message


def test_disagreeing_overlap_is_refused(tmp_path):
    a = _folder(tmp_path, "a", [fake_record("x[inner]")], shard={"index": 1, **SPLIT})
    b = _folder(tmp_path, "b", [fake_record("x[inner]", "SortMergeJoin", status="failed")], shard={"index": 2, **SPLIT})
    assert "x[inner] is failed here but passed in" in _refusal(tmp_path, a, b)


def test_shards_of_different_splits_or_a_missing_shard_are_refused(tmp_path):
    a = _folder(tmp_path, "a", [fake_record("x[inner]")], shard={"index": 1, **SPLIT})
    b = _folder(tmp_path, "b", [fake_record("y[inner]")], shard={"index": 2, "count": 2, "split": "zzz"})
    assert "another split" in _refusal(tmp_path, a, b)
    assert "shard 2 of 2 missing" in _refusal(tmp_path, a)


def test_the_command_says_one_line_and_exits_2(tmp_path, capsys):
    assert merge.main([str(tmp_path / "nothing")], str(tmp_path / "out")) == 2
    out = capsys.readouterr().out
    assert out.startswith("merge refused: ") and out.count("\n") == 1
