"""Which queries the reference engine may answer: only those whose every operator and
expression, in Spark's analysed plan, means the same once translated for DuckDB.

An expression is compared when it is
- a carrier (a column, an alias, a subquery, a window's frame: no computation of its own);
- an entry of the verified list (reference_verified.json: the expression's class, the types
  of its inputs (a literal's and a cast's own type too), and for each Spark version the ANSI modes and session time zones on which
  `python -m harness verify-reference` found Spark and DuckDB to agree on every edge value);
- safe by its meaning: a division by a non-zero literal, a canonical literal cast to a date
  or an integer ('2024-02-01', '12').
Everything else is `not compared`, naming the first such expression and its line. An
operator is compared when both engines share its meaning (projection, filter, join,
aggregate, sort, set operations, CTEs, windows); a LIMIT or a sample picks rows, and an
expression whose answer depends on the order rows arrive in (first, row_number over ties,
collect_list, approximate sketches) is never handed over.

The SQL text is read too: each function as written (sqlglot's node) must be one a verified
entry's templates were written with, so a spelling never verified (extract(DOW ...) where
dayofweek(...) was) is not trusted on the strength of its Spark class."""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from datetime import date
from pathlib import Path

LIST_PATH = Path(__file__).with_name("reference_verified.json")

# Operators whose meaning both engines share (rows in, rows out, no order picked).
OPERATORS = frozenset("""
Project Filter Join Aggregate Sort SubqueryAlias View LocalRelation LogicalRDD OneRowRelation Union
Intersect Except Distinct Deduplicate Window WithCTE CTERelationDef CTERelationRef ResolvedHint
Repartition RepartitionByExpression RebalancePartitions
""".split())
PICKS_ROWS = frozenset({"GlobalLimit", "LocalLimit", "Limit", "Offset", "Sample", "Tail", "CollectLimit"})

# Expressions with no computation of their own: their meaning is their children's or the plan's.
CARRIERS = frozenset("""
AttributeReference Alias OuterReference AggregateExpression WindowExpression WindowSpecDefinition
SpecifiedWindowFrame UnspecifiedFrame UnboundedPreceding UnboundedFollowing CurrentRow SortOrder
ScalarSubquery Exists ListQuery InSubquery
""".split())

ORDER_DEPENDENT = {
    "First": "first() picks the row that arrives first",
    "Last": "last() picks the row that arrives last",
    "AnyValue": "any_value() picks any row",
    "CollectList": "collect_list() keeps the order rows arrive in",
    "CollectSet": "collect_set() keeps the order rows arrive in",
    "RowNumber": "row_number() numbers rows whose ORDER BY may tie in any order",
    "Lead": "lead() reads a neighbour whose ORDER BY may tie",
    "Lag": "lag() reads a neighbour whose ORDER BY may tie",
    "NthValue": "nth_value() reads a row whose ORDER BY may tie",
    "NTile": "ntile() splits rows whose ORDER BY may tie",
    "ApproximatePercentile": "an approximate percentile is a sketch, computed otherwise by each engine",
    "HyperLogLogPlusPlus": "approx_count_distinct is a sketch, computed otherwise by each engine",
}

# sqlglot nodes that only shape the query (no computation whose meaning could differ).
STRUCTURE = frozenset("""
Select From Join Where Group Having Order Ordered Subquery Paren Star Column Identifier Literal Table
TableAlias Alias With CTE Window WindowSpec Tuple Union Intersect Except Boolean Null DataType Var Hint
Distinct Qualify Lateral Dot Neg Not And Or Is EQ NEQ GT GTE LT LTE Limit Offset Values JoinHint Exists
Distribute Sort Cluster DataTypeParam
""".split())

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def family(spark_type: str | None) -> str | None:
    """The type an entry names: decimals of any precision are one family."""
    if spark_type is None:
        return None
    return "decimal" if spark_type.startswith("decimal(") else spark_type


@dataclass(frozen=True)
class Refusal:
    """Why a query is not compared, and the expression that cost it (for the summary)."""
    why: str
    expression: str | None = None


class VerifiedList:
    """The verified list, indexed by (class, input families, output family for casts)."""

    def __init__(self, data: dict, source: str = str(LIST_PATH)):
        self.data, self.source = data, source
        self._spellings: dict = {}
        self.by_key: dict = {}
        for entry in data["entries"]:
            self.by_key.setdefault(entry_key(entry), []).append(entry)

    @classmethod
    def load(cls, path: Path = LIST_PATH) -> "VerifiedList":
        return cls(json.loads(path.read_text()), str(path))

    def entries_for(self, node) -> list:
        found = []
        for inputs in _input_readings(node):
            found += self.by_key.get((node.name, inputs, _output(node)), [])
        return found

    def spellings(self, spark_version: str, ansi: bool, zone: str) -> frozenset:
        """The sqlglot nodes of every template of an entry verified here (parsed once per
        version, mode and zone)."""
        key = (spark_version, ansi, zone)
        if key not in self._spellings:
            out = set()
            for entry in self.data["entries"]:
                if verified_here(entry, spark_version, ansi, zone):
                    for template in entry["sql"]:
                        out |= template_spellings(template)
            self._spellings[key] = frozenset(out)
        return self._spellings[key]


def entry_key(entry: dict) -> tuple:
    return (entry["expression"], tuple(entry["inputs"]), entry.get("output"))


def _output(node) -> str | None:
    return family(node.type) if node.name in ("Cast", "AnsiCast", "TryCast", "Literal") else None


def _values_of(node) -> list:
    """The children that carry the values of an expression of many arguments."""
    children = node.children
    if node.name == "If":
        return children[1:]
    if node.name == "CaseWhen":
        return [c for i, c in enumerate(children) if i % 2 == 1 or i == len(children) - 1]
    return children


VARIADIC = frozenset({"In", "Coalesce", "Greatest", "Least", "Concat", "If", "CaseWhen"})


def _input_readings(node) -> list[tuple]:
    """The node's inputs as entries name them: each input's type family, or, for an
    input that is itself a cast, `to<-from` (a date seen as a timestamp). An expression
    of any number of arguments of one type (coalesce, CASE, IN) is named by that type
    (IN: the value's and the list's)."""
    if node.name in VARIADIC:
        kinds = {family(child.type) for child in _values_of(node)}
        if len(kinds) != 1:
            return []
        return [(kinds.pop(),) * (2 if node.name == "In" else 1)]
    plain = tuple(family(child.type) for child in node.children)
    sourced = tuple(f"{family(child.type)}<-{family(child.children[0].type)}"
                    if child.name in ("Cast", "AnsiCast") and child.children else family(child.type)
                    for child in node.children)
    return [plain] if sourced == plain else [sourced, plain]


def _numbers(version: str) -> tuple:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def release_line(version: str) -> str:
    return ".".join(version.split(".")[:2])


def verified_here(entry: dict, spark_version: str, ansi: bool, zone: str) -> bool:
    """Verified on this version (or, where it was not run, on a release of the same
    line), in this ANSI mode and session time zone (an entry that agreed in UTC and in a
    zone with daylight saving holds in any zone)."""
    runs = entry.get("verified") or {}
    run = runs.get(spark_version) or next((runs[v] for v in sorted(runs, key=_numbers, reverse=True)
                                           if release_line(v) == release_line(spark_version)), None)
    if not run or ("on" if ansi else "off") not in run["ansi"]:
        return False
    zones = run["zones"]
    return zone in zones or (len(zones) >= 2 and "UTC" in zones)


def template_spellings(template: str) -> set:
    import sqlglot
    return spellings_of(sqlglot.parse_one(f"SELECT {template.format(*[f'a{i}' for i in range(8)])}",
                                          read="spark"))


def spellings_of(tree) -> set:
    """Each node of a parsed Spark query that computes, as written: its sqlglot class,
    a function's name where sqlglot knows it only by name, an EXTRACT's unit."""
    from sqlglot import exp
    out = set()
    for node in tree.walk():
        name = type(node).__name__
        if name in STRUCTURE:
            continue
        if isinstance(node, (exp.Cast, exp.TryCast)) and isinstance(node.this, exp.Literal):
            continue  # a typed literal (DATE'2024-06-12'): its value is judged on Spark's side
        if isinstance(node, exp.Anonymous):
            name = f"{node.name.lower()}()"
        elif isinstance(node, exp.Extract):
            name = f"EXTRACT({node.this.name.upper()})"
        out.add(name)
    return out


# --------------------------------------------------------------------------- by meaning

def literal_text(node) -> str | None:
    """A literal, or a cast of one, as Spark prints the literal; None otherwise."""
    while node.name in ("Cast", "AnsiCast") and node.children:
        node = node.children[0]
    return node.literal if node.name == "Literal" else None


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text.rstrip("DLSYBDbd").strip("'"))
    except ValueError:
        return None


def safe_by_meaning(node) -> bool:
    """A division of doubles by a non-zero literal (Spark's `/` is always fractional, IEEE
    division in both engines; a decimal quotient's scale is Spark's own: an entry), or a string literal cast to a date or an integer type written as that type
    writes it (`'2024-02-01'`, `'12'`: no trimming, no partial parse, no zone), or an
    integer or decimal literal widened to a bigint, double or decimal."""
    if node.name == "Divide" and len(node.children) == 2 and node.type == "double":
        divisor = _number(literal_text(node.children[1]))
        return divisor is not None and divisor != 0 and divisor == divisor
    if node.name in ("Cast", "AnsiCast") and node.children and node.children[0].name == "Literal":
        source = family(node.children[0].type)
        if source == "string":
            return canonical(node.children[0].literal, node.type)
        # a number written in the query, widened for the arithmetic around it: the same
        # number in both engines (Spark folds it; DuckDB coerces the literal as written)
        return source in NUMBERS and family(node.type) in ("bigint", "double", "decimal") \
            and _number(node.children[0].literal) is not None
    return False


NUMBERS = frozenset({"tinyint", "smallint", "int", "bigint", "decimal"})


INTEGER_RANGES = {"tinyint": 7, "smallint": 15, "int": 31, "bigint": 63}


def canonical(literal: str | None, target: str | None) -> bool:
    if not literal or not literal.startswith("'") or not literal.endswith("'"):
        return False
    text = literal[1:-1]
    if target == "date" and _ISO_DATE.match(text):
        try:
            return date.fromisoformat(text).isoformat() == text
        except ValueError:
            return False
    if target in INTEGER_RANGES and re.fullmatch(r"-?(0|[1-9][0-9]*)", text):
        bits = INTEGER_RANGES[target]
        return -(1 << bits) <= int(text) < (1 << bits)
    return False


# --------------------------------------------------------------------------- the gate

def _described(node) -> str:
    text = node.sql()
    text = text if len(text) <= 80 else text[:77] + "..."
    line = node.line()
    inputs = ", ".join(t or "?" for t in (node.inputs if node.kind == "expression" else ()))
    where = f", line {line}" if line is not None else ""
    return f"{text} ({node.name}({inputs}){where})"


def first_refusal(nodes: list, verified: VerifiedList, spark_version: str, ansi: bool, zone: str) -> Refusal | None:
    """Why the reference may not answer a query of these analysed nodes (None: it may)."""
    for node in nodes:
        if node.kind == "plan":
            if node.name in PICKS_ROWS:
                return Refusal("a LIMIT, OFFSET or sample picks rows that another engine may rightly pick "
                               "otherwise", node.name)
            if node.name not in OPERATORS:
                return Refusal(f"{node.name}: an operator the reference does not compare", node.name)
            continue
        if node.name in CARRIERS:
            continue
        if node.name in ORDER_DEPENDENT:
            return Refusal(f"{_described(node)}: {ORDER_DEPENDENT[node.name]}", node.name)
        if safe_by_meaning(node):
            continue
        entries = verified.entries_for(node)
        if not any(verified_here(entry, spark_version, ansi, zone) for entry in entries):
            signature = f"{node.name}({', '.join(family(t) or '?' for t in node.inputs)})" + \
                (f" -> {_output(node)}" if _output(node) else "")
            if entries:
                return Refusal(f"{_described(node)}: its DuckDB translation is not verified on Spark "
                               f"{spark_version} with ANSI {'on' if ansi else 'off'} in time zone {zone}", signature)
            return Refusal(f"{_described(node)}: its DuckDB translation is not verified", signature)
    return None


def unverified_spelling(spark_sql: str, allowed: frozenset) -> Refusal | None:
    """The first function of the query text written in a way no verified template was."""
    import sqlglot
    try:
        tree = sqlglot.parse_one(spark_sql, read="spark")
    except Exception:
        return None  # the translation says so itself
    for name in sorted(spellings_of(tree) - allowed):
        return Refusal(f"{name} as written: its DuckDB translation is not verified", name)
    return None


_LOADED: dict = {}


def verified_list() -> VerifiedList:
    """The shipped list, read once per process."""
    if "list" not in _LOADED:
        _LOADED["list"] = VerifiedList.load()
    return _LOADED["list"]


def missing_expressions(verified: VerifiedList, jvm) -> list[str]:
    """Entries naming an expression class this Spark does not have."""
    packages = ("org.apache.spark.sql.catalyst.expressions.",
                "org.apache.spark.sql.catalyst.expressions.aggregate.")
    missing = []
    for name in sorted({entry["expression"] for entry in verified.data["entries"]}):
        if not any(_class_exists(jvm, package + name) for package in packages):
            missing.append(name)
    return missing


def _class_exists(jvm, name: str) -> bool:
    try:
        jvm.java.lang.Class.forName(name)
        return True
    except Exception:
        return False


def warn_missing_once(verified: VerifiedList, jvm, spark_version: str) -> None:
    key = ("missing", spark_version)
    if key in _LOADED:
        return
    _LOADED[key] = missing_expressions(verified, jvm)
    for name in _LOADED[key]:
        print(f"{verified.source}: entry {name}: no such expression on Spark {spark_version}; ignored",
              file=sys.stderr)
