"""The whole path a data team takes (issue 63): the project's wheel built, installed into a
fresh virtual environment beside the PySpark already here, a new repository set up with
`init` and a bug file of its own, then pytest, `matrix` on the installed PySpark,
`accept --dry-run`, `diff` and `bisect --no-configs` between two report folders — all run
from the team's repository with the installed harness, and nothing written outside that
repository, the user's cache and the temporary folder."""
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

import harness
from tests.conftest import MINIMAL, NEEDS_FAKER

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The sdist built from the sources, then the wheel built from the sdist: both must hold
    every file a command reads (schemas, templates, registries, engine metric names, init
    files)."""
    folder = tmp_path_factory.mktemp("wheel")
    source = folder / "source"
    # built from a copy: setuptools leaves build/ and egg-info beside the sources it builds
    shutil.copytree(ROOT / "harness", source / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_sdist({str(folder)!r})"],
                   cwd=source, check=True, capture_output=True)
    sdist = next(folder.glob("spark-join-harness-*.tar.gz"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(folder), str(sdist)],
                   check=True, capture_output=True)
    built = next(folder.glob("spark_join_harness-*.whl"))
    data = {p.relative_to(ROOT).as_posix() for p in (ROOT / "harness").rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}
    with tarfile.open(sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    with zipfile.ZipFile(built) as archive:
        in_wheel = set(archive.namelist())
    assert data and data <= in_sdist and data <= in_wheel, (data - in_sdist, data - in_wheel)
    return built


def _files(folder: Path) -> set:
    return {p.relative_to(folder) for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc")}


@NEEDS_FAKER
def test_a_team_installs_the_wheel_and_runs_every_command_in_its_own_repository(wheel, tmp_path):
    venv, team, cache, tmp = (tmp_path / name for name in ("venv", "team", "cache", "tmp"))
    for folder in (team, cache, tmp):
        folder.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    # PySpark and the harness's dependencies: the ones already here, after the venv's own
    (site / "already_here.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = _files(venv)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HARNESS_", "PYTHON"))},
           "HOME": str(cache), "XDG_CACHE_HOME": str(cache), "TMPDIR": str(tmp),
           "HARNESS_CACHE_DIR": os.environ.get("HARNESS_CACHE_DIR") or
           str(Path.home() / ".cache" / "spark-join-harness")}  # the Faker pools the suite already built

    def run(*args, ok=(0,), cwd=team) -> subprocess.CompletedProcess:
        done = subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode in ok, f"{args}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done

    where = run("-c", "import harness; print(harness.__file__)").stdout.strip()
    assert where.startswith(str(site))  # the installed copy, not the checkout
    run("-m", "harness", "init")
    (team / "scenarios" / "bugs").mkdir()
    # a bug file whose expectation is wrong: Spark broadcasts the small side
    (team / "scenarios" / "bugs" / "my_first.yaml").write_text(
        MINIMAL.replace("id: minimal", "id: my_first").replace("strategy: BroadcastHashJoin", "strategy: SortMergeJoin"))

    # and one that does not follow the format: one line naming file, line and field
    (team / "scenarios" / "bugs" / "typo.yaml").write_text(MINIMAL.replace("id: minimal", "id: typo").replace(
        "rows: 10\n", "rowz: 10\n"))

    done = run("-m", "pytest", "scenarios", "-q", "-p", "no:cacheprovider", "--no-agree", ok=(1,))
    assert "1 failed, 2 passed, 1 error" in done.stdout, done.stdout
    assert "scenarios/bugs/typo.yaml:9: tables.b.rowz: unknown field 'rowz' (did you mean 'rows'?)" in done.stdout
    spark = version("pyspark")
    results = json.loads((team / "reports" / spark / "results.json").read_text())
    assert {r["file"] for r in results["cases"]} == {"scenarios/example_broadcast.yaml", "scenarios/bugs/my_first.yaml"}
    release = harness.__version__  # in every report the run wrote
    assert results["harness"]["release"] == release
    assert f'<property name="join_harness_release" value="{release}"' in (team / "reports" / spark / "junit.xml").read_text()
    assert f"harness {release}" in (team / "reports" / spark / "summary.md").read_text()
    assert f"harness {release}" in (team / "reports" / spark / "index.html").read_text()

    # the cases the pytest run observed: judged from the team's result store, nothing run again
    done = run("-m", "harness", "matrix", spark, "-k", "not agree and not partitions")
    assert f"Spark {spark}: the PySpark installed here ({python})" in done.stdout, done.stdout
    assert "exit 1 (some cases failed)" in done.stdout and "3 of 3 records reused" in done.stdout, done.stdout

    # from a folder inside the repository: the root is found, the bug file's fix proposed
    done = run("-m", "harness", "accept", spark, "--dry-run", cwd=team / "scenarios" / "bugs")
    assert "would change 1 file(s)" in done.stdout and "-  strategy: SortMergeJoin" in done.stdout, done.stdout
    assert "+  strategy: BroadcastHashJoin" in done.stdout

    # a second report folder: the same results under an older release's name
    older = team / "reports" / "4.2.1"
    shutil.copytree(team / "reports" / spark, older)
    relabelled = json.loads((older / "results.json").read_text())
    relabelled["versions"]["spark"] = "4.2.1"
    (older / "results.json").write_text(json.dumps(relabelled))
    done = run("-m", "harness", "diff", "4.2.1", spark)
    assert "Traceback" not in done.stderr
    done = run("-m", "harness", "bisect", "--good", "4.2.1", "--bad", spark, "--no-configs",
               "--good-dir", str(team / "reports"), "--bad-dir", str(team / "reports"))
    assert f"no case differs between 4.2.1 and {spark}" in done.stdout, done.stdout

    assert _files(venv) == installed  # nothing written beside the installed harness
    written = _files(team)
    assert {Path("scenarios/example_broadcast.yaml"), Path("join-harness.toml"),
            Path(f"reports/{spark}/results.json"), Path(f"reports/{spark}/index.html")} <= written
    assert any(p.parts[0] == ".harness-cache" for p in written)  # the result store is the team's
    assert not list(cache.glob("spark-join-harness/envs/*/spark-*"))  # the installed PySpark: no environment built
