"""The plan pictures of case records (harness.observe.plan_tree.pictures), drawn once per
distinct plan (the texts and sizes a picture shows) within one page: cases whose plans
are alike, and a matrix's versions that print a plan alike, cost one drawing. (Kept in
the result store, they cost as much to read back as to draw: measured on a 10-version
page, 2.2 s against 2.3 s.)"""
from __future__ import annotations

import json
from typing import Optional

from harness.observe.plan_tree import picture_inputs, pictures


class PlanPictures:
    def __init__(self):
        self._drawn: dict = {}

    def of(self, record: dict) -> Optional[dict]:
        """The pictures of one case record; None for a record without plan text."""
        if record.get("kind") != "case":
            return None
        key = json.dumps(picture_inputs(record), sort_keys=True, default=str)
        if key not in self._drawn:
            self._drawn[key] = pictures(record)
        return self._drawn[key]
