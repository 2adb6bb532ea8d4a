"""Spark, driven: one SparkSession per worker with configs restored after every case
(session), a case's tables built once per worker (datagen, stats_only, derived), the
query as Spark gets it (query) and as a stream (streaming), what scenario SQL may do
decided from Spark's own plans (sql_guard, sql_trees), each distinct execution run once
(executions), Spark's errors in one line (errors). Imports harness.core and
harness.scenario.
"""
