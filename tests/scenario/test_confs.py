"""harness.scenario.confs: what the file alone decides about a scenario's configs (the
running Spark's registry decides the rest: tests/test_security.py)."""
import json

import pytest

from harness.scenario import confs


@pytest.mark.parametrize("key, value", [
    ("spark.sql.autoBroadcastJoinThreshold", -1), ("spark.sql.autoBroadcastJoinThreshold", "10MB"),
    ("spark.sql.adaptive.enabled", True), ("spark.sql.adaptive.enabled", "false"),
    ("spark.sql.shuffle.partitions", 8), ("spark.sql.adaptive.skewJoin.skewedPartitionFactor", 2.5),
    ("spark.sql.session.timeZone", "America/Los_Angeles"), ("spark.sql.session.timeZone", "+02:00"),
    ("spark.sql.codegen.factoryMode", "NO_CODEGEN"), ("spark.sql.storeAssignmentPolicy", "legacy"),
    ("spark.sql.autoBroadcastJoinThreshold", {"estimate_of": "right", "plus": -1}),
    ("spark.sql.optimizer.canChangeCachedPlanOutputPartitioning", True),
])
def test_allowed_from_the_file(key, value):
    confs.check(key, value)


@pytest.mark.parametrize("key, value, says", [
    ("spark.sql.warehouse.dir", "/x", "is not a config a scenario may set"),
    ("spark.sql.catalog.spark_catalog", "x.Y", "is not a config a scenario may set"),
    ("spark.sql.queryExecutionListeners", "x.Y", "is not a config a scenario may set"),
    ("spark.sql.streaming.checkpointLocation", "/tmp", "is not a config a scenario may set"),
    ("spark.sql.sources.commitProtocolClass", "x.Y", "is not a config a scenario may set"),
    ("spark.sql.adaptive.skewJoin.skewedPartitionFactor", float("inf"), "finite"),
    ("spark.sql.codegen.factoryMode", "FAST", "FALLBACK/CODEGEN_ONLY/NO_CODEGEN"),
    ("spark.sql.codegen.factoryMode", {"estimate_of": "left"}, "only sizes in bytes"),
    ("spark.sql.shuffle.partitions", "9" * 500, "500 characters"),
])
def test_refused_from_the_file(key, value, says):
    with pytest.raises(confs.ConfError, match=says) as info:
        confs.check(key, value)
    assert len(str(info.value)) < 300


def test_settings_name_every_place_a_scenario_sets_or_matches_a_config():
    data = {"spark_conf": {"a": 1}, "tables": {"t": {"spark_conf": {"b": True}}, "u": {}},
            "matrix": {"conf": {"c": [1, 2]}}, "expect": {"overrides": [{"when": {"conf": {"d": "x"}}}]}}
    assert confs.settings(data) == [(("spark_conf", "a"), "a", 1), (("tables", "t", "spark_conf", "b"), "b", True),
                                    (("matrix", "conf", "c", 0), "c", 1), (("matrix", "conf", "c", 1), "c", 2),
                                    (("expect", "overrides", 0, "when", "conf", "d"), "d", "x")]


def test_the_measured_keys_cover_the_matrix_and_are_not_hand_written():
    document = json.loads(confs.KEYS_FILE.read_text())
    from harness.deploy.matrix import DEFAULT_VERSIONS
    assert document["versions"] == list(DEFAULT_VERSIONS)
    keys = confs.measured_keys()
    assert keys["spark.sql.adaptive.enabled"] == list(DEFAULT_VERSIONS)
    # added in 3.2 (measured): 3.0 and 3.1 run a scenario that sets it without it
    assert keys["spark.sql.optimizer.canChangeCachedPlanOutputPartitioning"][0] == "3.2.4"


def test_data_shaping_configs_are_picked_out():
    conf = {"spark.sql.session.timeZone": "UTC", "spark.sql.ansi.enabled": True, "spark.sql.shuffle.partitions": 4}
    assert confs.data_conf(conf) == {"spark.sql.session.timeZone": "UTC", "spark.sql.ansi.enabled": "true"}
