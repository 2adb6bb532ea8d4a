"""harness/scenario/spark_sql_conf_keys.json: the SQL config keys each Spark version of the
matrix declares, read from each version's own registry (`python -m harness conf-keys`).

The scenario checks use it to tell a key that this Spark does not declare but another
does ("not defined on Spark 3.0.3: no effect": the case runs) from a misspelt one (a
did-you-mean from this Spark's registry; the file fails). Measured, never written by hand:
run it again when a version is added to the matrix.

`--engine comet` measures a native engine's own configs the same way, with each one's
kind (boolean, number, string) from its converter, per engine version: the engine
module's KEYS_FILE (harness/spark/engines/comet_conf_keys.json); and the metric keys its
operators declare, read from the operators of the engine's probe joins: its
METRICS_FILE (harness/spark/engines/comet_metrics.json)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from harness.core.files import atomic_write_text
from harness.deploy import matrix
from harness.scenario.confs import KEYS_FILE
from harness.spark import engines

DUMP = ("import json\n"
        "from pyspark.sql import SparkSession\n"
        "from harness.spark.conf_registry import declared_keys\n"
        "spark = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false').getOrCreate()\n"
        "print('KEYS ' + json.dumps([spark.version, declared_keys(spark)]))\n"
        "spark.stop()\n")


def _dump(spark: str, python: Path, script: str, *args: str):
    """What `script` prints after `KEYS ` in the environment of Spark `spark`, as JSON."""
    env, _ = matrix.pytest_env(spark, python, "1")
    done = subprocess.run([str(python), "-c", script, *args], capture_output=True, text=True, env=env, timeout=600)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("KEYS ")), None)
    if line is None:
        raise RuntimeError(f"Spark {spark}: no keys ({done.stderr.strip().splitlines()[-1:] or 'no output'})")
    return json.loads(line[5:])


def keys_of(spark: str, python: Path) -> list[str]:
    version, keys = _dump(spark, python, DUMP)
    if version != spark:
        raise RuntimeError(f"the environment of Spark {spark} runs Spark {version}")
    return keys


def keys_document(versions: list[str], by_key: dict[str, list[str]]) -> str:
    """The file's text: one key per line, so a new version reads as a small diff."""
    lines = [f"  {json.dumps(key)}: {json.dumps(by_key[key])}" for key in sorted(by_key)]
    return ("{\n" f'"about": "SQL config keys each Spark version\'s own registry declares (python -m harness conf-keys)",\n'
            f'"versions": {json.dumps(versions)},\n"keys": {{\n' + ",\n".join(lines) + "\n}}\n")


def main(versions: list[str], log=print) -> int:
    versions = versions or list(matrix.DEFAULT_VERSIONS)
    by_key: dict[str, list[str]] = {}
    for spark in versions:
        python = matrix.ensure_env(spark, log)
        if python is None:
            return 1
        keys = keys_of(spark, python)
        log(f"Spark {spark}: {len(keys)} SQL config keys")
        for key in keys:
            by_key.setdefault(key, []).append(spark)
    atomic_write_text(KEYS_FILE, keys_document(versions, by_key))
    log(f"{len(by_key)} keys written to {KEYS_FILE}")
    return 0


ENGINE_DUMP = ("import json, sys, tempfile\n"
               "from pathlib import Path\n"
               "from pyspark.sql import SparkSession\n"
               "from harness.spark import engines\n"
               "from harness.spark.conf_registry import engine_kinds\n"
               "builder = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false')\n"
               "for key, value in engines.named(sys.argv[1]).session_confs(Path(sys.argv[2])).items():\n"
               "    builder = builder.config(key, value)\n"
               "spark = builder.getOrCreate()\n"
               "engine = engines.named(sys.argv[1])\n"
               "metrics = engine.probe_metrics(spark, tempfile.mkdtemp())\n"
               "print('KEYS ' + json.dumps([engine.version_of(spark), engine_kinds(spark), metrics]))\n"
               "spark.stop()\n")


def engine_keys_of(name: str, spark: str, python: Path, jar: Path) -> tuple[str, dict[str, str], dict]:
    """(the engine's version, key → kind, operator → {metric key: UI name}) as a session of
    `spark` with the engine reads them."""
    version, kinds, metrics = _dump(spark, python, ENGINE_DUMP, name, str(jar))
    if not version or not kinds or not metrics:
        raise RuntimeError(f"{name} on Spark {spark}: the engine did not load")
    return version, kinds, metrics


def engine_metrics_document(name: str, by_version: dict[str, dict]) -> str:
    """One operator per line, so a new engine version reads as a small diff."""
    blocks = []
    for version in sorted(by_version):
        lines = [f"    {json.dumps(op)}: {json.dumps(dict(sorted(keys.items())))}"
                 for op, keys in sorted(by_version[version].items())]
        blocks.append(f"  {json.dumps(version)}: {{\n" + ",\n".join(lines) + "\n  }")
    return ("{\n" f'"about": "metric keys (and the names the Spark UI shows) of each {name} version\'s operators, '
            f'read from its probe joins (python -m harness conf-keys --engine {name})",\n"versions": {{\n'
            + ",\n".join(blocks) + "\n}}\n")


def engine_keys_document(name: str, measured: dict[str, dict]) -> str:
    lines = [f"  {json.dumps(key)}: {json.dumps(measured[key])}" for key in sorted(measured)]
    return ("{\n" f'"about": "configs each {name} version\'s own registry declares, with their kind '
            f'(python -m harness conf-keys --engine {name})",\n"keys": {{\n' + ",\n".join(lines) + "\n}}\n")


def engine_main(name: str, log=print) -> int:
    """Measure the engine's configs on the newest matrix version of each Spark minor it
    publishes a jar for."""
    from harness.spark.jvm_packages import default_cache, ensure_jar
    engine = engines.named(name)
    measured: dict[str, dict] = {}
    metrics: dict[str, dict] = {}
    for minor, coordinate in sorted(engine.RUNTIMES.items()):
        spark = max((v for v in matrix.DEFAULT_VERSIONS if engines.spark_minor(v) == minor),
                    key=lambda v: tuple(int(p) for p in v.split(".")), default=None)
        if spark is None:
            log(f"{name} {coordinate.version}: Spark {minor} is not in the matrix")
            return 1
        python = matrix.ensure_env(spark, log)
        if python is None:
            return 1
        version, kinds, metrics[version] = engine_keys_of(name, spark, python, ensure_jar(coordinate, default_cache()))
        log(f"{name} {version} on Spark {spark}: {len(kinds)} configs, {len(metrics[version])} operators' metrics")
        for key, kind in kinds.items():
            entry = measured.setdefault(key, {"kind": kind, "versions": []})
            if entry["kind"] != kind:
                log(f"{key}: {kind} in {name} {version}, {entry['kind']} before: kept as string")
                entry["kind"] = "string"
            entry["versions"].append(version)
    atomic_write_text(engine.KEYS_FILE, engine_keys_document(name, measured))
    atomic_write_text(engine.METRICS_FILE, engine_metrics_document(name, metrics))
    log(f"{len(measured)} configs written to {engine.KEYS_FILE}, the metrics of {len(metrics)} versions to "
        f"{engine.METRICS_FILE}")
    return 0


DEFAULTS_DUMP = ("import json\n"
                 "from pyspark.sql import SparkSession\n"
                 "from harness.spark.conf_registry import declared_defaults\n"
                 "spark = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false').getOrCreate()\n"
                 "print('KEYS ' + json.dumps([spark.version, declared_defaults(spark)]))\n"
                 "spark.stop()\n")


def defaults_of(spark: str, python: Path) -> dict[str, dict]:
    """key → {default, kind, static, version, doc} as release `spark`'s own registry declares
    them, measured once in its environment and kept beside the environments."""
    cache = matrix.env_root() / "conf-defaults" / f"{spark}.json"
    if cache.exists():
        return json.loads(cache.read_text(encoding="utf-8"))
    version, found = _dump(spark, python, DEFAULTS_DUMP)
    if version != spark or not found:
        raise RuntimeError(f"the environment of Spark {spark} runs Spark {version}" if version != spark
                           else f"Spark {spark}: its registry declared no config")
    cache.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(cache, json.dumps(found, indent=0, sort_keys=True) + "\n")
    return found
