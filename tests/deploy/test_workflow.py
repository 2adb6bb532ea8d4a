"""The CI workflow runs the matrix the harness knows, with commands and options that exist."""
import re
from pathlib import Path

import yaml

from harness.cli import COMMANDS, parser
from harness.deploy.matrix import DEFAULT_VERSIONS, python_candidates

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "join-harness.yml"


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def test_one_job_per_version_with_a_python_it_runs_on():
    suite = _workflow()["jobs"]["suite"]
    entries = suite["strategy"]["matrix"]["include"]
    assert [e["spark"] for e in entries] == list(DEFAULT_VERSIONS)
    assert all(e["python"] in python_candidates(e["spark"]) for e in entries)


def test_the_store_is_cached_per_release_and_version_and_the_parts_merged():
    jobs = _workflow()["jobs"]
    cache = next(s for s in jobs["suite"]["steps"] if s.get("uses", "").startswith("actions/cache"))
    assert cache["with"]["path"] == ".harness-cache"
    assert "release" in cache["with"]["key"] and "matrix.spark" in cache["with"]["key"]
    assert jobs["merge"]["needs"] == "suite"


def test_every_harness_command_it_runs_parses():
    runs = [step["run"] for job in _workflow()["jobs"].values() for step in job["steps"] if "run" in step]
    commands = [line.split("python -m harness ", 1)[1] for run in runs for line in run.replace("\\\n", " ").splitlines()
                if "python -m harness " in line]
    assert {c.split()[0] for c in commands} == {"matrix", "merge", "diff"}
    for command in commands:
        command = re.sub(r"\$\{\{.*?\}\}", "", command.replace("${{ matrix.spark }}", "4.3.0"))
        words = [w.replace('"$FROM_VERSION"', "3.5.9").replace('"$TO_VERSION"', "4.3.0")
                 .replace('"$FAIL_ON"', "strategy") for w in command.split("||")[0].split()]
        args = parser().parse_args(words)
        assert args.command in COMMANDS
