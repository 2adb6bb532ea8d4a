"""Spark's parse and analysis trees of scenario SQL, read as data: `TreeNode.toJSON`
(one Py4J call per tree) walked in Python, with the parts Spark 3.0/3.1 write as null
read through Py4J. Used by the guard (harness.spark.sql_guard), by derived tables (which tables
a query reads) and by capture (which names a query writes)."""
from __future__ import annotations

import json


def name_parts(value) -> list[str]:
    """A multi-part name as toJSON writes it: "[a, b]" (Seq), a FunctionIdentifier or
    TableIdentifier product, or a plain string."""
    if isinstance(value, dict):
        parts = [value.get(k) for k in ("catalog", "database", "funcName", "table", "identifier")]
        return [str(p) for p in parts if isinstance(p, str)]
    if isinstance(value, list):
        return [str(v) for v in value]
    text = str(value or "")
    if text.startswith("[") and text.endswith("]"):
        return [p.strip() for p in text[1:-1].split(",") if p.strip()]
    return [text] if text else []


def function_name(node: dict) -> list[str]:
    for key in ("nameParts", "name", "functionName"):
        if key in node:
            return name_parts(node[key])
    return []


def nodes(tree):
    """Every node (a dict with "class") anywhere in a toJSON tree, nested plans included."""
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "class" in item:
                yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def cte_names(tree) -> set[str]:
    names = set()
    for node in nodes(tree):
        simple = node["class"].rsplit(".", 1)[-1]
        if simple in ("UnresolvedWith", "With"):
            for relation in node.get("cteRelations") or []:
                if isinstance(relation, dict) and isinstance(relation.get("_1"), str):
                    names.add(relation["_1"].lower())
    return names


def tree_of(plan_or_expression) -> list:
    return json.loads(plan_or_expression.toJSON())


def parsed_query(spark, text: str):
    return spark._jsparkSession.sessionState().sqlParser().parsePlan(text)


def parsed_expression(spark, text: str):
    return spark._jsparkSession.sessionState().sqlParser().parseExpression(text)


# Fields that hold plans or expressions in a shape older toJSON writes as null (3.0/3.1:
# a `With` node's Seq of (name, plan) tuples; an inline table's Seq of Seq of expressions).
CONTAINERS = {"With": "cteRelations", "UnresolvedWith": "cteRelations", "UnresolvedInlineTable": "rows"}


def containers_serialised(tree) -> bool:
    return all(isinstance(node.get(CONTAINERS[simple]), list) for node in nodes(tree)
               for simple in [node["class"].rsplit(".", 1)[-1]] if simple in CONTAINERS)


def hidden_parts(plan) -> tuple[list, list]:
    """CTE names, and every CTE body and inline-table expression, read through Py4J:
    plan nodes, their subquery plans and those containers, recursively (parsed plans are
    small)."""
    names, parts, stack = [], [], [plan]
    while stack:
        node = stack.pop()
        simple = node.getClass().getSimpleName()
        if simple in ("With", "UnresolvedWith"):
            relations = node.cteRelations()
            for i in range(relations.size()):
                relation = relations.apply(i)
                names.append(str(relation._1()))
                parts.append(relation._2())
                stack.append(relation._2())
        elif simple == "UnresolvedInlineTable":
            rows = node.rows()
            for i in range(rows.size()):
                row = rows.apply(i)
                parts.extend(row.apply(j) for j in range(row.size()))
        for seq in (node.children(), node.subqueries()):
            stack.extend(seq.apply(i) for i in range(seq.size()))
    return names, parts


def relation_names(spark, text: str) -> list[str]:
    """The tables a query reads by name (lower case; its own CTEs excluded), from Spark's
    parse of it, subqueries and CTE bodies included."""
    plan = parsed_query(spark, text)
    tree = tree_of(plan)
    ctes, hidden = ([], []) if containers_serialised(tree) else hidden_parts(plan)
    own = cte_names(tree) | {name.lower() for name in ctes}
    names = []
    for part in [tree] + [tree_of(p) for p in hidden]:
        for node in nodes(part):
            if node["class"].rsplit(".", 1)[-1] == "UnresolvedRelation":
                parts = name_parts(node.get("multipartIdentifier", node.get("tableIdentifier")))
                if len(parts) == 1 and parts[0].lower() not in own:
                    names.append(parts[0].lower())
    return list(dict.fromkeys(names))
