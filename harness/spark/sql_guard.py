"""What scenario SQL may do, decided from the plans Spark builds, never from the text.

Every piece of SQL in a scenario (column `expr`, table `filter`, join `condition`,
`join.sql`) is parsed by the running Spark's own parser and, where it analyses, by its
analyser against stand-ins of the scenario's tables (the real generated tables over zero
rows, so every type is the one a case sees). Both trees are walked, subqueries and CTE
bodies included, against allow-lists:

- logical operators: queries only (projection, filter, join, aggregate, window, sort,
  limit, set operations, CTEs, hints, generators, inline tables, range); no command, no
  `EXECUTE IMMEDIATE`, no script transform, no file, catalog or data source relation;
- relations by name: the scenario's own tables and the query's CTEs; table functions:
  `range` and the generator functions;
- expressions: Catalyst's built-in expression classes, minus reflection
  (`reflect`/`java_method`/`try_reflect`, whatever the spelling: quoted, qualified or
  through `IDENTIFIER()`) and user-defined functions of any kind.

The walk reads `TreeNode.toJSON` (one Py4J call per tree), which lists every node and
expression with its class, subquery plans included. Nothing is executed: a statement is
only parsed, and only an allowed query is ever analysed.

Every analysed plan must also be deterministic, as Spark's own `deterministic` says of
each expression in it (subqueries included; `rand()` seeded or not, `uuid()`,
`shuffle()`, `monotonically_increasing_id()` ...), and hold no expression of the clock
(`current_timestamp()`, `now()`, `current_date()` ...: deterministic within one query
for Spark, different on every run): its rows and checksum would differ between runs and
between strategies. Unless the file says so is intended (`expect: {varies: {checksum: why}}`):
then neither the cross-strategy check nor the flake finder compares its checksum.
"""
from __future__ import annotations

import re

from harness.core.text import one_line, quoted_identifier
from harness.core.vocab import THEN_VIEW
from harness.scenario.errors import ScenarioError, dotted
from harness.scenario.model import sql_texts
from harness.scenario.tables import is_derived
from harness.spark import conf_registry, datagen, derived
from harness.spark.query import condition_text
from harness.spark.sql_trees import (
    containers_serialised,
    cte_names,
    function_name,
    hidden_parts,
    name_parts,
    nodes,
    parsed_expression,
    parsed_query,
    tree_of,
)

LOGICAL = "org.apache.spark.sql.catalyst.plans.logical."
ANALYSIS = "org.apache.spark.sql.catalyst.analysis."
EXPRESSIONS = "org.apache.spark.sql.catalyst.expressions."

QUERY_OPERATORS = frozenset("""
Project Filter Join Aggregate Window Sort GlobalLimit LocalLimit Limit Offset Tail Union Intersect Except
Distinct Deduplicate SubqueryAlias LocalRelation OneRowRelation Range Generate ResolvedHint UnresolvedHint
UnresolvedWith With WithCTE CTERelationDef CTERelationRef WithWindowDefinition Pivot Unpivot
RepartitionByExpression Repartition RebalancePartitions Sample Expand LateralJoin View UnionLoop UnionLoopRef
""".split())
# Parse-time plan placeholders of the analyser package that stand for parts of a query.
UNRESOLVED_OPERATORS = frozenset("""
UnresolvedRelation UnresolvedInlineTable ResolvedInlineTable UnresolvedTableValuedFunction UnresolvedTVFAliases
UnresolvedSubqueryColumnAliases UnresolvedHaving
""".split())
UNRESOLVED_EXPRESSIONS = frozenset("""
UnresolvedFunction UnresolvedAttribute UnresolvedStar UnresolvedStarExcept UnresolvedAlias UnresolvedExtractValue
UnresolvedRegex UnresolvedOrdinal UnresolvedNamedLambdaVariable UnresolvedGenerator UnresolvedWindowExpression
UnresolvedOuterReference UnresolvedSeed MultiAlias GetColumnByOrdinal
UnresolvedFieldName UnresolvedFieldPosition
""".split())
REFLECTION = frozenset({"reflect", "java_method", "try_reflect"})
REFUSED_EXPRESSIONS = {
    "CallMethodViaReflection": "reflection (reflect/java_method)",
    "TryReflect": "reflection (try_reflect)",
    "ScalaUDF": "a user-defined function", "ScalaUDAF": "a user-defined function",
    "ScalaAggregator": "a user-defined function", "UserDefinedGenerator": "a user-defined function",
}
# Table-valued functions that make rows from their arguments (and `range`); the others
# read files or catalogs.
TABLE_FUNCTIONS = frozenset({"range", "explode", "explode_outer", "inline", "inline_outer", "json_tuple",
                             "posexplode", "posexplode_outer", "stack", "variant_explode",
                             "variant_explode_outer"})
BUILTIN_QUALIFIERS = ({"builtin"}, {"system", "builtin"})


# Expressions of the clock: Spark computes them once per query (so calls them
# deterministic), and they differ from one run to the next.
CLOCK = frozenset({"CurrentTimestamp", "Now", "CurrentDate", "LocalTimestamp", "CurrentTime", "CurrentBatchTimestamp"})
# Aggregates Spark calls deterministic whose answer is the order rows arrive in, which the
# partitioning and the strategy decide: the first row, the list in arrival order, a sketch
# merged in that order.
ARRIVAL_ORDER = frozenset({"First", "Last", "AnyValue", "CollectList", "CollectSet", "ApproximatePercentile"})
NONDETERMINISM_ALLOWED_BY = "checksum"  # the `varies` entry that makes non-deterministic SQL intended


class SqlRefused(Exception):
    """Scenario SQL that does something a scenario may not do (one line: the construct)."""


class Guard:
    """The allow-lists, for one scenario's table names."""

    def __init__(self, tables: set[str], allow_relations: bool):
        self.tables = {t.lower() for t in tables}
        self.allow_relations = allow_relations

    def checktree_of(self, tree, analysed: bool) -> None:
        known = self.tables | cte_names(tree)
        for node in nodes(tree):
            self._check_node(node, known, analysed)

    def _check_node(self, node: dict, known: set[str], analysed: bool) -> None:
        cls = str(node["class"])
        simple = cls.rsplit(".", 1)[-1]
        if cls.startswith(LOGICAL):
            if simple not in QUERY_OPERATORS:
                raise SqlRefused(f"{simple} is not a query operator (only queries are allowed)")
            if simple == "View" and not node.get("isTempView", False):
                raise SqlRefused("reads a permanent view")
            if not self.allow_relations and simple not in ("Project", "OneRowRelation", "LocalRelation",
                                                           "SubqueryAlias", "Filter", "Range", "Generate"):
                raise SqlRefused(f"a query ({simple}) inside an expression; put queries in join.sql")
            return
        if cls.startswith(ANALYSIS):
            self._check_unresolved(node, simple, known)
            return
        if cls.startswith(EXPRESSIONS) and not cls.startswith(EXPRESSIONS + "objects."):
            if simple in REFUSED_EXPRESSIONS:
                raise SqlRefused(f"{REFUSED_EXPRESSIONS[simple]} is not allowed ({simple})")
            return
        if cls.startswith(EXPRESSIONS + "objects.StaticInvoke") and \
                str(node.get("staticObject", "")).startswith("org.apache.spark."):
            return  # built-in functions implemented by a static Spark helper
        raise SqlRefused(f"{simple} is not allowed in scenario SQL ({_area(cls)})")

    def _check_unresolved(self, node: dict, simple: str, known: set[str]) -> None:
        if simple == "UnresolvedFunction":
            parts = [p.lower().strip("`") for p in function_name(node)]
            if parts and parts[-1] in REFLECTION:
                raise SqlRefused(f"reflection ({'.'.join(parts)}) is not allowed")
            if len(parts) > 1 and set(parts[:-1]) not in BUILTIN_QUALIFIERS:
                raise SqlRefused(f"function '{'.'.join(parts)}': only built-in functions are allowed")
            return
        if simple == "UnresolvedRelation":
            parts = name_parts(node.get("multipartIdentifier", node.get("tableIdentifier")))
            if not self.allow_relations:
                raise SqlRefused(f"reads '{'.'.join(parts)}' inside an expression; put queries in join.sql")
            if len(parts) != 1 or parts[0].lower() not in known:
                raise SqlRefused(f"reads '{'.'.join(parts)}', which is not a table of this scenario "
                                 f"({', '.join(sorted(self.tables))})")
            return
        if simple == "UnresolvedTableValuedFunction":
            parts = [p.lower() for p in function_name(node)]
            if len(parts) != 1 or parts[0] not in TABLE_FUNCTIONS:
                raise SqlRefused(f"table function '{'.'.join(parts)}' is not allowed "
                                 f"(allowed: {', '.join(sorted(TABLE_FUNCTIONS))})")
            return
        if simple in UNRESOLVED_OPERATORS or simple in UNRESOLVED_EXPRESSIONS:
            return
        if simple in ("ExpressionWithUnresolvedIdentifier", "PlanWithUnresolvedIdentifier"):
            # a name computed at analysis (IDENTIFIER('reflect')(...)): write the name itself
            raise SqlRefused("the IDENTIFIER() clause is not allowed in scenario SQL; write the name itself")
        raise SqlRefused(f"{simple} is not allowed in scenario SQL")


def _area(cls: str) -> str:
    if ".execution.datasources" in cls or ".sources." in cls or "Relation" in cls or ".v2." in cls:
        return "a relation the harness did not create"
    if ".command" in cls or "Command" in cls:
        return "a command"
    if ".python." in cls or ".hive." in cls or "UDF" in cls:
        return "a user-defined function"
    return cls


# --------------------------------------------------------------------------- Spark side

def check_query_text(spark, text: str, tables: set[str]) -> None:
    """Parse-level check of a query (before Spark analyses, let alone runs, it)."""
    plan = parsed_query(spark, text)
    tree = tree_of(plan)
    ctes, hidden = ([], []) if containers_serialised(tree) else hidden_parts(plan)
    guard = Guard(tables | {name.lower() for name in ctes}, allow_relations=True)
    guard.checktree_of(tree, analysed=False)
    for part in hidden:
        guard.checktree_of(tree_of(part), analysed=False)


def check_expression_text(spark, text: str) -> None:
    Guard(set(), allow_relations=False).checktree_of(tree_of(parsed_expression(spark, text)), analysed=False)


def check_analysed(frame, tables: set[str], allow_relations: bool = True, varies: bool = False) -> None:
    """The analysed plan of a DataFrame built from the scenario's SQL; `varies`: the file
    declares its answer non-deterministic, so a non-deterministic expression is allowed."""
    plan = frame._jdf.queryExecution().analyzed()
    tree = tree_of(plan)
    Guard(tables, allow_relations).checktree_of(tree, analysed=True)
    if varies:
        return
    culprit = nondeterministic_expression(plan, tree)
    if culprit:
        raise SqlRefused(f"{culprit} is non-deterministic (Spark's analysed plan): the rows and checksum would "
                         f"differ between runs; if that is intended, say why in `expect: {{varies: {{checksum: ...}}}}`")


def nondeterministic_expression(plan, tree=None) -> str | None:
    """The first expression of an analysed plan (its subqueries included) that Spark
    calls non-deterministic, or of the clock: in SQL words (`rand()`, `uuid()`)."""
    for node in nodes(tree if tree is not None else tree_of(plan)):
        simple = node["class"].rsplit(".", 1)[-1]
        if simple in CLOCK:
            return f"{simple} (the clock)"
        if simple in ARRIVAL_ORDER:
            return f"{simple} (its answer is the order rows arrive in)"
    return _nondeterministic_in(plan)


def _nondeterministic_in(plan) -> str | None:
    """The innermost non-deterministic expression of a plan, subqueries included. From 3.3
    a plan says in one call that it holds none (`QueryPlan.deterministic`: its expressions
    and children, a subquery expression's plan included; measured to agree with the walk
    on 3.3.4-4.3.0), which most plans do: only a plan that holds one is walked to name it."""
    try:
        if plan.deterministic():
            return None
    except Exception:  # before 3.3: no such method
        pass
    stack = [plan]
    while stack:
        node = stack.pop()
        expressions = node.expressions()
        for i in range(expressions.size()):
            expression = expressions.apply(i)
            if not expression.deterministic():
                return _innermost_nondeterministic(expression)
        children, subqueries = node.children(), node.subqueries()
        stack.extend(children.apply(i) for i in range(children.size()))
        stack.extend(subqueries.apply(i) for i in range(subqueries.size()))
    return None


def _innermost_nondeterministic(expression) -> str:
    """Down a non-deterministic expression to the one whose children are all deterministic:
    `rand(...)` rather than the comparison or alias around it; into a subquery's plan
    (Spark 4 calls the subquery itself non-deterministic when its plan is)."""
    while True:
        children = expression.children()
        below = [children.apply(i) for i in range(children.size()) if not children.apply(i).deterministic()]
        if not below:
            inside = _nondeterministic_in(expression.plan()) if _is_subquery(expression) else None
            return inside or f"{expression.prettyName()}()"
        expression = below[0]


def _is_subquery(expression) -> bool:
    return "SubqueryExpression" in [c.getSimpleName() for c in _superclasses(expression.getClass())]


def _superclasses(cls):
    while cls is not None:
        yield cls
        cls = cls.getSuperclass()


def describe(exc: BaseException) -> str:
    """One line for a parse or analysis error of scenario SQL."""
    text = str(getattr(exc, "desc", None) or exc)
    text = re.sub(r"\s*(==|JVM stacktrace).*", "", text, flags=re.S)
    # a Java exception Py4J passes on: its class and message, not Py4J's words or its frames
    text = re.sub(r"^An error occurred while calling [\w.$]+\.\s*:\s*", "", text.strip())
    text = re.sub(r"\n\s*at [\w.$<>]+\(.*", "", text, flags=re.S)
    return one_line(text.strip())[:300]


# --------------------------------------------------------------------------- a scenario

def check_scenario(spark, scenario) -> None:
    """Refuse the scenario (ScenarioError: file, line, field, construct) if any of its SQL
    does what a scenario may not. Done once per scenario and session: the verdict is kept
    on the loaded scenario, so every case and forced strategy after the first costs nothing."""
    def refusal():
        try:
            conf_registry.check_settings(spark, scenario.data)
            _check_scenario(spark, scenario)
            return None
        except (SqlRefused, conf_registry.ConfRefused) as exc:
            where, message = exc.args
            return scenario.error(where, message)
    once_per_session(scenario, id(spark), refusal)


# The session key of a verdict read from the result store (made on this Spark and harness).
STORED_VERDICT = "stored"


def remember_verdict(scenario, refusal) -> None:
    """A verdict the store holds for this scenario, taken for every session of this Spark."""
    scenario.sql_verdict = (STORED_VERDICT, refusal)


def once_per_session(scenario, session_key, refusal) -> None:
    """The scenario's SQL verdict, kept on the loaded scenario per session: `refusal()`
    (a ScenarioError, or None when accepted) is asked once, and raised every time."""
    if scenario.sql_verdict is None or scenario.sql_verdict[0] not in (session_key, STORED_VERDICT):
        scenario.sql_verdict = (session_key, refusal())
    if scenario.sql_verdict[1] is not None:
        raise scenario.sql_verdict[1]


def _check_scenario(spark, scenario) -> None:
    data = scenario.data
    tables = set(data["tables"])
    declared = list(data["tables"])
    for where, text in sql_texts(data):
        try:
            if where == ("join", "sql"):
                check_query_text(spark, text, tables)
            elif where == ("stream", "then", "sql"):
                check_query_text(spark, text, {THEN_VIEW})
            elif where[0] == "tables" and where[2] == "sql":  # a derived table: tables declared above it
                check_query_text(spark, text, set(declared[:declared.index(where[1])]))
            else:
                check_expression_text(spark, text)
        except SqlRefused as exc:
            raise SqlRefused(where, str(exc)) from None
        except Exception as exc:
            # SQL this Spark cannot parse cannot run: a collection error, unless the file
            # expects an error (a syntax a version refuses is then what it observes)
            if _is_parse_error(exc) and not _expects_an_error(data):
                raise SqlRefused(where, f"does not parse on Spark {spark.version}: {describe(exc)}") from None
    if not _has_sql_beyond_text(data):
        return  # nothing of it is analysed: keys and generators only
    varies = declares_nondeterminism(data)
    stand_ins = _stand_ins(spark, scenario, varies)
    _check_condition(data, stand_ins, varies)
    _check_join_sql(spark, data, stand_ins, tables, varies)
    _check_batch_filters(data, stand_ins, varies)
    _check_then_sql(spark, data, stand_ins, varies)


def declares_nondeterminism(data: dict) -> bool:
    """The base `expect` says the checksum varies (SQL is the same on every version)."""
    return NONDETERMINISM_ALLOWED_BY in ((data.get("expect") or {}).get("varies") or {})


def _check_batch_filters(data: dict, stand_ins: dict, varies: bool) -> None:
    """A stream step's `where`, analysed over its table as the step applies it."""
    from pyspark.sql import functions as F
    for i, batch in enumerate((data.get("stream") or {}).get("batches", [])):
        for name, added in batch["add"].items():
            if "where" not in added or name not in stand_ins:
                continue
            where = ("stream", "batches", i, "add", name, "where")
            try:
                frame = stand_ins[name].where(F.expr(added["where"]))
            except Exception as exc:
                _refused_by_spark(exc, where)
                continue
            try:
                check_analysed(frame, set(), allow_relations=False, varies=varies)
            except SqlRefused as exc:
                raise SqlRefused(where, str(exc)) from None


def _check_then_sql(spark, data: dict, stand_ins: dict, varies: bool) -> None:
    """`stream.then` analysed over the stand-ins' join (inner: every column of both sides),
    read as the view it reads in a case."""
    then, join = (data.get("stream") or {}).get("then"), data["join"]
    if then is None or join.get("left") not in stand_ins or join.get("right") not in stand_ins:
        return
    from pyspark.sql import functions as F
    where = ("stream", "then", "sql")
    try:
        condition = condition_text(join)
        joined = stand_ins[join["left"]].alias("l").join(stand_ins[join["right"]].alias("r"),
                                                          F.expr(condition) if condition else None)
    except Exception:
        return  # the condition's own check reports it
    _check_query_over_views(spark, then["sql"], {THEN_VIEW: joined}, where, varies)


def _is_parse_error(exc: BaseException) -> bool:
    return "ParseException" in type(exc).__name__ or "ParseException" in str(exc)[:500] \
        or "PARSE_SYNTAX_ERROR" in str(exc)[:500]


def _expects_an_error(data: dict) -> bool:
    expect = data.get("expect") or {}
    return "error" in expect or any("error" in o for o in expect.get("overrides", []))


def _has_sql_beyond_text(data: dict) -> bool:
    """Whether any of the scenario's SQL needs an analysed plan to be judged: a join
    condition or query, a derived table, a filter or an `expr` column."""
    if "condition" in data["join"] or "sql" in data["join"] or "then" in (data.get("stream") or {}):
        return True
    if any("where" in added for batch in (data.get("stream") or {}).get("batches", [])
           for added in batch["add"].values()):
        return True
    return any(is_derived(spec) or "filter" in spec or any("expr" in column for column in spec.get("columns", {}).values())
               for spec in data["tables"].values())


def _stand_ins(spark, scenario, varies: bool) -> dict:
    """Each table as an empty relation of the types a case sees. A table with its own
    SQL (`expr` columns, `filter`) is first checked as the case builds it, over zero rows:
    its analysed plan holds those expressions."""

    frames = {}
    for name, spec in scenario.data["tables"].items():
        if is_derived(spec):
            _stand_in_derived(spark, scenario, name, spec, frames, varies)
            continue
        has_sql = "filter" in spec or any("expr" in column for column in spec.get("columns", {}).values())
        key = None if has_sql else (id(spark), scenario.seed, name, id(spec))
        known = _PLAIN_STAND_INS.get(key)
        if known is not None and known[0] is spec:
            frames[name] = known[1]
            continue
        try:
            frame = datagen.stand_in_table(spark, scenario.seed, name, spec)
        except Exception as exc:
            _refused_by_spark(exc, _table_field(scenario.data, name))
            continue  # the case reports why the table cannot be built
        if has_sql:
            try:
                check_analysed(frame, set(), allow_relations=False, varies=varies)
            except SqlRefused as exc:
                raise SqlRefused(_table_field(scenario.data, name), str(exc)) from None
        frames[name] = _empty_like(spark, frame)
        if key is not None:
            if len(_PLAIN_STAND_INS) >= 2048:
                _PLAIN_STAND_INS.clear()
            _PLAIN_STAND_INS[key] = (spec, frames[name])
    return frames


# Stand-ins of tables with no SQL of their own (statistics-only, literal, generated without
# `expr`), per session and spec object (kept, so its id is not reused): a DataFrame is an
# immutable plan, and a workload's scenarios read the same catalog table objects again and again.
_PLAIN_STAND_INS: dict = {}


def _empty_like(spark, frame):
    return spark.range(0).selectExpr(*[f"CAST(NULL AS {f.dataType.simpleString()}) AS {quoted_identifier(f.name)}"
                                       for f in frame.schema.fields])


def _stand_in_derived(spark, scenario, name: str, spec: dict, frames: dict, varies: bool) -> None:
    """A derived table built as a case builds it, from the stand-ins of the tables above
    it (nothing cached, nothing run); its analysed plan is walked like `join.sql`'s."""
    earlier = list(scenario.data["tables"])[:list(scenario.data["tables"]).index(name)]
    inputs = {table: frames[table] for table in earlier if table in frames}
    if len(inputs) != len(earlier):
        return  # an input cannot be built: the case reports why
    views = []

    def register(view, frame):
        frame.createOrReplaceTempView(view)
        views.append(view)
    try:
        try:
            frame = derived.source_frame(spark, spec, inputs, register)
            for step in spec.get("steps", []):
                frame = derived.apply_step(frame, step)
        except Exception as exc:
            _refused_by_spark(exc, ("tables", name))
            return  # does not analyse: the case reports Spark's error
        try:
            check_analysed(frame, set(earlier), varies=varies)
        except SqlRefused as exc:
            raise SqlRefused(("tables", name), str(exc)) from None
        frames[name] = _empty_like(spark, frame)
    finally:
        for view in views:
            spark.catalog.dropTempView(view)


# Error conditions of Spark's own locks (restricted mode, reflection allow-list: 4.3+).
SPARK_REFUSALS = re.compile(r"SQL_RESTRICTED_MODE|METHOD_NOT_ALLOWED")


def _refused_by_spark(exc: BaseException, where: tuple) -> None:
    """Analysis failed: a refusal when it was Spark's own lock that said no."""
    text = str(exc)
    if SPARK_REFUSALS.search(text):
        condition = SPARK_REFUSALS.search(text).group()
        raise SqlRefused(where, f"reflection or a script transform is not allowed (Spark's restricted mode "
                                f"refused it: {condition})") from None


def _table_field(data: dict, name: str) -> tuple:
    spec = data["tables"][name]
    exprs = [c for c, col in spec.get("columns", {}).items() if "expr" in col]
    if len(exprs) == 1 and "filter" not in spec:
        return ("tables", name, "columns", exprs[0], "expr")
    if not exprs and "filter" in spec:
        return ("tables", name, "filter")
    return ("tables", name)


def _check_condition(data: dict, stand_ins: dict, varies: bool) -> None:
    join = data["join"]
    if "condition" not in join or join.get("left") not in stand_ins or join.get("right") not in stand_ins:
        return
    from pyspark.sql import functions as F
    try:
        frame = stand_ins[join["left"]].alias("l").join(stand_ins[join["right"]].alias("r"),
                                                         F.expr(join["condition"]))
    except Exception as exc:
        _refused_by_spark(exc, ("join", "condition"))
        return  # does not analyse: the case reports Spark's error
    try:
        check_analysed(frame, set(data["tables"]), varies=varies)
    except SqlRefused as exc:
        raise SqlRefused(("join", "condition"), str(exc)) from None


def _check_join_sql(spark, data: dict, stand_ins: dict, tables: set[str], varies: bool) -> None:
    text = data["join"].get("sql")
    if text is None or set(stand_ins) != tables:
        return
    _check_query_over_views(spark, text, stand_ins, ("join", "sql"), varies)


def _check_query_over_views(spark, text: str, views: dict, where: tuple, varies: bool) -> None:
    """A scenario query analysed over stand-ins registered as the views it may read (and
    only those); the views are dropped whatever happens."""
    names = []
    try:
        for name, frame in views.items():
            frame.createOrReplaceTempView(name)
            names.append(name)
        try:
            frame = spark.sql(text)  # a query: the parse-level check refused anything else
        except Exception as exc:
            _refused_by_spark(exc, where)
            return  # does not analyse: the case reports Spark's error
        try:
            check_analysed(frame, set(views), varies=varies)
        except SqlRefused as exc:
            raise SqlRefused(where, str(exc)) from None
    finally:
        for name in names:
            spark.catalog.dropTempView(name)
