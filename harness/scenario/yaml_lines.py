"""A scenario file read as plain data, with the 1-based line of every field.

The file is untrusted: a safe loader that also refuses anchors and aliases (no alias
bombs), duplicate keys and deep nesting; a size cap; NUL bytes and non-UTF-8 refused;
YAML 1.2 booleans only (so the `on:` key list stays a key)."""
from __future__ import annotations

import datetime
import math
import re
from pathlib import Path
from typing import Any

import yaml

from harness.core.text import printable
from harness.scenario.errors import ScenarioError, dotted, excerpt, first_line

MAX_FILE_BYTES = 1 << 20
MAX_NESTING = 40  # levels of YAML nesting; the format needs fewer than ten


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors/aliases (exponential blow-up), duplicate keys and
    nesting deeper than MAX_NESTING (the composer recurses per level)."""

    _depth = 0

    def compose_node(self, parent, index):
        if self._depth >= MAX_NESTING:
            raise yaml.MarkedYAMLError("while composing", None,
                                       f"nesting deeper than {MAX_NESTING} levels", self.peek_event().start_mark)
        self._depth += 1
        try:
            return self._compose_checked(parent, index)
        finally:
            self._depth -= 1

    def _compose_checked(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.MarkedYAMLError("while composing", None,
                                       "YAML aliases are not allowed in scenario files", event.start_mark)
        event = self.peek_event()
        if getattr(event, "anchor", None):
            raise yaml.MarkedYAMLError("while composing", None,
                                       "YAML anchors are not allowed in scenario files", event.start_mark)
        return super().compose_node(parent, index)


def _node_to_data(node, path: tuple, lines: dict, source: str):
    """Convert a composed node to plain data, recording each path's 1-based line."""
    lines.setdefault(path, node.start_mark.line + 1)  # a key's own line, where it has one
    if isinstance(node, yaml.MappingNode):
        out = {}
        for key_node, value_node in node.value:
            key = _StrictLoader.construct_object(_loader_for_scalars, key_node)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                raise ScenarioError(source, key_node.start_mark.line + 1, dotted(path), "mapping keys must be scalars")
            key = str(key) if not isinstance(key, str) else key
            if key in out:
                raise ScenarioError(source, key_node.start_mark.line + 1, dotted(path + (key,)), "duplicate key")
            lines[path + (key,)] = key_node.start_mark.line + 1
            out[key] = _node_to_data(value_node, path + (key,), lines, source)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_node_to_data(item, path + (i,), lines, source) for i, item in enumerate(node.value)]
    try:
        value = _StrictLoader.construct_object(_loader_for_scalars, node)
    except (ValueError, OverflowError, TypeError, yaml.YAMLError) as exc:
        # e.g. an impossible date 2024-02-30, `!!float abc`, an integer of 5,000 digits
        raise ScenarioError(source, node.start_mark.line + 1, dotted(path),
                            f"cannot read the value {excerpt(node.value)}: {first_line(exc)}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ScenarioError(source, node.start_mark.line + 1, dotted(path), f"{node.value} is not a finite number")
    # YAML turns 2024-01-01 into a date; scenarios want the text they wrote.
    return value.isoformat() if isinstance(value, (datetime.date, datetime.datetime)) else value


# turn the `on:` join key list into `True:`.
_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_StrictLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                    list("tTfF"))

_loader_for_scalars = _StrictLoader("")


def read_text(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """The file's text, refused in one line if it is too big, binary or not UTF-8."""
    size = path.stat().st_size
    if size > limit:
        raise ScenarioError(path, None, "", f"file is {size:,} bytes; the limit is {limit:,}")
    raw = path.read_bytes()
    if b"\0" in raw:
        line = raw[:raw.index(b"\0")].count(b"\n") + 1
        raise ScenarioError(path, line, "", "not a text file (NUL byte)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ScenarioError(path, line, "", f"not UTF-8 text (byte 0x{raw[exc.start]:02x})") from None


def load_yaml(path: Path) -> tuple[Any, dict]:
    return parse_yaml(path, read_text(path))


def parse_yaml(path: Path, text: str) -> tuple[Any, dict]:
    try:
        loader = _StrictLoader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = printable((exc.problem or exc.context or "invalid YAML").strip())
        raise ScenarioError(path, mark.line + 1 if mark else None, "", f"YAML syntax: {problem}") from None
    except yaml.reader.ReaderError as exc:
        line = text[:exc.position].count("\n") + 1
        raise ScenarioError(path, line, "", f"YAML: character {exc.character!r} is not allowed") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(path, None, "", f"YAML syntax: {first_line(exc)}") from None
    if node is None:
        raise ScenarioError(path, 1, "", "file is empty")
    lines: dict = {}
    return _node_to_data(node, (), lines, str(path)), lines


# --------------------------------------------------------------------------- schema

_validator = None
