"""The suite through a real Spark Connect server on loopback (started from the installed
PySpark's own jars): cases observed without a JVM in the client, a hint warning's
expectation reported as not checkable, scenario SQL refused before it reaches the server,
a runaway case interrupted through its operation tag while the next case still runs.

Every run is a pytest subprocess: a Connect session marks its process as Connect-only
(PySpark's SPARK_CONNECT_MODE_ENABLED), which this process's local Spark must not see."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.core.records import WARNINGS_UNOBSERVED
from harness.deploy.connect_server import ConnectServer, compare, server_jar

try:
    import grpc  # noqa: F401
    import pyarrow  # noqa: F401
    CLIENT = True
except ImportError:
    CLIENT = False

pytestmark = pytest.mark.skipif(server_jar() is None or not CLIENT,
                                reason="this PySpark ships no Spark Connect server, or the client's packages are missing")

ROOT = Path(__file__).resolve().parents[2]

SMALL = """\
id: a_connect_small
description: a broadcast join and a warning expectation, through Spark Connect
tables:
  fact: {rows: 5000, columns: {k: {key: {cardinality: 100}}, v: {uniform: {min: 0, max: 9}}}}
  dim: {rows: 100, columns: {k: {sequence: {}}}}
join: {left: fact, right: dim, on: [k]}
matrix:
  conf:
    spark.sql.adaptive.enabled: [true, false]
expect:
  strategy: BroadcastHashJoin
  build_side: right
  rows: 5000
  overrides:
    - when: {conf: {spark.sql.adaptive.enabled: false}}
      warnings: []
"""
REFUSED = """\
id: b_connect_refused
description: reflection in scenario SQL is refused before anything reaches the server
tables:
  a: {rows: 10, columns: {k: {sequence: {}}}}
  b: {rows: 10, columns: {k: {sequence: {}}}}
join:
  sql: SELECT reflect('java.lang.System', 'exit', 1) AS x FROM a JOIN b ON a.k = b.k
expect: {strategy: BroadcastHashJoin}
"""
RUNAWAY = """\
id: c_connect_runaway
description: a cross join far too large for its timeout
tables:
  # many short tasks: once interrupted, the server's cores are free again within a task
  a: {rows: 200000, partitions: 1000, columns: {k: {sequence: {}}}}
  b: {rows: 200000, columns: {k: {sequence: {}}}}
join: {left: a, right: b, type: cross}
timeout: 8
expect: {rows: 40000000000}
"""
AFTER = """\
id: d_connect_after
description: runs after the runaway case was interrupted
# The interrupted cross join's running tasks finish before this one gets the server's
# cores (each is short: 7 s measured; with two long tasks it was 51 s, and over 120 s
# on a loaded machine); the margin is for a loaded machine.
timeout: 400
tables:
  a: {rows: 1000, columns: {k: {sequence: {}}}}
  b: {rows: 100, columns: {k: {sequence: {}}}}
join: {left: a, right: b, on: [k]}
expect: {strategy: BroadcastHashJoin, rows: 100}
"""

STREAM = """\
id: e_connect_stream
description: a stream-stream join through Spark Connect; its warning expectation is not checkable there
tables:
  views:
    rows: 60
    columns:
      ad: {key: {cardinality: 20}}
      vts: {uniform: {min: "2024-01-01 00:00:00", max: "2024-01-01 01:00:00"}, type: timestamp}
  clicks:
    rows: 30
    columns:
      cad: {key: {cardinality: 20}}
      cts: {uniform: {min: "2024-01-01 00:00:00", max: "2024-01-01 01:00:00"}, type: timestamp}
stream:
  watermarks:
    views: {column: vts, delay: "10 minutes"}
    clicks: {column: cts, delay: "10 minutes"}
join:
  left: views
  right: clicks
  condition: "l.ad = r.cad AND r.cts >= l.vts AND r.cts <= l.vts + INTERVAL 1 HOUR"
expect:
  strategy: StreamingSymmetricHashJoin
  warnings: []
"""
COST = """\
id: f_connect_cost
description: a sort-merge join's cost, read from the plan metrics the server sent with the result
tables:
  fact: {rows: 5000, columns: {k: {key: {cardinality: 100}}}}
  dim: {rows: 100, columns: {k: {sequence: {}}}}
join: {left: fact, right: dim, on: [k]}
spark_conf:
  spark.sql.autoBroadcastJoinThreshold: -1
  spark.sql.adaptive.autoBroadcastJoinThreshold: -1
expect:
  plan: final
  strategy: SortMergeJoin
  cost:
    shuffle_records: {left: 5000, right: 100}
    output_rows: 5000
    spill_bytes: 0
    tasks: {min: 1}
"""


@pytest.fixture(scope="module")
def server():
    with ConnectServer(driver_memory="2g", log=lambda line: None) as running:
        yield running


def _run(folder: Path, files: dict, url: str, report: Path) -> tuple[subprocess.CompletedProcess, dict]:
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text))
    proc = subprocess.run([sys.executable, "-m", "pytest", str(folder), "-q", "-p", "no:cacheprovider", "--no-agree",
                           "--spark-remote", url, "--report-dir", str(report)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    results = next(report.glob("*/results.json"), None)
    return proc, json.loads(results.read_text()) if results else {}


def test_the_suite_through_spark_connect(server, tmp_path):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    proc, results = _run(folder, {"a.yaml": SMALL, "b.yaml": REFUSED, "c.yaml": RUNAWAY, "d.yaml": AFTER,
                                  "e.yaml": STREAM, "f.yaml": COST},
                         server.url, tmp_path / "reports")
    out = proc.stdout + proc.stderr
    by_id = {r["case_id"]: r for r in results["cases"]}

    # observed without a JVM in the client: strategy and build side of the initial and final plan
    aqe = by_id["a_connect_small[aqe=on]"]
    assert aqe["status"] == "passed", aqe["message"]
    assert aqe["master"] == server.url and aqe["observed"]["rows"] == 5000
    assert aqe["observed"]["initial"]["joins"][0]["build_side"] == "right"
    assert aqe["observed"]["final"]["joins"][0]["strategy"] == "BroadcastHashJoin"
    assert "warnings" in aqe["observed"]["unavailable"]

    # hint warnings cannot be observed: the case passed on what was checked, and says so
    static = by_id["a_connect_small[aqe=off]"]
    # and that its answer was not compared with the reference engine (it reads inputs through a JVM)
    assert (static["status"], static["message"]) == (
        "passed", f"{WARNINGS_UNOBSERVED}; reference: not compared (not run through Spark Connect "
                  "(the reference reads the inputs through the JVM))")

    # refused by the guard on Spark's parsed plan: one line naming file, line and field
    assert "b.yaml:7: join.sql: reflection (reflect) is not allowed" in out
    assert not any(case.startswith("b_connect_refused") for case in by_id)

    # interrupted through its operation tag; the next case of the same run still passes
    assert by_id["c_connect_runaway"]["status"] == "timeout"
    assert by_id["d_connect_after"]["status"] == "passed"

    # a stream-stream join runs through Connect; what Connect cannot see is said there too
    stream = by_id["e_connect_stream"]
    assert stream["observed"]["initial"]["joins"][0]["strategy"] == "StreamingSymmetricHashJoin"
    assert stream["status"] == "passed" and "warnings" in stream["observed"]["unavailable"]
    assert results["summary"]["warnings_unobserved"] == 2

    # a join's cost from the plan metrics sent with the result; its stage's tasks are not among them
    cost = by_id["f_connect_cost"]
    assert cost["observed"]["cost"]["left"]["shuffle_records"] == 5000, cost["observed"]["cost"]
    assert cost["observed"]["cost"]["output_rows"] == 5000 and cost["observed"]["cost"]["tasks"] is None
    assert "cost tasks (Spark Connect sends no stage or task figures with a result)" in cost["message"], cost


def test_comparison_names_what_differs_and_leaves_out_what_connect_cannot_see():
    from tests.conftest import fake_record, fake_results
    local = fake_record("x[inner]", "BroadcastHashJoin", "right")
    local["observed"]["warnings"] = ["Hint (strategy=merge) is not supported"]
    local["observed"]["estimates"] = [{"left": {"size_in_bytes": 36_000_000, "row_count": None},
                                       "right": {"size_in_bytes": 800, "row_count": None}}]
    remote = json.loads(json.dumps(local))
    remote["observed"].pop("warnings")
    remote["observed"]["unavailable"] = ["warnings"]
    remote["observed"]["estimates"] = [{"left": {"size_in_bytes": 36_000_000, "row_count": None, "printed": "34.3 MiB"},
                                        "right": {"size_in_bytes": 800, "row_count": None, "printed": "800.0 B"}}]
    other = fake_record("y[inner]", "SortMergeJoin")
    changed = fake_record("y[inner]", "BroadcastHashJoin", "left")
    comparison = compare(fake_results([local, other]), fake_results([remote, changed]))
    assert comparison["cases_compared"] == 2
    assert comparison["differing_cases"] == ["y[inner]"]
    assert "strategy" in comparison["differences"]

    remote["observed"]["estimates"][0]["left"]["printed"] = "35.0 MiB"  # not what Spark prints for that size
    comparison = compare(fake_results([local]), fake_results([remote]))
    assert comparison["differences"]["estimate"][0][0] == "x[inner]"


def test_a_server_that_does_not_answer_is_one_line_per_file_not_a_hang(tmp_path):
    """Nothing listens on the port: each file says so in one line, in seconds (the client's
    retries are bounded and a server that did not answer is not asked again at once)."""
    from harness.deploy.cluster import free_port
    folder = tmp_path / "scenarios"
    folder.mkdir()
    url = f"sc://127.0.0.1:{free_port()}"
    import time
    started = time.monotonic()
    proc, _ = _run(folder, {"d1.yaml": AFTER, "d2.yaml": AFTER.replace("d_connect_after", "d_connect_again")},
                   url, tmp_path / "reports")
    took = time.monotonic() - started
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"d1.yaml: (file): no Spark session: Spark Connect server {url} does not answer (UNAVAILABLE" in out
    assert f"d2.yaml: (file): no Spark session: Spark Connect server {url} did not answer" in out
    assert "Traceback" not in out
    assert took < 90


def test_sigterm_stops_the_server_jvm(tmp_path):
    """`make connect-test` interrupted: the server's JVM goes with it."""
    import os
    import signal
    import time
    script = ("from harness.deploy.connect_server import ConnectServer\n"
              "import time\n"
              "with ConnectServer(driver_memory='1g', log=lambda line: print(line, flush=True)) as server:\n"
              "    print('PORT', server.port, flush=True)\n"
              "    time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    port = None
    for line in proc.stdout:
        if line.startswith("PORT"):
            port = line.split()[1]
            break
    assert port is not None
    marker = f"join-harness-connect-{port}"
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0  # the server runs
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0:
        time.sleep(0.5)
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 1


def test_the_server_of_3_4_and_3_5_comes_from_maven_central(tmp_path, monkeypatch):
    """Their wheels ship no server jar: that version's spark-connect_2.12 is fetched into
    the jar cache; one that cannot be fetched is one line naming what to put where."""
    from harness.core.options import RunOptions
    from harness.deploy import connect_server
    assert connect_server.server_package("3.5.9").words() == "org.apache.spark:spark-connect_2.12:3.5.9"
    assert connect_server.server_package("3.3.4") is None and connect_server.server_package("4.3.0") is None
    monkeypatch.setattr(connect_server, "server_jar", lambda: None)
    monkeypatch.setattr("pyspark.__version__", "3.5.9")
    options = RunOptions(jar_cache=str(tmp_path / "jars"), maven_repository=(tmp_path / "empty").as_uri())
    with pytest.raises(connect_server.ConnectError) as raised:
        connect_server.available_server_jar(options)
    message = str(raised.value)
    assert "org.apache.spark:spark-connect_2.12:3.5.9" in message and str(tmp_path / "jars") in message
    assert "\n" not in message


def test_a_client_that_cannot_interrupt_is_refused_in_one_line(monkeypatch):
    """A PySpark 3.4 Connect client has no operation tags (3.5+): no case could be bounded
    in time through it, so a run through it is refused before it starts."""
    from pyspark.sql.connect.session import SparkSession

    from harness.deploy.connect import unsupported_client
    assert unsupported_client() is None
    monkeypatch.delattr(SparkSession, "addTag")
    monkeypatch.setattr("pyspark.__version__", "3.4.0")
    message = unsupported_client()
    assert message.startswith("a PySpark 3.4.0 Spark Connect client cannot interrupt a query") and "\n" not in message


def test_iceberg_cases_through_connect_need_a_runtime_and_a_server_with_the_catalog(write_scenario, tmp_path,
                                                                                      monkeypatch):
    """Through Connect the tables are written by the server: an Iceberg case runs only on
    a version with a runtime and a server started with the catalog (connect-test starts
    its own with one, as a local run loads it: only for a suite that declares Iceberg)."""
    from types import SimpleNamespace

    from harness.core.options import RunOptions
    from harness.deploy import connect_server
    from harness.deploy.connect import ConnectSession
    from harness.scenario.model import expand, load_scenario
    from tests.spark.test_iceberg import ICEBERG_A
    (case,) = expand(load_scenario(write_scenario(ICEBERG_A)))
    session = SimpleNamespace(versions={"spark": "4.3.0"}, master="sc://127.0.0.1:1")
    assert ConnectSession.cannot_run(session, case) == "not available on Spark 4.3 (no Iceberg runtime)"
    session = SimpleNamespace(versions={"spark": "3.5.9"}, master="sc://127.0.0.1:1",
                              _has_iceberg_catalog=lambda: False)
    assert "has no Iceberg catalog `harness_iceberg`" in ConnectSession.cannot_run(session, case)
    session._has_iceberg_catalog = lambda: True
    assert ConnectSession.cannot_run(session, case) is None
    (sorted_case,) = expand(load_scenario(write_scenario(ICEBERG_A.replace(
        "    format: iceberg\n", "    format: iceberg\n    sort_by: [k]\n"), name="sorted.yaml")))
    assert "sort order is set through Iceberg's Java API" in ConnectSession.cannot_run(session, sorted_case)
    # the server's catalog: the runtime of the installed Spark, when it has one
    monkeypatch.setattr("pyspark.__version__", "4.3.0")
    assert connect_server.iceberg_catalog(tmp_path) == ([], {})
    monkeypatch.setattr("pyspark.__version__", "3.5.9")
    empty = RunOptions(jar_cache=str(tmp_path / "jars"), maven_repository=(tmp_path / "empty").as_uri())
    assert connect_server.iceberg_catalog(tmp_path, empty) == ([], {})  # cannot be fetched: cases say so
