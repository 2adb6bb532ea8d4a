"""The Spark part of each table format a scenario's catalog table may be written in, one
module per format (its declarative part, the rules checked at collection, is the module
of the same name in harness.scenario.formats), chosen in one place (`format_of`).

A format module holds:
    NAME                       the word of `format:`
    ANALYZABLE                 whether ANALYZE TABLE applies (the session catalog's)
    identifier(spark, name)    the catalog identifier of a table `name` of this worker
    exists(spark, identifier)
    write(spark, identifier, frame, spec)       the frame's rows with the spec's layout
    write_stats_only(spark, identifier, spec)   an empty table carrying the spec's statistics
and, a format with a JVM package of its own (Iceberg, Delta):
    runtime_for(spark_version) its jars' coordinates for that Spark (None: no release)
    session_confs(jars, workdir), not_available(spark_version), problem (why the session
    started without them)
and, a format the session catalog stores (parquet, ORC): STORED_AS, the provider (or the
word in a Hive serde's name) capture recognises it by."""
from __future__ import annotations

from types import ModuleType

from harness.scenario.tables import declared_format_names
from harness.spark.formats import delta, iceberg, orc, parquet
from harness.spark.formats.base import FormatUnavailable

FORMATS: dict[str, ModuleType] = {module.NAME: module for module in (parquet, orc, iceberg, delta)}

__all__ = ["FORMATS", "FormatUnavailable", "format_of"]


def format_of(spec: dict) -> ModuleType:
    """The one place a table's format is chosen."""
    return FORMATS[spec.get("format", parquet.NAME)]


def packaged(fmt: ModuleType) -> bool:
    """Whether the format needs a JVM package of its own (not built into Spark)."""
    return hasattr(fmt, "runtime_for")


def session_confs(names, spark_version: str, workdir, fetch) -> list[dict]:
    """The jars and configs of each packaged format among `names` (the formats the run's
    files declare) on this Spark; `fetch(coordinates)` gives (jars, why not). A package
    that cannot be had leaves its format's `problem`, said by each case that needs it."""
    confs = []
    for fmt in (FORMATS[name] for name in sorted(set(names)) if name in FORMATS):
        coordinates = fmt.runtime_for(spark_version) if packaged(fmt) else None
        if not coordinates:
            continue
        jars, fmt.problem = fetch(list(coordinates))
        if jars:
            confs.append(fmt.session_confs(jars, workdir))
    return confs


def cannot_run(data: dict, spark_version: str) -> str | None:
    """Why no session of this Spark can hold a table the scenario declares (None: it can)."""
    for name in declared_format_names(data):
        fmt = FORMATS.get(name)
        if fmt is not None and packaged(fmt) and fmt.runtime_for(spark_version) is None:
            return fmt.not_available(spark_version)
    return None


def catalog_format(provider: str, serde: str) -> ModuleType | None:
    """The format of a session catalog table stored by this provider (or Hive serde)."""
    for fmt in FORMATS.values():
        stored = getattr(fmt, "STORED_AS", None)
        if stored and (provider == stored or stored in serde):
            return fmt
    return None
