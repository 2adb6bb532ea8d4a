"""Plain progress lines with an ETA for a run's terminal or CI log."""
from __future__ import annotations

import time
from typing import Callable

from harness.core.text import clock

# What an item takes when the last results do not say: a cross-strategy check runs ~7 queries.
GUESS_S = {"check": 3.0, "case": 0.3}


class Progress:
    """Plain progress lines with an ETA: at every tenth of the items or every minute,
    whichever comes first; readable in a terminal and in a CI log alike. The ETA weighs
    each item by what it took last time (results.json), else by a guess per kind, since
    the longest files run first: counting items alone promised hours at the start."""

    EVERY_S = 60.0

    def __init__(self, spark_version: str, write: Callable[[str], None]):
        self.label = f"spark {spark_version}"
        self.write = write
        self.total = 0
        self.done = 0
        self.failing = 0
        self.started = self.last_line = 0.0
        self.next_tenth = 1
        self.expected: dict[str, float] = {}
        self.expected_done = 0.0

    def start(self, nodeids: list[str], took: dict[str, float]) -> None:
        """`took`: seconds per item name from the last results."""
        for nodeid in nodeids:
            name = nodeid.rpartition("::")[2]
            guess = GUESS_S["check" if "agree" in name else "case"] if ".y" in nodeid else 1.0
            self.expected[nodeid] = took.get(name, guess)
        self.total = len(nodeids)
        self.started = self.last_line = time.monotonic()

    def seen(self, report) -> None:
        if report.failed and report.when in ("setup", "call"):
            self.failing += 1
        if report.when != "teardown" or not self.total:
            return
        self.done += 1
        self.expected_done += self.expected.get(report.nodeid, 0.0)
        now = time.monotonic()
        tenth_reached = self.done * 10 >= self.next_tenth * self.total
        if tenth_reached or now - self.last_line >= self.EVERY_S:
            while self.done * 10 >= self.next_tenth * self.total:
                self.next_tenth += 1
            self.last_line = now
            self.write(self.line(now - self.started))

    def eta(self, elapsed: float) -> str:
        expected_total = sum(self.expected.values())
        if not self.done or not expected_total or self.expected_done < 0.02 * expected_total:
            return "ETA estimating"
        remaining = expected_total - self.expected_done
        return f"ETA {clock(elapsed * remaining / self.expected_done)}"

    def line(self, elapsed: float) -> str:
        return (f"[{self.label}] {self.done}/{self.total} items ({100 * self.done // self.total}%) · "
                f"{clock(elapsed)} elapsed · {self.eta(elapsed)} · {self.failing} failing")
