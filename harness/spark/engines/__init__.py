"""The native engines a run may use (`--engine NAME`): each one module of this package
behind one interface (its jars per Spark version, its session configs and their
registry, its operators' Spark names, its metrics under Spark's keys as measured per
engine version, why it left an operator to Spark), chosen here and nowhere else."""
from __future__ import annotations

from types import ModuleType

from harness.spark.engines import comet

ENGINES: dict[str, ModuleType] = {"comet": comet}
# Every engine's operator → the Spark operator it replaces (no engine uses another's names).
SPARK_NAMES = {name: spark for engine in ENGINES.values() for name, spark in engine.SPARK_NAMES.items()}
SCAN_PREFIXES = tuple(prefix for engine in ENGINES.values() for prefix in engine.SCANS)
SPARK_CLASSES = {name: spark for engine in ENGINES.values() for name, spark in engine.SPARK_CLASSES.items()}


class UnknownEngine(ValueError):
    pass


def named(name: str | None) -> ModuleType | None:
    """The engine module of `--engine NAME` (None: plain Spark)."""
    if not name:
        return None
    if name not in ENGINES:
        raise UnknownEngine(f"--engine {name!r}: not an engine the harness knows "
                            f"(known: {', '.join(sorted(ENGINES))})")
    return ENGINES[name]


def spark_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def runtime_for(name: str, spark_version: str):
    """The engine's jar for this Spark version (None: it publishes none)."""
    return named(name).RUNTIMES.get(spark_minor(spark_version))


def not_available(name: str, spark_version: str) -> str:
    served = ", ".join(sorted(named(name).RUNTIMES))
    return (f"not available: {name} publishes no jar for Spark {spark_minor(spark_version)} "
            f"(it does for Spark {served})")


def spark_name(operator: str) -> str:
    """The Spark operator an engine's operator replaces (a Spark operator: itself)."""
    return SPARK_NAMES.get(operator, operator)


def spark_class(operator_class: str) -> str:
    """The Spark class (without `Exec`) an engine's operator class replaces."""
    return SPARK_CLASSES.get(operator_class, operator_class)


def is_native(operator: str) -> bool:
    return operator in SPARK_NAMES


def off_confs(name: str) -> dict:
    """The runtime configs under which the engine leaves a query to Spark."""
    return named(name).OFF


def config_entries(spark) -> dict | None:
    """The config entries of the session's engine, by key (None: no engine loaded)."""
    for engine in ENGINES.values():
        found = engine.config_entries(spark)
        if found is not None:
            return found
    return None


def version_words(spark) -> str | None:
    """`comet 1.2.0`: the engine the session loaded (None: none)."""
    for name, engine in ENGINES.items():
        version = engine.version_of(spark)
        if version is not None:
            return f"{name} {version}"
    return None


def measured_configs() -> dict[str, dict]:
    """Every engine's configs of any version the harness loads: key → {kind, versions,
    engine}."""
    return {key: dict(measured, engine=name) for name, engine in ENGINES.items()
            for key, measured in engine.MEASURED.items()}


class EngineMetrics(dict):
    """An engine operator's metrics under Spark's keys; `engine` names the engine and its
    version (`comet 1.2.0`): a figure it does not report is "not reported by" it."""
    engine: str = ""


def spark_metrics(operator: str, found: dict, node) -> dict:
    """The metrics of the operator `node` (named `operator`, as the plan prints it) under
    Spark's keys: an engine's operator's translated by its engine, a Spark one's as they are."""
    for name, engine in ENGINES.items():
        if operator in engine.SPARK_NAMES:
            version = engine.version_of_node(node)
            out = EngineMetrics(engine.spark_metrics(operator, found, version))
            out.engine = f"{name} {version}" if version else name
            return out
    return found


def engine_loaded(node) -> bool:
    """Whether the JVM that holds this plan operator runs any engine."""
    return any(engine.loaded(node) for engine in ENGINES.values())


def fallback_reasons(node) -> list[str]:
    return [reason for engine in ENGINES.values() for reason in engine.fallback_reasons(node)]
