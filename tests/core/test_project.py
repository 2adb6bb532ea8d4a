"""The team's repository every command works in (harness.core.project), `init`, and which
harness a matrix environment gets (harness.deploy.harness_install): no Spark."""
from pathlib import Path

import pytest

import harness
from harness import cli
from harness.core import project
from harness.deploy import harness_install, init_project

ROOT = Path(__file__).resolve().parents[2]


def test_the_root_is_the_nearest_folder_with_settings_else_the_current_one(tmp_path):
    nested = tmp_path / "team" / "pipelines" / "jobs"
    nested.mkdir(parents=True)
    assert project.find(nested) == project.Project(root=nested)  # no settings anywhere: here, the defaults
    (tmp_path / "team" / "pyproject.toml").write_text('[project]\nname = "pipelines"\n')
    assert project.find(nested).config_file is None  # a pyproject.toml without the table is not a project's
    (tmp_path / "team" / "pyproject.toml").write_text(
        '[project]\nname = "pipelines"\n\n[tool.join-harness]\npaths = ["joins", "bugs"]\nreport_dir = "out"\n'
        'matrix_versions = ["3.5.9"]\n')
    found = project.find(nested)
    assert found.root == tmp_path / "team" and found.paths == ("joins", "bugs") and found.report_dir == "out"
    assert found.matrix_versions == ("3.5.9",) and found.store is None and found.envs is None
    assert found.scenario_paths() == [tmp_path / "team" / "joins", tmp_path / "team" / "bugs"]
    # a join-harness.toml nearer takes the folder
    (tmp_path / "team" / "pipelines" / "join-harness.toml").write_text('envs = "/tmp/envs"\n')
    assert project.find(nested).root == tmp_path / "team" / "pipelines"
    assert project.find(nested).envs == "/tmp/envs" and project.find(nested).paths == ("scenarios",)


def test_the_harness_repository_is_a_project_of_its_own():
    own = project.find(ROOT / "harness")
    assert own.root == ROOT and own.envs == ".matrix" and own.paths == ("scenarios",)


@pytest.mark.parametrize("text, said", [
    ('[tool.join-harness]\nreport_dir = "r"\nreprot = "x"\n',
     "pyproject.toml:3: [tool.join-harness].reprot: unknown key (known: envs, matrix_versions, paths, report_dir, "
     "store)"),
    ('[tool.join-harness]\n\npaths = "scenarios"\n',
     "pyproject.toml:3: [tool.join-harness].paths: must be a list of strings, not 'scenarios'"),
    ('[tool.join-harness]\npaths = []\n', "pyproject.toml:2: [tool.join-harness].paths: names no scenario path"),
    ('[tool.join-harness\n', "pyproject.toml: not valid TOML"),
])
def test_bad_settings_are_one_line_naming_file_line_and_key(tmp_path, text, said):
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(project.ProjectError) as raised:
        project.find(tmp_path)
    assert said in str(raised.value) and "\n" not in str(raised.value)


def test_commands_outside_a_repository_or_with_bad_settings_say_so_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["matrix", "4.3.0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: {tmp_path / 'scenarios'}: no such scenario file or folder (the default; no join-harness "
                   "settings found): run `python -m harness init` in your repository, or name the scenario paths")
    (tmp_path / "join-harness.toml").write_text('paths = ["joins"]\n')
    assert cli.main(["matrix", "4.3.0"]) == 2
    assert f"named by {tmp_path / 'join-harness.toml'}" in capsys.readouterr().err
    (tmp_path / "join-harness.toml").write_text('paths = 3\n')
    assert cli.main(["bisect", "--good", "3.5.9", "--bad", "4.3.0", "--no-configs"]) == 2
    assert capsys.readouterr().err.strip() == (f"error: {tmp_path / 'join-harness.toml'}:1: settings.paths: must be "
                                               "a list of strings, not 3")


def test_init_writes_an_example_the_table_and_a_workflow_and_never_overwrites(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "pipelines"')
    assert init_project.main(str(tmp_path)) == 0
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == [".github/workflows/join-harness.yml", "pyproject.toml", "scenarios/README.md",
                       "scenarios/example_broadcast.yaml"]
    settings = project.find(tmp_path)
    assert settings.config_file == tmp_path / "pyproject.toml" and settings.matrix_versions == ("3.5.9", "4.3.0")
    assert (tmp_path / "pyproject.toml").read_text().startswith('[project]\nname = "pipelines"\n')
    workflow = (tmp_path / ".github" / "workflows" / "join-harness.yml").read_text()
    assert f'HARNESS: "spark-join-harness=={harness.__version__}"' in workflow  # this very release, pinned
    assert "--fail-on" in workflow and "harness merge" in workflow
    from harness.scenario.model import load_scenario
    assert load_scenario(tmp_path / "scenarios" / "example_broadcast.yaml").id == "example_small_dimension_broadcast"
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert init_project.main(str(tmp_path)) == 2  # the table is there: nothing written
    assert capsys.readouterr().err.strip() == (f"error: {tmp_path / 'pyproject.toml'}: already has a "
                                               "[tool.join-harness] table; nothing written")
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    # no pyproject.toml: a join-harness.toml of its own; an existing example refuses it all
    other = tmp_path / "other"
    (other / "scenarios").mkdir(parents=True)
    (other / "scenarios" / "README.md").write_text("ours\n")
    assert init_project.main(str(other)) == 2
    assert sorted(p.name for p in other.rglob("*") if p.is_file()) == ["README.md"]
    (other / "scenarios" / "README.md").unlink()
    assert init_project.main(str(other)) == 0
    assert project.find(other).config_file == other / "join-harness.toml"


def test_a_checkout_is_installed_editable_and_a_wheel_as_that_wheel(monkeypatch, tmp_path):
    here = harness_install.current()
    assert (here.kind, here.where, here.version) == ("checkout", str(ROOT), harness.__version__)
    assert here.pip_arguments() == ["-e", str(ROOT)] and here.envs_key() == "checkout"
    wheel = harness_install.HarnessInstall("wheel", "/w/spark_join_harness-0.3.0-py3-none-any.whl", "0.3.0")
    assert wheel.pip_arguments() == ["--no-deps", wheel.where] and wheel.envs_key() == "harness-0.3.0"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("HARNESS_MATRIX_ENVS", raising=False)
    monkeypatch.chdir(tmp_path)  # no settings: the per-user cache, one folder per harness release
    from harness.deploy import matrix
    assert matrix.env_root() == tmp_path / "spark-join-harness" / "envs" / "checkout"
    monkeypatch.chdir(ROOT)  # the harness's own settings name .matrix
    assert matrix.env_root() == ROOT / ".matrix"

