"""What a schema cannot say about a scenario, one rule each, in the order a person fixes a
file, grouped by concern: tables and columns (tables), catalog layouts and table formats
(layouts), streams (streams), expectations, versions and cost (expectations)."""
from __future__ import annotations

from pathlib import Path

from harness.scenario.checks.expectations import (
    check_confs,
    check_patterns,
    check_plan_only,
    check_pruned_tables,
    check_synthetic,
    check_varies,
    check_version_specifiers,
    read_cost_bounds,
)
from harness.scenario.checks.layouts import check_layouts
from harness.scenario.checks.streams import check_stream_shape
from harness.scenario.checks.tables import (
    check_all_hints,
    check_columns,
    check_derived,
    check_join_columns,
    check_join_tables,
    check_literal_rows,
    check_stats,
    read_sizes,
)
from harness.scenario.errors import Where

# What a schema cannot say, one rule each, in the order a person fixes a file.
SEMANTIC_CHECKS = (read_sizes, read_cost_bounds, check_join_tables, check_derived, check_literal_rows, check_stats,
                   check_columns, check_layouts, check_pruned_tables, check_join_columns, check_stream_shape,
                   check_plan_only, check_synthetic, check_all_hints, check_confs, check_version_specifiers,
                   check_patterns, check_varies)


# The rules on tables alone: what a shared catalog's file is checked against.
TABLE_CHECKS = (read_sizes, check_derived, check_literal_rows, check_stats, check_columns, check_layouts)


def check_tables(at: Where, data: dict) -> None:
    """A catalog's tables by the rules on tables (the rest needs a join: each scenario reading them)."""
    shaped = {"tables": data["tables"], "join": {}, "expect": {}}
    for check in TABLE_CHECKS:
        check(at, shaped)


def check_semantics(path: Path, data: dict, lines: dict, at: Where | None = None) -> None:
    at = at or Where(path, lines)
    for check in SEMANTIC_CHECKS:
        check(at, data)
