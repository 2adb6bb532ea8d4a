"""What the Spark parts of the table formats share: the one-line error of a format the
session cannot hold, and whether a table of a catalog exists."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse


class FormatUnavailable(ValueError):
    """The running session cannot hold tables of this format (said against the case)."""


def spark_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def session_table_exists(spark, table: str) -> bool:
    jsession = getattr(spark, "_jsparkSession", None)  # PySpark 3.0-3.2 lack catalog.tableExists
    return jsession.catalog().tableExists(table) if jsession is not None else spark.catalog.tableExists(table)


def v2_table_exists(spark, table: str) -> bool:
    try:  # Catalog.tableExists takes multi-part names only from Spark 3.4
        spark.table(table).schema  # analysed now: through Spark Connect a frame is analysed lazily
        return True
    except Exception:
        return False


def current_database_folder(spark) -> Path:
    """The folder of the session's current database: the worker's warehouse, in its scratch
    folder (or the scratch database of capture's self-check)."""
    jsession = getattr(spark, "_jsparkSession", None)  # none through Spark Connect: the warehouse
    if jsession is None:
        location = spark.conf.get("spark.sql.warehouse.dir")
    else:
        catalog = jsession.sessionState().catalog()
        location = str(catalog.getDatabaseMetadata(catalog.getCurrentDatabase()).locationUri())
    return Path(urlparse(location).path if location.startswith("file:") else location)
