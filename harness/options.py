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
    spark_conf: dict = field(default_factory=dict)   # session configs (--spark-conf, --spark-conf-file)
    plan_text: str = "all"                             # `all` or `failed`: which cases keep plan text
    observe: bool = False                              # record without checking expectations
    work_dir: str | None = None                        # parquet/catalog/stream files (shared on a cluster)
    driver_memory: str = "3g"

    @property
    def deployment(self) -> str:
        return deployment(self.master)

    @classmethod
    def from_env(cls, **given) -> "RunOptions":
        """Defaults for commands outside pytest, with the machine-level settings."""
        base = {"work_dir": os.environ.get("HARNESS_WORK_DIR") or None,
                "driver_memory": os.environ.get("HARNESS_DRIVER_MEMORY", "3g"),
                "master": os.environ.get("HARNESS_SPARK_MASTER") or DEFAULT_MASTER}
        base.update({k: v for k, v in given.items() if v is not None})
        return cls(**base)


def deployment(master: str | None) -> str:
    """`local` for embedded local mode, `cluster` for any cluster master."""
    return "local" if (master or "local").startswith("local") else "cluster"
