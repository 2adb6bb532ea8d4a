"""harness.scenario.confs: the allow-list of scenario configs and their types."""
import pytest

from harness.scenario import confs


@pytest.mark.parametrize("key, value", [
    ("spark.sql.autoBroadcastJoinThreshold", -1), ("spark.sql.autoBroadcastJoinThreshold", "10MB"),
    ("spark.sql.adaptive.enabled", True), ("spark.sql.adaptive.enabled", "false"),
    ("spark.sql.shuffle.partitions", 8), ("spark.sql.adaptive.skewJoin.skewedPartitionFactor", 2.5),
    ("spark.sql.session.timeZone", "America/Los_Angeles"), ("spark.sql.session.timeZone", "+02:00"),
    ("spark.sql.codegen.factoryMode", "NO_CODEGEN"),
    ("spark.sql.autoBroadcastJoinThreshold", {"estimate_of": "right", "plus": -1}),
])
def test_allowed(key, value):
    confs.check(key, value)


@pytest.mark.parametrize("key, value, says", [
    ("spark.sql.warehouse.dir", "/x", "not a config a scenario may set"),
    ("spark.sql.shuffle.partitions", True, "whole number"),
    ("spark.sql.shuffle.partitions", "1e9", "whole number"),
    ("spark.sql.adaptive.enabled", 1, "boolean"),
    ("spark.sql.autoBroadcastJoinThreshold", "10 parsecs", "size in bytes"),
    ("spark.sql.adaptive.skewJoin.skewedPartitionFactor", float("inf"), "number"),
    ("spark.sql.codegen.factoryMode", "FAST", "FALLBACK/CODEGEN_ONLY/NO_CODEGEN"),
    ("spark.sql.shuffle.partitions", {"estimate_of": "left"}, "only sizes in bytes"),
])
def test_refused(key, value, says):
    with pytest.raises(confs.ConfError, match=says):
        confs.check(key, value)


def test_data_shaping_configs_are_picked_out():
    conf = {"spark.sql.session.timeZone": "UTC", "spark.sql.ansi.enabled": True, "spark.sql.shuffle.partitions": 4}
    assert confs.data_conf(conf) == {"spark.sql.session.timeZone": "UTC", "spark.sql.ansi.enabled": "true"}
