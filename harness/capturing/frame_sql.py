"""A DataFrame's analysed plan written back as one SQL query, so that a query built in a
notebook can be captured and replayed like SQL text.

Spark has no plan-to-SQL printer since 2.x; this one covers the operators a join query is
made of (relations, views, projections, filters, joins, aggregates, distinct, sort,
limit, union, strategy hints, repartition hints) and refuses the rest by name. Every
attribute is written qualified by the FROM item that produces it, found by its expression
id, so self-joins and duplicate column names stay unambiguous. Expressions are written by
Catalyst itself (`Expression.sql`) after their attributes were re-qualified in the JVM.
The caller checks the result: planned again, it must give the DataFrame's join nodes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from harness.capturing.relations import RELATION_KINDS
from harness.core.text import quoted_identifier


class PlanSqlError(Exception):
    """What in the plan cannot be written as SQL (one line)."""


@dataclass
class FromItem:
    text: str                                  # one item of a FROM clause
    refs: dict                                 # expression id → (qualifier, column)
    hints: list = field(default_factory=list)  # for the SELECT that reads this item
    joined: bool = False                       # a join tree: parenthesised on a join's right


SUBQUERY_EXPRESSIONS = ("ScalarSubquery", "Exists", "ListQuery", "InSubquery", "LateralSubquery",
                        "OuterReference", "PythonUDF", "ScalaUDF", "ScalaUDAF", "PythonUDAF")
PASS_THROUGH = ("SubqueryAlias", "View")


def _seq(node) -> list:
    return [node.apply(i) for i in range(node.size())]


def _kind(node) -> str:
    return node.getClass().getSimpleName()


def _expr_id(attribute) -> int:
    return int(attribute.exprId().id())


class Writer:
    """One query's SQL; `relation_sql(node)` names a catalog relation (LogicalRelation,
    HiveTableRelation or an Iceberg table's DataSourceV2Relation) as the query should read it, and its alias."""

    def __init__(self, spark, relation_sql: Callable):
        self._jvm = spark._jvm
        self._relation_sql = relation_sql
        self._aliases: set = set()

    # ------------------------------------------------------------------ names

    def _alias(self, wanted: str) -> str:
        alias, n = wanted, 1
        while alias.lower() in self._aliases:
            n += 1
            alias = f"{wanted}_{n}"
        self._aliases.add(alias.lower())
        return alias

    def _scala_list(self, items: list):
        java = self._jvm.java.util.ArrayList()
        for item in items:
            java.add(item)
        return self._jvm.scala.collection.JavaConverters.asScalaBufferConverter(java).asScala().toList()

    # ------------------------------------------------------------------ expressions

    def _rebuilt(self, expr, refs: dict):
        kind = _kind(expr)
        if kind in SUBQUERY_EXPRESSIONS:
            raise PlanSqlError(f"{kind} cannot be replayed from SQL text (a subquery or a user-defined function)")
        if kind == "AttributeReference":
            qualifier, column = refs.get(_expr_id(expr), (None, None))
            if column is None:
                raise PlanSqlError(f"attribute {expr.name()} has no producing relation")
            return expr.withQualifier(self._scala_list([qualifier])).withName(column)
        children = _seq(expr.children())
        if not children:
            return expr
        return expr.withNewChildren(self._scala_list([self._rebuilt(c, refs) for c in children]))

    def expression(self, expr, refs: dict) -> str:
        return str(self._rebuilt(expr, refs).sql())

    # ------------------------------------------------------------------ plans

    def query(self, plan) -> str:
        """The whole plan as a query (its output columns de-duplicated by suffix)."""
        text, _ = self._select(plan)
        return text

    def _from(self, plan) -> FromItem:
        kind = _kind(plan)
        if kind in PASS_THROUGH:
            item = self._from(plan.child())
            item.refs = _renamed(plan, item.refs)
            return item
        if kind in RELATION_KINDS:
            name, wanted = self._relation_sql(plan)
            alias = self._alias(wanted)
            refs = {_expr_id(a): (alias, str(a.name())) for a in _seq(plan.output())}
            return FromItem(name if alias == name else f"{name} {alias}", refs)
        if kind == "Join":
            return self._join(plan)
        if kind == "ResolvedHint":
            return self._hinted(plan)
        return self._subquery(plan)

    def _subquery(self, plan) -> FromItem:
        text, names = self._select(plan)
        alias = self._alias("q")
        refs = {eid: (alias, column) for eid, column in names.items()}
        return FromItem(f"(\n{_indent(text)}\n) {alias}", refs)

    def _join(self, plan) -> FromItem:
        left, right = self._from(plan.left()), self._from(plan.right())
        refs = {**left.refs, **right.refs}
        join_type = str(plan.joinType().sql()).upper()
        condition = plan.condition()
        right_text = f"({right.text})" if right.joined else right.text
        if condition.isEmpty():
            how = "CROSS JOIN" if join_type in ("INNER", "CROSS") else f"{join_type} JOIN"
            on = "" if how == "CROSS JOIN" else " ON true"
        else:
            how = "JOIN" if join_type in ("INNER", "CROSS") else f"{join_type} JOIN"
            on = f" ON {self.expression(condition.get(), refs)}"
        return FromItem(f"{left.text}\n{how} {right_text}{on}", refs, left.hints + right.hints, joined=True)

    def _hinted(self, plan) -> FromItem:
        strategy = plan.hints().strategy()
        inner = self._from(plan.child())
        if strategy.isEmpty():
            return inner
        if inner.joined or inner.hints or len({q for q, _ in inner.refs.values()}) != 1:
            inner = self._wrapped(inner, plan.child())
        (alias,) = {q for q, _ in inner.refs.values()}
        hint = f"{str(strategy.get().displayName()).upper()}({alias})"
        return FromItem(inner.text, inner.refs, inner.hints + [hint], inner.joined)

    def _wrapped(self, item: FromItem, plan) -> FromItem:
        names = self._output_names(plan)
        columns = [f"{_ref(*item.refs[eid])} AS {_quote(names[eid])}" for eid in names]
        alias = self._alias("q")
        text = f"SELECT {_hints(item.hints)}{', '.join(columns)}\nFROM {item.text}"
        return FromItem(f"(\n{_indent(text)}\n) {alias}", {eid: (alias, n) for eid, n in names.items()})

    @staticmethod
    def _output_names(plan) -> dict:
        names, used = {}, set()
        for attribute in _seq(plan.output()):
            names[_expr_id(attribute)] = _unique(str(attribute.name()), used)
        return names

    def _select(self, plan) -> tuple[str, dict]:
        """(SELECT text, expression id → output column name)."""
        kind = _kind(plan)
        if kind in PASS_THROUGH:
            text, names = self._select(plan.child())
            return text, _renamed(plan, names)
        if kind == "Project":
            return self._project(plan)
        if kind == "Aggregate":
            return self._aggregate(plan)
        if kind == "Deduplicate":
            return self._deduplicate(plan)
        if kind == "Union":
            return self._union(plan)
        if kind in ("Filter", "Distinct", "Sort", "GlobalLimit", "LocalLimit", "Repartition",
                    "RepartitionByExpression", "Join", "ResolvedHint") + RELATION_KINDS:
            return self._over_child(plan, kind)
        raise PlanSqlError(f"a {kind} cannot be written as SQL by capture (supported: relations, views, "
                           "select, filter, join, aggregate, distinct, sort, limit, union, hints, repartition)")

    def _columns(self, plan, item: FromItem, used: set) -> tuple[list, dict]:
        columns, names = [], {}
        for attribute in _seq(plan.output()):
            name = _unique(str(attribute.name()), used)
            names[_expr_id(attribute)] = name
            ref = item.refs[_expr_id(attribute)]
            columns.append(_ref(*ref) if ref[1] == name else f"{_ref(*ref)} AS {_quote(name)}")
        return columns, names

    def _named_columns(self, named_list, item: FromItem) -> tuple[list, dict]:
        """A select list from named expressions: `expr AS name`, or a column reference
        (renamed only where its output name differs)."""
        columns, names, used = [], {}, set()
        for named in _seq(named_list):
            name = _unique(str(named.name()), used)
            names[_expr_id(named.toAttribute())] = name
            if _kind(named) == "Alias":
                columns.append(f"{self.expression(named.child(), item.refs)} AS {_quote(name)}")
            else:
                ref = self.expression(named, item.refs)
                columns.append(ref if item.refs.get(_expr_id(named), (0, None))[1] == name
                               else f"{ref} AS {_quote(name)}")
        return columns, names

    def _project(self, plan) -> tuple[str, dict]:
        item = self._from(plan.child())
        columns, names = self._named_columns(plan.projectList(), item)
        return f"SELECT {_hints(item.hints)}{', '.join(columns) or '1'}\nFROM {item.text}", names

    def _aggregate(self, plan) -> tuple[str, dict]:
        item = self._from(plan.child())
        columns, names = self._named_columns(plan.aggregateExpressions(), item)
        groups = [self.expression(g, item.refs) for g in _seq(plan.groupingExpressions())]
        group_by = f"\nGROUP BY {', '.join(groups)}" if groups else ""
        return f"SELECT {_hints(item.hints)}{', '.join(columns)}\nFROM {item.text}{group_by}", names

    def _deduplicate(self, plan) -> tuple[str, dict]:
        """dropDuplicates(cols): Spark's own rewrite (ReplaceDeduplicateWithAggregate):
        group by the keys, first() of the other columns."""
        item = self._from(plan.child())
        keys = {_expr_id(k) for k in _seq(plan.keys())}
        columns, names, used = [], {}, set()
        for attribute in _seq(plan.child().output()):
            name = _unique(str(attribute.name()), used)
            names[_expr_id(attribute)] = name
            ref = _ref(*item.refs[_expr_id(attribute)])
            columns.append(f"{ref} AS {_quote(name)}" if _expr_id(attribute) in keys
                           else f"first({ref}) AS {_quote(name)}")
        groups = [_ref(*item.refs[_expr_id(k)]) for k in _seq(plan.keys())]
        return (f"SELECT {_hints(item.hints)}{', '.join(columns)}\nFROM {item.text}\nGROUP BY {', '.join(groups)}",
                names)

    def _union(self, plan) -> tuple[str, dict]:
        if _by_name(plan):
            raise PlanSqlError("unionByName cannot be written as SQL by capture")
        parts = [self._select(child)[0] for child in _seq(plan.children())]
        names = self._output_names(plan)
        first = self._subquery_of(parts[0], names, plan)
        return "\nUNION ALL\n".join([first] + [f"SELECT * FROM (\n{_indent(p)}\n)" for p in parts[1:]]), names

    def _subquery_of(self, text: str, names: dict, plan) -> str:
        """The first branch of a union renamed to the union's column names."""
        alias = self._alias("q")
        inner_names = list(self._output_names(_seq(plan.children())[0]).values())
        columns = [f"{_ref(alias, inner)} AS {_quote(outer)}" for inner, outer in zip(inner_names, names.values())]
        return f"SELECT {', '.join(columns)}\nFROM (\n{_indent(text)}\n) {alias}"

    def _over_child(self, plan, kind: str) -> tuple[str, dict]:
        if kind in ("Join", "ResolvedHint") + RELATION_KINDS:
            item = self._from(plan)
            columns, names = self._columns(plan, item, set())
            return f"SELECT {_hints(item.hints)}{', '.join(columns)}\nFROM {item.text}", names
        child = plan.child()
        if kind == "GlobalLimit" and _kind(child) == "LocalLimit":
            child = child.child()
        item = self._from(child)
        columns, names = self._columns(plan, item, set())
        hints, distinct, tail = list(item.hints), "", ""
        if kind == "Filter":
            tail = f"\nWHERE {self.expression(plan.condition(), item.refs)}"
        elif kind == "Distinct":
            distinct = "DISTINCT "
        elif kind == "Sort":
            if not bool(getattr(plan, "global")()):  # a Python keyword
                raise PlanSqlError("sortWithinPartitions cannot be written as SQL by capture")
            tail = f"\nORDER BY {', '.join(self.expression(o, item.refs) for o in _seq(plan.order()))}"
        elif kind in ("GlobalLimit", "LocalLimit"):
            tail = f"\nLIMIT {self.expression(plan.limitExpr(), item.refs)}"
        elif kind == "Repartition":
            hints.append(f"{'REPARTITION' if bool(plan.shuffle()) else 'COALESCE'}({int(plan.numPartitions())})")
        elif kind == "RepartitionByExpression":
            hints.append(self._repartition_hint(plan, item))
        return f"SELECT {_hints(hints)}{distinct}{', '.join(columns)}\nFROM {item.text}{tail}", names

    def _repartition_hint(self, plan, item: FromItem) -> str:
        """REPARTITION(n, c1, c2) or REPARTITION_BY_RANGE(...): columns by their names,
        as Spark resolves a hint's columns against the hinted query's output."""
        by_range, columns = False, []
        for expr in _seq(plan.partitionExpressions()):
            if _kind(expr) == "SortOrder":
                by_range, expr = True, expr.child()
            if _kind(expr) != "AttributeReference":
                raise PlanSqlError("repartition by an expression (not a column) cannot be written as SQL")
            columns.append(_quote(item.refs[_expr_id(expr)][1]))
        count = _partitions(plan)
        args = ([str(count)] if count is not None else []) + columns
        return f"{'REPARTITION_BY_RANGE' if by_range else 'REPARTITION'}({', '.join(args)})"


def _renamed(plan, by_id: dict) -> dict:
    """A view's or alias's output by expression id. Spark 3.0's View gives its output new
    ids over its child's (position for position), and its child may share ids with the
    same table read elsewhere in the query: only the output's own ids are kept."""
    child_ids = [_expr_id(a) for a in _seq(plan.child().output())]
    return {_expr_id(a): by_id[c] for a, c in zip(_seq(plan.output()), child_ids) if c in by_id}


def _by_name(union) -> bool:
    """Spark 3.0's Union has no byName (unionByName was rewritten to a Project there)."""
    try:
        return bool(union.byName())
    except Exception:
        return False


def _partitions(plan):
    """Spark 3.0 has numPartitions (an Int); later versions optNumPartitions (an Option)."""
    try:
        option = plan.optNumPartitions()
        return None if option.isEmpty() else int(option.get())
    except Exception:
        return int(plan.numPartitions())


def _unique(name: str, used: set) -> str:
    candidate, n = name, 1
    while candidate.lower() in used:
        n += 1
        candidate = f"{name}_{n}"
    used.add(candidate.lower())
    return candidate


_quote = quoted_identifier


def _ref(qualifier: str, column: str) -> str:
    return f"{_quote(qualifier)}.{_quote(column)}"


def _hints(hints: list) -> str:
    return f"/*+ {', '.join(hints)} */ " if hints else ""


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def frame_sql(spark, analysed, relation_sql: Callable) -> str:
    return Writer(spark, relation_sql).query(analysed)
