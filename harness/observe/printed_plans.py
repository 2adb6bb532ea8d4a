"""Join nodes, estimates and the final adaptive plan through Spark Connect, where the
client has no JVM: read from what the server prints and reports, not from plan objects.

The same functions as harness.observe.jvm_plans (the runner calls whichever its session names), over
a `PrintedPlan` instead of a JVM plan:

- the physical plan before execution: `explain` in simple mode, Spark's own tree string,
  read by harness.observe.plan_tree's outline and one grammar per join operator (`join_line`);
- estimates: `explain` in cost mode, the optimized logical plan with each node's
  `Statistics(sizeInBytes=..., rowCount=...)`; Spark prints sizes rounded to one decimal
  of their unit (`22.9 MiB`), so an estimate is exact only below 2 KiB;
- the final adaptive plan: the plan metrics the server sends with the result
  (`DataFrame.executionInfo`, PySpark 4.0+): operator names and parent links, no
  arguments. A broadcast join's build side is the input that holds the broadcast; a
  shuffled hash join's build side is not in them (`UNAVAILABLE`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness.core.records import BYTE_UNITS, UNAVAILABLE
from harness.core.text import bytes_text
from harness.core.vocab import JOIN_OPERATORS, NO_JOIN, PLAN_TEXT_LIMIT
from harness.observe import cost as costs
from harness.observe.jvm_plans import JoinNode
from harness.observe.plan_tree import outline

EXPRESSION_IDS = re.compile(r"#\d+")
PLAN_IDS = re.compile(r"plan_id=\d+")
ELIDED = re.compile(r"\.\.\. \d+ more fields|\.\.\. \(truncated\)|\.\.\.\d+ more")
BUILD = re.compile(r"^Build(Left|Right)$")
STATISTICS = re.compile(r"Statistics\(sizeInBytes=(?P<size>[0-9.E+\-]+) (?P<unit>[KMGTPE]i)?B"
                        r"(?:, rowCount=(?P<rows>[0-9.E+\-]+))?")
HINT = re.compile(r"(left|right)Hint=\(strategy=(\w+)\)")
# Operators that only wrap the plan that runs: skipped when a final plan is drawn.
WRAPPERS = ("AdaptiveSparkPlan", "ResultQueryStage", "WholeStageCodegen", "InputAdapter")


@dataclass
class PrintedPlan:
    """A physical plan as the server printed it (`text`), or the final adaptive plan
    rebuilt from the run's plan metrics (`tree`, with `text` drawn from it)."""
    text: str
    tree: dict | None = None
    final: bool = False
    ambiguous: list = field(default_factory=list)   # what the metrics could not tell

    def canonical(self) -> str | None:
        """The text with what differs between two builds of one query erased (expression
        ids, exchange plan ids); None when Spark elided part of it (`... 5 more fields`),
        so that two plans that print alike are never taken for the same query."""
        if ELIDED.search(self.text) or self.final:
            return None
        return PLAN_IDS.sub("plan_id=", EXPRESSION_IDS.sub("#", self.text))

    def semanticHash(self) -> int:  # noqa: N802 (the JVM plan's name: harness.spark.executions asks both)
        return hash(self.canonical())

    def sameResult(self, other) -> bool:  # noqa: N802
        mine = self.canonical()
        return mine is not None and isinstance(other, PrintedPlan) and mine == other.canonical()

    @property
    def root(self) -> dict | None:
        if self.tree is not None:
            return self.tree
        return _physical_root(self.text)


# --------------------------------------------------------------------------- grammar

def split_arguments(text: str) -> list[str]:
    """`[a#1, f(b, c)], [d#2], Inner, (x > y)` → its top-level arguments."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def _scala_list(bracketed: str) -> str:
    """`[k#1L, v#2L]` → `List(k#1L, v#2L)`: the keys as the JVM reader records them."""
    inner = bracketed[1:-1] if bracketed.startswith("[") and bracketed.endswith("]") else bracketed
    return f"List({inner})"


def join_line(name: str, text: str) -> JoinNode | None:
    """One printed join operator (`BroadcastHashJoin [k#1L], [k#2L], Inner, BuildRight,
    false, false`) as a JoinNode; None for other operators. Argument order per operator
    (Spark's case classes): hash joins and SMJ print their key lists first, the join
    type, the build side (hash joins), the condition when there is one, then flags (a
    broadcast hash join's first flag: null-aware anti join); BroadcastNestedLoopJoin
    prints build side, join type, condition; CartesianProduct only its condition."""
    strategy = name.split("(")[0]
    if strategy not in JOIN_OPERATORS:
        return None
    rest = text.strip()
    rest = re.sub(r"^\*\(\d+\)\s*", "", rest)[len(name):].strip()
    args = split_arguments(rest)
    keyed = strategy in ("BroadcastHashJoin", "ShuffledHashJoin", "SortMergeJoin", "StreamingSymmetricHashJoin")
    left_keys = right_keys = "List()"  # what the JVM records for a join without equi keys
    if keyed and len(args) >= 2 and args[0].startswith("["):
        left_keys, right_keys, args = _scala_list(args[0]), _scala_list(args[1]), args[2:]
    build, join_type, condition, flags = "none", "", "", []
    if strategy == "StreamingSymmetricHashJoin":  # keys, type, `condition = [...]`, state details
        join_type = args[0] if args else ""
        condition = next((arg for arg in args if arg.startswith("condition = ")), "")
        args = []
    for arg in args:
        side = BUILD.match(arg)
        if side:
            build = side.group(1).lower()
        elif arg in ("true", "false"):
            flags.append(arg == "true")
        elif not join_type and re.fullmatch(r"[A-Za-z]+(?:\([^)]*\))?", arg) and strategy != "CartesianProduct":
            join_type = arg
        else:
            condition = arg
    if strategy == "CartesianProduct":
        join_type = "Inner"
    null_aware = strategy == "BroadcastHashJoin" and bool(flags) and flags[0]
    skew = "skew=true" in name
    return JoinNode(strategy=strategy, build_side=build if strategy not in ("SortMergeJoin", "CartesianProduct") else "none",
                    join_type=join_type, left_keys=left_keys, right_keys=right_keys, condition=condition,
                    null_aware=null_aware, skew=skew)


def section(explained: str, title: str) -> str:
    """One `== Title ==` section of explain output."""
    match = re.search(rf"^== {re.escape(title)} ==\n(.*?)(?=^== |\Z)", explained, re.S | re.M)
    return match.group(1).rstrip("\n") if match else ""


def _physical_root(text: str) -> dict | None:
    root = outline(text)
    if root is not None and root["name"] == "AdaptiveSparkPlan" and root["children"]:
        return root["children"][0]  # explain before a run: the adaptive plan's initial plan
    return root


# --------------------------------------------------------------------------- plans

def current_plan(dataframe) -> PrintedPlan:
    """The physical plan the server would run, as it prints it (before an action)."""
    text = section(explained(dataframe, "simple"), "Physical Plan")
    return PrintedPlan(text=text)


def is_adaptive(plan: PrintedPlan) -> bool:
    return plan.final or plan.text.startswith("AdaptiveSparkPlan")


def _walk(root: dict | None):
    """The operators of the plan, pre-order, without the subqueries printed under an
    operator (a dynamic pruning filter's): the JVM walk does not descend into them."""
    stack = [root] if root else []
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed([child for child in node["children"] if not _operator(child).startswith("Subquery")]))


def _operator(node: dict) -> str:
    return re.sub(r"^\*\(\d+\)\s*", "", node["name"]).split(" ")[0].split("(")[0]


def join_nodes(plan: PrintedPlan, table_names: dict | None = None) -> list[JoinNode]:
    """Every join of the plan, pre-order (as harness.observe.jvm_plans.join_nodes reads the JVM's)."""
    found = []
    for node in _walk(plan.root):
        join = node.get("join") if plan.final else join_line(node["name"], node["text"])
        if join is not None:
            if table_names is not None:
                join.tables = sorted(_tables_below(node, table_names))
            if len(node["children"]) == 2:
                sides = list(zip(("left", "right"), node["children"]))
                join.shuffles = {side: _shuffles_below(child) for side, child in sides}
                if not plan.final:  # the metrics of a final plan carry no scan arguments
                    join.scans = {side: _scans_below(child, table_names) for side, child in sides}
            found.append(join)
    return found


def _shuffles_below(node: dict) -> int:
    """Shuffle exchanges in a printed subtree, as jvm_plans counts them (a reused shuffle
    prints as `ReusedExchange [...], Exchange ...` without its subtree)."""
    count = 0
    for below in _walk(node):
        operator = _operator(below)
        if operator == "Exchange" or (operator == "ReusedExchange" and ", Exchange " in below["text"]):
            count += 1
    return count


SCAN_TABLE = re.compile(r"(?:\*\(\d+\)\s*)?(?:File)?Scan \w+ (?:[\w.`]+\.)?`?(\w+)`?")
BUCKETED = re.compile(r"\bBucketed: (true|false(?: \(([^)]*)\))?)")


def _scans_below(node: dict, table_names: dict | None) -> list[dict]:
    """The file scans of a printed subtree, as harness.observe.plan_scans.file_scan reads them."""
    scans = []
    for below in _walk(node):
        match = SCAN_TABLE.match(below["text"])
        if not match or not below["text"].lstrip("*() 0123456789").startswith("FileScan"):
            continue
        bucketed = BUCKETED.search(below["text"])
        scans.append({"table": (table_names or {}).get(match.group(1), match.group(1)),
                      "bucketed": bucketed.group(1) == "true" if bucketed else False,
                      "bucket_note": bucketed.group(1) if bucketed else None,
                      "pruning": _printed_pruning(below)})
    return scans


def _printed_pruning(scan: dict) -> str:
    """`dynamicpruningexpression(true)`: dropped; one with a subquery: the subquery
    printed under the scan says whether it is the join's broadcast."""
    found = re.search(r"dynamicpruningexpression\((true\))?", scan["text"])
    if not found:
        return "none"
    if found.group(1):
        return "dropped"
    subqueries = [child for child in scan["children"] if _operator(child).startswith("Subquery")]
    adaptive = [child for child in subqueries if _operator(child) == "SubqueryAdaptiveBroadcast"]
    if adaptive:  # `SubqueryAdaptiveBroadcast dynamicpruning#7, [0], true, ...`: only in a broadcast
        only_in_broadcast = ADAPTIVE_ONLY_IN_BROADCAST.search(adaptive[0]["text"])
        return "adaptive" if only_in_broadcast and only_in_broadcast.group(1) == "false" else "adaptive_reuse_only"
    return "broadcast" if any("Broadcast" in _operator(child) for child in subqueries) else "subquery"


ADAPTIVE_ONLY_IN_BROADCAST = re.compile(r"SubqueryAdaptiveBroadcast \S+, (?:\[[^\]]*\]|\d+), (true|false)\b")


MIGHT_CONTAIN_KEY = re.compile(r"might_contain\(.*?xxhash64\(([A-Za-z_]\w*)#\d+")
BLOOM_KEY = re.compile(r"bloom_filter_agg\(xxhash64\(([A-Za-z_]\w*)#\d+")


def runtime_filters(plan: PrintedPlan, table_names: dict | None = None, final: bool = False) -> list[dict] | None:
    """The bloom filters of a printed plan, as harness.observe.jvm_plans.runtime_filters
    reads them: a Filter whose condition holds `might_contain(...)`, the scan below it, and
    the scans and key of the subquery printed under it. None for a final plan rebuilt
    from metrics (no arguments: not read)."""
    if plan.final:
        return None
    found = []
    for node in _walk(plan.root):
        key = MIGHT_CONTAIN_KEY.search(node["text"]) if _operator(node) == "Filter" else None
        if key is None:
            continue
        subqueries = [child for child in node["children"] if _operator(child).startswith("Subquery")]
        below = [child for child in node["children"] if child not in subqueries]
        applied = next((scan["table"] for child in below for scan in _scans_below(child, table_names)), None)
        creation, creation_key = set(), None
        for subquery in subqueries:
            for inner in _all_nodes(subquery):
                match = SCAN_TABLE.match(inner["text"])
                if match:
                    creation.add((table_names or {}).get(match.group(1), match.group(1)))
                agg = BLOOM_KEY.search(inner["text"])
                creation_key = creation_key or (agg.group(1) if agg else None)
        found.append({"kind": "bloom_filter", "table": applied, "key": key.group(1), "creation": sorted(creation),
                      "creation_key": creation_key})
    return found


def _all_nodes(root: dict):
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node["children"]))


def _tables_below(node: dict, table_names: dict) -> set:
    tables = set()
    for below in _walk(node):
        match = SCAN_TABLE.match(below["text"])
        if match:
            tables.add(table_names.get(match.group(1), match.group(1)))
    return tables


def top_join(plan: PrintedPlan) -> dict:
    joins = join_nodes(plan)
    if not joins:
        return {"strategy": NO_JOIN, "build_side": "none"}
    return {"strategy": joins[0].strategy, "build_side": joins[0].build_side}


def plan_text(plan: PrintedPlan) -> str:
    text = plan.text
    return text if len(text) <= PLAN_TEXT_LIMIT else text[:PLAN_TEXT_LIMIT] + "\n... (truncated)"


def operator_counts(plan: PrintedPlan) -> None:
    """Counted by JVM class (`ShuffleExchange`), which the printed names (`Exchange`) do
    not give: unavailable (harness.deploy.connect.UNAVAILABLE)."""
    return None


def runtime_sides(plan: PrintedPlan) -> None:
    """AQE's run-time statistics of query stages are not in the plan metrics."""
    return None


def _metrics(node: dict) -> dict:
    """An operator's plan metrics as harness.observe.cost.metrics gives a JVM operator's."""
    return {key: {"id": None, "name": key, "value": value if value >= 0 else None}
            for key, value in node.get("metrics", {}).items()}


def cost(plan: PrintedPlan, stages=None) -> dict | None:
    """What the top join cost, from the plan metrics the server sent with the result
    (None: there were none, or the plan has no join)."""
    if not plan.final:
        return None
    walk = costs.Walk(kind=_operator, children=lambda node, kind: node["children"],
                      metrics=_metrics, map_rdd=lambda exchange: None)
    return costs.of(plan.root, walk, stages)


def final_plan_reached(plan: PrintedPlan) -> bool:
    return plan.final


# --------------------------------------------------------------------------- estimates

def size_of(text: str, unit: str) -> int:
    return int(round(float(text) * BYTE_UNITS[unit]))


def _statistics(text: str) -> dict:
    match = STATISTICS.search(text)
    if match is None:
        return {"size_in_bytes": None, "row_count": None, "printed": None}
    rows = match.group("rows")
    unit = f"{match.group('unit') or ''}B"
    return {"size_in_bytes": size_of(match.group("size"), unit),
            "row_count": int(float(rows)) if rows is not None else None,
            "printed": f"{match.group('size')} {unit}"}


def join_estimates(dataframe, logical: bool = True) -> list[dict]:
    """Each logical join's input sizes, pre-order, from the cost-mode explain. `printed`
    keeps Spark's rounded text; `size_in_bytes` is that text read back (approximate
    above 2 KiB). The join-selection model's inputs (equi keys, orderability) are not in
    the printed plan: no `logical` entry, so the model says nothing rather than guess."""
    text = section(explained(dataframe, "cost"), "Optimized Logical Plan")
    out = []
    for node in _walk(outline(text)):
        if node["name"] == "Join" and len(node["children"]) == 2:
            entry = {side: _statistics(child["text"]) for side, child in zip(("left", "right"), node["children"])}
            hints: dict[str, list[str]] = {"left": [], "right": []}
            for side, name in HINT.findall(node["text"]):
                hints[side].append(name.upper())
            entry["hints"] = hints
            out.append(entry)
    return out


# --------------------------------------------------------------------------- final plan

# An execution is keyed by the printed plan with its ids erased (PrintedPlan.canonical).
shares = True


def stream_plan(query) -> PrintedPlan:
    """The last micro-batch's physical plan, as the server prints it for `explain()`
    (which prints and returns nothing)."""
    return PrintedPlan(text=section(_printed(query.explain), "Physical Plan"))


def explained(dataframe, mode: str) -> str:
    """The server's `explain` text in one mode: PySpark's `_explain_string` (3.4+), else
    what the public `explain` prints."""
    as_text = getattr(dataframe, "_explain_string", None)
    if as_text is not None:
        return as_text(mode=mode)
    return _printed(lambda: dataframe.explain(mode=mode))


def _printed(call) -> str:
    import contextlib
    import io
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        call()
    return printed.getvalue()


def ran_plan(dataframe) -> PrintedPlan | None:
    return final_plan(dataframe)


def final_plan(dataframe) -> PrintedPlan | None:
    """The plan that ran, from the metrics the server sent with the last action's result."""
    info = getattr(dataframe, "executionInfo", None)
    metrics = getattr(getattr(info, "metrics", None), "_metrics", None)
    if not metrics:
        return None
    return plan_from_metrics([(m.name, m.plan_id, m.parent_plan_id, {v.name: int(v.value) for v in m.metrics})
                              for m in metrics])


def plan_from_metrics(entries: list[tuple]) -> PrintedPlan | None:
    """(operator name, plan id, parent plan id[, {metric: value}]) in the order the server
    sent them: the tree (children in that order, left input first) with join nodes and
    their build sides, and its text drawn as Spark prints an adaptive plan's final plan."""
    ids = [entry[1] for entry in entries]
    nodes = [{"name": entry[0].strip(), "text": entry[0].strip(), "children": [],
              "metrics": entry[3] if len(entry) > 3 else {}} for entry in entries]
    by_id = {}
    for node, plan_id in zip(nodes, ids):
        by_id.setdefault(plan_id, node)
    roots = []
    for node, (_, plan_id, parent, *_rest) in zip(nodes, entries):
        if parent == plan_id or parent not in by_id:
            roots.append(node)
        else:
            by_id[parent]["children"].append(node)
    ambiguous = ["duplicate plan ids"] if len(set(ids)) != len(ids) else []
    if len(roots) != 1:
        return None
    root = roots[0]
    while root["name"].split(" ")[0] in WRAPPERS and len(root["children"]) == 1:
        root = root["children"][0]
    for node in _walk(root):
        name = node["name"].split(" ")[0]
        if name.split("(")[0] in JOIN_OPERATORS:
            strategy = name.split("(")[0]
            build = _broadcast_side(node) if strategy in ("BroadcastHashJoin", "BroadcastNestedLoopJoin") else \
                ("none" if strategy in ("SortMergeJoin", "CartesianProduct") else UNAVAILABLE)
            node["join"] = JoinNode(strategy=strategy, build_side=build, join_type="", left_keys="",
                                    right_keys="", condition="", skew="skew=true" in name)
            if build in ("left", "right"):
                node["text"] = f"{node['name']} Build{build.title()}"
    return PrintedPlan(text=draw(root), tree=root, final=True, ambiguous=ambiguous)


def _broadcast_side(join: dict) -> str:
    """The input of a broadcast join that holds the broadcast exchange (before another join)."""
    if len(join["children"]) != 2:
        return UNAVAILABLE
    holds = []
    for child in join["children"]:
        stack, found = [child], False
        while stack and not found:
            node = stack.pop()
            name = node["name"].split(" ")[0].split("(")[0]
            if name in ("BroadcastExchange", "BroadcastQueryStage"):
                found = True
            elif name not in JOIN_OPERATORS:
                stack.extend(node["children"])
        holds.append(found)
    if holds == [True, False]:
        return "left"
    if holds == [False, True]:
        return "right"
    return UNAVAILABLE


def draw(root: dict) -> str:
    """The tree as Spark prints a final adaptive plan (harness.observe.plan_tree reads it back)."""
    lines = ["AdaptiveSparkPlan isFinalPlan=true", "+- == Final Plan =="]

    def visit(node: dict, prefix: str, marker: str) -> None:
        lines.append(f"{prefix}{marker}{node['text']}")
        child_prefix = prefix if not marker else prefix + ("   " if marker == "+- " else ":  ")
        for i, child in enumerate(node["children"]):
            visit(child, child_prefix, "+- " if i == len(node["children"]) - 1 else ":- ")

    visit(root, "   ", "")
    return "\n".join(lines)
