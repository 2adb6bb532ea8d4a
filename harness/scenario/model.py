"""The scenario model: a loaded file (Scenario) and its matrix expanded into cases (Case),
each with a readable id such as `left_outer-BROADCAST@right-aqe=off`; a statistics-only
scenario with `synthetic:` also expands its synthetic twin (harness.scenario.twin)."""
from __future__ import annotations

import copy
import hashlib
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Protocol

from harness.core.vocab import JOIN_TYPES, THEN
from harness.scenario.catalog import files_stamp, is_catalog_file, where_with_origins, with_catalog_tables
from harness.scenario.checks import check_semantics
from harness.scenario.errors import ScenarioError, line_for
from harness.scenario.schema import validate, validate_shape
from harness.scenario.tables import as_hint_list, hint_name, is_stats_only
from harness.scenario.twin import twin_data
from harness.scenario.yaml_lines import parse_yaml, read_text

MAX_CASES_PER_SCENARIO = 512
DEFAULT_SEED = 42
DEFAULT_TIMEOUT_S = 120.0

# Short labels for config keys in readable case ids, e.g. `aqe=off`.
CONF_LABELS = {
    "spark.sql.adaptive.enabled": "aqe",
    "spark.sql.autoBroadcastJoinThreshold": "abjt",
    "spark.sql.join.preferSortMergeJoin": "psmj",
    "spark.sql.shuffle.partitions": "parts",
    "spark.sql.adaptive.autoBroadcastJoinThreshold": "aqe_abjt",
    "spark.sql.cbo.enabled": "cbo",
    "spark.sql.cbo.joinReorder.enabled": "reorder",
    "spark.sql.optimizeNullAwareAntiJoin": "naaj",
    "spark.sql.execution.reuseSubquery": "reuse",
    "spark.sql.adaptive.skewJoin.enabled": "skew",
}


def sql_texts(data: dict):
    """(field path, text) of every piece of Spark SQL in a scenario."""
    join = data["join"]
    for key in ("sql", "condition"):
        if key in join:
            yield ("join", key), join[key]
    for tname, table in data["tables"].items():
        if "filter" in table:
            yield ("tables", tname, "filter"), table["filter"]
        if "sql" in table:
            yield ("tables", tname, "sql"), table["sql"]
        if "condition" in table.get("join", {}):
            yield ("tables", tname, "join", "condition"), table["join"]["condition"]
        for i, step in enumerate(table.get("steps", [])):
            if isinstance(step, dict) and "filter" in step:
                yield ("tables", tname, "steps", i, "filter"), step["filter"]
            for j, text in enumerate(step.get("select", []) if isinstance(step, dict) else []):
                yield ("tables", tname, "steps", i, "select", j), text
        for cname, column in table.get("columns", {}).items():
            if "expr" in column:
                yield ("tables", tname, "columns", cname, "expr"), column["expr"]
    if "then" in (data.get("stream") or {}):
        yield ("stream", "then", "sql"), data["stream"]["then"]["sql"]
    for i, batch in enumerate((data.get("stream") or {}).get("batches", [])):
        for tname, added in batch["add"].items():
            if "where" in added:
                yield ("stream", "batches", i, "add", tname, "where"), added["where"]


@dataclass
class Scenario:
    path: Path
    data: dict
    lines: dict
    # (id of the Spark session, refusal or None): harness.spark.sql_guard's verdict, made once
    sql_verdict: tuple | None = field(default=None, compare=False, repr=False)
    twin_of: str | None = None  # the synthetic twin of that scenario id (harness.scenario.twin)
    # catalog table name → (catalog file, its lines), for the tables read from shared catalogs
    origins: dict = field(default_factory=dict, compare=False, repr=False)
    catalog_files: tuple = field(default=(), compare=False, repr=False)  # with what they held when read

    @property
    def id(self) -> str:
        return self.data["id"]

    @property
    def seed(self) -> int:
        return self.data.get("seed", DEFAULT_SEED)

    @property
    def timeout(self) -> float:
        return float(self.data.get("timeout", DEFAULT_TIMEOUT_S))

    def line_of(self, *path) -> int | None:
        return line_for(self.lines, path)

    def error(self, where: tuple, message: str) -> ScenarioError:
        """A problem at a field: in this file, or in the catalog declaring the table it is in."""
        return where_with_origins(self.path, self.lines, self.origins).error(tuple(where), message)

    @property
    def plan_only(self) -> bool:
        """A statistics-only table has no rows: nothing of the scenario executes."""
        return any(is_stats_only(table) for table in self.data["tables"].values())


@dataclass
class Case:
    """One expansion of a scenario's matrix: everything needed to run it."""
    scenario: Scenario
    label: str                 # e.g. "left_outer-BROADCAST@right-aqe=off" ("" without matrix)
    params: dict               # matrix values of this case, by axis
    join: dict                 # join spec with the matrix applied
    spark_conf: dict           # configs with the matrix applied (values may be relative)
    expect: dict               # expectations with the matching overrides applied (version-free part)
    overrides: list = field(default_factory=list)

    @property
    def case_id(self) -> str:
        return f"{self.scenario.id}[{self.label}]" if self.label else self.scenario.id

    @property
    def join_type(self) -> str:
        return JOIN_TYPES[self.join.get("type", "inner")]


class ParsedTexts(Protocol):
    """Where texts that parsed and validated before are kept (harness.store.parsed)."""

    def recall(self, text: str) -> Optional[tuple[dict, dict]]: ...

    def keep(self, text: str, data: dict, lines: dict) -> None: ...


def load_scenario(path: str | Path, parsed: Optional[ParsedTexts] = None) -> Scenario:
    """The file read, parsed and validated; with `parsed`, a text that passed before is
    taken as it was then (parsing and validating depend on the text and the harness only,
    unless the file reads a shared catalog: harness.scenario.catalog)."""
    path = Path(path)
    text = read_text(path)
    known = parsed.recall(text) if parsed is not None else None
    if known is not None:
        data, lines = known
        return Scenario(path=path, data=data, lines=lines)
    data, lines = parse_yaml(path, text)
    validate_shape(path, data, lines)
    if "catalog" in data:
        data, origins, files = with_catalog_tables(path, data, lines)
        check_semantics(path, data, lines, where_with_origins(path, lines, origins))
        return Scenario(path=path, data=data, lines=lines, origins=origins, catalog_files=files_stamp(files))
    check_semantics(path, data, lines)
    if parsed is not None:
        parsed.keep(text, data, lines)
    return Scenario(path=path, data=data, lines=lines)


_LOADED: dict = {}


def load_once(path: Path, parsed: Optional[ParsedTexts] = None) -> Scenario:
    """A scenario file loaded once per process and content (its catalogs' too): a run that
    decided on its workers from the store (harness.plugin) has read every file already."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    known = _LOADED.get(key)
    if known is None or files_stamp(Path(p) for p, _, _ in known.catalog_files) != known.catalog_files:
        _LOADED[key] = load_scenario(path, parsed)
    return _LOADED[key]


def in_scenario_tree(path: Path, roots=()) -> bool:
    """Whether a YAML file is a scenario by where it is: under a folder named `scenarios`,
    or under one of `roots` (the scenario paths a project's settings name)."""
    resolved = path.resolve()
    return "scenarios" in resolved.parts or any(resolved == root or root in resolved.parents for root in roots)


def scenario_files(args: list[str], roots=()) -> list[Path]:
    """The scenario files that command-line paths name: files, and the .yaml/.yml files
    under folders in a `scenarios` tree or under `roots` (hidden folders left out)."""
    found = []
    for arg in args:
        path = Path(arg.split("::")[0])
        if path.is_dir():
            found += [p for p in sorted(path.rglob("*.y*ml")) if p.suffix in (".yaml", ".yml")
                      and in_scenario_tree(p, roots) and not any(part.startswith(".") for part in p.parts)
                      and not is_catalog_file(p)]
        elif path.suffix in (".yaml", ".yml") and not is_catalog_file(path):
            found.append(path)
    return found


def _value_label(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, dict):
        parts = [f"{value['estimate_of']}_estimate"]
        if value.get("times") not in (None, 1):
            parts.append(f"x{value['times']}")
        if value.get("plus"):
            parts.append(f"{value['plus']:+d}")
        return "".join(parts)
    return str(value)


def hints_label(hints, side: str) -> str:
    names = [hint_name(h) for h in as_hint_list(hints)]
    return f"{'+'.join(names) if names else 'none'}@{side}"


def _axis_label(axis: str, value) -> str:
    if axis in ("left_hints", "right_hints"):
        return hints_label(value, axis.split("_")[0])
    return str(value)


def expand(scenario: Scenario) -> list[Case]:
    data = scenario.data
    matrix = data.get("matrix", {})
    axes: list[tuple[str, list]] = []
    for axis, values in matrix.items():
        if axis == "conf":
            axes.extend((f"conf:{key}", vals) for key, vals in values.items())
        else:
            axes.append((axis, values))
    count = math.prod(len(values) for _, values in axes)
    if count > MAX_CASES_PER_SCENARIO:  # counted before anything is expanded
        raise ScenarioError(scenario.path, scenario.line_of("matrix"), "matrix",
                            f"expands to {count:,} cases; the limit is {MAX_CASES_PER_SCENARIO}")
    combos = itertools.product(*(values for _, values in axes)) if axes else [()]
    cases, seen = [], set()
    for combo in combos:
        params: dict = {}
        join = copy.deepcopy(data["join"])
        if "then" in (data.get("stream") or {}):
            join[THEN] = data["stream"]["then"]["sql"]  # applied over the join by every run of it
        conf = dict(data.get("spark_conf", {}))
        labels = []
        for (axis, _), value in zip(axes, combo):
            if axis.startswith("conf:"):
                key = axis[5:]
                conf[key] = value
                params.setdefault("conf", {})[key] = value
                labels.append(f"{CONF_LABELS.get(key, key.rsplit('.', 1)[-1])}={_value_label(value)}")
                continue
            params[axis] = value
            labels.append(_axis_label(axis, value))
            if axis == "join_type":
                join["type"] = value
            elif axis == "api":
                join["api"] = value
            else:
                join.setdefault("hints", {})[axis.split("_")[0]] = value
        label = "-".join(labels)
        if label in seen:
            raise ScenarioError(scenario.path, scenario.line_of("matrix"), "matrix",
                                f"two combinations give the same case id '{label}'")
        seen.add(label)
        cases.append(Case(scenario=scenario, label=label, params=params, join=join, spark_conf=conf,
                          expect=data["expect"], overrides=data["expect"].get("overrides", [])))
    twin = twin_data(data)
    if twin is None:
        return cases
    return cases + expand(Scenario(path=scenario.path, data=twin, lines=scenario.lines, twin_of=scenario.id,
                                   origins=scenario.origins, catalog_files=scenario.catalog_files))


def stable_seed(*parts) -> int:
    """A 63-bit seed from the parts, identical in every process (unlike Python's hash())."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") & 0x7FFF_FFFF_FFFF_FFFF
