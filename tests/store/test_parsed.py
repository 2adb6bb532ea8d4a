"""Scenario texts kept parsed and validated: the same text is not composed or validated
again, anything else is, and a file that fails is never kept."""
import pytest

from harness.scenario import model
from harness.scenario.errors import ScenarioError
from harness.store import fingerprint
from harness.store.parsed import ParsedScenarios
from harness.store.results_store import ResultStore, RunStamp

TEXT = """\
id: parsed_once
description: two tables, columns in the order written
tables:
  zeta:
    rows: 10
    columns:
      k: {sequence: {}}
      b: {uniform: {min: 0, max: 9}}
      a: {uniform: {min: 0, max: 9}}
  alpha:
    rows: 5
    columns:
      k: {sequence: {}}
join: {left: zeta, right: alpha, on: [k]}
expect: {strategy: BroadcastHashJoin}
"""


@pytest.fixture
def parsed(tmp_path):
    return ParsedScenarios(ResultStore(tmp_path / "cache", pytest.fail), RunStamp("r", "t", "h"))


def _write(tmp_path, text, name="s.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_kept_text_comes_back_with_its_order_and_lines_and_is_not_parsed_again(tmp_path, parsed, monkeypatch):
    first = model.load_scenario(_write(tmp_path, TEXT), parsed)
    monkeypatch.setattr(model, "parse_yaml", lambda *a: pytest.fail("parsed again"))
    monkeypatch.setattr(model, "validate", lambda *a: pytest.fail("validated again"))
    again = model.load_scenario(_write(tmp_path, TEXT, "copy.yaml"), parsed)
    assert again.data == first.data and again.lines == first.lines
    assert list(again.data["tables"]) == ["zeta", "alpha"]
    assert list(again.data["tables"]["zeta"]["columns"]) == ["k", "b", "a"]
    assert again.path.name == "copy.yaml"


def test_another_text_or_another_harness_is_parsed_again(tmp_path, parsed, monkeypatch):
    model.load_scenario(_write(tmp_path, TEXT), parsed)
    assert parsed.recall(TEXT) is not None
    assert parsed.recall(TEXT.replace("rows: 10", "rows: 11")) is None
    monkeypatch.setattr(fingerprint, "harness_source", lambda: "another harness")
    assert parsed.recall(TEXT) is None


def test_a_file_that_fails_is_never_kept(tmp_path, parsed):
    bad = TEXT.replace("rows: 5", "rows: -5")
    for _ in range(2):
        with pytest.raises(ScenarioError, match="rows"):
            model.load_scenario(_write(tmp_path, bad), parsed)
    assert parsed.recall(bad) is None
