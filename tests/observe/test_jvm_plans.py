"""Plan inspection from the JVM plan objects, before and after execution."""
from pyspark.sql import functions as F

from harness.observe import jvm_plans


def frames(session, hint=None, how="inner"):
    spark = session.spark
    left = spark.range(0, 100000).select((F.col("id") % 100).alias("k"), F.col("id").alias("v"))
    right = spark.range(0, 100).select(F.col("id").alias("k"))
    if hint:
        right = right.hint(hint)
    return left.join(right, "k", how)


def test_broadcast_hash_join_build_right(session):
    nodes = jvm_plans.join_nodes(jvm_plans.current_plan(frames(session)))
    assert [(n.strategy, n.build_side, n.join_type) for n in nodes] == [("BroadcastHashJoin", "right", "Inner")]
    assert "k" in nodes[0].left_keys


def test_merge_hint_gives_sort_merge(session):
    nodes = jvm_plans.join_nodes(jvm_plans.current_plan(frames(session, "merge", "left_outer")))
    assert [(n.strategy, n.build_side, n.join_type) for n in nodes] == [("SortMergeJoin", "none", "LeftOuter")]


def test_final_adaptive_plan_is_walked_through_query_stages(session):
    spark = session.spark
    spark.conf.set("spark.sql.adaptive.enabled", "true")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        df = frames(session)
        before = jvm_plans.current_plan(df)
        assert jvm_plans.is_adaptive(before) and not jvm_plans.final_plan_reached(before)
        assert [n.strategy for n in jvm_plans.join_nodes(before)] == ["SortMergeJoin"]
        df.collect()
        after = jvm_plans.current_plan(df)
        assert jvm_plans.final_plan_reached(after)
        assert [n.strategy for n in jvm_plans.join_nodes(after)] == ["SortMergeJoin"]
        assert "QueryStage" in jvm_plans.plan_text(after) or "AQEShuffleRead" in jvm_plans.plan_text(after)
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
        spark.conf.unset("spark.sql.adaptive.enabled")


def test_estimates_from_optimized_plan(session):
    estimates = jvm_plans.join_estimates(frames(session))
    assert len(estimates) == 1
    # a projection of spark.range: rows x (8 + column widths) / 2
    assert estimates[0]["right"]["size_in_bytes"] == 100 * (8 + 8) // 2
    assert estimates[0]["left"]["size_in_bytes"] == 100000 * (8 + 16) // 2


def test_chain_reports_every_join_in_order(session):
    spark = session.spark
    a = spark.range(0, 1000).select(F.col("id").alias("k"))
    b = spark.range(0, 10).select(F.col("id").alias("k"))
    c = spark.range(0, 10).select(F.col("id").alias("k"))
    df = a.join(b.hint("merge"), "k").join(c, "k")
    assert [n.strategy for n in jvm_plans.join_nodes(jvm_plans.current_plan(df))] == ["BroadcastHashJoin", "SortMergeJoin"]


def test_java_errors_are_one_line_with_class(session):
    from harness.spark.errors import describe_error
    try:
        session.spark.sparkContext._jvm.java.lang.Integer.parseInt("x")
    except Exception as exc:
        error = describe_error(exc)
    assert error.cls == "NumberFormatException"
    assert error.java_class == "java.lang.NumberFormatException"
    assert error.message == 'For input string: "x"'


def test_long_plan_text_is_read_whole_in_pieces(session):
    """A plan text longer than several Py4J pieces (a pool literal with non-ASCII names,
    characters outside the BMP, backslashes and quotes) reads back exactly as the JVM
    prints it, cut at the report's limit."""
    names = ",".join(f"'naïve \\\\ 名前 😀 {i}'" for i in range(1500))
    frame = session.spark.range(5).selectExpr(f"element_at(array({names}), CAST(id AS INT) + 1) AS n")
    plan = jvm_plans.current_plan(frame)
    whole = str(plan.toString())
    assert len(whole) > 3 * jvm_plans.TEXT_PIECE
    assert jvm_plans.jvm_text(plan) == whole
    assert jvm_plans.jvm_text(plan, limit=7001) == whole[:7001]
    expected = whole if len(whole) <= jvm_plans.PLAN_TEXT_LIMIT else whole[:jvm_plans.PLAN_TEXT_LIMIT] + "\n... (truncated)"
    assert jvm_plans.plan_text(plan) == expected


def test_top_join_is_the_first_join_node(session):
    chain = frames(session).join(session.spark.range(0, 50).selectExpr("id AS v").hint("merge"), "v")
    plan = jvm_plans.current_plan(chain)
    first = jvm_plans.join_nodes(plan)[0]
    assert jvm_plans.top_join(plan) == {"strategy": first.strategy, "build_side": first.build_side}
    assert jvm_plans.top_join(jvm_plans.current_plan(session.spark.range(3))) == {"strategy": "none", "build_side": "none"}


def test_the_subquery_shortcut_reads_what_the_walk_reads(session, monkeypatch):
    """A plan that holds no subquery is told so in a few JVM calls; every plan, with
    subqueries or without, static, adaptive before and after it ran, reads the same
    subquery joins as a walk of every operator."""
    spark = session.spark
    spark.range(1000).selectExpr("id AS k", "id % 10 AS g").createOrReplaceTempView("sq_a")
    spark.range(100).selectExpr("id AS k", "id % 5 AS r").createOrReplaceTempView("sq_b")
    queries = ["SELECT * FROM sq_a JOIN sq_b ON sq_a.k = sq_b.k",
               "SELECT sq_a.k, (SELECT max(x.r) FROM sq_b x JOIN sq_b y ON x.k = y.k) FROM sq_a",
               "SELECT sq_a.k, (SELECT max(r) FROM sq_b) FROM sq_a"]
    found = []
    try:
        for aqe in ("false", "true"):
            spark.conf.set("spark.sql.adaptive.enabled", aqe)
            for text in queries:
                frame = spark.sql(text)
                plans = [jvm_plans.current_plan(frame)]
                frame.collect()
                plans.append(frame._jdf.queryExecution().executedPlan())  # after it ran: the final plan
                for plan in plans:
                    quick = jvm_plans.subquery_joins(plan)
                    with monkeypatch.context() as walk_only:
                        walk_only.setattr(jvm_plans, "_holds_no_subquery", lambda p: False)
                        walked = jvm_plans.subquery_joins(plan)
                    assert [(s["kind"], [j["strategy"] for j in s["joins"]]) for s in quick] == \
                        [(s["kind"], [j["strategy"] for j in s["joins"]]) for s in walked]
                    found.append(len(quick))
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
    assert found == [0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0]
    # a subquery that holds no join (a dynamic pruning subquery over a broadcast scan, a
    # scalar aggregate) is told so without a walk
    assert jvm_plans._holds_no_subquery(jvm_plans.current_plan(spark.sql(queries[2])))
    assert not jvm_plans._holds_no_subquery(jvm_plans.current_plan(spark.sql(queries[1])))


def test_join_nodes_name_the_tables_a_cache_was_built_from_not_its_joins(session, tmp_path):
    spark = session.spark
    names = {"jn_fact": "fact", "jn_dim": "dim", "jn_other": "other"}
    for table, rows in (("jn_fact", 5000), ("jn_dim", 50), ("jn_other", 50)):
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.range(rows).selectExpr("id % 50 AS k", "id AS v").write.parquet(str(tmp_path / table))
        spark.sql(f"CREATE TABLE {table} USING parquet LOCATION '{tmp_path / table}'")
    try:
        spark.sql("CACHE LAZY TABLE jn_dim")
        cached_join = spark.table("jn_other").join(spark.table("jn_fact"), "k").select("k").cache()
        query = spark.table("jn_fact").join(spark.table("jn_dim"), "k").join(cached_join.hint("broadcast"), "k")
        nodes = jvm_plans.join_nodes(jvm_plans.current_plan(query), names)
        # the query's own two joins; the join inside the cache ran when it was built
        assert len(nodes) == 2, [(n.strategy, n.tables) for n in nodes]
        assert nodes[0].tables == ["dim", "fact", "other"]
        assert nodes[1].tables == ["dim", "fact"]  # dim read through its cache
    finally:
        spark.catalog.clearCache()
        for table in names:
            spark.sql(f"DROP TABLE IF EXISTS {table}")


# A Hive serde table's join node, capture and replay: tests/capturing/test_capture_hive_formats.py.


def test_a_size_spark_could_not_take_from_anywhere_is_said_to_be_its_default(session):
    from harness.capturing.catalog import _size_source
    default = int(session.spark.conf.get("spark.sql.defaultSizeInBytes").rstrip("b"))
    assert _size_source(session.spark, default).startswith(
        f"Spark's default for a table it cannot size (spark.sql.defaultSizeInBytes, {default:,} B")
    assert _size_source(session.spark, 13890) == "Spark's estimate from its files"
