"""The Spark SQL configs a scenario may set: what is decided from the file alone.

A scenario file is untrusted. It may set a runtime `spark.sql.*` config that the running
Spark declares and whose value is a boolean or a number (integer, long, double, size in
bytes, duration); that part is decided at collection by Spark's own registry and each
config's own converter (harness.spark.conf_registry). Here, without Spark: the key's
shape, the families never allowed whatever Spark says (catalogs, extensions, listeners,
the warehouse: they load classes or touch files, and outlive the case), the few string
configs that are vetted with the values they may take, and the value's own shape (a
scalar, at most 200 characters). `spark_sql_conf_keys.json` lists the keys each Spark
version of the matrix declares, measured (`python -m harness conf-keys`): a key that
this Spark lacks but another declares is "not defined here: no effect", not a typo.
"""
from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path

KEYS_FILE = Path(__file__).resolve().parent / "spark_sql_conf_keys.json"
MAX_VALUE_CHARS = 200

_TIMEZONE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*|[+-]\d{1,2}(?::\d{2})?)$")
_RULES = re.compile(r"^[A-Za-z0-9_.$]+(?:\s*,\s*[A-Za-z0-9_.$]+)*$")
TIMEZONE, RULES = "time zone id (e.g. UTC, Europe/Paris, +02:00)", "comma-separated list of optimizer rule names"

# The string-valued configs a scenario may set, each with what it may take (Spark's own
# converter checks the value again on the running version).
VETTED_STRINGS: dict[str, object] = {
    "spark.sql.storeAssignmentPolicy": ("ANSI", "LEGACY", "STRICT"),
    "spark.sql.legacy.timeParserPolicy": ("EXCEPTION", "LEGACY", "CORRECTED"),
    "spark.sql.codegen.factoryMode": ("FALLBACK", "CODEGEN_ONLY", "NO_CODEGEN"),
    "spark.sql.session.timeZone": TIMEZONE,
    "spark.sql.optimizer.excludedRules": RULES,
    "spark.sql.adaptive.optimizer.excludedRules": RULES,
    "spark.sql.streaming.multipleWatermarkPolicy": ("MIN", "MAX"),
    "spark.sql.parquet.outputTimestampType": ("INT96", "TIMESTAMP_MICROS", "TIMESTAMP_MILLIS"),
    "spark.sql.sources.partitionOverwriteMode": ("STATIC", "DYNAMIC"),
    # Comet's (harness.spark.engines.comet): its shuffle (1.x, 0.x) and its parquet scan (0.x)
    "spark.comet.shuffle.mode": ("AUTO", "NATIVE", "JVM"),
    "spark.comet.exec.shuffle.mode": ("AUTO", "NATIVE", "JVM"),
    "spark.comet.scan.impl": ("AUTO", "NATIVE_COMET", "NATIVE_DATAFUSION", "NATIVE_ICEBERG_COMPAT"),
}

# Families refused whatever a Spark version declares: they name classes, catalogs, files
# or listeners (loaded once, kept by the JVM after the case), or switch on what the SQL
# guard keeps out (SQL on file paths, SET of core configs).
REFUSED = re.compile(r"^spark\.sql\.(?:catalog\b|catalogImplementation|extensions|queryExecutionListeners|"
                     r"streaming\.streamingQueryListeners|warehouse\.dir|hive\.|sources\.default$|"
                     r"streaming\.checkpointLocation|streaming\.stateStore\.providerClass|runSQLOnFiles$|"
                     r"legacy\.setCommandRejectsSparkCoreConfs$|legacy\.allowNonEmptyLocationInCTAS$|"
                     r"[\w.]*(?:class|classes|path|dir|directory|location)$)", re.IGNORECASE)


# Iceberg's own session configs (read by the Iceberg runtime, declared in no Spark
# registry): the ones a scenario may set, each a boolean.
ICEBERG_CONFS = ("spark.sql.iceberg.planning.preserve-data-grouping", "spark.sql.iceberg.vectorization.enabled",
                 "spark.sql.iceberg.aggregate-push-down.enabled")


def is_iceberg_conf(key: str) -> bool:
    return key.startswith("spark.sql.iceberg.")


# A native engine's own session configs (harness.spark.engines), declared in no Spark
# registry: a scenario may set the engine's booleans, numbers, sizes and durations and its
# vetted strings (its own registry and converters decide, at collection, where the engine
# runs), never what the harness sets to load it, size its memory and disk, or what it logs.
ENGINE_CONF_PREFIX = "spark.comet."
ENGINE_OWN = re.compile(r"^spark\.comet\.(?:enabled|exec\.enabled|exec\.shuffle\.enabled|shuffle\.enabled|"
                        r"maxTempDirectorySize|testing\.[\w.]*|"
                        r"[\w.]*(?:memory|Memory|onHeap|offHeap|nativeLoad|debug|explain|log|metrics)[\w.]*)$")


def is_engine_conf(key: str) -> bool:
    return key.startswith(ENGINE_CONF_PREFIX)


class ConfError(ValueError):
    """A config a scenario may not set, or a value it cannot have (one line)."""


def check(key: str, value) -> None:
    """Raise ConfError unless the file alone allows setting `key` to `value` (the running
    Spark's registry decides the rest, at collection)."""
    if REFUSED.match(key):
        raise ConfError(f"'{key}' is not a config a scenario may set (it names classes, catalogs, files or "
                        "listeners, or opens file access); see README 'Security model'")
    if is_engine_conf(key):
        if ENGINE_OWN.match(key):
            raise ConfError(f"'{key}' is set by the harness for a native engine's session (how it loads, its "
                            "memory and disk, what it logs): a scenario may not set it")
    if is_iceberg_conf(key):
        if key not in ICEBERG_CONFS:
            raise ConfError(f"'{key}' is not one of Iceberg's configs a scenario may set ({', '.join(ICEBERG_CONFS)})")
        if not isinstance(value, bool):
            raise ConfError(f"'{key}' takes true or false, not {value!r}")
        return
    if isinstance(value, dict):  # {estimate_of: side, times, plus}: a size in bytes (the schema checks its shape)
        if key in VETTED_STRINGS:
            raise ConfError(f"'{key}' takes a {_describe(VETTED_STRINGS[key])}; only sizes in bytes may be "
                            "given as estimate_of")
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfError(f"'{key}' takes a finite value, not {value!r}")
    if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
        raise ConfError(f"'{key}': a value of {len(value)} characters (at most {MAX_VALUE_CHARS}): {value[:40]!r}...")
    if key in VETTED_STRINGS and not _fits(VETTED_STRINGS[key], value):
        raise ConfError(f"'{key}' takes a {_describe(VETTED_STRINGS[key])}, not {value!r}")


def _fits(kind, value) -> bool:
    if not isinstance(value, str):
        return False
    if kind == TIMEZONE:
        return len(value) < 64 and bool(_TIMEZONE.match(value))
    if kind == RULES:
        return bool(_RULES.match(value))
    return value.upper() in kind


def _describe(kind) -> str:
    return "value " + "/".join(kind) if isinstance(kind, tuple) else kind


@functools.lru_cache(maxsize=1)
def measured_keys() -> dict[str, list[str]]:
    """key → the Spark versions (of those measured) whose registry declares it."""
    try:
        return json.loads(KEYS_FILE.read_text(encoding="utf-8"))["keys"]
    except (OSError, ValueError, KeyError):
        return {}


# Configs under which a table's generated values (or their analysis) can differ: tables
# are generated while they are set, and cached per worker by their values.
DATA_CONFS = ("spark.sql.session.timeZone", "spark.sql.ansi.enabled", "spark.sql.storeAssignmentPolicy",
              "spark.sql.caseSensitive", "spark.sql.legacy.timeParserPolicy")


def conf_text(value) -> str:
    """A config value as Spark is given it (`true`, not `True`)."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def settings(data: dict) -> list[tuple[tuple, str, object]]:
    """Every config a scenario sets or matches on, as (field path, key, value): the join's
    `spark_conf`, each derived table's, each value of a `matrix.conf` axis, and the
    configs an override's `when` names."""
    found = [(("spark_conf", key), key, value) for key, value in data.get("spark_conf", {}).items()]
    for name, table in data.get("tables", {}).items():
        found += [(("tables", name, "spark_conf", key), key, value)
                  for key, value in (table.get("spark_conf") or {}).items()]
    for key, values in data.get("matrix", {}).get("conf", {}).items():
        found += [(("matrix", "conf", key, i), key, value) for i, value in enumerate(values)]
    for i, override in enumerate((data.get("expect") or {}).get("overrides", [])):
        found += [(("expect", "overrides", i, "when", "conf", key), key, value)
                  for key, value in ((override.get("when") or {}).get("conf") or {}).items()]
    return found


def data_conf(conf: dict) -> dict:
    """The configs of `conf` that shape generated data, as text."""
    return {key: str(conf[key]).lower() if isinstance(conf[key], bool) else str(conf[key])
            for key in DATA_CONFS if key in conf}
