"""Hive serde tables in every storage format Spark reads through Hive (TEXTFILE,
SEQUENCEFILE, RCFILE, AVRO, and JSON through Hive's JsonSerDe from hive-hcatalog-core),
captured and replayed: each format's tables are written in a Hive metastore (a subprocess
with Hive support), ANALYZEd for all columns (a managed fact) or not at all (an external
table over the same files, with spark.sql.statistics.fallBackToHdfs on and off), and each
query is captured with the broadcast threshold at the real top join's smaller side, CBO on
and off. The replay, in this process's session as `make run` runs it, plans the same join
nodes (tables named through HiveTableScanExec) and the same estimates of both sides of
every join; each file says what its tables are stored as and where their sizes came from."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from harness.spark.jvm_packages import Coordinate, PackageUnavailable, default_cache, ensure_jar

ROOT = Path(__file__).resolve().parents[2]
FORMATS = {"text": "STORED AS TEXTFILE", "seq": "STORED AS SEQUENCEFILE", "rc": "STORED AS RCFILE",
           "avro": "STORED AS AVRO",
           "json": "ROW FORMAT SERDE 'org.apache.hive.hcatalog.data.JsonSerDe' STORED AS TEXTFILE"}
STORED = {"text": "TEXTFILE (LazySimpleSerDe)", "seq": "SEQUENCEFILE (LazySimpleSerDe)",
          "rc": "RCFILE (LazyBinaryColumnarSerDe)", "avro": "AVRO (AvroSerDe)", "json": "TEXTFILE (JsonSerDe)"}

SCRIPT = """
import json, os, shutil, sys, urllib.parse
from pyspark.sql import SparkSession
folder, jar, formats = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
os.chdir(folder)  # Derby's log
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").config("spark.jars", jar)
         .config("spark.sql.warehouse.dir", folder + "/warehouse")
         .config("javax.jdo.option.ConnectionURL", f"jdbc:derby:;databaseName={folder}/metastore;create=true")
         .enableHiveSupport().getOrCreate())
from tests.capturing.real_plans import captured_at_threshold
spark.sql("CREATE DATABASE hf")
out = []
for name, clause in formats.items():
    fact, dim, ext = f"{name}_fact", f"{name}_dim", f"{name}_ext"
    spark.sql(f"CREATE TABLE hf.{fact} (k BIGINT, v BIGINT, d INT) {clause}")
    spark.sql(f"INSERT INTO hf.{fact} SELECT id % 200, id, CAST(id % 10 AS INT) FROM range(20000)")
    spark.sql(f"CREATE TABLE hf.{dim} (k BIGINT, n STRING) {clause}")
    spark.sql(f"INSERT INTO hf.{dim} SELECT id, concat('n', id) FROM range(200)")
    spark.sql(f"ANALYZE TABLE hf.{fact} COMPUTE STATISTICS FOR ALL COLUMNS")
    # an external table over an empty folder, its files landed there afterwards by another
    # writer: the metastore recorded no size
    location = spark.sql(f"DESCRIBE FORMATTED hf.{fact}").where("col_name = 'Location'").collect()[0][1]
    landed = os.path.join(folder, "landed", ext)
    os.makedirs(landed)
    spark.sql(f"CREATE EXTERNAL TABLE hf.{ext} (k BIGINT, v BIGINT, d INT) {clause} LOCATION '{landed}'")
    source = urllib.parse.unquote(urllib.parse.urlparse(location).path)
    for entry in os.listdir(source):
        if not entry.startswith((".", "_")):
            shutil.copy(os.path.join(source, entry), landed)
    spark.sql(f"REFRESH TABLE hf.{ext}")
    names = {t: t for t in (fact, dim, ext)}
    runs = [("managed", f"SELECT f.v, d.n FROM hf.{fact} f JOIN hf.{dim} d ON f.k = d.k WHERE f.d < 5",
             {"spark.sql.cbo.enabled": cbo}) for cbo in ("false", "true")]
    runs += [("external", f"SELECT f.v, d.n FROM hf.{ext} f JOIN hf.{dim} d ON f.k = d.k",
              {"spark.sql.cbo.enabled": "true", "spark.sql.statistics.fallBackToHdfs": fallback})
             for fallback in ("false", "true")]
    for state, query, conf in runs:
        label = f"{name}_{state}_" + "_".join(v for k, v in sorted(conf.items()))
        path, joins, estimates = captured_at_threshold(spark, query, f"{folder}/{label}.yaml", names,
                                                       {"spark.sql.adaptive.enabled": "false", **conf})
        out.append({"format": name, "state": state, "file": str(path), "joins": joins, "estimates": estimates,
                    "ext_files": sum(os.path.getsize(os.path.join(landed, f)) for f in os.listdir(landed)
                                     if not f.startswith((".", "_")))})
print("RESULT " + json.dumps(out))
"""


def _bundled_hive() -> str:
    """The Hive release this PySpark bundles (its hive-serde jar)."""
    import pyspark
    found = sorted(Path(pyspark.__file__).parent.glob("jars/hive-serde-*.jar"))
    return found[0].stem[len("hive-serde-"):] if found else "2.3.10"


def _captured(folder: Path) -> list:
    try:  # Hive's JsonSerDe: hive-hcatalog-core of the Hive release Spark bundles
        jar = ensure_jar(Coordinate("org.apache.hive.hcatalog", "hive-hcatalog-core", _bundled_hive(),
                                    "org/apache/hive/hcatalog/data/JsonSerDe.class"), default_cache())
        formats = FORMATS
    except PackageUnavailable:
        jar, formats = "", {k: v for k, v in FORMATS.items() if k != "json"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(folder), str(jar), json.dumps(formats)],
                          capture_output=True, text=True, timeout=900, cwd=folder,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line is not None, done.stderr[-3000:]
    return json.loads(line[len("RESULT "):])


def test_hive_serde_tables_replay_their_plans_and_say_where_their_sizes_came_from(session, tmp_path, assert_replays):
    """One test, one Hive subprocess for every format (under xdist, a module fixture would
    run in each worker)."""
    captured = _captured(tmp_path)
    formats = sorted({run["format"] for run in captured})
    assert formats in (sorted(FORMATS), sorted(f for f in FORMATS if f != "json")), formats
    for run in captured:
        fmt = run["format"]
        text = Path(run["file"]).read_text()
        header = [line for line in text.splitlines() if line.startswith("#")]
        assert not [line for line in header if "WARNING" in line], header
        fact = "ext" if run["state"] == "external" else "fact"
        stored = f"hf.{fmt}_{fact} is a Hive serde table stored as {STORED[fmt]}"
        assert any(line.startswith(f"# {stored}") for line in header), header
        if run["state"] == "managed":
            assert any(f"{stored}, sized by its catalog statistics" in line for line in header), header
            assert "columns" in yaml.safe_load(text)["tables"][f"{fmt}_fact"]["stats"]
        elif run["file"].endswith("_external_true_false.yaml"):  # fallBackToHdfs off
            assert any("size_bytes is Spark's default for a table it cannot size" in line for line in header), header
        else:
            assert any("size_bytes is Spark's estimate from its files" in line for line in header), header
            assert yaml.safe_load(text)["tables"][f"{fmt}_ext"]["stats"]["size_bytes"] == run["ext_files"]
        # every table named in the join node, whatever its scan
        assert sorted(run["joins"][0][2]) == sorted({f"{fmt}_{fact}", f"{fmt}_dim"})
        direct = [(s, b, t, sh, sc) for s, b, t, sh, sc in run["joins"]]
        assert_replays(Path(run["file"]), direct, run["estimates"])
