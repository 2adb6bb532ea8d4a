"""What a captured query reads through the capturing session's cache (`CACHE TABLE`,
`df.cache()`, `CACHE TABLE v AS SELECT`): Spark swaps each part of the analysed plan that
matches a cached plan for its cached relation (InMemoryRelation) and plans by the
statistics that relation reports — the plan it caches while nothing has been
materialised, its in-memory buffers (size, rows counted) once something has, and never
the partitions a filter above it keeps. Capture records those statistics on the table or
view read through the cache; the replay gives them to its own cache
(harness.spark.cached)."""
from __future__ import annotations

from harness.capturing.relations import RELATION_KINDS
from harness.core.text import one_line


class CacheLookup:
    """The cached relation standing for a part of the analysed plan, as Spark's
    CacheManager finds it (the same matching its useCachedData does)."""

    def __init__(self, spark):
        self.spark = spark
        self.manager = spark._jsparkSession.sharedState().cacheManager()
        self.empty = bool(self.manager.isEmpty())
        self.with_session = False  # 4.x asks lookupCachedData(session, plan): learnt on the first call

    @classmethod
    def none(cls, spark) -> "CacheLookup":
        """A lookup that finds nothing (inside a cached part: caches below it are not read)."""
        lookup = cls.__new__(cls)
        lookup.spark, lookup.manager, lookup.empty, lookup.with_session = spark, None, True, False
        return lookup

    def relation(self, node):
        """The InMemoryRelation for `node`'s subtree, None when it is not cached."""
        if self.empty:
            return None
        if not self.with_session:
            try:
                found = self.manager.lookupCachedData(node)
                return None if found.isEmpty() else found.get().cachedRepresentation()
            except Exception:  # 4.x: lookupCachedData(session, plan); asked so from now on
                self.with_session = True
        found = self.manager.lookupCachedData(self.spark._jsparkSession, node)
        return None if found.isEmpty() else found.get().cachedRepresentation()


def stripped(node):
    """The node under its SubqueryAlias wrappers (a table or view read under an alias)."""
    while node.getClass().getSimpleName() == "SubqueryAlias":
        node = node.child()
    return node


def reads_one_relation(node) -> bool:
    """Whether a cached part of the plan is one table or view (what a scenario can cache),
    not operators over them (a cached DataFrame the query repeats)."""
    return stripped(node).getClass().getSimpleName() in RELATION_KINDS + ("View",)


def cached_name(node, relation) -> str:
    """A cached part of the plan in words: the view it is, or the name its cache was given."""
    if node.getClass().getSimpleName() == "View":
        return f"the cached view {one_line(str(node.desc().identifier().table()))}"
    name = str(relation.cacheBuilder().tableName())
    return f"the cached {one_line(name[5:-1]) if name.startswith('Some(') else 'DataFrame'}"


def cache_note(where: str, relation, sizes: dict) -> str:
    """Where a cached table's size came from, in words."""
    rows = f", {sizes['rows']:,} rows" if "rows" in sizes else ""
    if relation.cacheBuilder().isCachedColumnBuffersLoaded():
        source = f"materialised: its in-memory buffers, {sizes['size_bytes']:,} B{rows}"
    else:
        source = f"not materialised: sized by the plan it caches, {sizes['size_bytes']:,} B{rows}"
    return (f"{where} is read through the session's cache ({source}; Spark prunes no partition of a cached "
            "table): replayed as a cache reporting those statistics")


def fragment_note(tables: list[str], relation) -> str:
    return (f"the query reads a cached DataFrame of operators over {', '.join(tables)} "
            f"({one_line(str(relation.cacheBuilder().tableName()))[:60]}), not a cached table or view: "
            "replayed uncached, sized by its plan rather than by its cache")
