"""Every operator and expression of an analysed plan as Python records: each node's name,
its output type and, for an expression, its children (so the types of its inputs), read
through Py4J once per query (subquery plans included). The reference engine decides from
these whether a query holds only expressions whose translation is verified
(harness.observe.reference_gate); the JVM node stays on the record, so where a query
came from (`origin`, its line) and how Spark prints it are asked only of the one named."""
from __future__ import annotations

from dataclasses import dataclass, field

SUBQUERIES = frozenset({"ScalarSubquery", "Exists", "ListQuery", "LateralSubquery"})


@dataclass
class Node:
    name: str                        # Spark's node name: DayOfWeek, Join, Literal
    kind: str                        # "plan" or "expression"
    type: str | None = None          # the output type's simpleString; None where it has none
    children: list = field(default_factory=list)   # an expression's child expressions
    literal: str | None = None       # a Literal's SQL: '2024-02-01', 2, NULL
    jvm: object = None

    @property
    def inputs(self) -> tuple:
        return tuple(child.type for child in self.children)

    def line(self) -> int | None:
        """The line of the query the node came from (Spark's parser origin), if known."""
        try:
            line = self.jvm.origin().line()
            return int(line.get()) if line.isDefined() else None
        except Exception:
            return None

    def sql(self) -> str:
        try:
            return str(self.jvm.sql())
        except Exception:
            return self.name


def nodes_of(plan) -> list[Node]:
    """The plan's operators and expressions in pre-order (an operator, then its
    expressions, then its children; a subquery's plan after the expression holding it)."""
    out: list[Node] = []
    stack = [plan]
    while stack:
        operator = stack.pop()
        out.append(Node(_name(operator), "plan", jvm=operator))
        subplans: list = []
        expressions = operator.expressions()
        for i in range(expressions.size()):
            out.extend(_expression_nodes(expressions.apply(i), subplans))
        children = operator.children()
        stack.extend(children.apply(i) for i in reversed(range(children.size())))
        stack.extend(reversed(subplans))
    return out


def _expression_nodes(root, subplans: list) -> list[Node]:
    """One expression tree in pre-order; its subqueries' plans go to `subplans`."""
    out: list[Node] = []
    pending = [(root, None)]
    while pending:
        expression, parent = pending.pop()
        name = _name(expression)
        node = Node(name, "expression", _type(expression), jvm=expression)
        if name == "Literal":
            node.literal = node.sql()
        if parent is not None:
            parent.children.append(node)
        out.append(node)
        if name in SUBQUERIES:
            subplans.append(expression.plan())
        children = expression.children()
        pending.extend((children.apply(i), node) for i in reversed(range(children.size())))
    return out


def _name(tree_node) -> str:
    return str(tree_node.nodeName()).rstrip("$")


def _type(expression) -> str | None:
    try:
        return str(expression.dataType().simpleString())
    except Exception:  # frames, window specs and other unevaluable nodes have no type
        return None
