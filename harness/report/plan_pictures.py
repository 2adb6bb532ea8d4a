"""The plan pictures of case records (harness.observe.plan_tree.pictures), drawn once per
distinct plan (the texts and sizes a picture shows) within one page: cases whose plans
are alike, and a matrix's versions that print a plan alike, cost one drawing.

A version's folder keeps what its page drew beside its results (pictures.json, tied to
that results.json by its digest), so the merged page of a matrix reads every version's
pictures instead of drawing them again (2.7 s of a 10-version page). (Kept in the result
store instead, they cost as much to read back as to draw: 2.2 s against 2.3 s.)"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional

from harness.core.files import atomic_write_text
from harness.observe.plan_tree import picture_inputs, pictures

SIDECAR = "pictures.json"


class PlanPictures:
    def __init__(self):
        self._drawn: dict = {}
        self._kept: dict = {}  # id of a results document → case id → its pictures

    def of(self, record: dict, results: dict | None = None) -> Optional[dict]:
        """The pictures of one case record (of the `results` document it belongs to, when
        that document's pictures were read back); None for a record without plan text."""
        if record.get("kind") != "case":
            return None
        kept = self._kept.get(id(results))
        if kept is not None and record["case_id"] in kept:
            return kept[record["case_id"]]
        key = json.dumps(picture_inputs(record), sort_keys=True, default=str)
        if key not in self._drawn:
            self._drawn[key] = pictures(record)
        return self._drawn[key]

    def all_of(self, results: dict) -> dict:
        """case id → pictures, for every case of a results document that has any."""
        drawn = {r["case_id"]: self.of(r, results) for r in results["cases"] if r["kind"] == "case"}
        return {case_id: picture for case_id, picture in drawn.items() if picture}

    def keep(self, folder: Path, results_text: str, drawn: dict) -> None:
        """Write the pictures of the results.json whose text is `results_text` beside it."""
        atomic_write_text(Path(folder) / SIDECAR, json.dumps({"results_sha256": _digest(results_text),
                                                               "pictures": drawn}, separators=(",", ":")))

    def read_back(self, folder: Path, results: dict, results_text: str) -> None:
        """Use the pictures kept beside `results` if they belong to exactly that text; a
        missing, stale or unreadable file only means drawing them again."""
        try:
            kept = json.loads((Path(folder) / SIDECAR).read_text(encoding="utf-8"))
            if kept.get("results_sha256") == _digest(results_text) and isinstance(kept.get("pictures"), dict):
                self._kept[id(results)] = kept["pictures"]
        except (OSError, ValueError, AttributeError):
            pass


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
