"""A cache in a plan-only case: what `CACHE TABLE` or `df.cache()` left in the capturing
session, replayed without data.

Spark plans a cached relation (InMemoryRelation) by the statistics it reports: the plan it
caches while nothing has been materialised, its in-memory buffers (size, and the rows it
counted) once something has. A plan-only case never runs a job, so its cache is never
materialised: `{cache: {size_bytes, rows, columns}}` gives the relation the statistics
Spark reported in the capturing session — set where Spark keeps them (the relation's
`statsOfPlanToCache`, which its planning copies read while the buffers are not loaded;
the same field on 3.0–4.3) — so that the query over it is planned as in production. The
cache is dropped with the case's others (harness.spark.case_scope)."""
from __future__ import annotations

from harness.spark.stats_only import column_properties, column_stat, jvm_statistics


class CacheSizingError(Exception):
    """One line: a declared cache Spark cannot take (a column the cached frame lacks)."""


def size_cache(spark, frame, sizes: dict) -> None:
    """The cached relation of `frame` (cached already) reports `sizes`: its size, its row
    count and the column statistics declared (none otherwise, as a cache built without
    CBO has none)."""
    relation = cached_relation(spark, frame)
    if relation is None:
        raise CacheSizingError("the frame is not cached: nothing to size")
    current = relation.statsOfPlanToCache()
    statistics = jvm_statistics(spark._jvm, "org.apache.spark.sql.catalyst.plans.logical.Statistics", "cache",
                                sizes["size_bytes"], sizes.get("rows"),
                                _attribute_stats(spark, relation, sizes.get("columns") or {}),
                                trailing=(lambda: current.isRuntime(),))  # 3.1+: kept as it was
    getattr(relation, "statsOfPlanToCache_$eq")(statistics)


def cached_relation(spark, frame):
    """The InMemoryRelation the session's cache holds for `frame`, None when it holds none."""
    found = spark._jsparkSession.sharedState().cacheManager().lookupCachedData(frame._jdf)
    return None if found.isEmpty() else found.get().cachedRepresentation()


def _attribute_stats(spark, relation, columns: dict):
    """An AttributeMap[ColumnStat] over the relation's own output attributes, each column's
    statistics parsed by Spark (CatalogColumnStat.fromMap, then toPlanStat)."""
    jvm = spark._jvm
    output = relation.output()
    by_name = {}
    for index in range(output.size()):
        attribute = output.apply(index)
        by_name[str(attribute.name()).lower()] = attribute
    pairs = jvm.java.util.ArrayList()
    for name, spec in columns.items():
        attribute = by_name.get(name.lower())
        if attribute is None:
            raise CacheSizingError(f"'{name}' is not a column of the cached frame (its columns: "
                                   f"{', '.join(str(output.apply(i).name()) for i in range(output.size()))})")
        properties = column_properties(spark, name, spec, str(attribute.dataType().simpleString()))
        stat = column_stat(jvm, "cache", name, properties).toPlanStat(name, attribute.dataType())
        pairs.add(jvm.scala.Tuple2(attribute, stat))
    scala_pairs = jvm.scala.collection.JavaConverters.asScalaBufferConverter(pairs).asScala().toList()
    module = getattr(getattr(jvm.org.apache.spark.sql.catalyst.expressions, "AttributeMap$"), "MODULE$")
    return module.apply(scala_pairs)

