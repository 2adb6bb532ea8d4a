"""What the pytest adapter's hooks (harness.plugin), its items (harness.plugin_items) and
its reporter (harness.plugin_reporter) share: the keys a record travels under from a
worker to the controller, the run's options kept on the pytest config, and the figures of
an earlier run."""
from __future__ import annotations

import json
from typing import Optional

import pytest

from harness.core.options import RunOptions
from harness.report import version_report
from harness.store.reuse import Reuse


RECORD_KEY = "harness_record"
REUSED_KEY = "harness_reused"   # which run observed a reused record (also a JUnit property)
SHARD_KEY = "harness_shard"
FLAKE_RUN_KEY = "harness_flake_run"  # which of a flake-finder run's repetitions an item is
OPTIONS = pytest.StashKey[RunOptions]()
REUSE = pytest.StashKey[Optional[Reuse]]()
FAILING = {"failed", "error", "timeout", "correctness"}


def options_of(config) -> RunOptions:
    return config.stash[OPTIONS]


def flake_runs(config) -> int:
    return config.getoption("flake_runs") or 0


def repetition(name: str) -> tuple[str, int | None]:
    """`case@2` → (`case`, 2): which repetition of a flake-finder run an item name is."""
    base, _, number = name.rpartition("@")
    return (base, int(number)) if base and number.isdigit() else (name, None)


def previous_durations(config) -> dict:
    try:
        path = version_report.version_dir(config.getoption("report_dir"), version_report.installed_spark()) / "results.json"
        records = json.loads(path.read_text(encoding="utf-8"))["cases"]
        return {r["case_id"]: float(r["timings"]["total_s"]) for r in records}
    except (OSError, ValueError, KeyError, TypeError):
        return {}
