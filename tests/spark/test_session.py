"""harness.spark.session: one session per process, configs restored per case, warnings and
views scoped to the case, options from one object."""
from harness.core.options import RunOptions, deployment
from harness.spark.session import get_session, read_conf_file


def test_one_session_per_process(session):
    assert get_session() is session
    assert session.options.master.startswith("local") and session.deployment == "local"


def test_configs_are_restored_and_unset_keys_unset_again(session):
    before = session.spark.conf.get("spark.sql.shuffle.partitions")
    with session.case_scope(30) as scope:
        scope.set_conf("spark.sql.shuffle.partitions", 7)
        scope.set_conf("spark.sql.cbo.joinReorder.dp.threshold", 3)
        assert session.spark.conf.get("spark.sql.shuffle.partitions") == "7"
    assert session.spark.conf.get("spark.sql.shuffle.partitions") == before
    assert not session._sql_conf.contains("spark.sql.cbo.joinReorder.dp.threshold")


def test_views_and_warnings_belong_to_their_case(session):
    with session.case_scope(30) as scope:
        scope.register_view("scoped_view", session.spark.range(3))
        session.spark.sql("SELECT /*+ NO_SUCH_HINT(scoped_view) */ * FROM scoped_view").collect()
        warnings = scope.warnings()
    assert any("NO_SUCH_HINT" in w for w in warnings)
    assert "scoped_view" not in [t.name for t in session.spark.catalog.listTables()]  # tableExists: 3.3+
    with session.case_scope(30) as scope:
        assert scope.warnings() == []


def test_options_carry_the_deployment():
    assert RunOptions().deployment == "local"
    assert RunOptions(master="spark://10.0.0.1:7077").deployment == "cluster"
    assert deployment("local[4]") == "local"


def test_spark_defaults_style_conf_file(tmp_path):
    path = tmp_path / "c.conf"
    path.write_text("spark.executor.memory 2g\n# comment\nspark.executor.cores=1\n")
    assert read_conf_file(str(path)) == {"spark.executor.memory": "2g", "spark.executor.cores": "1"}


def test_driver_jvm_runs_with_the_quick_jit_and_serial_collector(session):
    arguments = list(session.spark.sparkContext._jvm.java.lang.management.ManagementFactory
                     .getRuntimeMXBean().getInputArguments())
    for flag in ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"):
        assert flag in arguments


def test_a_jar_that_cannot_be_had_is_said_by_the_cases_that_need_it(tmp_path, monkeypatch):
    """Iceberg, Delta and an engine fetch their jars the same way; from a repository that
    serves nothing each leaves its session without them and keeps why."""
    from types import SimpleNamespace

    from harness.spark.formats import delta, iceberg
    from harness.spark import session as session_module
    monkeypatch.setattr(session_module, "_pyspark_version", lambda: "3.5.9")
    monkeypatch.setattr(iceberg, "problem", None)
    monkeypatch.setattr(delta, "problem", None)
    options = RunOptions(formats=("delta", "iceberg", "parquet"), engine="comet", jar_cache=str(tmp_path / "jars"),
                         maven_repository=(tmp_path / "empty").as_uri())
    stand_in = SimpleNamespace(workdir=tmp_path)
    Session = session_module.Session
    assert Session._format_confs(stand_in, options) == []
    assert "iceberg-spark-runtime-3.5_2.12" in iceberg.problem and "delta-spark_2.12" in delta.problem
    assert Session._engine_confs(stand_in, options) == {} and stand_in.engine_runtime is None
    assert stand_in.engine_problem.startswith("not available: ") and "comet-spark-spark3.5_2.12" in \
        stand_in.engine_problem
