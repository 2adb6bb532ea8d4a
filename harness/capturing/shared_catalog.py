"""Capture into a shared catalog (`capture --catalog`): the tables of every captured query
go to one catalog file (harness.scenario.catalog), each query's file names it and keeps
only its SQL and expectations. A table keeps one name across the whole capture (its own
name; `<database>_<name>` when another database's table took it first), so two queries
never give one name to two tables. Capturing again into the same catalog replaces the
definitions of the tables captured (fresh statistics) and keeps the others: refreshing
the catalog refreshes the replay of every query that reads them."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness.capturing.relations import CapturedTable, CaptureError
from harness.scenario.catalog import is_catalog_file


@dataclass
class SharedCatalog:
    path: Path
    tables: dict = field(default_factory=dict)    # name → spec, in the file's order
    owners: dict = field(default_factory=dict)    # lowercased name → (database, table) of this capture

    @classmethod
    def at(cls, path: Path) -> "SharedCatalog":
        """The catalog to capture into: the one already at `path` (its tables kept until
        replaced), or a new one."""
        if not is_catalog_file(path):
            raise CaptureError(f"--catalog {path}: a catalog file is named catalog.yaml or <name>.catalog.yaml")
        catalog = cls(path=path)
        if path.exists():
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            except (OSError, yaml.YAMLError) as exc:
                raise CaptureError(f"--catalog {path}: cannot be read ({exc})") from None
            if not isinstance(data, dict) or not isinstance(data.get("tables"), dict):
                raise CaptureError(f"--catalog {path}: not a catalog file (no `tables`)")
            catalog.tables = dict(data["tables"])
        return catalog

    def name(self, tables: list[CapturedTable]) -> None:
        """Each table's name in the catalog, the same for the same table across queries."""
        for table in tables:
            key = table.key
            plain = _identifier(table.table)
            for candidate in (plain, _identifier(f"{table.database}_{table.table}")):
                owner = self.owners.get(candidate.lower())
                if owner is None or owner == key:
                    break
            else:
                candidate = _identifier(f"{table.database}_{table.table}_{len(self.owners)}")
            self.owners[candidate.lower()] = key
            table.name = candidate

    def add(self, specs: dict) -> None:
        """Tables new to the catalog at its end (a view after the tables it reads); a
        table it holds replaced in its place (views below it still read it from above)."""
        self.tables.update(specs)

    def text(self, dump) -> str:
        return dump({"description": "Captured by `python -m harness capture --catalog`: the tables the queries "
                                    "of this folder read, by their catalog statistics.",
                     "tables": self.tables})

    def reference_from(self, scenario_path: Path) -> str:
        return Path(_relative(self.path.resolve(), scenario_path.resolve().parent)).as_posix()


def _identifier(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", text)
    return name if re.match(r"[A-Za-z_]", name) else f"t_{name}"


def _relative(target: Path, start: Path) -> str:
    import os
    return os.path.relpath(target, start)
