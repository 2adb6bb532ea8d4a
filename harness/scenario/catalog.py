"""Shared catalogs: tables declared once, in a catalog file, and read by many scenario files
(as dbt's sources are by its models). A scenario names its catalogs (`catalog:`); it gets
the catalog tables its join, SQL and own tables name (and the tables those are made from),
ahead of its own. A catalog may include others (`include:`).

Rules, each refused in one line naming file, line and field:
- a catalog is a file named `catalog.yaml` or `<name>.catalog.yaml` (never collected as a
  scenario), given relative to the file that names it, inside that scenario's tree (the
  topmost folder named `scenarios` above it, or its own folder); at most MAX_CATALOG_BYTES;
- a table two catalogs define differently, and a file's own table named as a catalog's,
  are refused (no silent override: two replays of the same name never plan different
  tables);
- an include cycle, and an included file that is not a catalog, are refused.

Only the tables a scenario reads shape its observation and its key in the result store:
refreshing one table's statistics re-runs the queries that name it, not the workload."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema

from harness.scenario.checks import check_tables
from harness.scenario.errors import ScenarioError, Where, dotted, line_for
from harness.scenario.schema import schema_error, scenario_validator
from harness.scenario.yaml_lines import parse_yaml, read_text

MAX_CATALOG_BYTES = 16 << 20
MAX_CATALOG_TABLES = 5000
MAX_INCLUDES = 16
# The tables one scenario may read, its own and its catalogs' together.
MAX_TABLES_READ = 512
CATALOG_FILE = re.compile(r"^(?:[A-Za-z0-9_-]+\.)?catalog\.ya?ml$")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_catalog_file(path: Path) -> bool:
    return bool(CATALOG_FILE.match(path.name))


@dataclass
class Catalog:
    """The tables of a catalog file and of those it includes, each with where it is declared."""
    path: Path
    tables: dict = field(default_factory=dict)    # name → spec
    origins: dict = field(default_factory=dict)   # name → (catalog path, its lines)
    files: list = field(default_factory=list)     # every catalog file read, includes too


def tree_root(scenario_path: Path) -> Path:
    """The folder a scenario's catalogs must be in: the topmost `scenarios` folder above
    it, else its own folder."""
    resolved = scenario_path.resolve()
    roots = [parent for parent in resolved.parents if parent.name == "scenarios"]
    return roots[-1] if roots else resolved.parent


def _catalog_validator(scenario_schema: dict):
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object", "additionalProperties": False, "required": ["tables"],
        "properties": {
            "description": {"type": "string", "maxLength": 4000},
            "include": {"type": "array", "maxItems": MAX_INCLUDES, "uniqueItems": True,
                        "items": {"$ref": "#/$defs/catalog_path"}},
            "tables": {**scenario_schema["properties"]["tables"], "maxProperties": MAX_CATALOG_TABLES},
        },
        "$defs": scenario_schema["$defs"],
    }
    return jsonschema.Draft202012Validator(schema)


_VALIDATOR = None


def _validate(path: Path, data, lines: dict) -> None:
    global _VALIDATOR
    if not isinstance(data, dict):
        raise ScenarioError(path, 1, "", "a catalog file is a mapping with `tables` (and `include`, `description`)")
    if _VALIDATOR is None:
        _VALIDATOR = _catalog_validator(scenario_validator().schema)
    errors = list(_VALIDATOR.iter_errors(data))
    if errors:
        raise schema_error(path, lines, errors)
    check_tables(Where(path, lines), data)


def _target(named_by: Path, text: str, root: Path, at: tuple, lines: dict) -> Path:
    """The catalog file `text` names, from the file `named_by`: inside `root`, a catalog, there."""
    where = (named_by, line_for(lines, at), dotted(at))
    if text.startswith("/") or "\\" in text:
        raise ScenarioError(*where, f"'{text}': a catalog is named by a path relative to this file")
    target = (named_by.parent / text).resolve()
    if root != target and root not in target.parents:
        raise ScenarioError(*where, f"'{text}' is outside the scenarios tree ({root})")
    if not is_catalog_file(target):
        raise ScenarioError(*where, f"'{text}': a catalog file is named catalog.yaml or <name>.catalog.yaml")
    if not target.is_file():
        raise ScenarioError(*where, f"no catalog file '{text}'")
    return target


_CACHE: dict = {}


def load_catalog(path: Path, root: Path, chain: tuple = ()) -> Catalog:
    """The catalog at `path` with its includes, read once per process and content."""
    stat = path.stat()
    key = (str(path), str(root), stat.st_mtime_ns, stat.st_size)
    if key in _CACHE:
        return _CACHE[key]
    data, lines = parse_yaml(path, read_text(path, MAX_CATALOG_BYTES))
    _validate(path, data, lines)
    catalog = Catalog(path=path, files=[path])
    for i, text in enumerate(data.get("include", [])):
        included = _target(path, text, root, ("include", i), lines)
        if included in chain + (path,):
            cycle = " → ".join(p.name for p in chain + (path, included))
            raise ScenarioError(path, line_for(lines, ("include", i)), dotted(("include", i)),
                                f"catalogs include each other in a cycle: {cycle}")
        _merge(catalog, load_catalog(included, root, chain + (path,)))
    own = Catalog(path=path, tables=data["tables"], origins={name: (path, lines) for name in data["tables"]})
    _merge(catalog, own)
    if len(_CACHE) > 256:
        _CACHE.clear()
    _CACHE[key] = catalog
    return catalog


def _same(one: dict, other: dict) -> bool:
    return one is other or json.dumps(one, sort_keys=True, default=str) == json.dumps(other, sort_keys=True, default=str)


def _merge(into: Catalog, other: Catalog) -> None:
    for name, spec in other.tables.items():
        if name in into.tables and not _same(into.tables[name], spec):
            first_path, first_lines = into.origins[name]
            path, lines = other.origins[name]
            raise ScenarioError(path, line_for(lines, ("tables", name)), dotted(("tables", name)),
                                f"'{name}' is defined differently in {first_path.name}:"
                                f"{line_for(first_lines, ('tables', name))}")
        into.tables.setdefault(name, spec)
        into.origins.setdefault(name, other.origins[name])
    into.files += [path for path in other.files if path not in into.files]


def catalog_names(data: dict) -> list[str]:
    named = data.get("catalog")
    return [] if named is None else [named] if isinstance(named, str) else list(named)


def _words(value, into: set) -> set:
    """Every identifier-like word in the strings (and keys) of a value, lowercased."""
    if isinstance(value, str):
        into.update(word.lower() for word in _WORD.findall(value))
    elif isinstance(value, dict):
        for key, item in value.items():
            _words(key, into)
            _words(item, into)
    elif isinstance(value, list):
        for item in value:
            _words(item, into)
    return into


def tables_read(catalog: Catalog, data: dict) -> list[str]:
    """The catalog tables a scenario reads, in the catalog's order: those a word of its join,
    stream, matrix or own tables names (Spark's names are case-insensitive), and those the
    tables read are made from. A superset: a word is never missed, and a name the SQL
    reaches some other way fails the case as Spark's unknown table, never silently."""
    by_lower = {name.lower(): name for name in catalog.tables}
    pending = _words([data.get(key) for key in ("join", "stream", "matrix", "tables")], set())
    read: set = set()
    while pending:
        word = pending.pop()
        name = by_lower.get(word)
        if name is not None and name not in read:
            read.add(name)
            pending |= _table_words(catalog.tables[name]) - {w for w in map(str.lower, read)}
    return [name for name in catalog.tables if name in read]


# A catalog table's words, by identity: one object read by every scenario of a workload.
_TABLE_WORDS: dict = {}


def _table_words(spec: dict) -> set:
    known = _TABLE_WORDS.get(id(spec))
    if known is None or known[0] is not spec:
        if len(_TABLE_WORDS) >= 8192:
            _TABLE_WORDS.clear()
        known = _TABLE_WORDS[id(spec)] = (spec, frozenset(_words(spec, set())))
    return set(known[1])


def with_catalog_tables(path: Path, data: dict, lines: dict) -> tuple[dict, dict, list]:
    """(the scenario's data with the catalog tables it reads ahead of its own, where each
    catalog table is declared: name → (catalog path, lines), and every catalog file read)."""
    root = tree_root(path)
    catalog = Catalog(path=path)
    for i, text in enumerate(catalog_names(data)):
        at = ("catalog", i) if isinstance(data["catalog"], list) else ("catalog",)
        _merge(catalog, load_catalog(_target(path, text, root, at, lines), root))
    own = data.get("tables") or {}
    by_lower = {name.lower(): name for name in catalog.tables}
    for name in own:
        if name.lower() in by_lower:  # Spark's names are case-insensitive
            declared = by_lower[name.lower()]
            catalog_path, catalog_lines = catalog.origins[declared]
            raise ScenarioError(path, line_for(lines, ("tables", name)), dotted(("tables", name)),
                                f"'{name}' is a table of the catalog {catalog_path.name}:"
                                f"{line_for(catalog_lines, ('tables', declared))}: a file's table may not replace a "
                                "catalog's (give it another name)")
    read = tables_read(catalog, data)
    if len(read) + len(own) > MAX_TABLES_READ:
        raise ScenarioError(path, line_for(lines, ("catalog",)), "catalog",
                            f"reads {len(read) + len(own):,} tables; at most {MAX_TABLES_READ}")
    tables = {name: catalog.tables[name] for name in read}
    tables.update(own)
    return {**data, "tables": tables}, {name: catalog.origins[name] for name in read}, catalog.files


def files_stamp(files) -> tuple:
    """What tells a catalog file changed since it was read."""
    stamps = []
    for file in files:
        try:
            stat = file.stat()
            stamps.append((str(file), stat.st_mtime_ns, stat.st_size))
        except OSError:
            stamps.append((str(file), None, None))
    return tuple(stamps)


def where_with_origins(path: Path, lines: dict, origins: dict) -> Where:
    return OriginWhere(path, lines, origins) if origins else Where(path, lines)


class OriginWhere(Where):
    """A Where whose catalog tables' fields point into the catalog file that declares them."""

    def __init__(self, path: Path, lines: dict, origins: dict):
        super().__init__(path, lines)
        self.origins = origins

    def error(self, where: tuple, message: str) -> ScenarioError:
        origin = self.origins.get(where[1]) if len(where) >= 2 and where[0] == "tables" else None
        if origin is None:
            return super().error(where, message)
        catalog_path, catalog_lines = origin
        return ScenarioError(catalog_path, line_for(catalog_lines, where), dotted(where),
                             f"{message} (read by {self.path.name})")
