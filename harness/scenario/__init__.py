"""A scenario file, from untrusted YAML to cases: read with a line for every field
(yaml_lines), checked against the contract (schema, scenario.schema.json) and against
what a schema cannot say (checks, confs), then modelled and expanded over its matrix
(model, tables, twin). Every problem is one ScenarioError naming file, line and field
(errors). Imports only harness.core; runs no Spark.
"""
from harness.scenario.errors import ScenarioError
from harness.scenario.model import Case, Scenario, expand, load_scenario, stable_seed

__all__ = ["Case", "Scenario", "ScenarioError", "expand", "load_scenario", "stable_seed"]
