"""Capture's self-check: the file it is about to write, planned in the capturing session,
must plan what the real query planned — every join node (strategy, build side, tables,
shuffles, dynamic pruning of each scan) and the size and row estimates of both sides of
every join. A difference is a warning naming the join, the side, its tables and the two
figures, written at the top of the file and on stderr: a replay never passes silently
with an estimate production did not have.

The statistics-only tables are made as a replay makes them (harness.spark.formats), in a
clone of the capturing session (same configs; its own current database and temporary
views) and a database of its own in a local scratch folder, dropped afterwards: the
capturing session's catalog, current database and views are left as they were."""
from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path

from harness.capturing.relations import RELATION_KINDS, relation_key
from harness.core.text import one_line, quoted_identifier
from harness.observe import filter_plans, jvm_plans
from harness.observe.runtime_filters import runtime_filter_words
from harness.scenario.tables import is_iceberg, is_stats_only
from harness.spark.formats import iceberg
from harness.spark.formats import format_of
from harness.spark.cached import size_cache
from harness.spark.query import checksum_frame

SCAN_RELATIONS = RELATION_KINDS + ("DataSourceV2ScanRelation",)


def plan_shape(frame, names: dict) -> dict:
    """What a replay must reproduce of a query's plan: its join nodes and the estimates
    of both sides of every join of its optimized plan (pre-order), each side with the
    scenario names of the tables below it. `names`: a table's name in the catalog (lower
    case) → its scenario name."""
    plan = jvm_plans.current_plan(checksum_frame(frame))
    nodes = jvm_plans.join_nodes(plan, names)
    joins = [(j.strategy, j.build_side, j.tables, j.shuffles,
              {side: [scan["pruning"] for scan in scans] for side, scans in (j.scans or {}).items()})
             for j in nodes]
    session = getattr(frame, "sparkSession", None) or frame.sql_ctx.sparkSession  # (3.0-3.2: sql_ctx only)
    semi = filter_plans.semi_join_reduction_on(lambda key: session.conf.get(key, None))
    filters = filter_plans.read(plan, [j.to_dict() for j in nodes], names, semi_join_reduction=semi)
    return {"joins": joins, "estimates": _estimates(frame, names), "runtime_filters": sorted(map(runtime_filter_words,
                                                                                                 filters))}


def _estimates(frame, names: dict) -> list[dict]:
    """Spark's estimates of both sides of every join (jvm_plans.join_estimates, the figures
    JoinSelection compares), each side with the tables below it."""
    figures = jvm_plans.join_estimates(frame, logical=False)
    tables = _join_side_tables(frame, names)
    return [{side: {"bytes": joined[side]["size_in_bytes"], "rows": joined[side]["row_count"],
                    "tables": below[side]} for side in ("left", "right")}
            for joined, below in zip(figures, tables)]


def _join_side_tables(frame, names: dict) -> list[dict]:
    """The scenario names of the tables below each side of every join of the optimized
    plan, in join_estimates' order (pre-order), from one walk of the plan."""
    out = []

    def visit(node) -> set:
        children = [node.children().apply(i) for i in range(node.children().size())]
        kind = node.getClass().getSimpleName()
        if kind in SCAN_RELATIONS:
            return _table_name(node.relation() if kind == "DataSourceV2ScanRelation" else node, names)
        entry = {} if kind == "Join" else None
        if entry is not None:
            out.append(entry)
        below = [visit(child) for child in children]
        if entry is not None and len(below) == 2:
            entry.update(left=sorted(below[0]), right=sorted(below[1]))
        return set().union(*below)

    visit(frame._jdf.queryExecution().optimizedPlan())
    return out


def _table_name(relation, names: dict) -> set:
    try:
        table = relation_key(relation)[1]
    except Exception:  # a relation that is no catalog table
        return set()
    return {names.get(table.lower()) or table}


def differences(real: dict, replayed: dict) -> list[str]:
    """Each way the replay's plan differs from the real query's, one line each."""
    out = []
    if len(real["joins"]) != len(replayed["joins"]):
        out.append(f"the real query plans {len(real['joins'])} join(s), the replay {len(replayed['joins'])}: "
                   f"{_nodes(real['joins'])} against {_nodes(replayed['joins'])}")
    else:
        for i, (want, got) in enumerate(zip(real["joins"], replayed["joins"]), 1):
            if want != got:
                out.append(f"join {i} ({', '.join(want[2] or [])}): real {_node(want)}, replay {_node(got)}")
    if real.get("runtime_filters", []) != replayed.get("runtime_filters", []):
        out.append(f"runtime filters: real {'; '.join(real.get('runtime_filters') or []) or 'none'}, "
                   f"replay {'; '.join(replayed.get('runtime_filters') or []) or 'none'}")
    for i, (want, got) in enumerate(zip(real["estimates"], replayed["estimates"]), 1):
        for side in ("left", "right"):
            a, b = want[side], got[side]
            if (a["bytes"], a["rows"]) != (b["bytes"], b["rows"]):
                tables = ", ".join(a["tables"] or b["tables"]) or "no table"
                out.append(f"join {i} {side} side ({tables}): real {_size(a)}, replay {_size(b)}")
    return out


def _node(node) -> str:
    strategy, build, tables, shuffles, pruning = node
    return (f"{strategy} (build {build}; shuffles {shuffles or {}}; "
            f"pruning {pruning or {}}; tables {', '.join(tables or [])})")


def _nodes(joins) -> str:
    return "[" + "; ".join(f"{j[0]} build {j[1]}" for j in joins) + "]"


def _size(side: dict) -> str:
    return f"{side['bytes']:,} B" + (f" / {side['rows']:,} rows" if side["rows"] is not None else "")


def replay_shape(spark, data: dict) -> dict:
    """The plan shape of the scenario `data` (as loaded: sizes in bytes), its tables made
    in a clone of `spark` and dropped afterwards."""
    clone = _clone(spark)
    scratch = Path(tempfile.mkdtemp(prefix="join-harness-capture-check-"))
    database = f"harness_capture_check_{uuid.uuid4().hex[:12]}"
    made: list[str] = []
    cached_here: list = []
    try:
        clone.sql(f"CREATE DATABASE {database} LOCATION '{(scratch / database).as_uri()}'")
        clone.catalog.setCurrentDatabase(database)
        if any(is_iceberg(t) for t in data["tables"].values()):
            _iceberg_catalog(clone, scratch)
        names = {}
        for name, spec in data["tables"].items():
            if is_stats_only(spec):
                fmt = format_of(spec)
                identifier = fmt.identifier(clone, f"check_{name}".lower())
                fmt.write_stats_only(clone, identifier, spec)
                made.append(identifier)
                names[identifier.rsplit(".", 1)[-1].lower()] = name
                clone.table(identifier).createOrReplaceTempView(name)
            else:  # a view of the real query (its SQL over the tables above it), or a cached table
                frame = clone.sql(spec["sql"]) if "sql" in spec else clone.table(spec["from"])
                for step in spec.get("steps", []):  # capture writes `{cache: {...}}` steps only
                    frame = frame.cache()
                    cached_here.append(frame)
                    size_cache(clone, frame, step["cache"])
                frame.createOrReplaceTempView(name)
        return plan_shape(clone.sql(data["join"]["sql"]), names)
    finally:
        for frame in cached_here:  # the capturing session's own caches stay
            _quietly(frame.unpersist)
        for identifier in made:
            _quietly(lambda: clone.sql(f"DROP TABLE IF EXISTS {identifier}"))
        _quietly(lambda: clone.sql(f"DROP DATABASE IF EXISTS {quoted_identifier(database)} CASCADE"))
        _restore_active(spark)
        shutil.rmtree(scratch, ignore_errors=True)


def _clone(spark):
    """A session of the capturing session's configs, and none of its temporary views: a
    view the replay registers under a name the capturing session also uses would replace
    that one's, and Spark uncaches a temporary view it replaces — in the cache every
    session of the application shares (a view cached by `CACHE TABLE v AS SELECT` lost)."""
    from pyspark.sql import SparkSession
    fresh = spark._jsparkSession.newSession()
    explicit = spark._jsparkSession.sessionState().conf().getAllConfs()
    values = dict(spark._jvm.scala.collection.JavaConverters.mapAsJavaMapConverter(explicit).asJava())
    conf = fresh.sessionState().conf()
    for key, value in values.items():
        _quietly(lambda: conf.setConfString(key, value))  # a static config is the application's already
    return SparkSession(spark.sparkContext, fresh)


def _restore_active(spark) -> None:
    """PySpark makes a session it wraps the active one: the capturing session is again."""
    from pyspark.sql import SparkSession
    _quietly(lambda: spark._jvm.SparkSession.setActiveSession(spark._jsparkSession))
    if hasattr(SparkSession, "_activeSession"):
        SparkSession._activeSession = spark


def _iceberg_catalog(clone, scratch: Path) -> None:
    """The harness's Iceberg catalog on the clone (a runtime setting of that session
    alone) where the capturing session has none."""
    key = f"spark.sql.catalog.{iceberg.CATALOG}"
    if clone.conf.get(key, None):
        return
    clone.conf.set(key, iceberg.CATALOG_CLASS)
    clone.conf.set(f"{key}.type", "hadoop")
    clone.conf.set(f"{key}.warehouse", str(scratch / "iceberg"))


def _quietly(action) -> None:
    try:
        action()
    except Exception:
        pass


def self_check(spark, data: dict, real: dict) -> list[str]:
    """Warnings, one line each: the replay of `data` against the real query's `real`
    plan shape; a check that could not run says why."""
    try:
        replayed = replay_shape(spark, data)
    except Exception as exc:
        return [f"the self-check could not plan the written file ({one_line(str(exc))[:200]}): its replay is "
                "unchecked"]
    return differences(real, replayed)
