"""reports/<version>/summary.md: the run in Markdown for a CI job summary."""
import json

from harness.report import summary
from tests.conftest import fake_record, fake_results


def test_summary_lists_what_did_not_pass_and_the_changes_since_the_previous_version(tmp_path):
    old = fake_results([fake_record("a[inner]", "SortMergeJoin", spark="3.5.9"),
                        fake_record("b[inner]", "BroadcastHashJoin", spark="3.5.9")], spark="3.5.9")
    failing = {**fake_record("b[inner]", "BroadcastHashJoin"), "status": "failed",
               "message": "initial plan: expected SortMergeJoin | <b>x</b>"}
    new = fake_results([fake_record("a[inner]", "ShuffledHashJoin"), failing])
    for version, doc in (("3.5.9", old), ("4.3.0", new), ("3.0.3", old)):
        (tmp_path / version).mkdir()
        (tmp_path / version / "results.json").write_text(json.dumps(doc))
    text = summary.write_summary(tmp_path, "4.3.0").read_text()
    assert "| failed | 1 |" in text and "| passed | 1 |" in text
    assert "- **failed** `b[inner]` (scenarios/equi/b.yaml:1): initial plan: expected SortMergeJoin \\| \\<b\\>x\\</b\\>" in text
    assert "### Changes since Spark 3.5.9 (2 cases)" in text  # the newest older version, not 3.0.3
    assert "- `a[inner]`: initial: SortMergeJoin → ShuffledHashJoin" in text
    first = summary.write_summary(tmp_path, "3.0.3").read_text()
    assert "Changes since" not in first and "### Not passing (0)" in first
