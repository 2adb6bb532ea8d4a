"""Application class-data sharing (AppCDS) for the driver JVM.

A Spark driver loads ~15,000 classes from ~250 jars before its first answer; a JVM
started with an archive of them maps them instead of parsing and verifying each. Measured
on this 2-core machine (session start + first two small queries): Java 17 / Spark 4.3.0
5.1 s → 2.8 s under the harness's quick JIT, 6.2 s → 4.0 s under the JVM's defaults; Java
11 / Spark 3.1.3 4.7 s → 3.3 s. Every xdist worker, every JVM a crashed case replaces and
every pytest run a test starts pays that start.

The archive is the JVM's own static format (`-Xshare:dump` from a class list, Java 11+),
one per Java executable and Spark installation, under the class-data folder
(RunOptions.class_data: ~/.cache/spark-join-harness/class-data, HARNESS_CLASS_DATA=off
turns it off). The first session that finds none starts its build in the background and
runs without it: a child process starts a Spark session that lists the classes it loads
while it joins, then the JVM dumps them (about 30 s of CPU, once). Nothing Spark computes
depends on it: a stale or foreign archive is refused by the JVM itself (it checks the
class path's jars by size and time) and the session runs as without.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from harness.spark.java import java_executable, java_major, java_version

LOCK_STALE_S = 900           # a build older than this died without cleaning up
BUILD_TIMEOUT_S = 600        # each of its two steps
FAILED_RETRY_S = 24 * 3600   # a build that failed is not tried again for a day
MIN_JAVA = 11                # static archives of application classes: Java 11+ (OpenJDK 8 has none)


def archive_path(folder: Path, java: Path) -> Path:
    """The archive of this Java and this PySpark's jars: keyed by both, so an upgrade of
    either gets a new one."""
    import pyspark
    jars = Path(_jars_folder())
    listing = sorted((p.name, p.stat().st_size) for p in jars.glob("*.jar")) if jars.is_dir() else []
    stat = java.stat()
    key = hashlib.sha256(repr((str(java), stat.st_size, int(stat.st_mtime), str(jars), listing)).encode()).hexdigest()
    return folder / f"spark-{pyspark.__version__}-{key[:16]}.jsa"


def _jars_folder() -> str:
    import pyspark
    return str(Path(pyspark.__file__).parent / "jars")


def prune(folder: Path) -> list[Path]:
    """Drop the archives whose Java or PySpark is gone (a removed virtual environment or
    clone: each made its own, ~200 MB); those without a record of their makers are kept."""
    dropped = []
    for record in folder.glob("*.json"):
        try:
            made_from = json.loads(record.read_text())
        except (OSError, ValueError):
            continue
        if not (Path(made_from.get("java", "")).exists() and Path(made_from.get("jars", "")).is_dir()):
            for stale in (record.with_suffix(".jsa"), record):
                stale.unlink(missing_ok=True)
            dropped.append(record.with_suffix(".jsa"))
    return dropped


def driver_flags(folder: str | None) -> str:
    """The flags that map the archive into the driver JVM, or "" when there is none yet
    (its build then starts in the background) or class-data sharing is off."""
    if not folder or " " in folder:  # Spark splits the driver's Java options at spaces
        return ""
    java = java_executable()
    if java is None:
        return ""
    try:
        archive = archive_path(Path(folder), java)
        if archive.exists():
            return f"-XX:SharedArchiveFile={archive} -Xlog:cds=off"
        _start_build(archive)
    except OSError:  # a folder that cannot be written (or read): the session runs without
        pass
    return ""


def _start_build(archive: Path) -> None:
    failed = archive.with_suffix(".failed")
    if failed.exists() and time.time() - failed.stat().st_mtime < FAILED_RETRY_S:
        return
    if not _claim(archive.with_suffix(".lock")):
        return
    prune(archive.parent)
    source = str(Path(__file__).resolve().parents[2])  # this harness, however it was found
    env = dict(os.environ, HARNESS_CLASS_DATA="off",
               PYTHONPATH=os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")])))
    subprocess.Popen([sys.executable, "-m", "harness.spark.class_data", str(archive)], env=env,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True)


def _claim(lock: Path) -> bool:
    """One build per archive across processes: the lock file, unless a dead build left it."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    try:
        if time.time() - lock.stat().st_mtime > LOCK_STALE_S:
            lock.unlink()
    except FileNotFoundError:
        pass
    try:
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        return True
    except FileExistsError:
        return False


# ----------------------------------------------------------------------- the build

def list_classes(class_list: Path) -> str:
    """Start a Spark session that writes every class it loads to `class_list` while it
    does what a harness case does (parquet tables, each join strategy, AQE, plans), stop
    it, wait for its JVM to exit (which completes the list): the JVM's class path."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.extraJavaOptions", f"-Xshare:off -XX:DumpLoadedClassList={class_list}")
             .config("spark.sql.warehouse.dir", str(class_list.parent / "warehouse")).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark.sparkContext._jvm
    class_path = str(jvm.System.getProperty("java.class.path"))
    spark.range(0, 20000).selectExpr("id % 500 AS k", "id AS v").write.mode("overwrite").saveAsTable("f")
    spark.range(0, 500).selectExpr("id AS k", "cast(id AS string) AS s").write.mode("overwrite").saveAsTable("d")
    for aqe in ("true", "false"):
        spark.conf.set("spark.sql.adaptive.enabled", aqe)
        for hint in ("BROADCAST", "MERGE", "SHUFFLE_HASH", "SHUFFLE_REPLICATE_NL"):
            for how in ("inner", "full_outer", "left_anti"):
                frame = spark.table("f").join(spark.table("d").hint(hint), "k", how)
                frame._jdf.queryExecution().executedPlan().toString()
                frame.selectExpr("count(1)", "sum(cast(xxhash64(*) AS decimal(38, 0)))").collect()
        spark.sql("SELECT /*+ BROADCAST(d) */ count(1) FROM f JOIN d ON f.k < d.k").collect()
    spark.stop()
    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    gateway.shutdown()
    if process is not None:  # the JVM exits when its standard input closes
        process.stdin.close()
        process.wait(BUILD_TIMEOUT_S)
    return class_path


def dump(java: Path, class_list: Path, class_path: str, target: Path) -> None:
    """The archive of the listed classes, written to `target` and checked by mapping it."""
    subprocess.run([str(java), "-Xshare:dump", f"-XX:SharedClassListFile={class_list}",
                    f"-XX:SharedArchiveFile={target}", "-cp", class_path],
                   check=True, capture_output=True, timeout=BUILD_TIMEOUT_S)
    subprocess.run([str(java), "-Xshare:on", f"-XX:SharedArchiveFile={target}", "-cp", class_path, "-version"],
                   check=True, capture_output=True, timeout=60)


def build(archive: Path) -> None:
    """The archive for this Java and PySpark, in place atomically; a `.failed` note says
    why it could not be (an old Java, a failed dump), so no run tries again today."""
    java = java_executable()
    scratch = archive.with_name(f".{archive.stem}.{os.getpid()}")
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        if java is None or (java_major(java_version()) or 0) < MIN_JAVA:
            raise RuntimeError(f"application class-data sharing needs Java {MIN_JAVA}+ ({java})")
        class_path = list_classes(scratch / "classes.lst")
        dump(java, scratch / "classes.lst", class_path, scratch / "archive.jsa")
        # what the archive was made from, so that a later build can drop it once that is gone
        archive.with_suffix(".json").write_text(json.dumps({"java": str(java), "jars": _jars_folder()}))
        os.replace(scratch / "archive.jsa", archive)
    except Exception as error:
        output = getattr(error, "stderr", None) or getattr(error, "stdout", None) or b""
        output = output.decode(errors="replace") if isinstance(output, bytes) else output
        archive.with_suffix(".failed").write_text(f"{type(error).__name__}: {str(error)[:1000]}\n{output[-2000:]}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        archive.with_suffix(".lock").unlink(missing_ok=True)


if __name__ == "__main__":
    build(Path(sys.argv[1]))
