"""bisect: the adjacent releases where each kind of change appeared; configs that restore it;
the upgrade report (harness.deploy.bisect, harness.deploy.attribute, harness.report.upgrade)."""
from __future__ import annotations

import json

import pytest

from harness.deploy import attribute, bisect, releases
from harness.report import upgrade
from tests.conftest import fake_record

LINE = ["3.4.0", "3.4.1", "3.4.2", "3.4.3", "3.4.4", "3.5.0", "3.5.1", "3.5.2"]


def rec(strategy="SortMergeJoin", rows=10, status="passed", case_id="c[inner]"):
    return fake_record(case_id, strategy, rows=rows, checksum="00000000000000aa", status=status)


class FakeProber:
    """Answers from a table: release → case id → record (a release missing: untestable)."""

    def __init__(self, table, broken=()):
        self.table, self.asked, self.runs = table, [], []
        self.broken = {release: "its environment could not be built" for release in broken}

    def run(self, release, node_ids, name=None):
        self.asked.append(release)
        if release in self.broken:
            return None
        return {case: record for case, record in self.table[release].items()
                if any(n.endswith("::" + case) for n in node_ids)}


def _search(table, good="3.4.0", bad="3.5.2", broken=()):
    line = releases.between(good, bad, LINE)
    searches = bisect.searches_of({"cases": list(table[good].values())}, {"cases": list(table[bad].values())}, line)
    prober = FakeProber(table, broken)
    bisect.search(searches, prober, log=lambda *_: None)
    return searches, prober


def test_each_kind_is_narrowed_to_two_adjacent_releases_with_few_probes():
    # strategy changes in 3.4.3, rows in 3.5.1: two kinds, two different pairs
    table = {v: {"c[inner]": rec("ShuffledHashJoin" if i >= 3 else "SortMergeJoin", rows=11 if i >= 6 else 10)}
             for i, v in enumerate(LINE)}
    searches, prober = _search(table)
    found = {f["kind"]: f for f in (bisect.finding(s, k) for s in searches for k in s.kinds)}
    assert (found["strategy"]["good"], found["strategy"]["bad"]) == ("3.4.2", "3.4.3")
    assert (found["result"]["good"], found["result"]["bad"]) == ("3.5.0", "3.5.1")
    assert found["strategy"]["adjacent"] and found["result"]["adjacent"]
    assert found["strategy"]["change"] == "initial: SortMergeJoin → ShuffledHashJoin"
    assert len(prober.asked) == len(set(prober.asked)) <= 5  # 6 releases between: never each, never twice
    assert bisect.finding_line(found["result"]) == \
        "c[inner]: changed between 3.5.0 and 3.5.1: result 10 rows / 00000000000000aa → 11 rows / 00000000000000aa"


def test_a_release_that_cannot_be_tested_is_skipped_named_and_searched_around():
    table = {v: {"c[inner]": rec("ShuffledHashJoin" if i >= 4 else "SortMergeJoin")} for i, v in enumerate(LINE)}
    searches, prober = _search(table, broken=("3.4.3", "3.4.4"))
    (found,) = [bisect.finding(s, k) for s in searches for k in s.kinds]
    assert (found["good"], found["bad"]) == ("3.4.2", "3.5.0")
    assert not found["adjacent"]
    assert found["untested"] == {"3.4.3": "its environment could not be built", "3.4.4": "its environment could not be built"}
    assert "untested between them: 3.4.3: its environment could not be built" in bisect.finding_line(found)


def test_a_probe_that_timed_out_is_not_a_change_but_an_untestable_release():
    table = {v: {"c[inner]": rec("ShuffledHashJoin" if i >= 5 else "SortMergeJoin")} for i, v in enumerate(LINE)}
    table["3.4.4"]["c[inner]"] = rec(status="timeout")
    searches, _ = _search(table)
    (found,) = [bisect.finding(s, k) for s in searches for k in s.kinds]
    assert (found["good"], found["bad"]) == ("3.4.3", "3.5.0")
    assert "3.4.4" in found["untested"] and "not comparable" in found["untested"]["3.4.4"]


def test_a_case_that_does_not_differ_is_not_searched():
    table = {v: {"c[inner]": rec()} for v in LINE}
    searches, prober = _search(table)
    assert searches == [] and prober.asked == []


def test_versions_the_registry_lacks_or_in_the_wrong_order_are_refused_in_one_line():
    with pytest.raises(releases.ReleaseError, match=r"--good 3.4.9: the package registry has no PySpark 3.4.9 "
                                                    r"\(releases of 3.4: 3.4.0, 3.4.1"):
        releases.between("3.4.9", "3.5.2", LINE)
    with pytest.raises(releases.ReleaseError, match="--good 3.5.2 is not older than --bad 3.4.0"):
        releases.between("3.5.2", "3.4.0", LINE)
    assert releases.sorted_releases(["4.0.0.dev1", "3.10.0", "3.5.0", "3.4.4rc1", "3.5.0"]) == ["3.5.0", "3.10.0"]


def test_the_registry_unreachable_uses_the_kept_list_else_the_built_environments(tmp_path, monkeypatch):
    from harness.deploy import matrix
    monkeypatch.setenv("HARNESS_MATRIX_ENVS", str(tmp_path))
    (tmp_path / "spark-3.5.1").mkdir()
    (tmp_path / "spark-3.5.1" / ".ready").touch()
    (tmp_path / "spark-3.4.0").mkdir()  # not built: not a release to search
    said = []

    def unreachable():
        raise OSError("Name or service not known")
    assert releases.releases(log=said.append, fetch=unreachable) == ["3.5.1"]
    assert "only the releases with an environment here are searched (3.5.1)" in said[-1]
    assert releases.releases(log=said.append, fetch=lambda: ["3.5.0", "3.4.0", "4.0.0.dev2"]) == ["3.4.0", "3.5.0"]
    assert releases.releases(refresh=True, log=said.append, fetch=unreachable) == ["3.4.0", "3.5.0"]
    assert "the list kept in" in said[-1]


DEFAULTS_OLD = {"spark.sql.a": {"default": "true", "kind": "boolean", "static": False},
                "spark.sql.same": {"default": "1", "kind": "number", "static": False},
                "spark.sql.size": {"default": "10MB", "kind": "number", "static": False},
                "spark.sql.static": {"default": "1", "kind": "number", "static": True},
                "spark.sql.mode": {"default": "x", "kind": "string", "static": False}}
DEFAULTS_NEW = {"spark.sql.a": {"default": "false", "kind": "boolean", "static": False},
                "spark.sql.same": {"default": "1", "kind": "number", "static": False},
                "spark.sql.size": {"default": "64MB", "kind": "number", "static": False},
                "spark.sql.static": {"default": "2", "kind": "number", "static": True},
                "spark.sql.mode": {"default": "y", "kind": "string", "static": False},
                "spark.sql.added": {"default": "true", "kind": "boolean", "static": False},
                "spark.sql.addedNumber": {"default": "3", "kind": "number", "static": False},
                "spark.sql.fallback": {"default": "<value of spark.sql.a>", "kind": "boolean", "static": False}}


def test_settings_are_the_earlier_defaults_and_the_other_value_of_a_new_boolean():
    settings, skipped = attribute.settings_between(DEFAULTS_OLD, DEFAULTS_NEW, "3.5.9", "4.0.0")
    assert [(s.key, s.value, s.why) for s in settings] == [
        ("spark.sql.a", "true", "default true in 3.5.9, false from 4.0.0"),
        ("spark.sql.added", "false", "added in 4.0.0, default true"),
        ("spark.sql.size", "10MB", "default 10MB in 3.5.9, 64MB from 4.0.0")]
    assert skipped == {"static": 1, "string": 1, "no value": 2}


def test_a_setting_restores_a_change_only_when_it_brings_nothing_new():
    good, bad = rec("SortMergeJoin"), rec("ShuffledHashJoin", rows=11)
    assert attribute.restores(good, bad, rec("SortMergeJoin"), "strategy") == "exactly"
    assert attribute.restores(good, bad, rec("SortMergeJoin", rows=11), "strategy") == "yes"  # the rows remain
    assert attribute.restores(good, bad, rec("ShuffledHashJoin"), "strategy") is None
    assert attribute.restores(good, bad, rec("BroadcastHashJoin"), "strategy") is None
    assert attribute.restores(good, bad, rec(status="timeout"), "strategy") is None
    # behaving as --good did, judged by --bad's expectations: it fails where --good passed
    assert attribute.restores(good, bad, rec("SortMergeJoin", status="failed"), "strategy") == "exactly"
    assert attribute.restores(good, bad, None, "strategy") is None


def test_a_variant_is_the_scenario_with_the_setting_under_a_new_id_beside_its_catalogs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the project root: no settings there
    folder = tmp_path / "scenarios" / "w"
    folder.mkdir(parents=True)
    (folder / "catalog.yaml").write_text("tables: {}\n")
    (folder / "q.yaml").write_text("id: q\njoin: {left: a, right: b}\nspark_conf: {spark.sql.x: 1}\n")
    record = {"file": "scenarios/w/q.yaml", "case_id": "q[inner]"}
    variant = attribute.write_variant(tmp_path / "out", record, (attribute.Setting("spark.sql.a", "true", "w"),), 3)
    written = tmp_path / "out" / "tries" / "scenarios" / "w" / "q__try3.yaml"
    assert variant.node_id == f"{written}::q__try3[inner]"
    import yaml
    assert yaml.safe_load(written.read_text())["spark_conf"] == {"spark.sql.x": 1, "spark.sql.a": "true"}
    assert (written.parent / "catalog.yaml").exists()


def test_the_report_puts_answers_first_then_cost_then_plans_with_the_conf_that_pins_them(tmp_path):
    document = {"good": "3.4.0", "bad": "3.5.2", "line": LINE, "untestable": {"3.4.3": "its environment could not be built"},
                "seconds": 1.0, "findings": [
                    {"case_id": "p", "file": "scenarios/p.yaml", "kind": "strategy", "good": "3.4.4", "bad": "3.5.0",
                     "adjacent": True, "untested": {}, "change": "initial: SortMergeJoin → ShuffledHashJoin",
                     "attribution": {"tried": 2, "restored_by": [{"settings": [{"key": "spark.sql.a", "value": "true",
                                                                                 "why": "added in 3.5.0, default false"}],
                                                                   "exactly": True}]}},
                    {"case_id": "r", "file": "scenarios/r.yaml", "kind": "result", "good": "3.4.0", "bad": "3.4.1",
                     "adjacent": True, "untested": {}, "change": "10 rows → 11 rows",
                     "attribution": {"tried": 5, "restored_by": [], "pairs_tried": 0}}]}
    md = upgrade.summary_md(document)
    assert md.index("## Answers differ") < md.index("## Plans changed")
    assert "no config restores it (5 setting(s) run one at a time)" in md
    assert "    spark_conf:\n      spark.sql.a: true" in md
    assert "2 case(s) changed in 2 way(s); 2 bisected to two adjacent releases; 1 restored by a config (1 by one alone)" in md
    assert "3.4.3: its environment could not be built" in md
    paths = upgrade.write(document, tmp_path)
    assert "<h2>Answers differ</h2>" in paths[1].read_text() and "&lt;" not in json.dumps(document)


class SparkWithConfigs(FakeProber):
    """--bad plans a shuffled hash join unless spark.sql.a=true (then a sort-merge join);
    spark.sql.b=1 makes a broadcast; the rest changes nothing."""

    def __init__(self, out):
        super().__init__({})
        self.out = out
        self.variants = 0  # numbering, kept by attribute
        self.ran = 0

    def run(self, release, node_ids, name=None):
        import yaml
        found = {}
        for node in node_ids:
            path, case_id = node.split("::")
            data = yaml.safe_load(open(path))
            assert "on" in data["join"] or "True" in str(data["join"])  # written as the harness reads it
            conf = data["spark_conf"]
            self.ran += 1
            strategy = "SortMergeJoin" if conf.get("spark.sql.a") == "true" else \
                "BroadcastHashJoin" if conf.get("spark.sql.b") == "1" else "ShuffledHashJoin"
            found[case_id] = rec(strategy, case_id=case_id)
        return found


def _two_findings(tmp_path, monkeypatch):
    """Two cases whose strategy changed between 3.4.2 and 3.4.3; three configs changed default."""
    from harness.deploy import conf_keys, matrix
    monkeypatch.chdir(tmp_path)  # the project root: no settings there
    (tmp_path / "scenarios").mkdir()
    for name in ("c", "d"):
        (tmp_path / "scenarios" / f"{name}.yaml").write_text(f"id: {name}\njoin: {{left: a, right: b, on: [k]}}\n")
    old = {"spark.sql.a": {"default": "true", "kind": "boolean", "static": False},
           "spark.sql.b": {"default": "1", "kind": "number", "static": False},
           "spark.sql.c": {"default": "5", "kind": "number", "static": False}}
    new = {"spark.sql.a": {"default": "false", "kind": "boolean", "static": False, "doc": "When true, joins sort"},
           "spark.sql.b": {"default": "2", "kind": "number", "static": False},
           "spark.sql.c": {"default": "6", "kind": "number", "static": False}}
    monkeypatch.setattr(matrix, "ensure_env", lambda release, log: tmp_path)
    monkeypatch.setattr(conf_keys, "defaults_of", lambda release, python: old if release == "3.4.2" else new)
    records, findings = {}, []
    for name in ("c", "d"):
        case_id = f"{name}[inner]"
        good, bad = rec("SortMergeJoin", case_id=case_id), rec("ShuffledHashJoin", case_id=case_id)
        good["file"] = bad["file"] = f"scenarios/{name}.yaml"
        records[case_id] = {"3.4.0": good, "3.5.2": bad}
        findings.append({"case_id": case_id, "file": good["file"], "kind": "strategy", "good": "3.4.2", "bad": "3.4.3",
                         "adjacent": True, "untested": {}, "change": "x"})
    return findings, {"good": "3.4.0", "bad": "3.5.2", "findings": findings, "_records": records}


def test_configs_are_tried_on_bad_and_the_one_that_brings_back_good_is_named(tmp_path, monkeypatch):
    findings, document = _two_findings(tmp_path, monkeypatch)
    spark = SparkWithConfigs(tmp_path / "out")
    attribute.attribute(document, spark, log=lambda *_: None)
    for found in findings:
        assert found["attribution"]["restored_by"] == [{
            "settings": [{"key": "spark.sql.a", "value": "true", "why": "default true in 3.4.2, false from 3.4.3",
                          "doc": "When true, joins sort"}],
            "exactly": True}]
        assert found["attribution"]["tried"] == 3 and found["attribution"]["not_run"] == {}
    assert spark.ran == 3 + 3 and spark.variants == 6
    assert upgrade.restoring_words(findings[0]["attribution"]["restored_by"][0]) == \
        "restored by spark.sql.a=true (default true in 3.4.2, false from 3.4.3; “When true, joins sort”)"


def test_beyond_the_budget_the_others_of_a_group_get_what_moved_its_first_case(tmp_path, monkeypatch):
    findings, document = _two_findings(tmp_path, monkeypatch)
    spark = SparkWithConfigs(tmp_path / "out")
    attribute.attribute(document, spark, log=lambda *_: None, max_variants=2)
    first, second = findings
    assert [r["settings"][0]["key"] for r in first["attribution"]["restored_by"]] == ["spark.sql.a"]
    # the second case of the group: only what moved the first (a and b, not c)
    assert second["attribution"]["tried"] == 2 and second["attribution"]["as_first_case"]
    assert [r["settings"][0]["key"] for r in second["attribution"]["restored_by"]] == ["spark.sql.a"]
    assert spark.ran == 3 + 2


def test_a_setting_whose_variant_did_not_run_is_never_a_verdict(tmp_path, monkeypatch):
    findings, document = _two_findings(tmp_path, monkeypatch)
    spark = SparkWithConfigs(tmp_path / "out")
    spark.broken["3.5.2"] = "its run ended with exit 3"
    spark.run = lambda release, node_ids, name=None: None
    attribute.attribute(document, spark, log=lambda *_: None)
    assert findings[0]["attribution"]["restored_by"] == []
    assert findings[0]["attribution"]["not_run"] == {k: "its run ended with exit 3"
                                                     for k in ("spark.sql.a", "spark.sql.b", "spark.sql.c")}
    assert upgrade._attribution_words(findings[0]) == \
        "nothing compared: none of the 3 setting(s) could run (3 × its run ended with exit 3)"


@pytest.mark.parametrize("affected, buggy, clean, expected", [
    ("<4.0.0", "3.5.9", "4.0.0", ("<4.0.0", "agrees")),
    ("<3.5.0", "3.5.9", "4.0.0", ("<4.0.0", "upper bound moved to <4.0.0")),            # fixed later than declared
    ("<4.1.0", "3.5.9", "4.0.0", ("<4.0.0", "upper bound moved to <4.0.0")),            # fixed earlier
    (">=3.5.0,<3.5.3", "3.4.1", "3.4.0", ("<3.5.3,>=3.4.1", "lower bound moved to >=3.4.1")),
    ([">=3.4,<3.5.9", ">=4.0,<4.0.3"], "4.0.3", "4.0.4", ([">=3.4,<3.5.9", ">=4.0,<4.0.4"], "upper bound moved to <4.0.4")),
    ([">=3.4,<3.5.9", ">=4.0,<4.0.3"], "3.5.9", "4.0.0", (None, "needs a person (more than one bound would move)")),
])
def test_a_bug_files_range_is_checked_against_the_flip_and_one_bound_moved(affected, buggy, clean, expected):
    from harness.report import bug_range
    assert bug_range.measured_affected(affected, buggy, clean) == expected


def test_write_moves_the_bound_in_the_file_and_says_what_was_measured(tmp_path, monkeypatch):
    from harness.report import bug_range
    from tests.conftest import MINIMAL
    monkeypatch.chdir(tmp_path)  # the project root: no settings there
    (tmp_path / "scenarios").mkdir()
    text = MINIMAL.replace("id: minimal", "id: bugged\nbug: {id: SPARK-1, affected: '<3.4.0'}  # from the tracker")
    (tmp_path / "scenarios" / "bugged.yaml").write_text(text)
    shows = fake_record("bugged", status="known_bug")
    clean = fake_record("bugged", status="passed")
    shows["bug"] = clean["bug"] = {"id": "SPARK-1"}
    found = {"case_id": "bugged", "file": "scenarios/bugged.yaml", "kind": "known bug", "good": "3.4.1", "bad": "3.4.2"}
    lines = bug_range.write_measured([found], {"bugged": {"3.4.1": shows, "3.4.2": clean}}, log=lambda *_: None)
    assert lines == ["scenarios/bugged.yaml: affected '<3.4.2': upper bound moved to <3.4.2 "
                     "(3.4.1 shows it, 3.4.2 does not)"]
    written = (tmp_path / "scenarios" / "bugged.yaml").read_text()
    assert "  affected: '<3.4.2'  # measured by bisect: 3.4.1 shows it, 3.4.2 does not\n" in written
    assert written.split("\ntables:")[1] == text.split("\ntables:")[1]  # the rest of the file kept
    assert not list((tmp_path / "scenarios").glob(".*"))
    again = bug_range.write_measured([found], {"bugged": {"3.4.1": shows, "3.4.2": clean}}, log=lambda *_: None)
    assert again == ["scenarios/bugged.yaml: affected '<3.4.2' agrees (3.4.1 shows it, 3.4.2 does not)"]


def test_each_end_may_come_from_its_own_report_folder(tmp_path):
    from tests.conftest import fake_results
    made_elsewhere = tmp_path / "ci-artifact"
    made_elsewhere.mkdir()
    (made_elsewhere / "results.json").write_text(json.dumps(fake_results([rec()], spark="3.4.0")))
    assert bisect.results_of(made_elsewhere, "3.4.0")["cases"][0]["case_id"] == "c[inner]"
    assert bisect.results_of(made_elsewhere, "3.5.2") is None  # another version's results are not taken
