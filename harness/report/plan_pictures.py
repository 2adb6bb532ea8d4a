"""The plan pictures of case records (harness.observe.plan_tree.pictures), drawn once per
distinct observation: the per-version page and the merged page of a matrix draw the same
plans, and a run judged from the store observes nothing new. With a result store, a
drawing is kept there, keyed by the observation and the harness's own source."""
from __future__ import annotations

from typing import Optional

from harness.observe.plan_tree import pictures
from harness.store import fingerprint
from harness.store.results_store import ResultStore, RunStamp

KIND = "picture"
_NO_RUN = RunStamp("", "", "")


class PlanPictures:
    def __init__(self, store: Optional[ResultStore] = None):
        self.store = store
        self._drawn: dict = {}

    def of(self, record: dict) -> Optional[dict]:
        """The pictures of one case record; None for a record without plan text."""
        if record.get("kind") != "case":
            return None
        key = fingerprint.digest([KIND, fingerprint.STORE_FORMAT, fingerprint.harness_source(), record.get("observed")])
        if key in self._drawn:
            return self._drawn[key]
        stored = self.store.get(key) if self.store is not None else None
        if stored is not None and "picture" in stored.payload:
            drawn = stored.payload["picture"]
        else:
            drawn = pictures(record)
            if self.store is not None:
                self.store.put(key, KIND, str(record.get("case_id", "")), "", {"picture": drawn}, _NO_RUN, 0.0)
        self._drawn[key] = drawn
        return drawn
