"""Iceberg tables for scenarios: the Iceberg Spark runtime of the running Spark, fetched
once into a cache outside the checkout and checked against the registry's checksum; the
worker's Iceberg catalog on a warehouse in its scratch folder; and tables written there
from a scenario's rows with a partition spec of Iceberg transforms, a sort order and a
number of files per partition.

The catalog is Iceberg's `SparkCatalog` alone: no session extensions (no `CALL`, no
Iceberg SQL syntax), so scenario SQL parses and plans as it does without Iceberg.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from harness.scenario.tables import partition_spec, sort_order

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
CATALOG = "harness_iceberg"
NAMESPACE = "scenario"
CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"


@dataclass(frozen=True)
class Coordinate:
    group: str
    artifact: str
    version: str

    def words(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    def file_name(self) -> str:
        return f"{self.artifact}-{self.version}.jar"

    def url(self, repository: str) -> str:
        return f"{repository.rstrip('/')}/{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.file_name()}"


def _runtime(spark_minor: str, scala: str, version: str) -> Coordinate:
    return Coordinate("org.apache.iceberg", f"iceberg-spark-runtime-{spark_minor}_{scala}", version)


# Spark minor → the Iceberg Spark runtime the harness starts with it: the newest served by
# Maven Central for that minor, each run here with scenarios/iceberg on that Spark. Spark
# 4.2 and 4.3 have no Iceberg runtime yet; Spark before 3.3 has no storage-partitioned join.
RUNTIMES = {
    "3.3": _runtime("3.3", "2.12", "1.6.1"),
    "3.4": _runtime("3.4", "2.12", "1.5.2"),
    "3.5": _runtime("3.5", "2.12", "1.10.0"),
    "4.0": _runtime("4.0", "2.13", "1.10.1"),
    "4.1": _runtime("4.1", "2.13", "1.12.0"),
}


class RuntimeUnavailable(Exception):
    """The runtime jar could not be fetched or read: one line saying what to put where."""


# Why this process's session started without the runtime its Spark has (one line), said
# by every case that needs an Iceberg table.
problem: str | None = None


def spark_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def runtime_for(spark_version: str) -> Coordinate | None:
    return RUNTIMES.get(spark_minor(spark_version))


def not_available(spark_version: str) -> str:
    return f"not available on Spark {spark_minor(spark_version)} (no Iceberg runtime)"


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spark-join-harness" / "jars"


def ensure_jar(coordinate: Coordinate, cache: Path, repository: str = MAVEN_CENTRAL) -> Path:
    """The runtime jar in `cache`, fetched if absent or damaged (checked against the SHA-1
    the registry published, kept beside it). One fetch at a time per cache: the workers of
    a run share it."""
    cache.mkdir(parents=True, exist_ok=True)
    jar = cache / coordinate.file_name()
    with open(cache / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _intact(jar):
            return jar
        _fetch(coordinate, jar, repository)
        return jar


def _sha1(path: Path) -> str:
    hasher = hashlib.sha1()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest()


def _opens(jar: Path) -> bool:
    try:
        with zipfile.ZipFile(jar) as archive:
            return archive.getinfo("org/apache/iceberg/spark/SparkCatalog.class") is not None
    except (OSError, KeyError, zipfile.BadZipFile):
        return False


def _intact(jar: Path) -> bool:
    """A jar this harness fetched matches the checksum fetched with it; one put there by
    hand (no checksum beside it) must at least open and hold the Iceberg catalog."""
    if not jar.is_file():
        return False
    recorded = jar.with_name(jar.name + ".sha1")
    if recorded.is_file():
        return recorded.read_text().split()[0].strip() == _sha1(jar)
    return _opens(jar)


def _fetch(coordinate: Coordinate, jar: Path, repository: str) -> None:
    url = coordinate.url(repository)
    staging = jar.with_name(f".{jar.name}.{os.getpid()}.part")
    try:
        with urllib.request.urlopen(url + ".sha1", timeout=60) as answer:
            expected = answer.read().decode("ascii", "replace").split()[0].strip().lower()
        with urllib.request.urlopen(url, timeout=600) as answer, open(staging, "wb") as out:
            for block in iter(lambda: answer.read(1 << 20), b""):
                out.write(block)
        got = _sha1(staging)
        if got != expected:
            raise RuntimeUnavailable(f"the download of {url} does not match its published SHA-1 ({got} ≠ {expected})")
        os.replace(staging, jar)
        jar.with_name(jar.name + ".sha1").write_text(expected + "\n")
    except RuntimeUnavailable as exc:
        raise RuntimeUnavailable(f"{exc}; fetch {coordinate.words()} and put it at {jar}") from None
    except Exception as exc:
        raise RuntimeUnavailable(f"cannot fetch the Iceberg runtime {coordinate.words()} from {repository} "
                                 f"({type(exc).__name__}: {exc}); download {url} and put it at {jar}") from None
    finally:
        staging.unlink(missing_ok=True)


def session_confs(jar: Path, warehouse: Path) -> dict:
    """What a session needs to read and write the worker's Iceberg tables."""
    return {"spark.jars": str(jar),
            f"spark.sql.catalog.{CATALOG}": CATALOG_CLASS,
            f"spark.sql.catalog.{CATALOG}.type": "hadoop",
            f"spark.sql.catalog.{CATALOG}.warehouse": str(warehouse)}


def table_name(catalog_name: str) -> str:
    return f"{CATALOG}.{NAMESPACE}.{catalog_name}"


def write_table(spark, name: str, df, spec: dict) -> None:
    """The table `name` (catalog, namespace, table) created with the spec's partition
    transforms, sort order and properties, and the rows of `df` appended: each partition
    in `files_per_partition` data files (rows spread over that many tasks, each writing
    its share of every partition), in sort order within each file."""
    columns = ", ".join(f"`{field.name}` {field.dataType.simpleString()}" for field in df.schema.fields)
    spec_sql = ", ".join(transform.sql() for transform in partition_spec(spec))
    properties = {str(k): str(v) for k, v in (spec.get("properties") or {}).items()}
    files = spec.get("files_per_partition", 1)
    # Rows are arranged here, not by Iceberg's write distribution: the files per partition
    # then follow the file, whatever the runtime's defaults.
    properties.update({"write.distribution-mode": "none", "write.spark.fanout.enabled": "true"})
    props_sql = ", ".join(f"'{k}'='{v}'" for k, v in sorted(properties.items()))
    spark.sql(f"CREATE TABLE {name} ({columns}) USING iceberg"
              + (f" PARTITIONED BY ({spec_sql})" if spec_sql else "") + f" TBLPROPERTIES ({props_sql})")
    order = sort_order(spec)
    if order:
        _set_sort_order(spark, name, order)
    from pyspark.sql import functions as F
    arranged = df.repartition(files)
    if order:
        arranged = arranged.sortWithinPartitions(*[F.col(c).asc() if up else F.col(c).desc() for c, up in order])
    arranged.writeTo(name).append()


def _set_sort_order(spark, name: str, order: list) -> None:
    """The table's declared sort order, through Iceberg's API (its SQL for it needs the
    session extensions, which the harness does not load)."""
    jvm = spark.sparkContext._jvm
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    replace = table.replaceSortOrder()
    for column, ascending in order:
        replace = replace.asc(column) if ascending else replace.desc(column)
    replace.commit()
