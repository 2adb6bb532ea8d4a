"""The package carries its contract: the schemas it ships are the top-level schemas/ files
(a non-editable install at work: tests/test_team_repository.py)."""
import subprocess
import sys
from pathlib import Path


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

