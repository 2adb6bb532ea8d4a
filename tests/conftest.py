import textwrap
from pathlib import Path

import pytest


@pytest.fixture
def session():
    # Not session-scoped: a fault test may stop the SparkContext; get_session() then builds
    # a new one (and otherwise returns the one this process already has).
    from harness.session import get_session
    return get_session()


@pytest.fixture
def write_scenario(tmp_path):
    """Write a scenario file from YAML text; returns its path."""
    def write(text: str, name: str = "case.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path
    return write


MINIMAL = """\
id: minimal
description: two small tables
tables:
  a:
    rows: 100
    columns:
      k: {key: {cardinality: 10}}
  b:
    rows: 10
    columns:
      k: {sequence: {}}
join:
  left: a
  right: b
  on: [k]
expect:
  strategy: BroadcastHashJoin
  build_side: right
"""
