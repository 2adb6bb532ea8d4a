"""The team's repository every command works in: found the way pytest finds its rootdir,
never where the harness is installed.

From the current folder upwards, the first folder holding a `join-harness.toml` or a
`pyproject.toml` with a `[tool.join-harness]` table is the project root, and that table
its settings; with neither, the current folder is the root, with the defaults. The
harness's own repository is one such project (its pyproject.toml names `.matrix` for the
environments)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

OWN_FILE = "join-harness.toml"
TABLE = ("tool", "join-harness")
DEFAULT_PATHS = ("scenarios",)


class ProjectError(ValueError):
    """A settings file the harness cannot use: one line naming the file, line and key."""


@dataclass(frozen=True)
class Project:
    root: Path
    config_file: Path | None = None          # where the settings came from (None: defaults)
    paths: tuple = DEFAULT_PATHS             # scenario files or folders, relative to root
    report_dir: str = "reports"
    store: str | None = None                 # None: .harness-cache beside the report folder
    matrix_versions: tuple = ()              # () : the harness's default releases
    envs: str | None = None                  # None: the per-user cache (harness.deploy.matrix)

    def path(self, relative: str | os.PathLike) -> Path:
        """A path of the settings (or a record's `file`), from the project root."""
        candidate = Path(relative)
        return candidate if candidate.is_absolute() else self.root / candidate

    def scenario_paths(self) -> list[Path]:
        return [self.path(p) for p in self.paths]

    def missing_scenarios(self) -> str | None:
        """Why the project has no scenarios to run, in one line (None: it has)."""
        missing = [p for p in self.scenario_paths() if not p.exists()]
        if not missing:
            return None
        named = f"named by {self.config_file}" if self.config_file else "the default; no join-harness settings found"
        return (f"{missing[0]}: no such scenario file or folder ({named}): run `python -m harness init` in your "
                "repository, or name the scenario paths")


KEYS = {"paths": list, "report_dir": str, "store": str, "matrix_versions": list, "envs": str}


def find(start: str | os.PathLike | None = None) -> Project:
    """The project the current folder (or `start`) belongs to."""
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        own = folder / OWN_FILE
        if own.is_file():
            return _from_table(folder, own, _toml(own))
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            table = _toml(pyproject)
            for key in TABLE:
                table = table.get(key) if isinstance(table, dict) else None
            if isinstance(table, dict):
                return _from_table(folder, pyproject, table)
    return Project(root=here)


def _toml(path: Path) -> dict:
    """The file's table, parsed once per content: every command and each xdist worker asks
    for the project more than once."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise ProjectError(f"{path}: cannot be read: {exc}") from None
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _PARSED:
        if len(_PARSED) >= 16:  # a process sees a project or two: never grows past a few files
            _PARSED.clear()
        _PARSED[key] = _parsed_toml(path)
    return _PARSED[key]


_PARSED: dict = {}


def _parsed_toml(path: Path) -> dict:
    try:
        import tomllib
    except ImportError:  # Python < 3.11: pytest's own dependency
        import tomli as tomllib
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ProjectError(f"{path}: cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProjectError(f"{path}: not valid TOML: {exc}") from None


def _line_of(path: Path, key: str) -> int:
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if pattern.match(line):
            return number
    return 1


def _from_table(root: Path, source: Path, table: dict) -> Project:
    where = "[tool.join-harness]" if source.name == "pyproject.toml" else "settings"
    values = {}
    for key, value in table.items():
        kind = KEYS.get(key.replace("-", "_"))
        if kind is None:
            raise ProjectError(f"{source}:{_line_of(source, key)}: {where}.{key}: unknown key "
                               f"(known: {', '.join(sorted(KEYS))})")
        if not isinstance(value, kind) or (kind is list and not all(isinstance(v, str) for v in value)):
            what = "a list of strings" if kind is list else "a string"
            raise ProjectError(f"{source}:{_line_of(source, key)}: {where}.{key}: must be {what}, "
                               f"not {value!r}")
        values[key.replace("-", "_")] = tuple(value) if kind is list else value
    if "paths" in values and not values["paths"]:
        raise ProjectError(f"{source}:{_line_of(source, 'paths')}: {where}.paths: names no scenario path")
    return Project(root=root, config_file=source, **values)
