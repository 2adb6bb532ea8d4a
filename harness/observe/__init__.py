"""What Spark did, read faithfully: join nodes, estimates and final adaptive plans from the
JVM's plan objects (jvm_plans) or from what a Spark Connect server prints (printed_plans),
plan text as a tree for the pictures (plan_tree), the join-selection model that says why
(model), and the one describer of records in words (describe). Imports harness.core,
harness.scenario and harness.spark.
"""
