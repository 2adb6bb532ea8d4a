"""accept: observed plans and results written back into scenario files, comments kept."""
import json
import re

from harness.check import expect
from harness.report import accept
from harness.scenario.model import expand, load_scenario
from tests.conftest import fake_record, fake_results

SCENARIO = """\
# One file per behaviour; this comment must survive accept.
id: accept_probe
description: probe
tables:
  a: {rows: 10, columns: {k: {sequence: {}}}}
  b: {rows: 10, columns: {k: {sequence: {}}}}
join: {left: a, right: b, type: inner, on: [k]}
matrix:
  join_type: [inner, left_outer]
expect:
  strategy: BroadcastHashJoin   # measured on 3.5
  build_side: right
"""


def write_results(report_dir, version, path, observations):
    """observations: case id -> (strategy, build side[, rows, checksum])."""
    cases = []
    for case_id, seen in observations.items():
        strategy, build = seen[:2]
        rows, checksum = (seen[2], seen[3]) if len(seen) > 2 else (None, None)
        cases.append(fake_record(case_id, strategy, build, file=str(path), status="failed", spark=version,
                                 rows=rows, checksum=checksum))
    out = report_dir / version
    out.mkdir(parents=True)
    (out / "results.json").write_text(json.dumps(fake_results(cases, spark=version)))


def resolved_strategy(path, case_id, version):
    case = {c.case_id: c for c in expand(load_scenario(path))}[case_id]
    resolved = expect.resolve(case, version)
    return resolved.get("strategy"), resolved.get("build_side")


def test_version_change_becomes_a_bounded_override(tmp_path, capsys):
    path = tmp_path / "probe.yaml"
    path.write_text(SCENARIO)
    bhj, smj = ("BroadcastHashJoin", "right"), ("SortMergeJoin", "none")
    write_results(tmp_path, "3.5.7", path, {"accept_probe[inner]": bhj, "accept_probe[left_outer]": bhj})
    write_results(tmp_path, "4.0.5", path, {"accept_probe[inner]": bhj, "accept_probe[left_outer]": smj})
    write_results(tmp_path, "4.3.0", path, {"accept_probe[inner]": bhj, "accept_probe[left_outer]": smj})

    assert accept.main([], str(tmp_path)) == 0

    text = path.read_text()
    assert "# One file per behaviour; this comment must survive accept." in text
    assert "strategy: BroadcastHashJoin   # measured on 3.5" in text
    assert '- when: {join_type: left_outer, spark: ">3.5.7"}' in text
    assert resolved_strategy(path, "accept_probe[left_outer]", "3.5.7") == bhj
    assert resolved_strategy(path, "accept_probe[left_outer]", "4.0.5") == smj
    assert resolved_strategy(path, "accept_probe[inner]", "4.3.0") == bhj
    out = capsys.readouterr().out
    assert "+  overrides:" in out and "accept: changed 1 file(s)" in out

    # Accepting the same observations again changes nothing.
    before = path.read_text()
    accept.main([], str(tmp_path))
    assert path.read_text() == before
    assert "accept: changed 0 file(s)" in capsys.readouterr().out


def test_one_value_everywhere_goes_to_the_base(tmp_path):
    path = tmp_path / "probe.yaml"
    path.write_text(SCENARIO)
    smj = ("SortMergeJoin", "none", 7, "00000000000000ab")
    write_results(tmp_path, "4.3.0", path, {"accept_probe[inner]": smj, "accept_probe[left_outer]": smj})
    accept.main(["4.3.0"], str(tmp_path))
    text = path.read_text()
    assert re.search(r"strategy: SortMergeJoin +# measured on 3.5", text)
    assert "build_side: none" in text and "overrides" not in text
    assert "checksum" not in text  # results were not asserted before, so accept does not add them


def test_case_without_expectations_gets_what_was_observed(tmp_path):
    path = tmp_path / "probe.yaml"
    path.write_text(SCENARIO.replace("  strategy: BroadcastHashJoin   # measured on 3.5\n  build_side: right\n",
                                     "  spark: '<4.0'\n  strategy: BroadcastHashJoin\n"))
    seen = ("ShuffledHashJoin", "left", 10, "000000000000001f")
    write_results(tmp_path, "4.3.0", path, {"accept_probe[inner]": seen, "accept_probe[left_outer]": seen})
    case = {c.case_id: c for c in expand(load_scenario(path))}["accept_probe[inner]"]
    assert not expect.has_assertions(expect.resolve(case, "4.3.0"))  # reported as "observed"
    accept.main(["4.3.0"], str(tmp_path))
    case = {c.case_id: c for c in expand(load_scenario(path))}["accept_probe[inner]"]
    resolved = expect.resolve(case, "4.3.0")
    assert (resolved["strategy"], resolved["build_side"], resolved["rows"], resolved["checksum"]) == seen
    assert expect.resolve(case, "3.5.7")["strategy"] == "BroadcastHashJoin"


def test_dry_run_leaves_the_file(tmp_path, capsys):
    path = tmp_path / "probe.yaml"
    path.write_text(SCENARIO)
    smj = ("SortMergeJoin", "none")
    write_results(tmp_path, "4.3.0", path, {"accept_probe[inner]": smj, "accept_probe[left_outer]": smj})
    accept.main(["4.3.0"], str(tmp_path), write=False)
    assert path.read_text() == SCENARIO
    assert "would change 1 file(s)" in capsys.readouterr().out


CHAIN = """\
id: accept_chain
description: a chain of joins
tables:
  a: {rows: 10, columns: {k: {sequence: {}}}}
  b: {rows: 10, columns: {k: {sequence: {}}}}
  c: {rows: 10, columns: {k: {sequence: {}}}}
join:
  sql: SELECT * FROM a JOIN b USING (k) WHERE k IN (SELECT k FROM c)
expect: {}
"""


def chain_record(path, version, semi_strategy):
    from harness.core.records import PlanView
    node = {"left_keys": "List(k#1L)", "right_keys": "List(k#2L)", "condition": "", "null_aware": False,
            "skew": False}
    joins = [{**node, "strategy": "BroadcastHashJoin", "build_side": "right", "join_type": "Inner",
              "tables": ["b", "a", "c"]},
             {**node, "strategy": semi_strategy, "build_side": "right" if semi_strategy != "SortMergeJoin" else "none",
              "join_type": "LeftSemi", "tables": ["c", "a"]}]
    return fake_record("accept_chain", file=str(path), spark=version, status="observed", initial=PlanView(joins=joins))


def test_a_chain_of_joins_is_accepted_node_by_node_with_its_join_types(tmp_path):
    path = tmp_path / "chain.yaml"
    path.write_text(CHAIN)
    for version in ("3.5.9", "4.3.0"):
        out = tmp_path / version
        out.mkdir()
        record = chain_record(path, version, "BroadcastHashJoin")
        (out / "results.json").write_text(json.dumps(fake_results([record], spark=version)))
    assert accept.main([], str(tmp_path)) == 0
    text = path.read_text()
    assert ("  joins:\n"
            "    - {strategy: BroadcastHashJoin, build_side: right, join_type: Inner, tables: [a, b, c]}\n"
            "    - {strategy: BroadcastHashJoin, build_side: right, join_type: LeftSemi, tables: [a, c]}\n") in text
    assert "strategy: BroadcastHashJoin\n" not in text  # the nodes, not the top join again

    # a later version plans the semi join apart: an override with the nodes, bounded
    out = tmp_path / "4.4.0"
    out.mkdir()
    record = chain_record(path, "4.4.0", "SortMergeJoin")
    (out / "results.json").write_text(json.dumps(fake_results([record], spark="4.4.0")))
    assert accept.main([], str(tmp_path)) == 0
    case = expand(load_scenario(path))[0]
    assert expect.resolve(case, "4.3.0")["joins"][1]["strategy"] == "BroadcastHashJoin"
    assert expect.resolve(case, "4.4.0")["joins"][1] == {"strategy": "SortMergeJoin", "build_side": "none",
                                                        "join_type": "LeftSemi", "tables": ["a", "c"]}


def test_the_answers_columns_are_accepted_with_the_rest(tmp_path):
    path = tmp_path / "probe.yaml"
    path.write_text(SCENARIO.replace("  strategy: BroadcastHashJoin   # measured on 3.5\n  build_side: right\n",
                                     "  spark: '<4.0'\n  strategy: BroadcastHashJoin\n"))
    columns = [["k", "bigint"], ["k", "bigint"]]
    cases = [fake_record(case_id, "BroadcastHashJoin", file=str(path), status="observed", spark="4.3.0", rows=10,
                         checksum="000000000000001f", columns=columns)
             for case_id in ("accept_probe[inner]", "accept_probe[left_outer]")]
    (tmp_path / "4.3.0").mkdir()
    (tmp_path / "4.3.0" / "results.json").write_text(json.dumps(fake_results(cases)))
    accept.main(["4.3.0"], str(tmp_path))
    case = {c.case_id: c for c in expand(load_scenario(path))}["accept_probe[inner]"]
    assert expect.resolve(case, "4.3.0")["columns"] == columns
