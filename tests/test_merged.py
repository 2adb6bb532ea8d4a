"""reports/index.html: all versions side by side, changes marked, upgrade view data."""
import json

from harness import merged


def result(version, strategy, status="passed"):
    node = {"strategy": strategy, "build_side": "right" if strategy == "BroadcastHashJoin" else "none"}
    case = {"kind": "case", "case_id": "c[inner]", "file": "scenarios/equi/c.yaml", "tags": ["equi"], "status": status,
            "message": "", "observed": {"initial": {"joins": [node]}, "final": None, "executed": False,
                                        "rows": None, "checksum": None, "warnings": [], "error": None}}
    return {"versions": {"spark": version, "java": "17", "python": "3.11"}, "cases": [case],
            "summary": {"by_status": {status: 1}, "by_strategy": {strategy: 1}, "total_case_seconds": 1.0}}


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
    assert "c[inner]" in page and "</script>" in page and "http" not in page.split("<body>")[1]
