"""Native engines (`--engine comet`): the jar per Spark version, plans read in Spark's
names, why Comet left a join to Spark, the `native` expectation, and a Spark version
without a jar skipping every case. A real Comet session needs Spark 3.5 or 4.1 (the
matrix); this PySpark's run checks what holds without one."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.check import compare_plans, compare_results, expect
from harness.spark import engines
from harness.spark.engines import comet

ROOT = Path(__file__).resolve().parents[2]
# The plugin by module, where the environment has no entry point for it (a matrix env).
PLUGIN = ["-p", "no:join_harness", "-p", "harness.plugin"]

SCENARIO = """\
id: under_an_engine
description: a sort-merge join, expected to run natively under Comet
tables:
  a: {rows: 100, columns: {k: {sequence: {}}}}
  b: {rows: 100, columns: {k: {sequence: {}}}}
join: {left: a, right: b, on: [k]}
spark_conf: {spark.sql.autoBroadcastJoinThreshold: -1, spark.sql.adaptive.enabled: false}
expect:
  strategy: SortMergeJoin
  rows: 100
  overrides:
    - when: {engine: comet}
      native: true
"""


def test_a_jar_for_each_spark_minor_comet_publishes_and_none_for_the_others():
    assert engines.runtime_for("comet", "4.1.4").words() == "org.apache.datafusion:comet-spark-spark4.1_2.13:1.2.0"
    assert engines.runtime_for("comet", "3.5.9").words() == "org.apache.datafusion:comet-spark-spark3.5_2.12:0.12.0"
    assert engines.runtime_for("comet", "4.3.0") is None and engines.runtime_for("comet", "3.4.4") is None
    assert engines.not_available("comet", "4.3.0") == \
        "not available: comet publishes no jar for Spark 4.3 (it does for Spark 3.5, 4.1)"


def test_an_unknown_engine_is_one_line():
    with pytest.raises(engines.UnknownEngine, match=r"^--engine 'velox': not an engine the harness knows "
                                                     r"\(known: comet\)$"):
        engines.named("velox")
    assert engines.named("") is None


def test_an_engine_s_operators_read_as_the_spark_operators_they_replace():
    assert engines.spark_name("CometSortMergeJoin") == "SortMergeJoin" and engines.is_native("CometSortMergeJoin")
    assert engines.spark_name("CometHashJoin") == "ShuffledHashJoin"
    assert engines.spark_name("CometExchange") == engines.spark_name("CometColumnarExchange") == "Exchange"
    assert engines.spark_name("SortMergeJoin") == "SortMergeJoin" and not engines.is_native("SortMergeJoin")
    assert engines.spark_class("CometShuffleExchange") == "ShuffleExchange"


def test_the_session_configs_are_the_harness_s():
    confs = comet.session_confs(Path("/jars/comet.jar"))
    assert confs["spark.plugins"] == "org.apache.spark.CometPlugin"
    assert confs["spark.shuffle.manager"].endswith("CometShuffleManager")
    assert set(comet.OWN_CONFS) >= {"spark.plugins", "spark.shuffle.manager", "spark.memory.offHeap.size"}


def _join(native, fallback=None):
    return {"strategy": "SortMergeJoin", "build_side": "none", "null_aware": False, "native": native,
            "fallback": fallback}


def test_a_native_expectation_names_why_the_engine_left_the_join_to_spark():
    reasons = ["Range: Native support for operator RangeExec is disabled."]
    assert compare_plans.compare_native(True, [_join(True)], "final") == []
    assert compare_plans.compare_native(True, [_join(False, reasons)], "final") == [
        "final plan: expected a native SortMergeJoin, Spark ran it (Range: Native support for operator RangeExec "
        "is disabled.)"]
    assert compare_plans.compare_native(False, [_join(True)], "final") == [
        "final plan: expected SortMergeJoin left to Spark, it ran natively"]


def test_a_native_expectation_cannot_pass_without_an_engine():
    [problem] = compare_plans.compare_native(True, [_join(None)], "initial")
    assert problem.startswith("native: this run has no native engine (run with --engine comet)")


def test_a_native_answer_that_is_not_spark_s_is_named_with_both_answers():
    from harness.core.records import Observation
    same = Observation(executed=True, rows=10, checksum="00ab",
                       engine_reference={"rows": 10, "checksum": "00ab", "source": "this session, comet off"})
    assert compare_results.engine_answer_differs(same) is None
    wrong = Observation(executed=True, rows=10, checksum="00ab",
                        engine_reference={"rows": 9, "checksum": "00cd", "source": "this session, comet off"})
    assert compare_results.engine_answer_differs(wrong) == (
        "the engine's answer is not Spark's: 10 rows, checksum 00ab; Spark (this session, comet off): "
        "9 rows, checksum 00cd")
    assert compare_results.engine_answer_differs(Observation(executed=True, rows=10, checksum="00ab")) is None


def test_an_override_for_an_engine_applies_only_under_it(write_scenario):
    from harness.scenario.model import expand, load_scenario
    case = expand(load_scenario(write_scenario(SCENARIO)))[0]
    assert "native" not in expect.resolve(case, "4.1.4")
    assert expect.resolve(case, "4.1.4", engine="comet")["native"] is True
    assert expect.engine_of({"spark": "4.1.4", "engine": "comet 1.2.0"}) == "comet"
    assert expect.engine_of({"spark": "4.1.4"}) == ""


@pytest.mark.skipif(engines.runtime_for("comet", __import__("pyspark").__version__) is not None,
                    reason="this PySpark has a Comet jar: the matrix runs it")
def test_a_spark_without_a_jar_skips_every_case_and_reports_beside_the_plain_ones(write_scenario, tmp_path):
    path = write_scenario(SCENARIO)
    reports = tmp_path / "reports"
    proc = subprocess.run([sys.executable, "-m", "pytest", str(path), "-q", "-p", "no:cacheprovider", *PLUGIN,
                           "--engine", "comet", "--report-dir", str(reports), "--no-agree"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    import pyspark
    results = json.loads((reports / "comet" / pyspark.__version__ / "results.json").read_text())
    [record] = results["cases"]
    assert record["status"] == "skipped", proc.stdout[-2000:]
    assert record["message"].startswith("not available: comet publishes no jar for Spark")
    assert not (reports / pyspark.__version__).exists()


def test_an_unknown_engine_on_the_command_line_is_one_line(write_scenario, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pytest", str(write_scenario(SCENARIO)), "-q", "-p",
                           "no:cacheprovider", *PLUGIN, "--engine", "velox", "--no-report"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "ERROR: --engine 'velox': not an engine the harness knows (known: comet)" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


@pytest.mark.skipif(engines.runtime_for("comet", __import__("pyspark").__version__) is None,
                    reason="Comet publishes no jar for this PySpark (3.5 and 4.1 run it)")
def test_under_comet_a_join_runs_natively_or_says_why_not(write_scenario, tmp_path):
    """Measured on 4.1.4 (Comet 1.2.0) and 3.5.9 (0.12.0): the sort-merge join over
    generated tables runs natively; the broadcast join is left to Spark, because the
    generated tables are Spark's Range, which Comet does not run by default."""
    broadcast = SCENARIO.replace("id: under_an_engine", "id: under_an_engine_broadcast").replace(
        "spark.sql.autoBroadcastJoinThreshold: -1", "spark.sql.autoBroadcastJoinThreshold: 10485760").replace(
        "strategy: SortMergeJoin", "strategy: BroadcastHashJoin").replace("native: true", "native: false")
    paths = [str(write_scenario(broadcast, "broadcast.yaml")), str(write_scenario(SCENARIO))]
    reports = tmp_path / "reports"
    proc = subprocess.run([sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider",
                           *PLUGIN, "--engine", "comet", "--report-dir", str(reports), "--no-agree"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    import pyspark
    found = reports / "comet" / pyspark.__version__ / "results.json"
    assert found.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads(found.read_text())
    assert results["versions"]["engine"].startswith("comet ")
    by_id = {record["case_id"]: record for record in results["cases"]}
    native = by_id["under_an_engine"]
    assert native["status"] == "passed", (native["message"], proc.stdout[-2000:])
    assert native["observed"]["initial"]["joins"][0]["native"] is True
    reference = native["observed"]["engine_reference"]   # Spark's own answer, the engine off
    assert (reference["rows"], reference["checksum"]) == (100, native["observed"]["checksum"])
    assert reference["source"] == "this session, comet off"

    # a plain run of this Spark into the same store: the engine's next run takes Spark's
    # answer from it instead of running the query again with the engine off
    store = ["--store", str(tmp_path / "store")]
    plain = {k: v for k, v in os.environ.items() if k != "HARNESS_ENGINE"}
    subprocess.run([sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider", *PLUGIN,
                    "--report-dir", str(reports), "--no-agree", *store], cwd=ROOT, capture_output=True, timeout=600,
                   env=plain)
    subprocess.run([sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider", *PLUGIN, "--engine",
                    "comet", "--fresh", "--report-dir", str(reports), "--no-agree", *store],
                   cwd=ROOT, capture_output=True, timeout=600)
    again = {r["case_id"]: r for r in json.loads(found.read_text())["cases"]}["under_an_engine"]
    assert again["status"] == "passed", again["message"]
    assert again["observed"]["engine_reference"]["source"].startswith("a plain run: run "), again["observed"]
    left = by_id["under_an_engine_broadcast"]
    assert left["status"] == "passed", left["message"]
    top = left["observed"]["initial"]["joins"][0]
    assert top["native"] is False and any(reason.startswith("Range: ") for reason in top["fallback"])


@pytest.mark.parametrize("key, value, says", [
    ("spark.comet.enabled", False, "is set by the harness for a native engine's session"),
    ("spark.comet.exec.shuffle.enabled", True, "is set by the harness"),
    ("spark.comet.memoryOverhead", "1g", "is set by the harness"),
    ("spark.comet.exec.memoryPool", "greedy", "is set by the harness"),
    ("spark.comet.maxTempDirectorySize", "1t", "is set by the harness"),
    ("spark.comet.testing.icebergWriteReport.dir", "/tmp", "is set by the harness"),
    ("spark.comet.shuffle.mode", "celeborn", "takes a value AUTO/NATIVE/JVM"),
    ("spark.comet.batchSize", float("nan"), "takes a finite value"),
])
def test_what_a_scenario_may_not_set_of_an_engine_is_one_line_from_the_file_alone(key, value, says):
    from harness.scenario.confs import ConfError, check
    with pytest.raises(ConfError, match=says):
        check(key, value)


def _refusal(spark, key, value):
    from harness.spark import conf_registry
    try:
        conf_registry.check_settings(spark, {"spark_conf": {key: value}})
    except conf_registry.ConfRefused as exc:
        return exc.args[1]
    return None


@pytest.mark.parametrize("key, value", [
    ("spark.comet.exec.range.enabled", True),        # boolean (1.2.0)
    ("spark.comet.batchSize", 4096),                 # number (both)
    ("spark.comet.shuffle.readBufferSize", "128k"),  # size (1.2.0)
    ("spark.comet.exec.forceShuffledHashJoin.maxBuildSize", {"estimate_of": "left", "times": 2}),  # by estimate
    ("spark.comet.shuffle.mode", "native"),          # vetted string (1.2.0)
    ("spark.comet.exec.shuffle.mode", "jvm"),        # vetted string (0.12.0)
])
def test_an_engine_config_of_a_kind_a_scenario_may_set_is_accepted_and_set_only_where_declared(session, key, value):
    from harness.spark import conf_registry
    spark = session.spark
    assert _refusal(spark, key, value) is None
    entries = engines.config_entries(spark)
    # set where this session's engine declares it; left out elsewhere (another Comet
    # version's key, or no engine)
    assert conf_registry.declared_here(spark, key) == (entries is not None and key in entries)


@pytest.mark.parametrize("key, value, says", [
    ("spark.comet.exec.rnage.enabled", True, "not a config of any engine version the harness loads .did you mean "
                                             "'spark.comet.exec.range.enabled'"),
    # where Comet runs its converter says why (`comet 1.2.0 refuses 'yes' for ...`); elsewhere
    # the kind measured from its jars does
    ("spark.comet.exec.range.enabled", "yes", "'spark.comet.exec.range.enabled' takes true or false on comet|"
                                              "^comet [\\d.]+ refuses 'yes' for 'spark.comet.exec.range.enabled': "),
    ("spark.comet.batchSize", "lots", "'spark.comet.batchSize' takes a number, size or duration on comet|"
                                      "^comet [\\d.]+ refuses 'lots' for 'spark.comet.batchSize': "),
    ("spark.comet.batchSize", True, "'spark.comet.batchSize' takes a number, size or duration on comet|"
                                    "^comet [\\d.]+ refuses 'true' for 'spark.comet.batchSize': "),
    ("spark.comet.shuffle.compression.codec", "zstd", "takes a string on comet [\\d., ]+: only booleans, numbers"),
    ("spark.comet.exec.range.enabled", {"estimate_of": "left"}, "does not take a size in bytes"),
])
def test_an_engine_config_is_typed_by_the_engine_registry_in_one_line(session, key, value, says):
    import re
    refused = _refusal(session.spark, key, value)
    assert refused is not None and re.search(says, refused), refused


def test_where_comet_runs_its_own_converter_decides_a_value():
    spark = _comet_session_or_skip()
    refused = _refusal(spark, "spark.comet.shuffle.readBufferSize", "12zb")
    assert refused is not None and refused.startswith(f"{engines.version_words(spark)} refuses '12zb' for "
                                                      "'spark.comet.shuffle.readBufferSize': "), refused


def _comet_session_or_skip():
    from harness.spark.session import get_session
    spark = get_session().spark
    if engines.config_entries(spark) is None:
        pytest.skip("Comet is not loaded in this session (HARNESS_ENGINE=comet on Spark 3.5 or 4.1)")
    if "spark.comet.shuffle.readBufferSize" not in engines.config_entries(spark):
        pytest.skip("this Comet version has no spark.comet.shuffle.readBufferSize (1.2.0 has)")
    return spark


def test_an_engine_run_reports_beside_the_plain_ones_and_the_flake_finder_reads_it_there(monkeypatch):
    from harness.deploy import flakes
    from harness.report.version_report import engine_report_dir
    assert engine_report_dir("reports", "comet") == Path("reports/comet")
    assert engine_report_dir("reports/comet", "comet") == Path("reports/comet")   # an xdist worker's options
    assert engine_report_dir("reports", "") == Path("reports")
    monkeypatch.setenv("HARNESS_ENGINE", "comet")
    assert flakes.version_report_dir("reports/flakes") == Path("reports/flakes/comet")


UI_SCRIPT = r"""
import json, re, sys, tempfile
from harness.core.options import RunOptions
from harness.observe import cost, jvm_plans
from harness.spark.session import get_session
spark = get_session(RunOptions.from_env(engine="comet")).spark
spark.conf.set("spark.sql.adaptive.enabled", "false")
folder = tempfile.mkdtemp()
spark.range(200000).selectExpr("id % 2000 AS k", "id AS v").write.parquet(folder + "/a")
spark.range(2000).selectExpr("id AS k", "id * 2 AS w").write.parquet(folder + "/b")
spark.read.parquet(folder + "/a").createOrReplaceTempView("a")
spark.read.parquet(folder + "/b").createOrReplaceTempView("b")
store = spark._jsparkSession.sharedState().statusStore()
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}

def shown(text):
    # what the SQL tab prints: "200,000", or "total (min, med, max ...)\n94.9 KiB (...)"
    first = text.split("\n")[-1].split(" (")[0].strip()
    number, _, unit = first.partition(" ")
    return float(number.replace(",", "")) * UNITS.get(unit, 1)

out = {}
for hint in ("SHUFFLE_HASH(b)", "MERGE(b)", "BROADCAST(b)"):
    frame = spark.sql(f"SELECT /*+ {hint} */ a.k, a.v, b.w FROM a JOIN b ON a.k = b.k")
    frame.collect()
    plan = frame._jdf.queryExecution().executedPlan()
    figures = cost.of(plan, jvm_plans.COST_WALK)
    executions = store.executionsList()
    ui = store.executionMetrics(executions.apply(executions.size() - 1).executionId())
    join = cost._top_join(plan, jvm_plans.COST_WALK)[0]
    metrics = cost.metrics(join)
    by_name = {name: shown(str(ui.apply(m["id"]))) for name, m in ((m["name"], m) for m in metrics.values())
               if ui.contains(m["id"])}
    out[hint] = {"operator": str(join.nodeName()), "cost": {k: figures[k] for k in ("output_rows", "peak_memory",
                 "spill_bytes")}, "ui": by_name, "not_reported": figures["not_reported"]}
print("UI " + json.dumps(out))
"""


@pytest.mark.skipif(engines.runtime_for("comet", __import__("pyspark").__version__) is None,
                    reason="Comet publishes no jar for this PySpark (3.5 and 4.1 run it)")
def test_native_joins_report_rows_build_memory_and_spill_as_the_spark_ui_shows_them():
    """Measured on 4.1.4 (Comet 1.2.0) and 3.5.9 (0.12.0): a native join's output rows,
    the memory of its build (a hash join) or buffered side (a sort-merge join) and its
    spill are Comet's own metrics, equal to the figures the SQL tab prints for them."""
    done = subprocess.run([sys.executable, "-c", UI_SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=600)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("UI ")), None)
    assert line is not None, done.stderr[-3000:]
    found = json.loads(line[3:])
    shj, smj, bhj = found["SHUFFLE_HASH(b)"], found["MERGE(b)"], found["BROADCAST(b)"]
    assert (shj["operator"], smj["operator"], bhj["operator"]) == \
        ("CometHashJoin", "CometSortMergeJoin", "CometBroadcastHashJoin")
    for figures in (shj, smj, bhj):
        assert figures["cost"]["output_rows"] == 200000 == figures["ui"]["Number of rows produced"]
        assert "output_rows" not in figures["not_reported"]
    build = shj["ui"]["Memory used by build-side"]
    assert shj["cost"]["peak_memory"] > 0 and abs(shj["cost"]["peak_memory"] - build) <= 0.05 * 1024
    buffered = smj["ui"]["Memory used by build-side"]
    assert smj["cost"]["peak_memory"] > 0 and abs(smj["cost"]["peak_memory"] - buffered) <= 0.05 * 1024
    assert smj["cost"]["spill_bytes"] == 0 == smj["ui"]["Total spilled bytes"]
    # Comet's sorts keep no memory figure: the record says the peak leaves them out
    assert smj["not_reported"]["peak_memory of Sort"].startswith("not reported by comet ")


def test_a_figure_an_engine_does_not_report_names_the_engine_and_its_version():
    from harness.observe import cost

    class Node:  # a Comet join whose metrics map holds none of the figures
        _gateway_client = "stand-in"

    found = engines.spark_metrics("CometHashJoin", {"join_time": {"id": 1, "name": "t", "value": 5}}, Node())
    assert found.engine.startswith("comet")
    reading = cost._Reading()
    assert reading.value("output_rows", "ShuffledHashJoin", found, "numOutputRows") is None
    assert reading.not_reported["output_rows"].startswith("not reported by comet")
    translated = comet.spark_metrics("CometHashJoin", {"output_rows": {"id": 1, "name": "n", "value": 7},
                                                       "build_mem_used": {"id": 2, "name": "m", "value": 9}}, "1.2.0")
    assert translated["numOutputRows"]["value"] == 7 and translated["buildDataSize"]["value"] == 9
    for version, operators in comet.MEASURED_METRICS.items():  # every key read is one each version declares
        for operator, keys in comet.SPARK_METRICS.items():
            assert set(keys.values()) <= set(operators[operator]), (version, operator)


class _Seq(list):
    def size(self):
        return len(self)

    def apply(self, i):
        return self[i]


class _Op:
    """A plan operator as Py4J gives it: its name, its children, Comet's reasons on it."""
    def __init__(self, name, *children, reasons=()):
        self.name, self.kids, self.reasons = name, _Seq(children), list(reasons)

    def nodeName(self):
        return self.name

    def children(self):
        return self.kids


def test_a_join_left_to_spark_gets_the_reasons_of_its_own_stage_only(monkeypatch):
    """A cross join whose inputs arrive through Comet shuffles: the Range under them ran in
    another stage and is not why the join was left to Spark (seen on 4.1.4, Comet 1.2.0:
    "Range is not supported" given to 8 of 78 joins)."""
    from harness.observe import jvm_plans
    monkeypatch.setattr(engines, "fallback_reasons", lambda node: node.reasons)
    left = _Op("CometExchange", _Op("HashAggregate", _Op("Range", reasons=["Range is not supported"])))
    right = _Op("Exchange", _Op("Range", reasons=["Range is not supported"]), reasons=["its input is not native"])
    join = _Op("CartesianProduct", _Op("Project", left, reasons=["a cross join's input"]), right,
               reasons=["CartesianProduct is not supported"])
    assert jvm_plans._fallback_below(join, "CartesianProduct") == [
        "CartesianProduct: CartesianProduct is not supported", "Project: a cross join's input",
        "Exchange: its input is not native"]
    same_stage = _Op("BroadcastNestedLoopJoin", _Op("Range", reasons=["Range is not supported"]),
                     _Op("BroadcastExchange", _Op("Range", reasons=["Range is not supported"])))
    assert jvm_plans._fallback_below(same_stage, "BroadcastNestedLoopJoin") == ["Range: Range is not supported"]
