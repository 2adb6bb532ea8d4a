"""Per-version environments: which Python and Java each Spark gets; Faker pools pre-built."""
import json
import sys
from pathlib import Path

import pytest

from harness.deploy import matrix
from harness.scenario.model import load_scenario
from harness.spark import datagen
from tests.conftest import MINIMAL, NEEDS_FAKER



def test_python_and_java_per_spark_version():
    assert matrix.python_candidates("3.1.3")[0] == "3.9"
    assert matrix.python_candidates("3.3.4")[0] == "3.10"
    assert matrix.python_candidates("4.3.0")[0] == "3.11"
    assert matrix.needs_java11("3.2.4") and not matrix.needs_java11("3.3.0")


def test_missing_python_is_none(monkeypatch, tmp_path):
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert matrix.find_python("3.7") is None
    fake = tmp_path / "versions" / "3.7.16" / "bin"
    fake.mkdir(parents=True)
    (fake / "python").touch()
    assert matrix.find_python("3.7") == str(fake / "python")


@NEEDS_FAKER
def test_faker_pools_are_built_into_the_cache(write_scenario, monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))
    datagen.faker_pool.cache_clear()
    text = MINIMAL.replace("      k: {sequence: {}}\n", "      k: {sequence: {}}\n      who: {faker: {provider: first_name, pool: 7}}\n")
    assert datagen.warm_faker_pools([load_scenario(write_scenario(text))]) == 1
    [cached] = list(tmp_path.rglob("first_name-7-*.json"))
    assert len(json.loads(cached.read_text())) == 7


def test_matrix_takes_files_and_folders_beside_versions(tmp_path, monkeypatch):
    """`matrix 3.5.9 4.3.0 scenarios/bugs one.yaml`: paths run instead of the whole suite,
    made absolute (the suite runs from the project root); a word that is neither is one
    line. With none, the project's scenario paths, from its root."""
    one = tmp_path / "one.yaml"
    one.write_text("id: x\n")
    monkeypatch.chdir(tmp_path)
    versions, paths = matrix.versions_and_paths(["3.5.9", "one.yaml", "4.3.0", str(tmp_path)])
    assert versions == ["3.5.9", "4.3.0"] and paths == [str(one), str(tmp_path)]
    with pytest.raises(ValueError, match="^nope.yaml: neither a Spark version"):
        matrix.versions_and_paths(["nope.yaml"])
    ran, where = [], []
    monkeypatch.setattr(matrix.subprocess, "run", lambda command, **kw: ran.append(command) or
                        where.append(kw["cwd"]) or type("Done", (), {"returncode": 0})())
    matrix.run_version("4.3.0", Path(sys.executable), str(tmp_path / "reports"), "2", [], paths=[str(one)])
    (tmp_path / "join-harness.toml").write_text('paths = ["joins", "bugs"]\n')
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    matrix.run_version("4.3.0", Path(sys.executable), str(tmp_path / "reports"), "2", [])
    assert str(one) in ran[0] and not any(word.endswith("scenarios") for word in ran[0])
    assert str(tmp_path / "joins") in ran[1] and str(tmp_path / "bugs") in ran[1] and where[1] == tmp_path


def test_an_environment_that_cannot_be_built_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder\n")
    monkeypatch.setenv("HARNESS_MATRIX_ENVS", str(blocked / "envs"))  # a cache folder that cannot be written
    monkeypatch.setattr(matrix, "find_python", lambda minor: sys.executable)
    said = []
    assert matrix.ensure_env("9.9.9", said.append) is None
    assert said[-1].startswith(f"Spark 9.9.9: skipped, its environment could not be built in {blocked / 'envs'}"
                               "/spark-9.9.9 (Not a directory:")
    assert blocked.read_text() == "not a folder\n"
