"""What the capture round trips share: a query captured with the broadcast threshold at
its real top join's smaller side (one byte more in the replay and it would not
broadcast), beside what the real query planned: its join nodes and estimates."""
from __future__ import annotations

from harness.capturing.to_scenario import capture
from harness.observe import jvm_plans
from harness.spark.query import checksum_frame

THRESHOLD = "spark.sql.autoBroadcastJoinThreshold"


def captured_at_threshold(spark, text: str, out, names: dict, conf: dict) -> tuple:
    """(the file written, the real join nodes, the real estimates), the session's configs
    `conf` set while the query is planned and captured, then unset."""
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        top = jvm_plans.join_estimates(spark.sql(text), logical=False)[0]
        spark.conf.set(THRESHOLD, str(min(side["size_in_bytes"] for side in top.values())))
        frame = checksum_frame(spark.sql(text))
        joins = [(j.strategy, j.build_side, j.tables, j.shuffles, j.scans)
                 for j in jvm_plans.join_nodes(jvm_plans.current_plan(frame), names)]
        estimates = jvm_plans.join_estimates(frame)
        path = capture(text, out, spark=spark)
    finally:
        for key in (*conf, THRESHOLD):
            spark.conf.unset(key)
    return path, joins, estimates
