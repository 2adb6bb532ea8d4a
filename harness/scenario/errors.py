"""Problems with a scenario file, each in one line that names the file, the line and the
field (`path:line: field: message`), and the helpers that point at a field."""
from __future__ import annotations

import difflib
from pathlib import Path

from harness.core.text import display_path, one_line, printable


class ScenarioError(Exception):
    """One-line, user-facing problem with a scenario file."""

    def __init__(self, path: str | Path, line: int | None, field_path: str, message: str):
        self.path, self.line, self.field_path, self.message = str(path), line, field_path, one_line(message)
        shown = display_path(path)  # relative to the project root when below it
        where = f"{shown}:{line}" if line else shown
        super().__init__(one_line(f"{where}: {field_path or '(file)'}: {self.message}"))


def excerpt(text, limit: int = 40) -> str:
    text = printable(str(text))
    return repr(text if len(text) <= limit else text[:limit] + "...")


def first_line(exc: BaseException) -> str:
    return printable((str(exc).strip().splitlines() or [type(exc).__name__])[0])[:200]


def dotted(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def line_for(lines: dict, path: tuple) -> int | None:
    path = tuple(path)
    while path not in lines and path:
        path = path[:-1]
    return lines.get(path)


class Where:
    """Raises a ScenarioError at a field of the file being checked."""

    def __init__(self, path: Path, lines: dict):
        self.path, self.lines = path, lines

    def error(self, where: tuple, message: str) -> ScenarioError:
        return ScenarioError(self.path, line_for(self.lines, where), dotted(where), message)


def did_you_mean(name: str, choices) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
