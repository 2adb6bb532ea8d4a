"""A table format's declarative part: its rules on a declared table, checked at collection,
one module per format, chosen in one place (`rules_of`). A module holds NAME (the word of
`format:`), PROPERTIES (the vetted table properties and the values each accepts),
WRITES_DERIVED (a derived table of this format is written once per worker as a catalog
table, not kept as a DataFrame) and check(at, where, name, table, data). The Spark part
of each format (its jars, configs, writing, statistics-only tables) is the module of the
same name in harness.spark.formats."""
from __future__ import annotations

from types import ModuleType

from harness.scenario.errors import Where, did_you_mean
from harness.scenario.formats import delta, iceberg, orc, parquet

FORMATS: dict[str, ModuleType] = {module.NAME: module for module in (parquet, orc, iceberg, delta)}


def rules_of(table: dict) -> ModuleType:
    """The one place a declared table's format is chosen."""
    return FORMATS[table.get("format", parquet.NAME)]


def check_known(at: Where, where: tuple, table: dict) -> None:
    name = table.get("format", parquet.NAME)
    if name not in FORMATS:
        raise at.error(where + ("format",), f"'{name}' is not a table format of the harness (known: "
                       f"{', '.join(sorted(FORMATS))}){did_you_mean(name, list(FORMATS))}")


def written_derived(table: dict) -> bool:
    """A derived table whose rows are written once per worker as a catalog table of its
    format, not kept as a DataFrame."""
    return rules_of(table).WRITES_DERIVED
