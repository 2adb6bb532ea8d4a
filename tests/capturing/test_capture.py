"""Capture: a small "production" warehouse (parquet tables in a catalog database,
ANALYZEd), a 4-table query and a view captured into scenario files, and replayed: the
replayed plan must be the plan of the query run directly on the real tables."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from harness.capturing.to_scenario import CaptureError, capture
from harness.check import runner
from harness.observe import jvm_plans
from harness.scenario.model import expand, load_scenario
from harness.spark import stats_only
from harness.spark.query import checksum_frame

QUERY = """
SELECT st.region, d.year, count(*) AS sales, sum(s.amount) AS paid
FROM prod.sales s
JOIN prod.item i ON s.item_id = i.id
JOIN `prod`.`store` st ON s.store_id = st.id
JOIN prod.date_dim AS d ON s.day_id = d.id
WHERE d.year = 2020 AND i.price > 90
GROUP BY st.region, d.year
"""
VIEW_QUERY = "SELECT * FROM prod.sales s JOIN prod.pricey_items p ON s.item_id = p.id"


@pytest.fixture(scope="module")
def warehouse():
    from harness.spark.session import get_session
    spark = get_session().spark
    catalog = spark._jsparkSession.catalog()
    if not (catalog.databaseExists("prod") and catalog.tableExists("prod", "sales")):  # 3.0 throws without the db
        spark.sql("CREATE DATABASE IF NOT EXISTS prod")
        spark.range(300000).selectExpr("id", "id % 5000 AS item_id", "CAST(id % 40 AS INT) AS store_id",
                                       "CAST(id % 1500 AS INT) AS day_id", "CAST(id % 997 AS DECIMAL(10,2)) AS amount") \
            .write.saveAsTable("prod.sales")
        spark.range(5000).selectExpr("id", "CAST(id % 100 AS DOUBLE) AS price", "concat('item', id) AS name") \
            .write.saveAsTable("prod.item")
        spark.range(40).selectExpr("CAST(id AS INT) AS id", "concat('r', id % 4) AS region") \
            .write.saveAsTable("prod.store")
        spark.range(1500).selectExpr("CAST(id AS INT) AS id", "CAST(2018 + id DIV 365 AS INT) AS year",
                                     "date_add(DATE'2018-01-01', CAST(id AS INT)) AS day") \
            .write.saveAsTable("prod.date_dim")
        for table in ("sales", "item", "store", "date_dim"):
            spark.sql(f"ANALYZE TABLE prod.{table} COMPUTE STATISTICS FOR ALL COLUMNS")
        spark.sql("CREATE VIEW prod.pricey_items AS SELECT id, price FROM prod.item WHERE price > 50")
    return spark


def direct_plan(spark, query: str):
    frame = checksum_frame(spark.sql(query))
    plan = jvm_plans.current_plan(frame)
    joins = [(j.strategy, j.build_side, j.tables) for j in jvm_plans.join_nodes(
        plan, {t: t for t in ("sales", "item", "store", "date_dim")})]
    return joins, jvm_plans.join_estimates(frame)


def replayed_plan(session, path):
    (case,) = expand(load_scenario(path))
    record = runner.run_case(case, session)
    joins = [(j["strategy"], j["build_side"], j["tables"]) for j in record.observed.initial.joins]
    return record, joins, record.observed.estimates


@pytest.mark.parametrize("cbo", ["true", "false"])
def test_a_captured_query_replays_the_plan_of_the_real_tables(session, warehouse, tmp_path, cbo):
    spark = warehouse
    spark.conf.set("spark.sql.cbo.enabled", cbo)
    try:
        path = capture(QUERY, tmp_path / "q.yaml", source="q.sql")
        direct_joins, direct_estimates = direct_plan(spark, QUERY)
    finally:
        spark.conf.unset("spark.sql.cbo.enabled")
    text = path.read_text()
    assert text.startswith("# Captured from q.sql on Spark ")
    data = yaml.safe_load(text)
    assert set(data["tables"]) == {"sales", "item", "store", "date_dim"}
    assert data["tables"]["sales"]["stats"]["rows"] == 300000
    assert data["spark_conf"]["spark.sql.cbo.enabled"] == cbo
    assert "prod." not in data["join"]["sql"] and "`prod`" not in data["join"]["sql"]
    record, joins, estimates = replayed_plan(session, path)
    assert record.status == "passed", record.message  # its own expectations: what Spark planned
    assert len(direct_joins) == 3 and joins == direct_joins
    assert estimates == direct_estimates


def test_a_non_deterministic_query_is_captured_as_one_and_replays(session, warehouse, tmp_path):
    """A production query may sample with rand(): the replay plans it (nothing runs over
    statistics), and the file says its answer varies, or the replay would refuse it."""
    query = ("SELECT s.amount, i.price FROM prod.sales s JOIN prod.item i ON s.item_id = i.id "
             "WHERE rand(7) < 0.1")
    path = capture(query, tmp_path / "sampled.yaml", source="sampled.sql")
    data = yaml.safe_load(path.read_text())
    assert "non-deterministic" in data["expect"]["varies"]["checksum"]
    record, joins, _ = replayed_plan(session, path)
    assert record.status == "passed", record.message
    assert joins == direct_plan(warehouse, query)[0] and joins


def test_scaled_statistics_replay_what_spark_plans_for_real_tables_of_that_size(session, warehouse, tmp_path):
    spark = warehouse
    path = capture(QUERY, tmp_path / "q.yaml", source="q.sql")
    data = yaml.safe_load(path.read_text())
    for spec in data["tables"].values():
        spec["stats"] = scaled(spec["stats"], 1000)
    data["expect"] = {}
    scaled_path = tmp_path / "q1000.yaml"
    scaled_path.write_text(yaml.safe_dump(data, sort_keys=False))
    _, joins, estimates = replayed_plan(session, scaled_path)
    for name, spec in data["tables"].items():  # the same statistics on the real tables
        stats_only.inject(spark, f"prod.{name}", spec)
    try:
        direct_joins, direct_estimates = direct_plan(spark, QUERY)
    finally:
        for name in data["tables"]:
            spark.sql(f"ANALYZE TABLE prod.{name} COMPUTE STATISTICS FOR ALL COLUMNS")
    assert joins == direct_joins and estimates == direct_estimates
    assert estimates[0]["left"]["size_in_bytes"] > 1000 * 1000 * 1000 or \
        estimates[0]["right"]["size_in_bytes"] > 1000 * 1000 * 1000  # the scale reached the planner


def test_a_captured_query_runs_locally_on_its_synthetic_twin(session, warehouse, tmp_path):
    from harness.check.agreement import run_agreement
    path = capture(QUERY, tmp_path / "q.yaml", source="q.sql", synthetic=0.01)
    data = yaml.safe_load(path.read_text())
    assert data["synthetic"] == {"scale": 0.01} and list(data)[-1] == "expect"
    plan_only, twin = expand(load_scenario(path))
    assert twin.case_id == "q.synthetic" and twin.scenario.twin_of == "q"
    record = runner.run_case(twin, session)
    assert record.status == "passed" and record.observed.rows > 0, record.message  # 4 tables' keys met
    assert record.observed.reference["agrees"]  # the reference engine, fed the twin's rows, agrees
    agreement = run_agreement(twin, session)
    assert agreement.status == "passed", agreement.message


def scaled(stats: dict, factor: int) -> dict:
    out = copy.deepcopy(stats)
    out["size_bytes"] *= factor
    out["rows"] *= factor
    for column in out.get("columns", {}).values():
        for key in ("distinct", "nulls"):
            if key in column:
                column[key] *= factor
    return out


def test_a_view_becomes_a_derived_table_over_its_tables(session, warehouse, tmp_path):
    path = capture(VIEW_QUERY, tmp_path / "v.yaml", source="v.sql")
    data = yaml.safe_load(path.read_text())
    assert list(data["tables"]) == ["sales", "item", "pricey_items"]
    assert data["tables"]["pricey_items"]["sql"].replace("`", "").count("prod.") == 0
    record, joins, _ = replayed_plan(session, path)
    assert record.status == "passed", record.message
    assert joins == direct_plan(warehouse, VIEW_QUERY)[0]


@pytest.mark.parametrize("query, says", [
    ("SELEC * FROM prod.sales", "q.sql: "),
    ("SELECT * FROM prod.nope", "q.sql: "),
    ("SELECT 1 AS x", "q.sql: the query reads no catalog table"),
])
def test_bad_queries_are_one_line_errors_and_nothing_is_written(warehouse, tmp_path, query, says):
    with pytest.raises(CaptureError) as info:
        capture(query, tmp_path / "bad.yaml", source="q.sql")
    assert str(info.value).startswith(says) and "\n" not in str(info.value)
    assert not (tmp_path / "bad.yaml").exists()


@pytest.mark.parametrize("statement", ["DROP TABLE prod.store", "INSERT INTO prod.store VALUES (99, 'x')",
                                       "SET spark.sql.shuffle.partitions=3", "CACHE TABLE prod.store"])
def test_a_command_is_refused_before_spark_runs_it(warehouse, tmp_path, statement):
    rows_before = warehouse.table("prod.store").count()
    with pytest.raises(CaptureError) as info:
        capture(statement, tmp_path / "c.yaml", source="c.sql")
    assert "is not a query" in str(info.value) and "\n" not in str(info.value)
    assert warehouse._jsparkSession.catalog().tableExists("prod", "store")
    assert warehouse.table("prod.store").count() == rows_before
    assert warehouse.conf.get("spark.sql.shuffle.partitions") != "3"
    assert not warehouse.catalog.isCached("prod.store")


def test_a_temp_view_made_from_a_dataframe_becomes_a_derived_table(session, warehouse, tmp_path):
    warehouse.table("prod.item").where("price < 10").select("id", "price").createOrReplaceTempView("cheap_items")
    query = "SELECT * FROM prod.sales s JOIN cheap_items c ON s.item_id = c.id"
    try:
        if warehouse.version < "3.2":  # 3.0, 3.1: no View node marks a DataFrame's temp view (measured)
            with pytest.raises(CaptureError, match="reads 'cheap_items'"):
                capture(query, tmp_path / "t.yaml", source="t.sql")
            return
        path = capture(query, tmp_path / "t.yaml", source="t.sql")
        direct = direct_plan(warehouse, query)[0]
    finally:
        warehouse.catalog.dropTempView("cheap_items")
    data = yaml.safe_load(path.read_text())
    assert list(data["tables"]) == ["sales", "item", "cheap_items"]
    assert "`item`" in data["tables"]["cheap_items"]["sql"] and "prod" not in data["tables"]["cheap_items"]["sql"]
    record, joins, _ = replayed_plan(session, path)
    assert record.status == "passed", record.message
    assert joins == direct


def frame_joins(spark, frame):
    plan = jvm_plans.current_plan(checksum_frame(frame))
    return [(j.strategy, j.build_side, j.tables) for j in jvm_plans.join_nodes(
        plan, {t: t for t in ("sales", "item", "store", "date_dim")})], jvm_plans.join_estimates(frame)


def notebook_frames(spark):
    """DataFrames as a notebook builds them: API joins with hints, filters, aggregates,
    dropDuplicates, a self-join with clashing names, a union, a temp view, a permanent view."""
    from pyspark.sql import functions as F
    sales, item, store = spark.table("prod.sales"), spark.table("prod.item"), spark.table("prod.store")
    dates = spark.table("prod.date_dim").where(F.col("year") == 2020)
    star = (sales.join(item.hint("broadcast"), sales.item_id == item.id)
            .join(store, sales.store_id == store.id, "left")
            .join(dates.hint("merge"), sales.day_id == dates.id)
            .where(item.price > 90)
            .groupBy(store.region, dates.year).agg(F.count("*").alias("sales"), F.sum("amount").alias("paid")))
    a, b = sales.alias("a"), sales.alias("b")
    self_join = a.join(b, F.col("a.id") == F.col("b.item_id")).select(F.col("a.id"), F.col("b.id"), "a.amount")
    latest = sales.dropDuplicates(["item_id"]).join(item, "id", "left_semi")
    both = sales.select("item_id").union(spark.table("prod.item").select("id")).distinct() \
        .join(store.hint("shuffle_hash"), F.col("item_id") == store.id, "full_outer")
    spark.table("prod.item").where("price > 20").createOrReplaceTempView("mid_items")
    mid = spark.table("mid_items").join(spark.table("prod.pricey_items"), "id")
    spread = sales.repartition(7, "item_id").alias("r")
    viewed = mid.join(spread, mid["id"] == F.col("r.item_id")).orderBy(mid["id"]).limit(100)
    return {"star": star, "self_join": self_join, "semi_dedup": latest, "union": both, "views": viewed}


@pytest.mark.parametrize("name", ["star", "self_join", "semi_dedup", "union", "views"])
def test_a_dataframe_is_captured_and_replays_its_plan(session, warehouse, tmp_path, name):
    frame = notebook_frames(warehouse)[name]
    path = capture(frame, tmp_path / f"{name}.yaml")
    direct_joins, direct_estimates = frame_joins(warehouse, frame)
    data = yaml.safe_load(path.read_text())
    assert data["id"] == name  # from the file's name
    assert "prod" not in data["join"]["sql"] and all(not t.get("sql") for t in data["tables"].values())
    record, joins, estimates = replayed_plan(session, path)
    assert record.status == "passed", record.message
    assert joins == direct_joins and estimates == direct_estimates and joins
    if name == "star":
        assert "BROADCAST(item)" in data["join"]["sql"] and "MERGE(" in data["join"]["sql"]


def test_capture_from_the_package_takes_a_dataframe(session, warehouse, tmp_path):
    import harness
    frame = warehouse.table("prod.sales").join(warehouse.table("prod.store"), "id")
    path = harness.capture(frame, tmp_path / "p.yaml", scenario_id="pkg")
    assert yaml.safe_load(path.read_text())["id"] == "pkg"


@pytest.mark.parametrize("build, says", [
    (lambda s: s.createDataFrame([(1,)], "id long").join(s.table("prod.item"), "id"),
     "a DataFrame: it reads a L"),  # LocalRelation, or LogicalRDD on 4.x
    (lambda s: s.table("prod.sales").join(s.table("prod.item"), "id")
        .where(__import__("pyspark.sql.functions", fromlist=["udf"]).udf(lambda x: True, "boolean")("id")),
     "PythonUDF"),
    (lambda s: s.range(10).join(s.table("prod.item"), "id"), "reads a Range, not a catalog table"),
    (lambda s: s.table("prod.sales").join(s.table("prod.item"), "id").groupBy("store_id").pivot("day_id", [1, 2])
        .count(), "a DataFrame: "),
])
def test_a_dataframe_capture_cannot_write_names_what(warehouse, tmp_path, build, says):
    with pytest.raises(CaptureError) as info:
        capture(build(warehouse), tmp_path / "x.yaml")
    assert says in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "x.yaml").exists()


def test_capture_takes_sql_or_a_dataframe_only(tmp_path):
    with pytest.raises(CaptureError, match="SQL text or a DataFrame, not int"):
        capture(17, tmp_path / "x.yaml")


EVENT_LOG_SCRIPT = """
import json, sys
from pyspark.sql import SparkSession
from harness.observe import jvm_plans
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", sys.argv[1])
         .config("spark.sql.adaptive.enabled", "true").config("spark.sql.autoBroadcastJoinThreshold", "1048576")
         .config("spark.sql.shuffle.partitions", "8").getOrCreate())
a = spark.range(300000).selectExpr("id % 1000 AS k", "id AS v")
b = spark.range(1000).selectExpr("id AS k", "id * 2 AS w")
small = spark.range(300000).where("id % 100 = 0").selectExpr("(id DIV 100) % 1000 AS k")
seen = []
for frame in (a.join(b, "k"), a.join(b.hint("merge"), "k"), a.join(b.hint("shuffle_hash"), "k", "left"),
              a.join(small, "k")):
    initial = [(j.strategy, j.build_side) for j in jvm_plans.join_nodes(jvm_plans.current_plan(frame))]
    frame.collect()
    final = [(j.strategy, j.build_side) for j in jvm_plans.join_nodes(jvm_plans.current_plan(frame))]
    seen.append({"initial": initial, "final": final})
print("SEEN " + json.dumps(seen))
spark.stop()
"""


def test_baseline_reads_the_plans_a_session_ran_from_its_event_log(session, tmp_path):
    import json
    import os
    import subprocess
    import sys

    from harness.capturing.event_log import read_log
    logs = tmp_path / "logs"
    logs.mkdir()
    script = tmp_path / "run.py"
    script.write_text(EVENT_LOG_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, str(script), logs.as_uri()], capture_output=True, text=True, env=env,
                          timeout=300)
    seen_line = [line for line in done.stdout.splitlines() if line.startswith("SEEN ")]
    assert seen_line, done.stderr[-2000:]
    seen = json.loads(seen_line[0][5:])
    baseline = read_log(logs)
    import pyspark
    assert baseline["spark"] == pyspark.__version__
    with_joins = [e for e in baseline["executions"] if e["initial"]]
    assert [[(j["strategy"], j["build_side"]) for j in e["initial"]] for e in with_joins] == \
        [[tuple(j) for j in s["initial"]] for s in seen]
    assert [[(j["strategy"], j["build_side"]) for j in e["final"]] for e in with_joins] == \
        [[tuple(j) for j in s["final"]] for s in seen]
    # the last one was re-planned at run time: a sort-merge join became a broadcast
    assert seen[-1]["initial"] != seen[-1]["final"]
    # the same log in the framing of Spark's own lz4 and snappy codecs (3.0/3.1 wrote lz4)
    from harness.capturing.event_log import BaselineError, _lines, log_files
    plain = "".join(line for file in log_files(logs) for _, line in _lines(file)).encode()
    for codec, suffix in (("LZ4CompressionCodec", ".lz4"), ("SnappyCompressionCodec", ".snappy")):
        packed = spark_compressed(session.spark, codec, plain, tmp_path / f"app-1{suffix}")
        assert read_log(packed) == baseline
        cut = tmp_path / f"cut{suffix}"
        cut.write_bytes(packed.read_bytes()[: packed.stat().st_size // 2])
        with pytest.raises(BaselineError, match=rf"cut{suffix}: cannot read on: "):
            read_log(cut)


def spark_compressed(spark, codec_class: str, data: bytes, target: Path) -> Path:
    """`data` written through Spark's compression codec, as its event log writer does."""
    jvm = spark._jvm
    codec = getattr(jvm.org.apache.spark.io, codec_class)(spark._jsc.sc().getConf())
    stream = codec.compressedOutputStream(jvm.java.io.FileOutputStream(str(target)))
    for start in range(0, len(data), 1 << 20):
        stream.write(data[start:start + (1 << 20)])
    stream.close()
    return target


@pytest.mark.parametrize("content, says", [
    ('{"Event":"SparkListenerLogStart","Spark Version":"3.5.1"}\n{"Event":"org.apache.spark.sql.exec', ":2: not a JSON event"),
    ('{"Event":"SparkListenerApplicationStart"}\n', "no SparkListenerLogStart event"),
    ('{"Event":"SparkListenerLogStart","Spark Version":"2.4.8"}\n', "written by Spark 2.4.8"),
])
def test_a_broken_event_log_is_one_line(tmp_path, content, says):
    from harness.capturing.event_log import BaselineError, read_log
    log = tmp_path / "app-1"
    log.write_text(content)
    with pytest.raises(BaselineError) as info:
        read_log(log)
    assert says in str(info.value) and "\n" not in str(info.value)


def test_float_smallint_and_nested_columns_are_captured(session, warehouse, tmp_path):
    spark = warehouse
    if not spark._jsparkSession.catalog().tableExists("prod", "events"):
        spark.range(20000).selectExpr("id % 5000 AS item_id", "array(id, id + 1) AS tags",
                                      "CAST(id % 7 AS FLOAT) AS score", "CAST(id % 100 AS SMALLINT) AS bucket",
                                      "named_struct('a', id, 'b', 'x') AS info").write.saveAsTable("prod.events")
        # ANALYZE ... FOR ALL COLUMNS refuses nested types: the others by name
        spark.sql("ANALYZE TABLE prod.events COMPUTE STATISTICS FOR COLUMNS item_id, score, bucket")
    query = "SELECT * FROM prod.events e JOIN prod.item i ON e.item_id = i.id WHERE e.score > 3 AND e.bucket < 40"
    spark.conf.set("spark.sql.cbo.enabled", "true")
    try:
        path = capture(query, tmp_path / "e.yaml", source="e.sql")
        direct_joins = direct_plan(spark, query)
    finally:
        spark.conf.unset("spark.sql.cbo.enabled")
    schema = yaml.safe_load(path.read_text())["tables"]["events"]["schema"]
    assert schema == {"item_id": "long", "tags": "array<bigint>", "score": "float", "bucket": "smallint",
                      "info": "struct<a:bigint,b:string>"}
    record, joins, estimates = replayed_plan(session, path)
    assert record.status == "passed", record.message
    assert (joins, estimates) == direct_joins


def test_a_bucketed_table_replays_its_bucket_spec_and_a_partitioned_one_its_partitions(session, warehouse, tmp_path):
    spark = warehouse
    if not spark._jsparkSession.catalog().tableExists("prod", "orders_b"):
        for name, buckets in (("orders_b", 8), ("customers_b", 8)):
            spark.range(4000).selectExpr("id % 500 AS customer", "id AS amount").write \
                .bucketBy(buckets, "customer").sortBy("customer").saveAsTable(f"prod.{name}")
            spark.sql(f"ANALYZE TABLE prod.{name} COMPUTE STATISTICS")
        spark.range(4000).selectExpr("id % 500 AS customer", "id % 4 AS day").write.partitionBy("day") \
            .saveAsTable("prod.visits_p")
    query = "SELECT * FROM prod.orders_b o JOIN prod.customers_b c ON o.customer = c.customer"
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        path = capture(query, tmp_path / "b.yaml", source="b.sql")
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    tables = yaml.safe_load(path.read_text())["tables"]
    assert tables["orders_b"]["bucket_by"] == {"columns": ["customer"], "buckets": 8, "sort_by": ["customer"]}
    # replayed on empty tables with that bucket spec: the sort-merge join shuffles neither side
    (case,) = expand(load_scenario(path))
    case.scenario.data["spark_conf"] = {**case.scenario.data.get("spark_conf", {}),
                                        "spark.sql.autoBroadcastJoinThreshold": -1}
    record = runner.run_case(case, session)
    top = record.observed.initial.joins[0]
    assert (top["strategy"], top["shuffles"]) == ("SortMergeJoin", {"left": 0, "right": 0}), record.message

    partitioned = capture("SELECT * FROM prod.visits_p v JOIN prod.item i ON v.customer = i.id", tmp_path / "p.yaml",
                          source="p.sql")
    text = partitioned.read_text()
    visits = yaml.safe_load(text)["tables"]["visits_p"]
    assert visits["partition_by"] == ["day"] and [p["values"] for p in visits["partition_values"]] == [[0], [1], [2], [3]]
    assert visits["stats"] == {} and "prod.visits_p was never ANALYZEd: replayed so" in text


PARTITIONED_QUERIES = {
    "one_day": "SELECT e.amount, c.region FROM prod.events_p e JOIN prod.customers_p c ON e.customer = c.customer "
               "WHERE e.day = DATE'2024-01-03'",
    "all_days": "SELECT e.amount, c.region FROM prod.events_p e JOIN prod.customers_p c ON e.customer = c.customer",
    "dpp": "SELECT e.amount, d.name FROM prod.events_p e JOIN prod.days_p d ON e.day = d.day WHERE d.name = 'd3'",
}


def _partitioned_warehouse(spark, analyze: bool) -> str:
    """A fact partitioned by day and region, with data (one large day), and two dimensions."""
    suffix = "_a" if analyze else "_n"
    if not spark._jsparkSession.catalog().tableExists("prod", f"events_p{suffix}"):
        spark.range(60000).selectExpr("id % 3000 AS customer", "CAST(id AS DOUBLE) AS amount",
                                      "date_add(DATE'2024-01-01', CAST(CASE WHEN id < 40000 THEN 0 ELSE id % 6 END "
                                      "AS INT)) AS day", "CASE WHEN id % 7 = 0 THEN NULL ELSE concat('r/', id % 3) "
                                      "END AS region") \
            .write.partitionBy("day", "region").saveAsTable(f"prod.events_p{suffix}")
        spark.range(3000).selectExpr("id AS customer", "concat('r', id % 4) AS region") \
            .write.saveAsTable(f"prod.customers_p{suffix}")
        spark.range(6).selectExpr("date_add(DATE'2024-01-01', CAST(id AS INT)) AS day", "concat('d', id) AS name") \
            .write.saveAsTable(f"prod.days_p{suffix}")
        if analyze:
            for table in ("events_p", "customers_p", "days_p"):
                spark.sql(f"ANALYZE TABLE prod.{table}{suffix} COMPUTE STATISTICS")
            spark.sql(f"ANALYZE TABLE prod.events_p{suffix} PARTITION (day, region) COMPUTE STATISTICS")
    return suffix


@pytest.mark.parametrize("analyze", [True, False], ids=["analyzed", "never-analyzed"])
@pytest.mark.parametrize("name", list(PARTITIONED_QUERIES))
def test_a_partitioned_table_round_trips_through_capture(session, warehouse, tmp_path, name, analyze,
                                                         assert_replays):
    """Real partitioned parquet tables with data, captured and replayed on the same Spark,
    plan as the original query: the same joins, build sides, shuffles, pruning and sizes
    (the pruned sides' sizes are the kept partitions' files)."""
    spark = warehouse
    suffix = _partitioned_warehouse(spark, analyze)
    query = PARTITIONED_QUERIES[name].replace("_p ", f"_p{suffix} ")
    spark.conf.set("spark.sql.adaptive.enabled", "false")  # planned only: no pruning left to AQE
    try:
        path = capture(query, tmp_path / "p.yaml", source="p.sql")
        frame = checksum_frame(spark.sql(query))
        names = {f"{t}{suffix}": f"{t}{suffix}" for t in ("events_p", "customers_p", "days_p")}
        partitions = spark.sql(f"SHOW PARTITIONS prod.events_p{suffix}").count()
        direct = [(j.strategy, j.build_side, j.tables, j.shuffles, j.scans)
                  for j in jvm_plans.join_nodes(jvm_plans.current_plan(frame), names)]
        direct_estimates = jvm_plans.join_estimates(frame)
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
    text = path.read_text()
    data = yaml.safe_load(text)
    events = data["tables"][f"events_p{suffix}"]
    assert events["partition_by"] == ["day", "region"] and "not replayed" not in text
    assert len(events["partition_values"]) == partitions > 6
    assert any(p["values"][1] is None for p in events["partition_values"])  # the null partition
    assert all(("rows" in p) is analyze for p in events["partition_values"])  # ANALYZEd partition by partition
    assert (events["stats"] == {}) is (not analyze)
    if name == "dpp":  # what Spark planned for the fact's scan, written as an expectation
        assert data["expect"]["dynamic_pruning"] == [{"table": f"events_p{suffix}", "pruned": True,
                                                      "reuses_broadcast": True}]
    assert_replays(path, direct, direct_estimates)


def test_more_than_10000_partitions_keep_the_largest_and_count_the_rest(write_scenario):
    from harness.capturing.catalog import kept_partitions
    partitions = [{"values": [i], "size_bytes": 1000 + i, "rows": 1} for i in range(10_003)]
    notes = []
    kept, omitted = kept_partitions(partitions, "prod.big", notes)
    assert len(kept) == 10_000 and [p["values"][0] for p in kept][:2] == [3, 4]  # the 3 smallest left out
    assert omitted == {"count": 3, "size_bytes": 1000 + 1001 + 1002, "rows": 3}
    assert "the 10,000 largest are replayed; the other 3 (3,003 bytes)" in notes[0]
    assert kept_partitions(partitions[:10], "prod.small", []) == (partitions[:10], None)
    # the table's totals stay its own: the scenario loads, and refuses omitted figures that do not add up
    listed = "".join(f"      - {{values: [{p['values'][0]}], size_bytes: {p['size_bytes']}, rows: 1}}\n" for p in kept)
    total = sum(p["size_bytes"] for p in partitions)
    text = f"""\
id: big
description: more partitions than a scenario holds
tables:
  a:
    schema: {{k: long, p: int}}
    stats: {{size_bytes: {total}, rows: 10003}}
    partition_by: [p]
    partition_values:
{listed}    partitions_omitted: {{count: 3, size_bytes: 3003, rows: 3}}
  b:
    schema: {{k: long}}
    stats: {{size_bytes: 100}}
join: {{left: a, right: b, on: [k]}}
expect: {{}}
"""
    assert load_scenario(write_scenario(text)).data["tables"]["a"]["partitions_omitted"]["count"] == 3
    from harness.scenario.errors import ScenarioError
    with pytest.raises(ScenarioError, match=r"the listed and omitted partitions hold 60,027,997 bytes, stats.size_bytes says 60,028,003"):
        load_scenario(write_scenario(text.replace("size_bytes: 3003", "size_bytes: 3000")))


def test_a_folder_of_queries_captured_into_one_shared_catalog_replays_each_plan(session, warehouse, tmp_path):
    from harness.capturing.shared_catalog import SharedCatalog
    out = tmp_path / "scenarios" / "ours"
    out.mkdir(parents=True)
    shared = SharedCatalog.at(out / "catalog.yaml")
    second = "SELECT * FROM prod.sales s JOIN prod.item i ON s.item_id = i.id WHERE i.price > 95"
    paths = [capture(QUERY, out, source="q1.sql", catalog=shared), capture(second, out, source="q2.sql", catalog=shared),
             capture(VIEW_QUERY, out, source="q3.sql", catalog=shared)]
    catalog = yaml.safe_load((out / "catalog.yaml").read_text())
    assert list(catalog["tables"]) == ["sales", "item", "store", "date_dim", "pricey_items"]  # each table once
    for path, query in zip(paths, (QUERY, second, VIEW_QUERY)):
        data = yaml.safe_load(path.read_text())
        assert "tables" not in data and data["catalog"] == "catalog.yaml"
        assert "WARNING" not in path.read_text()  # the self-check read the catalog
        record, joins, estimates = replayed_plan(session, path)
        direct_joins, _ = direct_plan(warehouse, query)
        assert record.status == "passed", record.message
        assert joins == direct_joins
    assert list(load_scenario(paths[1]).data["tables"]) == ["sales", "item"]  # reads only its own

    # captured again after the warehouse changed: the catalog's statistics are refreshed
    before = catalog["tables"]["item"]["stats"]["rows"]
    warehouse.sql("CREATE TABLE IF NOT EXISTS prod.item_more AS SELECT * FROM prod.item")
    try:
        warehouse.sql("INSERT INTO prod.item SELECT id + 5000, price, name FROM prod.item_more")
        warehouse.sql("ANALYZE TABLE prod.item COMPUTE STATISTICS FOR ALL COLUMNS")
        capture(second, out, source="q2.sql", catalog=SharedCatalog.at(out / "catalog.yaml"))
        refreshed = yaml.safe_load((out / "catalog.yaml").read_text())
        assert refreshed["tables"]["item"]["stats"]["rows"] == 2 * before
        assert list(refreshed["tables"]) == list(catalog["tables"])  # in place: the view still reads it from above
        assert load_scenario(paths[0]).data["tables"]["item"]["stats"]["rows"] == 2 * before
    finally:
        warehouse.sql("INSERT OVERWRITE TABLE prod.item SELECT * FROM prod.item_more")
        warehouse.sql("ANALYZE TABLE prod.item COMPUTE STATISTICS FOR ALL COLUMNS")
        warehouse.sql("DROP TABLE prod.item_more")


def test_a_name_two_databases_give_their_tables_stays_apart_in_a_shared_catalog(warehouse, tmp_path):
    from harness.capturing.shared_catalog import SharedCatalog
    warehouse.sql("CREATE DATABASE IF NOT EXISTS other")
    warehouse.sql("CREATE TABLE IF NOT EXISTS other.item USING parquet AS SELECT id, price FROM prod.item LIMIT 10")
    try:
        out = tmp_path / "w"
        out.mkdir()
        shared = SharedCatalog.at(out / "catalog.yaml")
        capture("SELECT * FROM prod.sales s JOIN prod.item i ON s.item_id = i.id", out, source="a.sql",
                catalog=shared)
        path = capture("SELECT * FROM prod.sales s JOIN other.item i ON s.item_id = i.id", out, source="b.sql",
                       catalog=shared)
        assert list(yaml.safe_load((out / "catalog.yaml").read_text())["tables"]) == ["sales", "item", "other_item"]
        assert "other_item" in yaml.safe_load(path.read_text())["join"]["sql"]
    finally:
        warehouse.sql("DROP TABLE IF EXISTS other.item")


def test_a_runtime_filter_is_captured_and_the_replay_plans_it_again(session, warehouse, tmp_path):
    """A bloom filter on the fact's scan built from the filtered item table: the file says
    so (`expect.runtime_filters`), and the self-check compares the replay's filters."""
    from harness.core.vocab import spark_version
    if spark_version(session.versions["spark"]) < spark_version("3.3.0"):
        pytest.skip("no runtime filters before Spark 3.3.0")
    query = "SELECT s.amount, i.name FROM prod.sales s JOIN prod.item i ON s.item_id = i.id WHERE i.price = 7"
    keys = {"spark.sql.autoBroadcastJoinThreshold": "-1", "spark.sql.optimizer.runtime.bloomFilter.enabled": "true",
            "spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold": "1024"}
    for key, value in keys.items():
        warehouse.conf.set(key, value)
    try:
        path = capture(query, tmp_path / "bloom.yaml", source="bloom.sql")
    finally:
        for key in keys:
            warehouse.conf.unset(key)
    text = path.read_text()
    assert "WARNING" not in text  # the self-check found the replay's filters the real query's
    data = yaml.safe_load(text)
    assert data["expect"]["runtime_filters"] == [{"table": "sales", "filter": "bloom_filter", "from": "item"}]
    record, _, _ = replayed_plan(session, path)
    assert record.status == "passed", record.message
    assert [f["table"] for f in record.observed.initial.runtime_filters] == ["sales"]


def test_what_pyspark_sets_in_every_session_is_not_captured_as_the_users_config(warehouse):
    """PySpark 4.0+ turns artifact isolation off in every session it starts: that is no
    choice of the user's, and a replay on a version without the key would say so in every
    record. A value the user set otherwise is theirs."""
    from harness.capturing.to_scenario import _pyspark_defaults, session_join_conf
    key = "spark.sql.artifact.isolation.enabled"
    if key not in _pyspark_defaults():
        pytest.skip("this PySpark sets no SQL config of its own")
    spark = warehouse
    assert spark.conf.get(key) == _pyspark_defaults()[key]
    assert key not in session_join_conf(spark)
    spark.conf.set(key, "true")
    try:
        assert session_join_conf(spark)[key] == "true"
    finally:
        spark.conf.set(key, _pyspark_defaults()[key])
