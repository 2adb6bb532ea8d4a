"""harness.spark.streaming: a stream-stream join with watermarks over file streams gives the
same rows as the batch join of the same tables."""
from harness.check.agreement import run_agreement
from harness.check.runner import run_case
from harness.scenario.model import expand, load_scenario

STREAM = """\
id: stream_probe
description: impressions joined to clicks within an hour
tables:
  impressions:
    rows: 200
    columns:
      ad: {sequence: {}}
      its: {uniform: {min: "2024-01-01T00:00:00", max: "2024-01-01T06:00:00"}, type: timestamp}
  clicks:
    rows: 100
    columns:
      cad: {key: {cardinality: 200}}
      cts: {uniform: {min: "2024-01-01T00:00:00", max: "2024-01-01T07:00:00"}, type: timestamp}
stream:
  watermarks:
    impressions: {column: its, delay: "10 minutes"}
    clicks: {column: cts, delay: "20 minutes"}
join:
  left: impressions
  right: clicks
  type: left_outer
  condition: "l.ad = r.cad AND r.cts >= l.its AND r.cts <= l.its + INTERVAL 1 HOUR"
expect:
  strategy: StreamingSymmetricHashJoin
"""


def test_stream_join_is_observed_and_agrees_with_batch_strategies(session, write_scenario):
    case = expand(load_scenario(write_scenario(STREAM)))[0]
    record = run_case(case, session)
    assert record.status == "passed", record.message
    assert record.observed.initial.top["strategy"] == "StreamingSymmetricHashJoin"
    assert record.observed.executed and record.observed.stream_batches >= 3  # data + two flush batches
    check = run_agreement(case, session)
    assert check.status == "passed", check.message
    assert check.runs[0].forced == "as written" and check.runs[0].strategy == "StreamingSymmetricHashJoin"
    assert check.runs[0].rows >= 200  # a left outer join keeps every impression
