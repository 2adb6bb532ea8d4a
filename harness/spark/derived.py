"""A case's inputs: the generated, literal and statistics-only tables (harness.spark.datagen),
and the tables derived from them — a SQL query over tables declared earlier, a join of
two of them, or one of them — followed by DataFrame steps (filter, select, repartition,
coalesce, drop_duplicates, hint, cache).

A derived table is built under its own `spark_conf`, set while it is built and, where a
`cache` step says so, materialised, and restored before the next table: "cache X under
20 shuffle partitions, then join under 5". Derived tables are built anew for every run
of a case (the cross-strategy check's forced runs included), exactly as in the case;
the tables they come from are reused per worker like any generated table. A derived
table declared `format: iceberg` is the exception: its rows are written once per worker
into an Iceberg table with its partition spec (harness.spark.datagen), and every run reads
that table.
"""
from __future__ import annotations

from harness.core.vocab import JOIN_TYPES
from harness.scenario import confs
from harness.scenario.formats import written_derived
from harness.scenario.model import Case, Scenario
from harness.scenario.tables import (
    as_hint_list,
    derived_inputs,
    hint_name,
    is_derived,
)
from harness.spark import cached, datagen
from harness.spark.query import build_query
from harness.spark.sql_trees import relation_names


def top_tables(case: Case) -> list[str]:
    """The tables the case's join reads: its two sides, or every table for `join.sql`."""
    if "sql" in case.join:
        return list(case.scenario.data["tables"])
    return list(dict.fromkeys([case.join["left"], case.join["right"]]))


def inputs_of(spark, scenario: Scenario, name: str) -> list[str]:
    """The tables a derived table is made from (a query's, as Spark's parser reads them)."""
    table = scenario.data["tables"][name]
    if "sql" not in table:
        return derived_inputs(table)
    by_lower = {declared.lower(): declared for declared in scenario.data["tables"]}
    return [by_lower[used] for used in _relations(id(spark), spark, table["sql"]) if used in by_lower]


_PARSED: dict = {}


def _relations(spark_id: int, spark, text: str) -> list[str]:
    """relation_names, once per session and text: every run of a case (and each forced
    strategy) asks again."""
    key = (spark_id, text)
    if key not in _PARSED:
        if len(_PARSED) > 1024:
            _PARSED.clear()
        _PARSED[key] = relation_names(spark, text)
    return _PARSED[key]


def remember_relations(spark, text: str, names: list[str]) -> None:
    """The tables a query reads, as a parser elsewhere read them (through Spark Connect the
    SQL guard's own Spark parses: harness.deploy.connect)."""
    _PARSED[(id(spark), text)] = list(names)


def needed_tables(spark, scenario: Scenario, names: list[str]) -> list[str]:
    """`names` and every table they are derived from, in the file's order (a derived table
    only reads tables declared above it, so that order builds inputs first)."""
    tables = scenario.data["tables"]
    wanted, stack = set(), list(names)
    while stack:
        name = stack.pop()
        if name in wanted:
            continue
        wanted.add(name)
        if is_derived(tables[name]):
            stack.extend(inputs_of(spark, scenario, name))
    return [name for name in tables if name in wanted]


def build_inputs(session, scope, case: Case, conf: dict, names: list[str] | None = None) -> dict:
    """Every table the case's join needs, by name, built while the case's configs are set."""
    spark, scenario = session.spark, case.scenario
    specs = scenario.data["tables"]
    data_conf = confs.data_conf(conf)
    tables: dict = {}
    for name in needed_tables(spark, scenario, names or top_tables(case)):
        spec = specs[name]
        if is_derived(spec) and written_derived(spec):
            tables[name] = datagen.derived_catalog_table(spark, scenario.seed, name, specs, data_conf,
                                                         lambda: build_derived(spark, scope, spec, tables))
            continue
        if is_derived(spec):
            try:
                tables[name] = build_derived(spark, scope, spec, tables, scenario.plan_only)
            except cached.CacheSizingError as exc:
                raise cached.CacheSizingError(f"tables.{name}.{exc}") from None
            continue
        tables[name] = datagen.build_table(spark, scenario.seed, name, spec, session.workdir, data_conf)
        if spec.get("materialize") == "cached":
            scope.remember_cached(tables[name])
    return tables


def build_derived(spark, scope, spec: dict, tables: dict, plan_only: bool = False):
    """One derived table under its own configs (restored when it is built)."""
    with scope.conf_overlay(spec.get("spark_conf", {})):
        frame = source_frame(spark, spec, tables, scope.register_view)
        for index, step in enumerate(spec.get("steps", [])):
            try:
                frame = apply_step(frame, step, scope, plan_only)
            except cached.CacheSizingError as exc:
                raise cached.CacheSizingError(f"steps[{index}].cache: {exc}") from None
    return frame


def source_frame(spark, spec: dict, tables: dict, register_view):
    """The frame a derived table starts from: its `from` table, its join (DataFrame API;
    plain `on` names join USING them, so each appears once), or its query."""
    if "from" in spec:
        return tables[spec["from"]]
    if "join" in spec:
        join = spec["join"]
        if "condition" not in join and join.get("on") and all(isinstance(c, str) for c in join["on"]):
            left = _hinted(tables[join["left"]].alias("l"), join, "left")
            right = _hinted(tables[join["right"]].alias("r"), join, "right")
            return left.join(right, list(join["on"]), JOIN_TYPES[join.get("type", "inner")])
        return build_query(spark, None, {**join, "api": "dataframe"}, tables)
    for name in tables:  # the query reads them by name (harness.spark.sql_guard checked it)
        register_view(name, tables[name])
    return spark.sql(spec["sql"])


def _hinted(frame, join: dict, side: str):
    for hint in as_hint_list(join.get("hints", {}).get(side)):
        frame = frame.hint(hint_name(hint))
    return frame


def apply_step(frame, step, scope=None, plan_only: bool = False):
    """One DataFrame step. `cache` caches and materialises (an action) now, so that what
    is cached is planned and sized under the table's own configs — in a plan-only case it
    caches without running anything, and `{cache: {...}}` gives the cache the statistics
    Spark sized it by (harness.spark.cached); without a scope (the SQL checks' stand-ins)
    nothing is cached."""
    if step == "cache" or (isinstance(step, dict) and "cache" in step):
        if scope is None:
            return frame
        frame = frame.cache()
        scope.remember_cached(frame)
        if isinstance(step, dict):
            cached.size_cache(scope.spark, frame, step["cache"])
        elif not plan_only:
            frame.count()
            scope.check_timeout()
        return frame
    if step == "drop_duplicates":
        return frame.dropDuplicates()
    (operation, argument), = step.items()
    if operation == "filter":
        return frame.where(argument)
    if operation == "select":
        return frame.selectExpr(*argument)
    if operation == "repartition":
        return _repartition(frame, argument)
    if operation == "coalesce":
        return frame.coalesce(argument)
    if operation == "drop_duplicates":
        return frame.dropDuplicates(list(argument))
    for hint in as_hint_list(argument):  # hint
        frame = frame.hint(hint_name(hint))
    return frame


def _repartition(frame, argument):
    if isinstance(argument, int):
        return frame.repartition(argument)
    if isinstance(argument, list):
        return frame.repartition(*argument)
    columns = argument.get("columns", [])
    return frame.repartition(argument["partitions"], *columns) if "partitions" in argument \
        else frame.repartition(*columns)
