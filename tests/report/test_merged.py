"""reports/index.html: all versions side by side, changes marked, upgrade view data."""
import json
import re

from harness.report import merged
from tests.conftest import fake_record, fake_results


def result(version, strategy, status="passed"):
    return fake_results([fake_record("c[inner]", strategy, status=status, spark=version)], spark=version)


def test_versions_side_by_side_with_changes_marked(tmp_path):
    for version, strategy in (("3.10.0", "SortMergeJoin"), ("3.5.7", "SortMergeJoin"), ("4.3.0", "BroadcastHashJoin")):
        (tmp_path / version).mkdir()
        (tmp_path / version / "results.json").write_text(json.dumps(result(version, strategy)))
    data = merged.matrix_data(merged.load_all(tmp_path))
    assert data["versions"] == ["3.5.7", "3.10.0", "4.3.0"]  # version order, not text order
    cells = data["rows"][0]["cells"]
    assert [cells[v]["changed"] for v in data["versions"]] == [False, False, True]
    assert cells["4.3.0"]["initial"] == "BroadcastHashJoin (build right)"
    assert data["upgrades"]["3.10.0|4.3.0"]["strategy"] == [
        ("c[inner]", "initial: SortMergeJoin → BroadcastHashJoin (build right)")]
    assert "3.5.7|3.10.0" in data["upgrades"] and data["upgrades"]["3.5.7|3.10.0"] == {}
    page = merged.write_merged(tmp_path).read_text()
    body = page.split("<body>")[1]
    assert "c[inner]" in page and "</script>" in page
    assert "0 of 1</td>" in body and "built-in method" not in body  # the reused column counts items
    # self-contained: nothing is fetched (links to a JIRA are links, not loads)
    assert not re.search(r"""(src|href)=["']?https?://(?!issues\.apache\.org/jira/)""", body)
    assert "<link" not in body and "<script src" not in body


def test_a_timed_out_or_lost_cell_is_never_marked_changed():
    old = fake_results([fake_record("a[inner]", "SortMergeJoin", spark="3.5.9"),
                        fake_record("b[inner]", "SortMergeJoin", spark="3.5.9")], spark="3.5.9")
    new = fake_results([fake_record("a[inner]", None, status="timeout", error={"class": "Timeout", "message": "x"}),
                        fake_record("b[inner]", None, status="error", error={"class": "WorkerLost", "message": "y"})])
    rows = {row["id"]: row for row in merged.matrix_data({"3.5.9": old, "4.3.0": new})["rows"]}
    for case in ("a[inner]", "b[inner]"):
        cell = rows[case]["cells"]["4.3.0"]
        assert not cell["comparable"] and not cell["changed"]
    assert rows["a[inner]"]["cells"]["3.5.9"]["plan"] is None  # no plan text: no picture


PLAN_TEXT = """== Physical Plan ==
*(2) BroadcastHashJoin [k#1L], [k#2L], Inner, BuildRight, false
:- *(2) Range (0, 10, step=1, splits=2)
+- BroadcastExchange HashedRelationBroadcastMode(List(input[0, bigint, false]),false), [id=#7]
   +- *(1) Range (0, 5, step=1, splits=2)
"""


def test_the_merged_page_reads_back_each_versions_pictures_and_never_a_stale_one(tmp_path, monkeypatch):
    from harness.core.records import PlanView
    from harness.report import plan_pictures, version_report
    joins = [{"strategy": "BroadcastHashJoin", "build_side": "right", "join_type": "Inner", "left_keys": "List(k#1L)",
              "right_keys": "List(k#2L)", "condition": "", "null_aware": False, "skew": False, "tables": None}]
    record = fake_record("c[inner]", initial=PlanView(joins=joins, text=PLAN_TEXT))
    json_path, _ = version_report.write_reports(tmp_path, [record], [])
    kept = json.loads((json_path.parent / plan_pictures.SIDECAR).read_text())
    assert kept["pictures"]["c[inner]"]["initial"]  # what the version page drew

    drawn = []
    real = plan_pictures.pictures
    monkeypatch.setattr(plan_pictures, "pictures", lambda r: drawn.append(r["case_id"]) or real(r))
    first = merged.matrix_data(merged.load_all(tmp_path, drawings := plan_pictures.PlanPictures()), drawings=drawings)
    assert drawn == [] and first["trees"]  # read back, not drawn

    json_path.write_text(json_path.read_text() + "\n")  # results changed since: the pictures are not theirs
    again = merged.matrix_data(merged.load_all(tmp_path, drawings := plan_pictures.PlanPictures()), drawings=drawings)
    assert drawn == ["c[inner]"] and again["trees"] == first["trees"]


def test_runs_under_a_native_engine_are_columns_beside_the_plain_ones(tmp_path):
    for folder, version, strategy in (("4.1.4", "4.1.4", "SortMergeJoin"), ("comet/4.1.4", "4.1.4", "SortMergeJoin"),
                                      ("comet/3.5.9", "3.5.9", "BroadcastHashJoin"), ("3.5.9", "3.5.9", "SortMergeJoin")):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "results.json").write_text(json.dumps(result(version, strategy)))
    results = merged.load_all(tmp_path)
    assert list(results) == ["3.5.9", "3.5.9 comet", "4.1.4", "4.1.4 comet"]  # engine × version
    assert [merged.folder_of(label) for label in results] == ["3.5.9", "comet/3.5.9", "4.1.4", "comet/4.1.4"]
    data = merged.matrix_data(results)
    assert data["upgrades"]["3.5.9|3.5.9 comet"]["strategy"] == [
        ("c[inner]", "initial: SortMergeJoin → BroadcastHashJoin (build right)")]
    page = merged.write_merged(tmp_path).read_text()
    assert 'comet/4.1.4/index.html' in page or 'comet/4.1.4' in page
    # the engine's own folder keeps its own page, of its versions only
    assert list(merged.load_all(tmp_path / "comet")) == ["3.5.9", "4.1.4"]
