"""Capture a team's own query into a scenario file, without its data.

For every table the query reads (found in Spark's analysed plan, through views), the
schema and the catalog statistics are recorded as a statistics-only table; a permanent
view becomes a derived table over its own tables; the query becomes `join.sql` with its
table references renamed to the scenario's tables; the join-relevant configs the session
set become `spark_conf`; and the join nodes Spark planned for it right now become the
expectations, scoped to the Spark version that planned them. Replayed on any version,
the scenario plans what that version plans for those tables at those sizes.

    python -m harness capture q17.sql [more.sql | folder] --out scenarios/ours/
    from harness import capture; capture(df, "scenarios/ours/q17.yaml")     # a DataFrame
    capture("SELECT ...", "scenarios/ours/q17.yaml", spark=spark)           # SQL text
"""
from __future__ import annotations

import datetime as dt
import re
import sys
import tempfile
from pathlib import Path

import yaml

from harness.capturing import fidelity, setup
from harness.capturing.catalog import read_relations
from harness.capturing.relations import CapturedTable, CaptureError, relation_key, relation_reference
from harness.capturing.setup import conf_refusal
from harness.capturing.shared_catalog import SharedCatalog
from harness.capturing.frame_sql import PlanSqlError, frame_sql
from harness.core.files import atomic_write_text
from harness.core.text import one_line
from harness.core.vocab import written_join_node
from harness.observe import filter_plans, jvm_plans
from harness.scenario import confs
from harness.spark import conf_registry, py4j_acks
from harness.spark.query import checksum_frame
from harness.spark.sql_guard import (
    ANALYSIS,
    EXPRESSIONS,
    LOGICAL,
    QUERY_OPERATORS,
    describe,
    nondeterministic_expression,
)
from harness.spark.sql_trees import (
    name_parts,
    nodes,
    parsed_query,
    relation_names,
    tree_of,
)

# --------------------------------------------------------------------------- names

def _refuse_commands(spark, text: str, where: str) -> None:
    """spark.sql runs a command (DROP, INSERT, SET ...) at once: only a query is captured,
    decided from Spark's parse of it before anything is analysed."""
    for node in nodes(tree_of(parsed_query(spark, text))):
        cls = str(node["class"])
        query_part = (cls.startswith(LOGICAL) and cls.rsplit(".", 1)[-1] in QUERY_OPERATORS) \
            or cls.startswith(ANALYSIS) or cls.startswith(EXPRESSIONS)
        if not query_part:  # a command (execution.command.*), a statement, a non-query operator
            raise CaptureError(f"{where}: {cls.rsplit('.', 1)[-1]} is not a query; capture takes queries only "
                               "(nothing was run)")


def _scenario_names(tables: list[CapturedTable], catalog: SharedCatalog | None = None) -> None:
    """A table's own name, or database_table where two databases share one (in a shared
    catalog: across every query captured into it)."""
    if catalog is not None:
        catalog.name(tables)
        _cached_names(tables)
        return
    counts: dict = {}
    for table in tables:
        counts[table.table.lower()] = counts.get(table.table.lower(), 0) + 1
    for table in tables:
        plain = re.sub(r"[^A-Za-z0-9_]", "_", table.table)
        table.name = plain if counts[table.table.lower()] == 1 else f"{table.database}_{plain}"
        if not re.match(r"[A-Za-z_]", table.name):
            table.name = f"t_{table.name}"
    _cached_names(tables)


def _cached_names(tables: list[CapturedTable]) -> None:
    """A catalog table read through the session's cache is read by the query as a derived
    table of its own that caches it (`<name>_cached`, free of every other name)."""
    taken = {t.name.lower() for t in tables}
    for table in tables:
        if table.cache is None or table.view_sql is not None or table.view_plan is not None:
            continue
        name, suffix = f"{table.name}_cached", 2
        while name.lower() in taken:
            name, suffix = f"{table.name}_cached{suffix}", suffix + 1
        table.read_as = name
        taken.add(name.lower())


def _reference(parts: list[str]) -> str:
    """A pattern for a multi-part name as written: any quoting, spaces around dots."""
    pieces = [rf"`?{re.escape(p)}`?" for p in parts]
    return r"(?<![\w`.])" + r"\s*\.\s*".join(pieces) + r"(?![\w`])"


def rewrite(spark, text: str, tables: list[CapturedTable], where: str) -> str:
    """The query with each table reference renamed to the scenario's table; checked by
    parsing the result: it must read the scenario's tables and nothing else."""
    current = spark.catalog.currentDatabase()
    by_key = {t.key: t for t in tables}
    for parts in _written_names(spark, text):
        database, table = (current, parts[-1]) if len(parts) == 1 else (parts[-2], parts[-1])
        captured = by_key.get((database.lower(), table.lower()))
        if captured is None or (len(parts) == 1 and captured.query_name.lower() == table.lower()):
            continue
        text = re.sub(_reference(parts), captured.query_name, text, flags=re.IGNORECASE)
    names = {t.query_name.lower() for t in tables}
    strangers = [n for n in relation_names(spark, text) if n not in names]
    if strangers:
        raise CaptureError(f"{where}: reads '{strangers[0]}', which is not a catalog table or view the capture "
                           "could follow (a temporary view made from a DataFrame?)")
    return text


def _written_names(spark, text: str) -> list[list[str]]:
    """Each table name as the query writes it (multi-part), longest first."""
    names = []
    for node in nodes(tree_of(parsed_query(spark, text))):
        if node["class"].endswith(".UnresolvedRelation"):
            parts = name_parts(node.get("multipartIdentifier", node.get("tableIdentifier")))
            if parts and parts not in names:
                names.append(parts)
    return sorted(names, key=len, reverse=True)


# --------------------------------------------------------------------------- capture

def capture(query, out, *, spark=None, scenario_id: str | None = None, analyze: bool = False,
            source: str = "", baseline: dict | None = None, synthetic: float | None = None,
            self_check: bool = True, catalog: SharedCatalog | None = None) -> Path:
    """Write the scenario of one query, SQL text or a DataFrame, to `out` (a file, or a
    folder: then `<scenario_id>.yaml`); returns the path written. SQL text runs in
    `spark` (the active session when not given); `synthetic` adds a twin with generated
    data at that scale; `catalog` takes its tables (harness.capturing.shared_catalog)."""

    if not isinstance(query, str):
        if not hasattr(query, "_jdf"):
            raise CaptureError(f"{source or 'query'}: capture takes SQL text or a DataFrame, "
                               f"not {type(query).__name__}")
        return _capture_frame(query, out, scenario_id, analyze, source or "a DataFrame",
                              (baseline, synthetic, self_check, catalog))
    return _capture_sql(spark or _active_session(), query, out, scenario_id, analyze, source,
                        (baseline, synthetic, self_check, catalog))


def _active_session():
    from pyspark.sql import SparkSession
    spark = SparkSession.getActiveSession()
    if spark is None:
        raise CaptureError("capture of SQL text needs a Spark session: pass spark=, or start one first")
    return spark


def _capture_sql(spark, query: str, out, scenario_id, analyze, source, additions: tuple) -> Path:
    where = source or "query"
    try:
        _refuse_commands(spark, query, where)
        frame = spark.sql(query)  # a query: analysed, never run
    except CaptureError:
        raise
    except Exception as exc:
        raise CaptureError(f"{where}: {_unreadable_table(spark, query, describe(exc)) or ''}{describe(exc)}") from None
    tables = read_relations(spark, frame._jdf.queryExecution().analyzed(), where)
    notes = []
    if analyze:
        notes.append(_analyze(spark, tables))
        frame = spark.sql(query)
        tables = read_relations(spark, frame._jdf.queryExecution().analyzed(), where)
    if not tables:
        raise CaptureError(f"{where}: the query reads no catalog table")
    _scenario_names(tables, additions[3])
    scenario_name, _ = _namers(tables)
    for table in tables:
        if table.view_plan is not None:
            table.view_sql = _frame_sql(spark, table.view_plan, scenario_name, f"{where}: view {table.table}")
        elif table.view_sql is not None:
            table.view_sql = rewrite(spark, table.view_sql, tables, f"{where}: view {table.database}.{table.table}")
    sql = rewrite(spark, query, tables, where)
    scenario_id = scenario_id or _id_from(_file_name(out)) or _id_from(source) or "captured"
    data = _scenario(spark, frame, tables, sql, scenario_id, where, frame)
    return _write(spark, data, out, scenario_id, where, notes, tables, *additions, real=frame)


def _unreadable_table(spark, query: str, error: str) -> str | None:
    """`the table X cannot be read: ` for the table the query names that Spark cannot
    analyse alone with the query's own error (a Delta table without its log, a corrupt
    checkpoint, a location on a file system this session lacks), else None."""
    try:
        names = _written_names(spark, query)
    except Exception:
        return None
    for parts in names:
        try:
            spark.table(".".join("`" + p.replace("`", "``") + "`" for p in parts)).schema
        except Exception as exc:
            if describe(exc) == error:
                return f"the table {'.'.join(parts)} cannot be read: "
    return None


def _capture_frame(frame, out, scenario_id, analyze, where, additions: tuple) -> Path:
    """A DataFrame has no SQL text: its analysed plan is written as SQL (harness.capturing.frame_sql),
    views followed through to their tables, and checked by planning that SQL on the real
    tables: it must give the DataFrame's own join nodes."""
    spark = getattr(frame, "sparkSession", None) or frame.sql_ctx.sparkSession  # 3.0-3.2: sql_ctx
    analysed = frame._jdf.queryExecution().analyzed()
    tables = [t for t in read_relations(spark, analysed, where) if t.view_sql is None]
    notes = []
    if analyze:
        notes.append(_analyze(spark, tables))
        tables = [t for t in read_relations(spark, analysed, where) if t.view_sql is None]
    if not tables:
        raise CaptureError(f"{where}: the DataFrame reads no catalog table")
    _scenario_names(tables, additions[3])
    scenario_name, catalog_name = _namers(tables)
    sql = _frame_sql(spark, analysed, scenario_name, where) + "\n"
    try:
        as_sql = spark.sql(_frame_sql(spark, analysed, catalog_name, where))
    except Exception as exc:
        raise CaptureError(f"{where}: its plan written as SQL does not analyse ({describe(exc)})") from None
    names = {t.table.lower(): t.name for t in tables}
    planned, replayed = (_join_summary(f, names) for f in (frame, as_sql))
    if planned != replayed:
        raise CaptureError(f"{where}: written as SQL it plans {replayed or 'no join'}, not the DataFrame's "
                           f"{planned or 'no join'}; capture its SQL text instead")
    scenario_id = scenario_id or _id_from(_file_name(out)) or "captured"
    data = _scenario(spark, frame, tables, sql, scenario_id, where, as_sql)
    return _write(spark, data, out, scenario_id, where, notes, tables, *additions, real=frame)


def _namers(tables: list) -> tuple:
    """How a written plan names a catalog relation: by its scenario name (the file), or by
    its catalog name (the check against the real tables)."""
    by_key = {t.key: t for t in tables}

    def scenario_name(node):
        database, table = relation_key(node)
        name = by_key[database.lower(), table.lower()].query_name
        return name, name

    def catalog_name(node):
        return relation_reference(node), relation_key(node)[1]

    return scenario_name, catalog_name


def _frame_sql(spark, plan, namer, where: str) -> str:
    try:
        return frame_sql(spark, plan, namer)
    except PlanSqlError as exc:
        raise CaptureError(f"{where}: {exc}") from None


def _join_summary(frame, names: dict) -> list:
    plan = jvm_plans.current_plan(checksum_frame(frame))
    return [(j.strategy, j.build_side, j.tables) for j in jvm_plans.join_nodes(plan, names)]


def _analyze(spark, tables: list) -> str:
    """ANALYZE on the session catalog's tables; an Iceberg table's row counts are its
    metadata's already (Spark's ANALYZE TABLE does not take a V2 table)."""
    for table in [t for t in tables if t.view_sql is None and t.analyzable]:
        spark.sql(f"ANALYZE TABLE `{table.database}`.`{table.table}` COMPUTE STATISTICS FOR ALL COLUMNS")
    return "ran ANALYZE TABLE ... COMPUTE STATISTICS FOR ALL COLUMNS on every table of the session catalog first"


def _write(spark, data: dict, out, scenario_id: str, where: str, notes: list, tables: list,
           baseline: dict | None, synthetic: float | None, self_check: bool, catalog: SharedCatalog | None,
           real=None) -> Path:
    """The scenario file, written whole or not at all, after its self-check: planned in
    this session, it must plan what the real query `real` planned (harness.capturing.fidelity);
    each difference is a warning at the top of the file and on stderr."""
    if baseline is not None:  # what production planned, on its own version
        data["expect"]["overrides"] = [baseline]
    if synthetic is not None:  # before expect, as a person writes it
        expect = data.pop("expect")
        data["synthetic"] = {"scale": synthetic}
        data["expect"] = expect
    path = Path(out)
    if path.is_dir() or str(out).endswith("/"):
        path = path / f"{scenario_id}.yaml"
    _refuse_taken_id(path, scenario_id, where)
    header = [f"Captured from {where} on Spark {spark.version}, {dt.date.today().isoformat()}: statistics and "
              "plans only, no data."] + notes + [n for t in tables for n in t.notes]
    catalog_text = None
    if catalog is not None:
        catalog.add(data["tables"])
        catalog_text = catalog.text(_dump)
        data = _reading_catalog(data, catalog.reference_from(path))
    body = _dump(data)
    warnings = _self_check(spark, body, tables, real, path.name, catalog_text) \
        if self_check and real is not None else []
    if not self_check:
        header.append("Not self-checked (--no-self-check): whether its replay plans as the real query did is "
                      "unchecked")
    for warning in warnings:
        print(f"warning: {path}: {warning}", file=sys.stderr)
    lines = [f"WARNING: replayed here, this file plans otherwise than the real query: {w}" for w in warnings]
    if catalog_text is not None:  # before the file that names it: each file written reads a whole catalog
        atomic_write_text(catalog.path, catalog_text)
    atomic_write_text(path, "".join(f"# {one_line(line)}\n" for line in lines + header) + body)
    return path


def _reading_catalog(data: dict, reference: str) -> dict:
    """The scenario with `catalog:` where its `tables:` were."""
    return {("catalog" if key == "tables" else key): (reference if key == "tables" else value)
            for key, value in data.items()}


def _self_check(spark, body: str, tables: list, real, file_name: str, catalog_text: str | None) -> list[str]:
    """The written file, loaded as a replay loads it (with its catalog) and planned in
    this session, against the real query's plan."""
    from harness.scenario.errors import ScenarioError
    from harness.scenario.model import load_scenario
    names = {t.table.lower(): t.name for t in tables}
    with tempfile.TemporaryDirectory(prefix="join-harness-capture-") as folder:
        written = Path(folder) / file_name
        if catalog_text is not None:
            (Path(folder) / "catalog.yaml").write_text(catalog_text, encoding="utf-8")
            body = re.sub(r"(?m)^catalog: .*$", "catalog: catalog.yaml", body, count=1)
        written.write_text(body, encoding="utf-8")
        try:
            data = load_scenario(written).data
        except ScenarioError as exc:
            return [f"the written file does not load ({one_line(str(exc))[:300]})"]
    return fidelity.self_check(spark, data, fidelity.plan_shape(real, names))


def _refuse_taken_id(path: Path, scenario_id: str, where: str) -> None:
    """Two files of one id cannot be run together: another file of the target folder
    holding this id is refused (the file being rewritten is not another)."""
    folder = path.parent
    if not folder.is_dir():
        return
    pattern = re.compile(rf"^id:\s*['\"]?{re.escape(scenario_id)}['\"]?\s*$", re.MULTILINE)
    for other in sorted(folder.glob("*.y*ml")):
        if other.resolve() == path.resolve() or not other.is_file():
            continue
        try:
            text = other.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if pattern.search(text):
            raise CaptureError(f"{where}: {other} already holds id '{scenario_id}': write to another file name "
                               "(the id is the file's name)")


def _file_name(out) -> str:
    """The scenario file's name when `out` names a file (not a folder)."""
    return "" if Path(out).is_dir() or str(out).endswith("/") else str(out)


def _id_from(source: str) -> str:
    stem = Path(source).stem if source else ""
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", stem)
    return stem if re.match(r"[A-Za-z]", stem or "") else (f"q_{stem}" if stem else "")


def _scenario(spark, frame, tables, sql, scenario_id, where, written) -> dict:
    """`frame`: the query as planned; `written`: the SQL the file holds, analysed (a
    DataFrame's dropDuplicates is written with first(), which some versions call
    non-deterministic)."""
    version = spark.version
    ordered = [t for t in tables if t.view_sql is None] + [t for t in tables if t.view_sql is not None]
    specs = {}
    for table in ordered:
        specs[table.name] = {"sql": table.view_sql} if table.view_sql is not None else _table_spec(table)
        if table.cache is not None and table.view_sql is not None:
            specs[table.name]["steps"] = [{"cache": table.cache}]
        elif table.cache is not None:
            specs[table.read_as] = {"from": table.name, "steps": [{"cache": table.cache}]}
    plan = jvm_plans.current_plan(checksum_frame(frame))
    names = {t.table.lower(): t.name for t in tables}
    joins = [j.to_dict() for j in jvm_plans.join_nodes(plan, names)]
    expect = {"spark": f"=={version}"}
    if joins:
        expect["joins"] = [written_join_node(j) for j in joins]
        expect.update(_layout_expectations(joins[0], tables))
        expect.update(_pruning_expectations(joins[0], tables))
        semi = filter_plans.semi_join_reduction_on(lambda key: spark.conf.get(key, None))
        expect.update(_runtime_filter_expectations(plan, names, joins, semi))
    else:
        expect["strategy"] = "none"
    expect["columns"] = [[f.name, f.dataType.simpleString()] for f in written.schema.fields]
    culprit = nondeterministic_expression(written._jdf.queryExecution().analyzed())
    if culprit:  # else the replay refuses the file; over statistics-only tables nothing runs
        expect["varies"] = {"checksum": f"{culprit} is non-deterministic; captured statistics are planned, never run"}
    data = {"id": scenario_id,
            "description": f"Captured from {where}: the query's own tables by their catalog statistics; "
                           f"the join nodes Spark {version} planned.",
            "tags": ["captured"], "tables": specs, "join": {"sql": sql}}
    conf = session_join_conf(spark)
    if conf:
        data["spark_conf"] = conf
    data["expect"] = expect
    return data


def _pruning_expectations(top: dict, tables: list) -> dict:
    """Over partitioned catalog tables, the dynamic partition pruning Spark planned for
    each one's scans below the top join, where the plan has decided it (not a decision
    AQE makes at run time)."""
    partitioned = {t.name for t in tables if (t.partitions or {}).get("partition_by")}
    out = []
    for scans in (top.get("scans") or {}).values():
        for scan in scans or []:
            if scan["table"] not in partitioned or scan["pruning"] not in ("none", "broadcast", "subquery", "dropped") \
                    or any(want["table"] == scan["table"] for want in out):
                continue
            pruned = scan["pruning"] in ("broadcast", "subquery")
            out.append({"table": scan["table"], "pruned": pruned,
                        **({"reuses_broadcast": scan["pruning"] == "broadcast"} if pruned else {})})
    return {"dynamic_pruning": out} if out else {}


def _runtime_filter_expectations(plan, names: dict, joins: list, semi_join_reduction: bool) -> dict:
    """The runtime filters Spark planned, each on the table it filters and from the table
    it is built from (the fidelity self-check compares every one, none planned included)."""
    found = filter_plans.read(plan, joins, names, semi_join_reduction=semi_join_reduction)
    out = []
    for item in found:
        if not item.get("table") or any(w["table"] == item["table"] for w in out):
            continue
        want = {"table": item["table"], "filter": item["kind"]}
        if len(item.get("creation") or []) == 1:
            want["from"] = item["creation"][0]
        out.append(want)
    return {"runtime_filters": out} if out else {}


def _layout_expectations(top: dict, tables: list) -> dict:
    """Over bucketed or partitioned Iceberg tables, what their layout decided for the top
    join: the exchanges below each side, and whether each side's Iceberg scans were read
    grouped by partition (a storage-partitioned join)."""
    if not any(t.bucket_by or t.grouped_partitions and (t.partitions or {}).get("partition_by") for t in tables) \
            or not top.get("shuffles"):
        return {}
    out = {"shuffles": dict(top["shuffles"])}
    grouped = {}
    for side, scans in (top.get("scans") or {}).items():
        v2 = [scan for scan in scans or [] if scan.get("key_grouped") is not None]
        if v2:
            grouped[side] = all(scan["key_grouped"] for scan in v2)
    if grouped:
        out["key_grouped"] = grouped
    return out


def _table_spec(table: CapturedTable) -> dict:
    """A statistics-only table: schema and statistics, and the layout a join's shuffles
    depend on (a bucket spec; a catalog table's partitions and their sizes; an Iceberg
    table's partition spec, partitions, sort order and properties)."""
    return {**({"format": table.format} if table.format else {}), "schema": table.schema, "stats": table.stats,
            **({"bucket_by": table.bucket_by} if table.bucket_by else {}), **(table.partitions or {})}


def session_join_conf(spark) -> dict:
    """The configs the session set explicitly that a scenario may set (harness.scenario.confs
    and this Spark's registry: runtime, typed or vetted, a value its converter takes)."""
    explicit = spark._jsparkSession.sessionState().conf().getAllConfs()
    converters = spark._jvm.scala.collection.JavaConverters
    values = dict(converters.mapAsJavaMapConverter(explicit).asJava())
    registry = conf_registry.registry_of(spark)
    pyspark_own = _pyspark_defaults()
    out = {}
    for key in sorted(values):
        if conf_refusal(registry, key, values[key]) is not None:
            continue
        if key in pyspark_own and str(values[key]) == pyspark_own[key]:
            continue  # set by PySpark for every session, not by the user (4.x: artifact isolation off)
        # Iceberg's own booleans (not in Spark's registry) as booleans
        out[key] = str(values[key]).strip().lower() == "true" if key in confs.ICEBERG_CONFS else values[key]
    return out


def _pyspark_defaults() -> dict[str, str]:
    """The configs PySpark sets in every session it starts, where the user set none."""
    try:
        from pyspark.core.context import DEFAULT_CONFIGS  # 4.0+
    except ImportError:
        from pyspark.context import DEFAULT_CONFIGS
    return {key: str(value) for key, value in DEFAULT_CONFIGS.items()}


class _Dumper(yaml.SafeDumper):
    """Readable scenario YAML: queries as literal blocks, small mappings on one line."""


def _represent_text(dumper, text: str):
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


def _short(value) -> bool:
    if isinstance(value, list):
        return all(_short(v) for v in value)
    return not isinstance(value, dict) and len(str(value)) <= 60 and "\n" not in str(value)


def _represent_mapping(dumper, mapping: dict):
    leaf = all(_short(v) for v in mapping.values()) and len(mapping) <= 8
    return dumper.represent_mapping("tag:yaml.org,2002:map", mapping, flow_style=leaf or None)


def _represent_list(dumper, items: list):
    leaf = all(not isinstance(v, (dict, list)) for v in items)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", items, flow_style=leaf or None)


_Dumper.add_representer(str, _represent_text)
_Dumper.add_representer(dict, _represent_mapping)
_Dumper.add_representer(list, _represent_list)


def _dump(data: dict) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


# --------------------------------------------------------------------------- command

def query_files(paths: list[str]) -> list[Path]:
    files = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files.extend(sorted(path.rglob("*.sql")))
        elif path.exists():
            files.append(path)
        else:
            raise CaptureError(f"{given}: no such file or folder")
    return files


def main(paths: list[str], out: str, sql: str | None, analyze: bool, master: str | None,
         spark_conf: dict, baseline: tuple | None = None, synthetic: float | None = None,
         self_check: bool = True, catalog: str | None = None, setup_text: tuple | None = None) -> int:
    from pyspark.sql import SparkSession

    from harness.capturing.event_log import BaselineError, expectation
    try:
        override = expectation(*baseline) if baseline else None
    except (BaselineError, OSError, ValueError) as exc:
        print(f"error: --baseline: {exc}")
        return 2
    builder = SparkSession.builder.master(master or "local[2]").appName("join-harness capture")
    # the console is for what was captured: no stage progress bars between its lines
    for key, value in {"spark.ui.showConsoleProgress": "false", **spark_conf}.items():
        builder = builder.config(key, value)
    py4j_acks.install()
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")  # a metastore's start-up warnings are not the capture's
    failures = 0
    try:
        if setup_text is not None:  # what production's session did before its queries
            where, text = setup_text
            found = setup.check(spark, text, where)
            try:
                setup.run(spark, found)
            except Exception as exc:
                raise CaptureError(f"{where}: {describe(exc)}") from None
        sources = [("--sql", sql)] if sql else []
        sources += [(str(p), p.read_text(encoding="utf-8")) for p in query_files(paths)]
        if len(sources) > 1 and not (Path(out).is_dir() or out.endswith("/")):
            raise CaptureError(f"{out}: several queries need a folder to write into (end it with /)")
        if len(sources) > 1 and override is not None:
            raise CaptureError("--baseline names one SQL execution: capture its query alone")
        shared = None
        if catalog is not None:
            if not (Path(out).is_dir() or out.endswith("/")):
                raise CaptureError(f"--catalog: {out}: a shared catalog is written for a folder of queries "
                                   "(end --out with /)")
            shared = SharedCatalog.at(Path(out) / catalog)
        for source, text in sources:
            try:
                written = capture(text.strip().rstrip(";").strip() + "\n", out, spark=spark, analyze=analyze,
                                  source="" if source == "--sql" else source, baseline=override,
                                  synthetic=synthetic, self_check=self_check, catalog=shared)
                print(f"captured {source} -> {written}")
            except CaptureError as exc:
                failures += 1
                print(f"error: {exc}")
    except CaptureError as exc:
        print(f"error: {exc}")
        return 2
    return 1 if failures else 0
