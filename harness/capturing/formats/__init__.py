"""Capture of the tables of a format that keeps its own metadata, one module per format,
found by its name (the format's declarative part is harness.scenario.formats.<format>, its
Spark part harness.spark.formats.<format>), chosen in one place: a session catalog entry
a format claims (`claims_entry(meta)`: a Delta table) is read by its `read_entry(spark,
meta, relation)`; a V2 relation a format claims (`claims_relation(relation)`: an Iceberg
table) by its `read_relation(spark, relation)`. Every other table of the session catalog
(parquet, ORC, Hive) is harness.capturing.catalog's."""
from __future__ import annotations

from types import ModuleType

from harness.capturing.formats import delta, iceberg

READERS: tuple[ModuleType, ...] = (delta, iceberg)


def entry_reader(meta) -> ModuleType | None:
    """The format that reads this session catalog entry (None: the session catalog's own)."""
    return next((r for r in READERS if hasattr(r, "claims_entry") and r.claims_entry(meta)), None)


def relation_reader(relation) -> ModuleType | None:
    """The format that reads this V2 relation (None: no format of the harness)."""
    return next((r for r in READERS if hasattr(r, "claims_relation") and r.claims_relation(relation)), None)
