"""Apache DataFusion Comet: a native (Rust) engine that replaces Spark operators it
supports by its own (`CometSortMergeJoin`, `CometExchange`, ...) and leaves the rest to
Spark, tagging each operator it left with why.

Measured here (Maven Central, 2026-11-27): Comet publishes a jar for Spark 3.5 (0.9.0,
0.12.0; Scala 2.12) and 4.1 (1.2.0; Scala 2.13); none for 3.0-3.4, 4.0, 4.2 or 4.3. Both
load in local mode on Java 17 with Comet's plugin, its shuffle manager and off-heap memory.
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.spark.jvm_packages import Coordinate

GROUP = "org.apache.datafusion"
MARKER = "org/apache/comet/CometSparkSessionExtensions.class"
# Spark minor → the newest Comet jar Maven Central serves for it.
RUNTIMES = {
    "3.5": Coordinate(GROUP, "comet-spark-spark3.5_2.12", "0.12.0", MARKER),
    "4.1": Coordinate(GROUP, "comet-spark-spark4.1_2.13", "1.2.0", MARKER),
}
# Comet's operators → the Spark operator each replaces: a plan is read in Spark's names
# (so an expectation keeps its meaning) and an operator under another name ran natively.
SPARK_NAMES = {
    "CometSortMergeJoin": "SortMergeJoin",
    "CometHashJoin": "ShuffledHashJoin",
    "CometBroadcastHashJoin": "BroadcastHashJoin",
    "CometBroadcastNestedLoopJoin": "BroadcastNestedLoopJoin",
    "CometExchange": "Exchange",
    "CometColumnarExchange": "Exchange",
    "CometBroadcastExchange": "BroadcastExchange",
    "CometSort": "Sort",
    "CometHashAggregate": "HashAggregate",
    "CometProject": "Project",
    "CometFilter": "Filter",
}
# Comet's operator classes (without `Exec`) → the Spark class each replaces, for
# operator counts.
SPARK_CLASSES = {"CometSortMergeJoin": "SortMergeJoin", "CometHashJoin": "ShuffledHashJoin",
                 "CometBroadcastHashJoin": "BroadcastHashJoin",
                 "CometBroadcastNestedLoopJoin": "BroadcastNestedLoopJoin",
                 "CometShuffleExchange": "ShuffleExchange", "CometBroadcastExchange": "BroadcastExchange",
                 "CometScan": "FileSourceScan", "CometNativeScan": "FileSourceScan", "CometBatchScan": "BatchScan",
                 "CometIcebergNativeScan": "BatchScan", "CometSort": "Sort",
                 "CometHashAggregate": "HashAggregate", "CometProject": "Project", "CometFilter": "Filter"}
# Comet's scans, which keep the Spark scan they replaced (its table, buckets, partitioning).
SCANS = ("CometScan", "CometNativeScan", "CometBatchScan", "CometIcebergNativeScan")
# Off-heap memory for Comet's native operators, per session (the heap is the driver's).
OFF_HEAP = "2g"
# Spark's own answer in a Comet session: the engine off for one query (a runtime SQL config).
OFF = {"spark.comet.enabled": "false"}
# What the harness sets for a Comet session; a scenario may set none of these.
OWN_CONFS = ("spark.plugins", "spark.shuffle.manager", "spark.memory.offHeap.enabled", "spark.memory.offHeap.size",
             "spark.comet.enabled", "spark.comet.exec.enabled", "spark.comet.exec.shuffle.enabled")


def session_confs(jar: Path) -> dict:
    # On a cluster the executors read the jar from the same path (the jar cache on a shared
    # mount, HARNESS_JAR_CACHE), as Comet's own setup asks for both class paths.
    return {"spark.jars": str(jar), "spark.driver.extraClassPath": str(jar), "spark.executor.extraClassPath": str(jar),
            "spark.plugins": "org.apache.spark.CometPlugin",
            "spark.shuffle.manager": "org.apache.spark.sql.comet.execution.shuffle.CometShuffleManager",
            "spark.comet.exec.shuffle.enabled": "true", "spark.comet.shuffle.enabled": "true",  # 0.x, 1.x
            "spark.memory.offHeap.enabled": "true", "spark.memory.offHeap.size": OFF_HEAP}


# Comet's own configs of each Comet version the harness loads, with their kinds, read from
# each jar's registry (`python -m harness conf-keys --engine comet`): a key that another
# version declares is left out where this one does not; one none declares is a typo.
KEYS_FILE = Path(__file__).with_name("comet_conf_keys.json")
MEASURED = json.loads(KEYS_FILE.read_text())["keys"]
_ENTRIES: dict = {}

# The metric keys each Comet version's operators declare, read from the operators of
# probe joins (`python -m harness conf-keys --engine comet`, beside the configs).
METRICS_FILE = Path(__file__).with_name("comet_metrics.json")
MEASURED_METRICS = json.loads(METRICS_FILE.read_text())["versions"]
# What the harness reads of a Comet operator: Spark's metric key → Comet's, per operator.
# Measured on 0.12.0 and 1.2.0 (the Spark UI shows the names beside): "Number of rows
# produced", "Memory used by build-side" (a hash join's build; a sort-merge join's
# buffered side), "Total spilled bytes". Comet's sorts report spill but no memory.
SPARK_METRICS = {
    "CometHashJoin": {"numOutputRows": "output_rows", "buildDataSize": "build_mem_used"},
    "CometBroadcastHashJoin": {"numOutputRows": "output_rows"},
    "CometSortMergeJoin": {"numOutputRows": "output_rows", "peakMemory": "peak_mem_used",
                           "spillSize": "spilled_bytes"},
    "CometSort": {"spillSize": "spilled_bytes"},
}
# Probe joins whose operators declare those metrics: (hint, what runs natively).
PROBES = ("SHUFFLE_HASH(b)", "MERGE(b)", "BROADCAST(b)")


def spark_metrics(operator: str, found: dict, version: str | None) -> dict:
    """A Comet operator's metrics under Spark's keys, where the harness reads a Comet
    metric for one and this Comet version declares it (a version not measured: as the
    newest measured one); the operator's own keys kept."""
    declared = MEASURED_METRICS.get(version or "") or MEASURED_METRICS[max(MEASURED_METRICS, key=_version_key)]
    out = dict(found)
    for spark_key, comet_key in SPARK_METRICS.get(operator, {}).items():
        if comet_key in found and comet_key in declared.get(operator, {}):
            out[spark_key] = found[comet_key]
    return out


def _version_key(version: str) -> tuple:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def probe_metrics(spark, folder: str) -> dict[str, dict[str, str]]:
    """Operator → {metric key: the name the Spark UI shows} of every Comet operator of the
    probe joins, run over parquet files written to `folder`."""
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    spark.range(200000).selectExpr("id % 1000 AS k", "id AS v").write.mode("overwrite").parquet(f"{folder}/a")
    spark.range(2000).selectExpr("id AS k", "id * 2 AS w").write.mode("overwrite").parquet(f"{folder}/b")
    spark.read.parquet(f"{folder}/a").createOrReplaceTempView("a")
    spark.read.parquet(f"{folder}/b").createOrReplaceTempView("b")
    found: dict[str, dict[str, str]] = {}
    for hint in PROBES:
        frame = spark.sql(f"SELECT /*+ {hint} */ a.k, a.v, b.w FROM a JOIN b ON a.k = b.k")
        frame.collect()
        stack = [frame._jdf.queryExecution().executedPlan()]
        while stack:
            node = stack.pop()
            name = str(node.nodeName()).split(" ")[0]
            if name in SPARK_NAMES:
                iterator = node.metrics().iterator()
                while iterator.hasNext():
                    entry = iterator.next()
                    label = entry._2().name()
                    found.setdefault(name, {})[str(entry._1())] = str(label.get()) if label.isDefined() else ""
            children = node.children()
            stack.extend(children.apply(i) for i in range(children.size()))
    return found


def config_entries(spark) -> dict | None:
    """Comet's config entries in this JVM (CometConf.allConfs: Spark's own entry shape, a
    key, a default and a value converter), by key; None where Comet is not loaded."""
    if id(spark) not in _ENTRIES:
        _ENTRIES.clear()  # one session per worker: an older one is gone
        try:
            entries = getattr(getattr(spark._jvm.org.apache.comet, "CometConf$"), "MODULE$").allConfs()
            found = {}
            for i in range(entries.size()):
                entry = entries.apply(i)
                found[str(entry.key())] = entry
            _ENTRIES[id(spark)] = found
        except Exception:  # Comet is not on the classpath
            _ENTRIES[id(spark)] = None
    return _ENTRIES[id(spark)]


def version_of(spark) -> str | None:
    """The Comet version this JVM runs (its jar's), None where Comet is not loaded."""
    return _version_in(spark._jvm)


def _version_in(jvm) -> str | None:
    try:
        return str(getattr(getattr(jvm.org.apache.comet, "package$"), "MODULE$").COMET_VERSION())
    except Exception:
        return None


_VERSIONS: dict = {}


def version_of_node(node) -> str | None:
    """The Comet version of the JVM that holds this plan operator."""
    client = node._gateway_client
    if client not in _VERSIONS:
        from pyspark import SparkContext
        _VERSIONS[client] = _version_in(SparkContext._jvm)
    return _VERSIONS[client]


_TAGS: dict = {}


def _fallback_tag(node):
    """The tree-node tag Comet keeps an operator's fallback reasons under (1.x:
    FALLBACK_REASONS; 0.x: EXTENSION_INFO); None where Comet is not loaded."""
    client = node._gateway_client
    if client not in _TAGS:
        from pyspark import SparkContext
        jvm = SparkContext._jvm
        tag = None
        try:
            module = getattr(getattr(jvm.org.apache.comet, "CometExplainInfo$"), "MODULE$")
            for name in ("FALLBACK_REASONS", "EXTENSION_INFO"):
                try:
                    tag = getattr(module, name)()
                    break
                except Exception:  # not in this Comet version
                    continue
        except Exception:  # Comet is not on the classpath
            tag = None
        _TAGS[client] = tag
    return _TAGS[client]


def loaded(node) -> bool:
    """Whether the JVM that holds `node` runs Comet."""
    return _fallback_tag(node) is not None


def fallback_reasons(node) -> list[str]:
    """Why Comet left this operator to Spark, in Comet's words (sorted)."""
    tag = _fallback_tag(node)
    if tag is None:
        return []
    try:
        found = node.getTagValue(tag)
        if not found.isDefined():
            return []
        reasons = found.get().toList()
        return sorted(str(reasons.apply(i)) for i in range(reasons.size()))
    except Exception:  # an operator without tags
        return []
