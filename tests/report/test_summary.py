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


def test_under_an_engine_the_summary_tallies_native_joins_reasons_and_answers(tmp_path):
    from harness.core.records import PlanView

    def join(strategy, native, fallback=None):
        return {"strategy": strategy, "build_side": "none", "join_type": "Inner", "left_keys": "", "right_keys": "",
                "condition": "", "null_aware": False, "skew": False, "tables": None, "native": native,
                "fallback": fallback}
    range_off = "Range: Native support for operator RangeExec is disabled."
    records = [
        fake_record("a[inner]", rows=10, checksum="00000000000000ab", initial=PlanView(joins=[join("SortMergeJoin", True)]),
                    engine_reference={"rows": 10, "checksum": "00000000000000ab", "source": "this session, comet off"}),
        fake_record("b[inner]", rows=10, checksum="00000000000000ab", initial=PlanView(joins=[
            join("BroadcastHashJoin", False, [range_off, "BroadcastExchange: x | y"]),
            join("SortMergeJoin", False, [range_off])]),
            engine_reference={"rows": 9, "checksum": "00000000000000cd", "source": "this session, comet off"}),
        fake_record("c[inner]", initial=PlanView(joins=[join("BroadcastHashJoin", False, [range_off])])),
        fake_record("d[inner]", initial=PlanView(joins=[join("SortMergeJoin", False, [
            "Scan parquet spark_catalog.default.sales_b8416e357ccd0c041389: Unsupported file format Parquet"])])),
        fake_record("e[inner]", initial=PlanView(joins=[join("SortMergeJoin", False, [
            "Scan parquet spark_catalog.default.sales_9d28bb4efe20f11c680c: Unsupported file format Parquet"])])),
    ]
    doc = json.loads(json.dumps(fake_results(records)))
    doc["versions"]["engine"] = "comet 1.2.0"
    (tmp_path / "4.3.0").mkdir()
    (tmp_path / "4.3.0" / "results.json").write_text(json.dumps(doc))
    text = summary.write_summary(tmp_path, "4.3.0").read_text()
    assert "### Under comet 1.2.0" in text
    assert "2 answers compared with Spark's own, 1 differ." in text
    assert "| BroadcastHashJoin | 0 | 2 |" in text and "| SortMergeJoin | 1 | 2 |" in text
    assert "| 2 | Scan parquet \\<table\\>: Unsupported file format Parquet |" in text  # one reason, two tables
    # each join left to Spark counts its reasons once: three joins over Range
    assert "| 3 | Range: Native support for operator RangeExec is disabled. |" in text
    assert "| 1 | BroadcastExchange: x \\| y |" in text
    plain = fake_results(records)
    (tmp_path / "4.3.0" / "results.json").write_text(json.dumps(plain))
    assert "### Under" not in summary.write_summary(tmp_path, "4.3.0").read_text()
