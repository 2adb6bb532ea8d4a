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


def check_semantics(path: Path, data: dict, lines: dict) -> None:
    at = Where(path, lines)
    for check in SEMANTIC_CHECKS:
        check(at, data)
