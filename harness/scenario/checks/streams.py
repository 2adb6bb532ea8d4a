"""Rules on a scenario's streams: what each step adds, the watermarks, the columns a stream
join reads."""
from __future__ import annotations

from pathlib import Path

from harness.core.vocab import THEN_VIEW
from harness.scenario.checks.tables import check_value
from harness.scenario.errors import (
    ScenarioError,
    Where,
    dotted,
    excerpt,
    line_for,
)
from harness.scenario.tables import (
    column_type,
    is_derived,
    is_stats_only,
    table_columns,
)


def _check_stream(path: Path, data: dict, lines: dict) -> None:
    join, tables = data["join"], data["tables"]
    if "sql" in join:
        raise ScenarioError(path, line_for(lines, ("stream",)), "stream",
                            "a streaming scenario joins join.left and join.right, not join.sql")
    for side in ("left", "right"):
        if is_derived(tables[join[side]]) or is_stats_only(tables[join[side]]):
            raise ScenarioError(path, line_for(lines, ("join", side)), f"join.{side}",
                                "a stream is fed from a generated or literal table")
    for name, mark in data["stream"]["watermarks"].items():
        where = ("stream", "watermarks", name)
        if name not in (join["left"], join["right"]):
            raise ScenarioError(path, line_for(lines, where), dotted(where),
                                f"'{name}' is not a side of the join ({join['left']}, {join['right']})")
        if column_type(tables[name], mark["column"]) != "timestamp":
            raise ScenarioError(path, line_for(lines, where + ("column",)), dotted(where + ("column",)),
                                f"'{mark['column']}' must be a column of '{name}' with type: timestamp")
    at = Where(path, lines)
    if "then" in data["stream"] and THEN_VIEW in {name.lower() for name in tables}:
        raise at.error(("stream", "then", "sql"), f"reads the join as the view '{THEN_VIEW}': rename the table "
                                                  f"'{THEN_VIEW}'")
    steps = data["stream"].get("batches", [])
    for o, override in enumerate((data.get("expect") or {}).get("overrides", [])):
        for c, changed in enumerate(override.get("batches", [])):
            if changed["batch"] > len(steps):
                raise at.error(("expect", "overrides", o, "batches", c, "batch"),
                               f"batch {changed['batch']}: stream.batches has {len(steps)} step(s)")
    for i, batch in enumerate(steps):
        for name, added in batch["add"].items():
            where = ("stream", "batches", i, "add", name)
            if name not in (join["left"], join["right"]):
                raise at.error(where, f"'{name}' is not a side of the join ({join['left']}, {join['right']})")
            for r, row in enumerate(added.get("rows", [])):
                _check_batch_row(at, where + ("rows", r), row, tables[name])


def _check_batch_row(at: "Where", where: tuple, row: list, table: dict) -> None:
    """One value per column of the table, of the column's type where the file says it."""
    columns = table_columns(table)
    if len(row) != len(columns):
        raise at.error(where, f"{len(row)} value(s) for {len(columns)} column(s) ({', '.join(columns)})")
    for value, column in zip(row, columns):
        type_name = column_type(table, column)
        if value is None or type_name is None:
            if isinstance(value, (list, dict)):
                raise at.error(where, f"{excerpt(value)} is not a value (column '{column}')")
            continue
        check_value(at, where, value, type_name, column)


def check_stream_shape(at: Where, data: dict) -> None:
    if "stream" in data:
        _check_stream(at.path, data, at.lines)
        return
    for o, override in enumerate((data.get("expect") or {}).get("overrides", [])):
        if "batches" in override:
            raise at.error(("expect", "overrides", o, "batches"), "only a stream fed step by step (stream.batches) "
                                                                   "has batches")
