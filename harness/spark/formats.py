"""The table formats a catalog table of a scenario is written in, each behind one
interface and chosen in one place (`format_of`): Spark's own parquet tables (with their
bucket spec, partitions, and statistics-only ones by injected statistics and sparse
partition files: harness.spark.stats_only) and Iceberg tables in the worker's Iceberg
catalog (harness.spark.iceberg). What differs between formats lives here, not in an
`if` of every function that builds a table."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pathlib import Path
from urllib.parse import urlparse

from harness.scenario.tables import ICEBERG
from harness.spark import delta, iceberg
from harness.spark.stats_only import stats_only_table, struct_type, with_layout


class FormatUnavailable(ValueError):
    """The running session cannot hold tables of this format (said against the case)."""


@dataclass(frozen=True)
class TableFormat:
    name: str
    # the catalog identifier of a table named `name` in the worker's own catalog
    identifier: Callable[[object, str], str]
    exists: Callable[[object, str], bool]
    # (spark, identifier, frame, spec): the rows of `frame` written with the spec's layout
    write: Callable[[object, str, object, dict], None]
    # (spark, identifier, spec): an empty table carrying the spec's statistics and partitions
    write_stats_only: Callable[[object, str, dict], None]
    # ANALYZE TABLE is the session catalog's
    analyzable: bool


def _session_table_exists(spark, table: str) -> bool:
    jsession = getattr(spark, "_jsparkSession", None)  # PySpark 3.0-3.2 lack catalog.tableExists
    return jsession.catalog().tableExists(table) if jsession is not None else spark.catalog.tableExists(table)


def _v2_table_exists(spark, table: str) -> bool:
    try:  # Catalog.tableExists takes multi-part names only from Spark 3.4
        spark.table(table).schema  # analysed now: through Spark Connect a frame is analysed lazily
        return True
    except Exception:
        return False


def _iceberg_identifier(spark, name: str) -> str:
    try:
        ready = spark.conf.get(f"spark.sql.catalog.{iceberg.CATALOG}", None)
    except Exception:
        ready = None
    if not ready:
        raise FormatUnavailable(iceberg.problem or "this worker's session started without the Iceberg runtime (no "
                                "file of the run was seen to declare `format: iceberg` when it started)")
    return iceberg.table_name(name)


PARQUET = TableFormat(
    name="parquet",
    identifier=lambda spark, name: name,
    exists=_session_table_exists,
    write=lambda spark, table, frame, spec: with_layout(frame.write.format("parquet"), spec).saveAsTable(table),
    write_stats_only=lambda spark, table, spec: stats_only_table(spark, table, spec),
    analyzable=True,
)

ICEBERG_FORMAT = TableFormat(
    name=ICEBERG,
    identifier=_iceberg_identifier,
    exists=_v2_table_exists,
    write=iceberg.write_table,
    write_stats_only=lambda spark, table, spec: iceberg.write_stats_only_table(spark, table, struct_type(spec), spec),
    analyzable=False,
)

def _delta_identifier(spark, name: str) -> str:
    if not delta.loaded(spark):
        raise FormatUnavailable(delta.problem or "this worker's session started without Delta Lake (no file of the "
                                "run was seen to declare `format: delta` when it started)")
    return name


def _delta_stats_only(spark, table: str, spec: dict) -> None:
    """The log lives beside the current database's folder: the worker's warehouse, in its
    scratch folder (or the scratch database of capture's self-check)."""
    jsession = getattr(spark, "_jsparkSession", None)  # none through Spark Connect: the warehouse
    if jsession is None:
        location = spark.conf.get("spark.sql.warehouse.dir")
    else:
        catalog = jsession.sessionState().catalog()
        location = str(catalog.getDatabaseMetadata(catalog.getCurrentDatabase()).locationUri())
    root = Path(urlparse(location).path if location.startswith("file:") else location).parent / "delta"
    delta.write_stats_only_table(spark, table, spec, root)


DELTA_FORMAT = TableFormat(
    name=delta.DELTA,
    identifier=_delta_identifier,
    exists=_session_table_exists,
    write=delta.write_table,
    write_stats_only=_delta_stats_only,
    analyzable=False,
)

FORMATS = {fmt.name: fmt for fmt in (PARQUET, ICEBERG_FORMAT, DELTA_FORMAT)}


def format_of(spec: dict) -> TableFormat:
    """The one place a table's format is chosen."""
    return FORMATS[spec.get("format", PARQUET.name)]
