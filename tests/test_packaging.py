"""The package carries its contract: a non-editable install validates scenarios and
results with the schemas it ships, which are the top-level schemas/ files."""
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import MINIMAL

ROOT = Path(__file__).resolve().parent.parent


SHIPPED = {"scenario.schema.json": "scenario", "results.schema.json": "report"}


def test_top_level_schemas_are_the_shipped_ones():
    for name, package in SHIPPED.items():
        assert (ROOT / "schemas" / name).read_bytes() == (ROOT / "harness" / package / name).read_bytes()


def test_version_on_the_command_line():
    import harness
    done = subprocess.run([sys.executable, "-m", "harness", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == f"python -m harness {harness.__version__}"
    assert f"## {harness.__version__}" in (ROOT / "CHANGELOG.md").read_text()


def test_a_non_editable_install_validates_scenarios(tmp_path):
    wheels, site, source = tmp_path / "wheels", tmp_path / "site", tmp_path / "source"
    # Built from a copy: setuptools leaves build/ beside the sources it builds.
    shutil.copytree(ROOT / "harness", source / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(source)],
                   check=True, capture_output=True)
    wheel = next(wheels.glob("spark_join_harness-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    (tmp_path / "ok.yaml").write_text(MINIMAL)
    (tmp_path / "bad.yaml").write_text(MINIMAL.replace("rows: 10\n", "rowz: 10\n"))
    probe = (
        "import harness, sys\n"
        "from harness.scenario import ScenarioError, load_scenario\n"
        "from harness.report.version_report import validate_results, build_results\n"
        "print(harness.__file__)\n"
        "print(load_scenario('ok.yaml').id)\n"
        "try:\n    load_scenario('bad.yaml')\nexcept ScenarioError as exc:\n    print(exc)\n"
        "validate_results(build_results([], []))\n"
        "from harness.report.version_report import render_html\n"
        "assert '<html' in render_html(build_results([], []))\n"
        "print('results schema ok')\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(str(site))  # the installed copy, not the checkout
    assert lines[1] == "minimal"
    assert "bad.yaml:9: tables.b.rowz: unknown field 'rowz' (did you mean 'rows'?)" in lines[2]
    assert lines[3] == "results schema ok"
