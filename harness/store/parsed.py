"""Scenario texts that parsed and validated before, kept in the store: a run where no file
changed reads each file and looks its text up instead of composing its YAML and
validating it against the schema again (about a second a suite, paid by every run of
every version of a matrix).

Keyed by the text and the harness's own source (the loader and the schema are part of
it) and the YAML and JSON-schema libraries' versions. Only a text that passed is kept;
one that fails is parsed again every time, so its error is always today's."""
from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from typing import Optional

from harness.store import fingerprint
from harness.store.results_store import ResultStore, RunStamp

KIND = "parsed"


def _library_versions() -> list[str]:
    found = []
    for name in ("pyyaml", "jsonschema"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} none")
    return found


class ParsedScenarios:
    """`harness.scenario.model.ParsedTexts` on the result store."""

    def __init__(self, store: ResultStore, stamp: RunStamp):
        self.store = store
        self.stamp = stamp
        self._libraries = _library_versions()

    def _key(self, text: str) -> str:
        return fingerprint.digest([KIND, fingerprint.STORE_FORMAT, fingerprint.harness_source(), self._libraries, text])

    def recall(self, text: str) -> Optional[tuple[dict, dict]]:
        stored = self.store.get(self._key(text))
        if stored is None:
            return None
        try:
            lines = {tuple(path): int(line) for path, line in stored.payload["lines"]}
            data = json.loads(stored.payload["data"])
            if not isinstance(data, dict):
                raise TypeError("not a mapping")
        except (KeyError, TypeError, ValueError):
            return None
        return data, lines

    def keep(self, text: str, data: dict, lines: dict) -> None:
        # Plain JSON data only (the loader turns dates into text): a value JSON would
        # change (bytes from `!!binary`) is not kept, and its file is parsed every time.
        # The data goes in as one JSON text: the store sorts a payload's keys, and a
        # scenario's key order is its tables' and columns' order.
        try:
            as_text = json.dumps(data)
            if json.loads(as_text) != data:
                return
        except (TypeError, ValueError):
            return
        payload = {"data": as_text, "lines": [[list(path), line] for path, line in lines.items()]}
        self.store.put(self._key(text), KIND, str(data.get("id", "")), "", payload, self.stamp, 0.0)
