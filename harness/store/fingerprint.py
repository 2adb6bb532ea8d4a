"""What an observation depends on, as one digest: the scenario minus what only judges it
(description, tags, bug, expect), the case's matrix entry, the Faker pools it reads, the
harness's own source and release, the PySpark, Java and Python versions, and the run options that
change what is observed. Two runs with the same digest observe the same thing."""
from __future__ import annotations

import functools
import hashlib
import json
import platform
import re
from dataclasses import dataclass
from pathlib import Path

import harness
from harness.core.options import RunOptions
from harness.scenario.model import Case, Scenario
from harness.spark.java import java_version

# Bumped when what an entry holds changes shape: older entries are then ignored.
STORE_FORMAT = 1
# Top-level scenario keys that only judge what was observed: editing them re-judges.
JUDGING_KEYS = ("description", "tags", "bug", "expect")
HARNESS_DIR = Path(harness.__file__).resolve().parent


def digest(value) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=None)
def harness_source() -> str:
    """One digest of every file of the harness package: any change re-runs everything."""
    hasher = hashlib.sha256()
    for path in sorted(HARNESS_DIR.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            hasher.update(path.relative_to(HARNESS_DIR).as_posix().encode() + b"\0")
            hasher.update(path.read_bytes() + b"\0")
    return hasher.hexdigest()


def installed_pyspark() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("pyspark")
    except PackageNotFoundError:
        return "none"


@dataclass(frozen=True)
class Environment:
    """What every key of a run shares: versions, harness source, observing options."""
    spark: str
    java: str
    python: str
    faker: str
    harness: str   # digest of the harness's own source
    session: str   # digest of the session and observing options
    release: str = harness.__version__   # the harness release, named as well as digested

    @classmethod
    def of(cls, options: RunOptions) -> "Environment":
        from harness.spark.datagen import faker_version
        observing = {"master": options.master, "remote": options.remote, "spark_conf": options.spark_conf,
                     "plan_text": options.plan_text, "observe": options.observe,
                     "driver_memory": options.driver_memory, "engine": options.engine,
                     "driver_jvm_flags": observing_jvm_flags(options.driver_jvm_flags),
                     "reference": getattr(options, "reference", "on"), "reference_engines": reference_engines()}
        return cls(spark=installed_pyspark(), java=java_version(), python=platform.python_version(),
                   faker=faker_version(), harness=harness_source(), session=digest(observing))


def reference_engines() -> dict:
    """The versions of what translates and answers the reference's queries: another DuckDB
    or sqlglot may answer another way, so a stored observation of the reference is not reused."""
    from importlib.metadata import PackageNotFoundError, version
    found = {}
    for name in ("duckdb", "sqlglot"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


# Driver JVM flags that choose only how fast the JVM runs (its compilers, its collector,
# its class-data archive: harness.spark.class_data):
# a bulk selection gets other ones (harness.scenario.workload) and still reuses what a
# suite run observed. Any other flag (a -D system property sets a Spark config) is keyed.
SPEED_ONLY_FLAG = re.compile(r"-XX:(?:TieredStopAtLevel=\d|[+-]TieredCompilation|[+-]Use(?:Serial|Parallel|G1)GC"
                             r"|Tier\d\w*Threshold=\d+|CICompilerCount=\d+|ReservedCodeCacheSize=\d+[kKmMgG]?"
                             r"|SharedArchiveFile=\S+)|-Xshare:(?:auto|on|off)|-Xlog:cds(?:\+\w+)*=off")


def observing_jvm_flags(flags: str) -> list[str]:
    return [flag for flag in flags.split() if not SPEED_ONLY_FLAG.fullmatch(flag)]


def observed_content(scenario: Scenario) -> dict:
    """The scenario as far as it shapes what Spark does (its judging keys left out, and
    the expectations of a stream's steps: whether any step lists its rows is an
    observation need, `harness.check.runner.observation_needs`)."""
    content = {key: value for key, value in scenario.data.items() if key not in JUDGING_KEYS}
    if (content.get("stream") or {}).get("batches"):
        content["stream"] = {**content["stream"], "batches": [{k: v for k, v in step.items() if k != "expect"}
                                                              for step in content["stream"]["batches"]]}
    return content


def faker_pools(scenario: Scenario) -> list:
    """(pool arguments, digest of its values) of every Faker column the scenario reads:
    the pools come from a disk cache that another Faker could have filled."""
    from harness.spark import datagen
    pools = []
    for table, spec in sorted(scenario.data["tables"].items()):
        for name, column in sorted((spec.get("columns") or {}).items()):
            args = datagen.faker_pool_args(scenario.seed, table, name, column) if isinstance(column, dict) else None
            if args is not None:
                try:
                    pools.append([list(args), digest(list(datagen.faker_pool(*args)))])
                except Exception as exc:  # the case will say why; the key only needs to differ
                    pools.append([list(args), f"unavailable: {type(exc).__name__}"])
    return pools


def case_key(case: Case, kind: str, env: Environment, needs: dict, pools: list | None = None) -> str:
    """The key of one item's observation: `kind` is `case` or `agreement`; `needs` what the
    expectations in force make the run observe (execution, result rows, operator counts)."""
    return digest({
        "format": STORE_FORMAT, "kind": kind, "env": env.__dict__,
        "scenario": observed_content(case.scenario), "twin_of": case.scenario.twin_of,
        "pools": faker_pools(case.scenario) if pools is None else pools,
        "case": {"id": case.case_id, "params": case.params, "join": case.join, "conf": case.spark_conf},
        "needs": needs})


def sql_check_key(scenario: Scenario, env: Environment) -> str:
    """The key of the SQL guard's verdict on a scenario: its SQL (over its tables) is
    judged by Spark's analyser of that version, with the harness's rules; editing what
    only judges (`expect`, ...) needs no new verdict, and no session at collection."""
    return digest({"format": STORE_FORMAT, "kind": "sql-check", "env": env.__dict__,
                   "scenario": observed_content(scenario), "twin_of": scenario.twin_of})
