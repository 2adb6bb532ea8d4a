"""The scans below a join, as its join node records them: a file source's, a V2 batch
scan's (Iceberg's: its storage-partitioned join decision), a Hive serde table's or a V1
data source's — each its table, whether its buckets are read as partitions, and its
dynamic partition pruning."""
from __future__ import annotations

import re

from harness.observe.plan_nodes import kind as node_kind
from harness.observe.plan_nodes import safe_call, safe_str
from harness.spark import engines


LEAF_SCANS = ("Scan ", "InMemoryTableScan")  # the node names of the scans below told apart by their class
# Scans that name their table other than a file source's or a V2 batch scan's: a Hive serde
# table (text, sequence file, Avro, JSON serde) and a V1 data source relation (JDBC, ...).
OTHER_TABLE_SCANS = {
    "HiveTableScanExec": lambda node: safe_str(lambda: node.relation().tableMeta().identifier().table()),
    "RowDataSourceScanExec": lambda node: safe_str(lambda: node.tableIdentifier().get().table()),
}


def engine_scan_original(node, kind: str):
    """The Spark scan (FileSourceScanExec, BatchScanExec) a native engine's scan replaced,
    else None: Comet keeps it (`wrapped` in CometScanExec and CometBatchScanExec,
    `originalPlan` in CometNativeScanExec and CometIcebergNativeScanExec)."""
    if not kind.startswith(engines.SCAN_PREFIXES):
        return None
    for field in ("wrapped", "originalPlan"):
        original = safe_call(getattr(node, field))
        if original is not None and safe_str(lambda: original.getClass().getSimpleName()) in (
                "FileSourceScanExec", "BatchScanExec"):
            return original
    return None


def file_scan(node, table_names: dict | None) -> dict:
    """A FileSourceScanExec: its table (the scenario's name for a catalog table), whether
    it reads the table's buckets as partitions (what lets a join skip the shuffle), what
    Spark prints about that from 3.1 on for a bucketed table (`true`, or `false (bucket
    column(s) not read)`, `false (disabled by query planner)`, `false (disabled by
    configuration)`), and its dynamic partition pruning (`pruning_of`)."""
    table = safe_str(lambda: node.tableIdentifier().get().table())
    note = safe_call(lambda: node.metadata().get("Bucketed"))  # 3.1+, for a table with a bucket spec
    return {"table": (table_names or {}).get(table, table) or None,
            "bucketed": safe_str(lambda: node.bucketedScan()).lower() == "true",
            "bucket_note": str(note.get()) if note is not None and note.isDefined() else None,
            "pruning": pruning_of(node)}


def other_scan(node, table: str, table_names: dict | None) -> dict:
    """A Hive serde table's scan or a V1 data source's: its table; never bucketed (Spark
    reads neither's buckets as partitions); its dynamic partition pruning (a Hive table's,
    among its partition pruning predicates)."""
    return {"table": (table_names or {}).get(table, table) or None, "bucketed": False, "bucket_note": None,
            "pruning": pruning_of(node)}


def batch_scan(node, table_names: dict | None) -> dict:
    """A BatchScanExec (a V2 table: Iceberg's): its table, and its storage-partitioned join
    decision: `key_grouped` (it reports the table's partitioning, so a join may skip the
    shuffle), `partially_clustered` (the bigger side's partitions split and the other
    side's replicated; 3.4+), `partition_values` (how many partition values the join
    pushed to it; None where none were). The fields moved into `spjParams` in 3.5."""
    name = safe_str(lambda: node.table().name())  # 3.4+; 3.3's scan names its table in its text
    if not name:
        found = re.search(r"\btable=([^,\s)]+)", safe_str(lambda: node.scan().toString()))
        name = found.group(1) if found else ""
    table = name.rsplit(".", 1)[-1] if name else ""
    params = safe_call(node.spjParams)
    source = params if params is not None else node
    partially = safe_str(lambda: source.applyPartialClustering()).lower()
    values = safe_call(lambda: source.commonPartitionValues())
    pushed = values.get().size() if values is not None and values.isDefined() else None
    grouped = safe_str(lambda: node.outputPartitioning().getClass().getSimpleName()) == "KeyGroupedPartitioning"
    return {"table": (table_names or {}).get(table, table) or None, "bucketed": False, "bucket_note": None,
            "pruning": pruning_of(node), "key_grouped": grouped,
            "partially_clustered": partially == "true" if partially in ("true", "false") else None,
            "partition_values": pushed}


def pruning_of(scan) -> str:
    """The scan's dynamic partition pruning: `none`; `broadcast` (a subquery on the join's
    broadcast: SubqueryBroadcast); `subquery` (a subquery of its own); `dropped`
    (planned, then replaced by `true`: no broadcast to reuse while only reuse was
    allowed); before AQE has run, a SubqueryAdaptiveBroadcast, whose fate AQE decides
    once it knows the join: `adaptive` (the join's broadcast if there is one, else a
    subquery of its own) or `adaptive_reuse_only` (the broadcast, else dropped). A file
    scan holds it among its partition filters, a V2 scan (BatchScanExec: Iceberg's) among
    its runtime filters (3.2+), a Hive table's scan among its partition pruning predicates."""
    filters = safe_call(lambda: scan.partitionFilters())
    if filters is None:
        filters = safe_call(lambda: scan.runtimeFilters())
    if filters is None:  # a Hive serde table's scan
        filters = safe_call(lambda: scan.partitionPruningPred())
    for i in range(filters.size() if filters is not None else 0):
        expression = filters.apply(i)
        if str(expression.nodeName()) != "DynamicPruningExpression":
            continue
        child = expression.child()
        if str(child.nodeName()) == "Literal":
            return "dropped"
        subquery = safe_call(child.plan)
        if subquery is not None and node_kind(subquery) == "SubqueryAdaptiveBroadcast":
            return "adaptive_reuse_only" if safe_call(subquery.onlyInBroadcast) is not False else "adaptive"
        return "broadcast" if subquery is not None and "Broadcast" in node_kind(subquery) else "subquery"
    return "none"
