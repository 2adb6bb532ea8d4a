"""One options object for a run, built once from the pytest config (or a command's
arguments) and passed down to the session, the runner and the expectations. Environment
variables are read here only, for settings that must reach child processes (xdist
workers inherit the pytest config; a cluster's shared work folder is the machine's)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

DEFAULT_MASTER = "local[2]"


@dataclass(frozen=True)
class RunOptions:
    master: str = DEFAULT_MASTER
    remote: str | None = None                          # a Spark Connect URL (sc://host:port): harness.deploy.connect
    spark_conf: dict = field(default_factory=dict)   # session configs (--spark-conf, --spark-conf-file)
    plan_text: str = "all"                             # `all` or `failed`: which cases keep plan text
    observe: bool = False                              # record without checking expectations
    work_dir: str | None = None                        # parquet/catalog/stream files (shared on a cluster)
    driver_memory: str = "3g"
    # The suite is thousands of short queries, each new code for the JVM: the optimising
    # JIT (C2) and G1's concurrent threads took the CPU the queries needed. The quick JIT
    # alone and the serial collector made the suite 34% faster on 2 cores (full suite on
    # 4.3.0, back to back: 5 min 58 s → 3 min 56 s with this release's other changes;
    # scenarios/equi alone 116/150/147 s → 68/87/75 s). Bulk work is slower under the
    # quick JIT (5M generated rows: 2.2 M rows/s instead of 3.4): HARNESS_DRIVER_JVM_FLAGS=""
    # gives the JVM's defaults back for scenarios of many millions of rows.
    # C1 alone also shrinks the code cache to 48 MB, which a worker's thousands of
    # generated classes filled ("Out of space in CodeCache for adapters" in a unit run):
    # back to the 240 MB the JVM reserves with both compilers.
    driver_jvm_flags: str = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=240m"
    # A selection of bulk nested loops (harness.scenario.workload) runs them under the
    # JVM's own tiered compilers: 400M pairs 8.6 s → 1.8 s (docs/speed.md).
    optimising_jit_flags = ""
    # The table formats the run's files declare: a format's JVM package (Iceberg's, Delta's:
    # harness.spark.formats) is loaded only by a run that declares it.
    formats: tuple = ()
    engine: str = ""                                   # a native engine (harness.spark.engines), "" for none
    jar_cache: str | None = None                       # where fetched jars are kept (default ~/.cache/spark-join-harness/jars)
    maven_repository: str = "https://repo1.maven.org/maven2"
    # The driver JVM's class-data archives (harness.spark.class_data); None: none used
    class_data: str | None = None
    # Answers nobody declared: `on` an independent engine's answer (harness.observe.reference)
    # and ternary partitioning, an item per file and join type (harness.check.partitions);
    # `partitions` only the partitions items; `off` neither
    reference: str = "on"

    @property
    def deployment(self) -> str:
        return "connect" if self.remote else deployment(self.master)

    @classmethod
    def from_env(cls, optimising_jit: bool = False, **given) -> "RunOptions":
        """Defaults for commands outside pytest, with the machine-level settings
        (HARNESS_DRIVER_JVM_FLAGS wins over the flags a bulk selection would get)."""
        flags = cls.optimising_jit_flags if optimising_jit else cls.driver_jvm_flags
        base = {"work_dir": os.environ.get("HARNESS_WORK_DIR") or None,
                "driver_memory": os.environ.get("HARNESS_DRIVER_MEMORY", "3g"),
                "driver_jvm_flags": os.environ.get("HARNESS_DRIVER_JVM_FLAGS", flags),
                "master": os.environ.get("HARNESS_SPARK_MASTER") or DEFAULT_MASTER,
                "remote": os.environ.get("HARNESS_SPARK_REMOTE") or None,
                "jar_cache": os.environ.get("HARNESS_JAR_CACHE") or None,
                "engine": os.environ.get("HARNESS_ENGINE", ""),
                "class_data": class_data_folder(),
                "reference": reference_mode(os.environ.get("HARNESS_REFERENCE", "on"))}
        if os.environ.get("HARNESS_MAVEN_REPOSITORY"):  # a mirror of Maven Central
            base["maven_repository"] = os.environ["HARNESS_MAVEN_REPOSITORY"]
        base.update({k: v for k, v in given.items() if v is not None})
        return cls(**base)


REFERENCE_MODES = ("on", "off", "partitions")


def reference_mode(text: str) -> str:
    """HARNESS_REFERENCE as one of REFERENCE_MODES (`0`, `false`, `no` are `off`)."""
    text = text.strip().lower()
    if text in ("0", "false", "no"):
        return "off"
    return text if text in REFERENCE_MODES else "on"


def class_data_folder() -> str | None:
    """HARNESS_CLASS_DATA: the folder of the driver's class-data archives, `off` for none;
    by default beside the jar cache."""
    chosen = os.environ.get("HARNESS_CLASS_DATA", "")
    if chosen.lower() == "off":
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return chosen or os.path.join(base, "spark-join-harness", "class-data")


def deployment(master: str | None) -> str:
    """`local` for embedded local mode, `connect` for a Spark Connect URL, `cluster` for
    any cluster master."""
    master = master or "local"
    if master.startswith("sc://"):
        return "connect"
    return "local" if master.startswith("local") else "cluster"
