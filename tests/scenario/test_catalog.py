"""Shared catalogs (harness.scenario.catalog): tables declared once, read by many files;
every bad reference refused in one line naming file, line and field."""
import os
import textwrap

import pytest

from harness.core.options import RunOptions
from harness.scenario.errors import ScenarioError
from harness.scenario.model import expand, load_once, load_scenario, scenario_files
from harness.store.fingerprint import Environment, case_key

TABLE = """\
  {name}:
    schema: {{k: int, v: string}}
    stats: {{size_bytes: {size}, rows: 1000}}
"""


def catalog_text(*tables, include=None, size=1000) -> str:
    head = f"include: {include}\n" if include else ""
    return head + "tables:\n" + "".join(TABLE.format(name=name, size=size) for name in tables)


def query(sql="SELECT * FROM fact JOIN dim ON fact.k = dim.k", catalog="catalog.yaml", own="") -> str:
    return textwrap.dedent(f"""\
        id: q
        description: a query over the shared catalog
        catalog: {catalog}
        """) + own + f"join:\n  sql: {sql}\nexpect:\n  strategy: BroadcastHashJoin\n"


@pytest.fixture
def tree(tmp_path):
    """A scenarios tree; write(name, text) puts a file in it."""
    root = tmp_path / "scenarios"
    root.mkdir()

    def write(name: str, text: str):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path
    write.root = root
    return write


def error_of(path) -> str:
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_a_scenario_gets_the_catalog_tables_it_reads_ahead_of_its_own(tree):
    tree("catalog.yaml", catalog_text("fact", "dim", "unread"))
    own = "tables:\n  extra:\n    schema: {k: int}\n    stats: {size_bytes: 10, rows: 1}\n"
    scenario = load_scenario(tree("q.yaml", query(sql="SELECT * FROM FACT JOIN dim USING (k) JOIN extra USING (k)",
                                                  own=own)))
    assert list(scenario.data["tables"]) == ["fact", "dim", "extra"]
    assert set(scenario.origins) == {"fact", "dim"}
    assert [c.case_id for c in expand(scenario)] == ["q"]


def test_a_catalog_reaches_the_tables_its_derived_tables_are_made_from(tree):
    text = catalog_text("fact", "dim") + "  recent:\n    from: fact\n    steps:\n      - filter: k > 10\n"
    tree("catalog.yaml", text)
    scenario = load_scenario(tree("q.yaml", query(sql="SELECT * FROM recent JOIN dim ON recent.k = dim.k")))
    assert list(scenario.data["tables"]) == ["fact", "dim", "recent"]


def test_catalog_files_are_never_collected_as_scenarios(tree):
    tree("catalog.yaml", catalog_text("fact", "dim"))
    tree("sub/tpcds.catalog.yaml", catalog_text("x"))
    tree("q.yaml", query())
    assert [p.name for p in scenario_files([str(tree.root)])] == ["q.yaml"]


def test_includes_merge_and_identical_definitions_agree(tree):
    tree("dims.catalog.yaml", catalog_text("dim"))
    tree("facts.catalog.yaml", catalog_text("fact", "dim", include="[dims.catalog.yaml]"))
    scenario = load_scenario(tree("q.yaml", query(catalog="[facts.catalog.yaml, dims.catalog.yaml]")))
    assert list(scenario.data["tables"]) == ["dim", "fact"]


def test_a_table_two_catalogs_define_differently_is_refused(tree):
    tree("a.catalog.yaml", catalog_text("fact", "dim"))
    tree("b.catalog.yaml", catalog_text("dim", size=2000))
    message = error_of(tree("q.yaml", query(catalog="[a.catalog.yaml, b.catalog.yaml]")))
    assert message.endswith("b.catalog.yaml:2: tables.dim: 'dim' is defined differently in a.catalog.yaml:5")


def test_a_missing_catalog_or_table_is_named(tree):
    message = error_of(tree("q.yaml", query(catalog="nowhere.catalog.yaml")))
    assert message.endswith("q.yaml:3: catalog: no catalog file 'nowhere.catalog.yaml'")
    tree("catalog.yaml", catalog_text("fact"))
    scenario = tree("q2.yaml", query(sql="SELECT 1").replace("join:\n  sql: SELECT 1",
                                                              "join:\n  left: fact\n  right: dimm\n  on: [k]"))
    assert error_of(scenario).endswith("q2.yaml:6: join.right: unknown table 'dimm'")


def test_a_catalog_cycle_is_refused(tree):
    tree("a.catalog.yaml", catalog_text("fact", include="[b.catalog.yaml]"))
    tree("b.catalog.yaml", catalog_text("dim", include="[a.catalog.yaml]"))
    message = error_of(tree("q.yaml", query(catalog="a.catalog.yaml")))
    assert message.endswith("b.catalog.yaml:1: include[0]: catalogs include each other in a cycle: "
                            "a.catalog.yaml → b.catalog.yaml → a.catalog.yaml")


def test_a_catalog_outside_the_scenarios_tree_or_not_named_as_one_is_refused(tree, tmp_path):
    (tmp_path / "catalog.yaml").write_text(catalog_text("fact", "dim"))
    message = error_of(tree("q.yaml", query(catalog="../catalog.yaml")))
    assert "q.yaml:3: catalog: '../catalog.yaml' is outside the scenarios tree" in message
    os.symlink(tmp_path / "catalog.yaml", tree.root / "catalog.yaml")
    assert "is outside the scenarios tree" in error_of(tree("q.yaml", query(catalog="catalog.yaml")))
    message = error_of(tree("q.yaml", query(catalog="other.yaml")))
    assert "does not match" in message or "catalog.yaml or <name>.catalog.yaml" in message


def test_a_catalog_over_the_size_limit_is_refused(tree, monkeypatch):
    from harness.scenario import catalog
    monkeypatch.setattr(catalog, "MAX_CATALOG_BYTES", 100)
    tree("catalog.yaml", catalog_text("fact", "dim"))
    assert error_of(tree("q.yaml", query())).endswith("catalog.yaml: (file): file is 171 bytes; the limit is 100")


def test_a_files_own_table_may_not_replace_a_catalogs(tree):
    tree("catalog.yaml", catalog_text("fact", "dim"))
    own = "tables:\n  Dim:\n    schema: {k: int}\n    stats: {size_bytes: 10, rows: 1}\n"
    message = error_of(tree("q.yaml", query(own=own)))
    assert message.endswith("q.yaml:5: tables.Dim: 'Dim' is a table of the catalog catalog.yaml:5: a file's table "
                            "may not replace a catalog's (give it another name)")


def test_a_problem_in_a_catalog_table_names_the_catalog_file_and_line(tree):
    tree("catalog.yaml", catalog_text("fact", "dim").replace("rows: 1000}\n", "rows: 1000, columns: {kk: {distinct: 5}}}\n", 1))
    message = error_of(tree("q.yaml", query()))
    assert message.endswith("catalog.yaml:4: tables.fact.stats.columns.kk: 'kk' is not a column of the schema "
                            "(did you mean 'k'?)")
    tree("catalog.yaml", "tables: [fact]\n")
    assert "catalog.yaml:1: tables:" in error_of(tree("q.yaml", query()))


def test_refreshing_the_catalog_reloads_and_rekeys_only_the_queries_that_read_the_table(tree):
    catalog = tree("catalog.yaml", catalog_text("fact", "dim", "other"))
    reads_dim = tree("q.yaml", query())
    reads_other = tree("q2.yaml", query(sql="SELECT * FROM fact JOIN other ON fact.k = other.k").replace("id: q", "id: q2"))
    env = Environment.of(RunOptions())

    def keys():
        return [case_key(expand(load_once(path))[0], "case", env, {}, pools=[]) for path in (reads_dim, reads_other)]
    before = keys()
    stat = catalog.stat()
    catalog.write_text("tables:\n" + TABLE.format(name="fact", size=1000) + TABLE.format(name="dim", size=9999)
                       + TABLE.format(name="other", size=1000))
    os.utime(catalog, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    after = keys()
    assert load_once(reads_dim).data["tables"]["dim"]["stats"]["size_bytes"] == 9999
    assert after[0] != before[0] and after[1] == before[1]
