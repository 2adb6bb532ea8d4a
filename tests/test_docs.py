"""The documentation cannot drift from the code: every field of the scenario contract has
a description and a row in the generated reference, and the README's scenario loads."""
import importlib.util
import json
import re
from pathlib import Path

from harness.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "schemas" / "scenario.schema.json").read_text())


def _hook():
    spec = importlib.util.spec_from_file_location("schema_reference", ROOT / "docs" / "hooks" / "schema_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _properties(node, path=()):
    if isinstance(node, dict):
        for name, spec in (node.get("properties") or {}).items():
            yield path + (name,), spec
            yield from _properties(spec, path + (name,))
        for key, value in node.items():
            if key != "properties":
                yield from _properties(value, path + (key,))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _properties(item, path + (i,))


def test_every_field_of_the_contract_has_a_description():
    hook = _hook()
    missing = ["/".join(map(str, path)) for path, spec in _properties(SCHEMA)
               if isinstance(spec, dict) and not hook._description(SCHEMA, spec)]
    assert missing == []


def test_the_reference_has_a_row_for_every_field():
    hook = _hook()
    page = hook.reference_markdown(SCHEMA)
    rows = {(title, field) for title, properties, _ in hook.sections(SCHEMA) for field in properties}
    for _, field in rows:
        assert f"| `{field}`" in page
    documented = set(re.findall(r"^\| `([a-z_]+)`", page, re.M))
    assert documented == {path[-1] for path, _ in _properties(SCHEMA)}


def test_the_front_page_is_the_readme_with_site_links():
    hook = _hook()
    page = hook.front_page((ROOT / "README.md").read_text())
    assert "](docs/" not in page and "](getting-started.md)" in page and "](changelog.md)" in page
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


def test_the_readme_scenario_loads(tmp_path):
    readme = (ROOT / "README.md").read_text()
    scenario = re.search(r"```yaml\n(.*?)```", readme, re.S).group(1)
    path = tmp_path / "readme.yaml"
    path.write_text(scenario)
    assert load_scenario(path).id == "bhj_dim_fact"


def test_the_release_the_docs_pin_is_this_one():
    import harness
    pinned = {match for page in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
              for match in re.findall(r"spark-join-harness==([\w.]+)", page.read_text(encoding="utf-8"))}
    assert pinned == {harness.__version__}
