"""`--shard I/N`: a deterministic 1/N of the suite, whole scenario files at a time (a file's
cases share tables and executions in a worker). Files are dealt longest first to the
least loaded shard (costs: recorded seconds from the store, a guess for items never
timed); the split's digest goes into each shard's results, so that `merge` can refuse
shards that did not split the suite the same way."""
from __future__ import annotations

import re
from dataclasses import dataclass

from harness.store.fingerprint import digest

SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    index: int   # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        found = SHARD.match(text or "")
        if not found:
            raise ValueError(f"--shard expects I/N (e.g. 1/4), got: {text}")
        index, count = int(found.group(1)), int(found.group(2))
        if not 1 <= index <= count:
            raise ValueError(f"--shard {text}: I must be between 1 and N")
        return cls(index, count)

    def words(self) -> str:
        return f"{self.index}/{self.count}"


def split(costs: dict[str, float], count: int) -> dict[str, int]:
    """file → shard (1-based): longest first, each to the shard with the least so far
    (ties: the lowest shard; equal costs: by name), the same for the same inputs."""
    loads = [0.0] * count
    owner = {}
    for name in sorted(costs, key=lambda n: (-round(costs[n], 3), n)):
        shard = min(range(count), key=lambda i: (loads[i], i))
        owner[name] = shard + 1
        loads[shard] += costs[name]
    return owner


def split_digest(owner: dict[str, int], count: int) -> str:
    return digest({"count": count, "owner": sorted(owner.items())})[:16]


def cut(costs: dict[str, float], shard: Shard, item_ids: list[str], store=None, spark: str = "") -> tuple[dict, dict]:
    """(file → shard, the split as results.json records it) for these items: the store's
    agreed split of exactly these items when a shard has written one (harness.store.
    results_store.ResultStore.agreed_split), else this one, written for the others."""
    owner = split(costs, shard.count)
    if store is not None:
        owner = store.agreed_split(split_digest(dict.fromkeys(item_ids, 0), shard.count) + spark, owner)
    return owner, {"index": shard.index, "count": shard.count, "split": split_digest(owner, shard.count)}
