"""Probe: how Spark sizes a Delta Lake table's scans, real and statistics-only (a Delta log
whose add actions carry each partition's size and record count, no data files), before
`format: delta` is built (issue 41). Run in a matrix environment:

    python bench/delta_probe.py SPARK_VERSION DELTA_ARTIFACT DELTA_VERSION STORAGE_VERSION|-

Measured 2026-11-26 (a 4-partition table of 40 GiB, 10 GiB, 5 MiB and 1 MiB):
- Delta 0.8.0 on 3.0.3, 1.0.1 on 3.1.3: a scan that prunes partitions is sized by the
  whole snapshot (real table: 158.7 KiB whole and with p = 1; statistics-only: 50 GiB
  both): TahoeLogFileIndex, no pruned size; DPP planned on the join's broadcast.
- Delta 2.0.2 (3.2.4), 2.3.0 (3.3.4), 2.4.0 (3.4.4), 3.3.2 (3.5.9), 4.0.1 (4.0.5),
  delta-spark_4.1 4.4.0 (4.1.4), delta-spark_4.2 4.4.0 (4.2.1): pruned scans sized by the
  kept files (PreparedDeltaFileIndex): statistics-only 50 GiB whole, 10 GiB for p = 1,
  5 MiB for p = 2 — as the real table (39.7 KiB of 158.9 KiB); DPP planned.
- Every version: `Bucketing` is not supported for Delta tables (an AnalysisException).
- Spark 4.3: no Delta release (delta-spark_4.3_2.13 not on Maven Central that day).
"""
import os, sys, json, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from harness.spark.jvm_packages import Coordinate, ensure_jar, default_cache
spark_v, delta_art, delta_v, storage_v = sys.argv[1:5]
jars = [ensure_jar(Coordinate("io.delta", delta_art, delta_v), default_cache())]
if storage_v != "-":
    jars.append(ensure_jar(Coordinate("io.delta", "delta-storage", storage_v), default_cache()))
from pyspark.sql import SparkSession
wd = tempfile.mkdtemp()
spark = (SparkSession.builder.master("local[1]").config("spark.sql.warehouse.dir", wd + "/wh")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").config("spark.jars", ",".join(map(str, jars)))
         .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
         .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
print("spark", spark.version)
def stats(q):
    return spark.sql(q)._jdf.queryExecution().optimizedPlan().stats().toString()
# 1. real delta table with data
spark.range(20000).selectExpr("id", "CAST(id % 4 AS INT) AS p", "CAST(id AS DOUBLE) v").write.format("delta").partitionBy("p").saveAsTable("real")
print("real whole", stats("select * from real"))
print("real p=1", stats("select * from real where p = 1"))
# 2. statistics-only delta log at a path, then registered
loc = os.path.join(wd, "phantom")
os.makedirs(os.path.join(loc, "_delta_log"))
schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
          {"name": "p", "type": "integer", "nullable": True, "metadata": {}},
          {"name": "v", "type": "double", "nullable": True, "metadata": {}}]}
now = int(time.time() * 1000)
actions = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
           {"metaData": {"id": "00000000-0000-0000-0000-000000000001", "format": {"provider": "parquet", "options": {}},
                         "schemaString": json.dumps(schema), "partitionColumns": ["p"], "configuration": {}, "createdTime": now}}]
sizes = {0: 40 << 30, 1: 10 << 30, 2: 5 << 20, 3: 1 << 20}
for p, size in sizes.items():
    actions.append({"add": {"path": f"p={p}/part-00000-phantom.parquet", "partitionValues": {"p": str(p)}, "size": size,
                            "modificationTime": now, "dataChange": True, "stats": json.dumps({"numRecords": size // 100})}})
with open(os.path.join(loc, "_delta_log", "00000000000000000000.json"), "w") as f:
    f.write("\n".join(json.dumps(a) for a in actions) + "\n")
spark.sql(f"CREATE TABLE phantom USING delta LOCATION '{loc}'")
print("phantom whole", stats("select * from phantom"))
print("phantom p=1", stats("select * from phantom where p = 1"))
print("phantom p=2", stats("select * from phantom where p = 2"))
spark.range(4).selectExpr("CAST(id AS INT) AS p", "concat('n', id) name").write.format("delta").saveAsTable("dim")
plan = spark.sql("select * from phantom f join dim d on f.p = d.p where d.name = 'n1'")._jdf.queryExecution().executedPlan().toString()
import re
print("dpp plan:", re.findall(r"(BroadcastHashJoin|SortMergeJoin|dynamicpruningexpression|SubqueryAdaptiveBroadcast|SubqueryBroadcast|\w+FileIndex)", plan))
try:
    spark.range(100).selectExpr("id", "id % 7 AS k").write.format("delta").bucketBy(4, "k").saveAsTable("bk")
    print("bucketed delta: written")
except Exception as e:
    print("bucketed delta:", str(e).splitlines()[0][:200])
