"""A physical plan's text (Spark's tree string) as a tree of operators, for the plan
pictures of the reports: each node its operator name, the join nodes with strategy and
build side, and its own line of text (shortened) for a tooltip.

Spark prints a child under its parent with `+- ` (last child) or `:- ` (others), each
level indented by three characters (`:  ` or three spaces). An adaptive plan prints
`== Final Plan ==` / `== Initial Plan ==` (3.0: `== Current Plan ==`) sections under
`AdaptiveSparkPlan`; each section is a tree of its own here.
"""
from __future__ import annotations

import re

from harness.core.vocab import JOIN_OPERATORS
from harness.observe.describe import conf_bytes

LINE = re.compile(r"^(?P<indent>(?:[ :|] {2})*)(?P<marker>[:+]- )?(?P<text>.*)$")
SECTION = re.compile(r"^== (?P<name>[A-Za-z ]+) ==$")
CODEGEN = re.compile(r"^\*\(\d+\)\s*")
BUILD = re.compile(r"\bBuild(Left|Right)\b")
TOOLTIP_CHARS = 240
FINAL_MARK = "AdaptiveSparkPlan isFinalPlan=true"
MAX_NODES = 400  # a picture, not an archive: the text keeps the rest


def operator_name(text: str) -> str:
    """`*(3) BroadcastHashJoin [k#1L], ...` → `BroadcastHashJoin`; `Exchange hashpartitioning(...)`
    → `Exchange`; `Scan parquet default.t[...]` → `Scan parquet`."""
    text = CODEGEN.sub("", text.strip())
    if text.startswith(("Scan ", "FileScan ", "BatchScan ")):
        return " ".join(text.split()[:2])
    match = re.match(r"[A-Za-z][\w$]*", text)
    return match.group(0) if match else text[:30]


def join_of(name: str, text: str) -> dict | None:
    """A join operator's strategy and build side from its name and its line of plan text
    (`BroadcastHashJoin [k#1L], [k#2L], Inner, BuildRight, false`); None for other
    operators. The one reading of a printed join: plan pictures, event logs (harness.capturing.event_log)."""
    if name not in JOIN_OPERATORS:
        return None
    build = BUILD.search(text)
    return {"strategy": name, "build_side": build.group(1).lower() if build else "none"}


# A Filter that holds a runtime bloom filter (InjectRuntimeFilter) is drawn as one.
BLOOM_FILTER_NAME = "Filter: bloom filter"


def _node(text: str) -> dict:
    name = operator_name(text)
    if name == "Filter" and "might_contain(" in text:
        name = BLOOM_FILTER_NAME
    node = {"name": name, "text": text.strip()[:TOOLTIP_CHARS], "children": []}
    join = join_of(name, text)
    if join:
        node["join"] = join
    return node


def join_nodes(tree: dict | None) -> list[dict]:
    """The join nodes of a parsed tree, pre-order (as harness.observe.jvm_plans reads them from the JVM)."""
    found, stack = [], [tree] if tree else []
    while stack:
        node = stack.pop()
        if "join" in node:
            found.append(node["join"])
        stack.extend(reversed(node["children"]))
    return found


def _whole_line(text: str) -> dict:
    return {"name": operator_name(text), "text": text.strip(), "children": []}


def _parse_lines(lines: list[tuple[int, str]], make=_node, limit: int | None = MAX_NODES) -> dict | None:
    """(depth, text) lines in pre-order → the root node."""
    root, stack, count = None, [], 0
    for depth, text in lines:
        count += 1
        if limit is not None and count > limit:
            break
        node = make(text)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            stack[-1][1]["children"].append(node)
        elif root is None:
            root = node
        else:  # a second root (text we do not know): keep the first tree
            break
        stack.append((depth, node))
    return root


def _depths(text: str) -> list[tuple[float, str]]:
    """Each printed operator line with its depth in the tree."""
    parsed = []
    for raw in text.splitlines():
        match = LINE.match(raw)
        if not match or not match.group("text").strip():
            continue
        depth = len(match.group("indent")) // 3 + (1 if match.group("marker") else 0)
        if parsed and not match.group("marker"):
            depth += 0.5  # the unmarked root of a section, below its `== ... ==` line
        parsed.append((depth, match.group("text")))
    return parsed


def outline(text: str | None) -> dict | None:
    """A plain plan text (one tree, no `== ... ==` sections) as nodes that keep their
    whole line (name, text, children): for reading arguments, not for pictures."""
    return _parse_lines(_depths(text), make=_whole_line, limit=None) if text else None


def parse(text: str | None) -> dict:
    """{section name: root node}: `plan` for a plain tree; `final` and `initial` (or
    `current`) for an adaptive plan's sections. Empty for no text."""
    if not text:
        return {}
    parsed = _depths(text)
    if not parsed:
        return {}
    adaptive = parsed[0][1].startswith("AdaptiveSparkPlan")
    sections: dict[str, list] = {}
    current = None
    for depth, line in parsed[1:] if adaptive else parsed:
        header = SECTION.match(line.strip())
        if adaptive and header and depth == 1:
            current = header.group("name").split()[0].lower()
            sections[current] = []
            continue
        sections.setdefault(current or "plan", []).append((depth, line))
    trees = {name: _parse_lines(lines) for name, lines in sections.items() if lines}
    return {name: tree for name, tree in trees.items() if tree is not None}


def compact(node: dict | None) -> list | None:
    """[name, build side of a join node ("left", "right", "none") or "" for other
    operators, children...]: what a picture needs, small enough to embed every version's
    trees in the merged page."""
    if node is None:
        return None
    join = node.get("join")
    return [node["name"], join["build_side"] if join else "", *[compact(c) for c in node["children"]]]


def _ran_section(sections: dict, adaptive_final: bool) -> dict | None:
    return sections.get("final") or sections.get("current") or (sections.get("plan") if adaptive_final else None)


def picture_inputs(record: dict) -> list:
    """What `pictures` reads of a record: two records with equal inputs draw the same."""
    observed = record.get("observed") or {}
    return [(observed.get("initial") or {}).get("text"), (observed.get("final") or {}).get("text"),
            (observed.get("estimates") or [None])[0], (observed.get("final") or {}).get("runtime"),
            (observed.get("join_conf") or {}).get("spark.sql.autoBroadcastJoinThreshold")]


def pictures(record: dict) -> dict | None:
    """What the plan pictures of one case record draw: the initial plan's tree and, where
    the case ran, the final plan's (None where it is the initial one again), with the top
    join's estimates, run-time sizes (AQE) and the broadcast threshold; None when the
    record keeps no plan text (a cross-strategy check, `--plan-text failed`)."""
    observed = record.get("observed") or {}
    initial_text = (observed.get("initial") or {}).get("text")
    final_text = (observed.get("final") or {}).get("text")
    if not initial_text and not final_text:
        return None
    from_initial = parse(initial_text)
    initial = from_initial.get("initial") or from_initial.get("plan")
    if initial_text and initial_text.startswith(FINAL_MARK) and "initial" not in from_initial:
        initial = None  # printed after the run, Spark 3.0/3.1 show only the final plan
    final = _ran_section(parse(final_text), adaptive_final=True) if final_text else None
    final = final or _ran_section(from_initial, adaptive_final=False)
    trees = {"initial": compact(initial), "final": compact(final)}
    if trees["final"] == trees["initial"]:
        trees["final"] = None
    estimate = (observed.get("estimates") or [None])[0] or {}
    runtime = (observed.get("final") or {}).get("runtime") or {}
    return {**trees,
            "estimates": {side: (estimate.get(side) or {}).get("size_in_bytes") for side in ("left", "right")},
            "rounded": any(str((estimate.get(side) or {}).get("printed") or "").endswith("iB") for side in ("left", "right")),
            "runtime": {side: (runtime.get(side) or {}).get("size_in_bytes") for side in ("left", "right")},
            "threshold": conf_bytes((observed.get("join_conf") or {}).get("spark.sql.autoBroadcastJoinThreshold"))}
