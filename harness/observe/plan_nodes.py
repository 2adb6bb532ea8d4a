"""Reading one node of Spark's plans through Py4J: its operator's name (a native engine's
read as the Spark operator it replaces), its children through the wrappers that hide them
(AdaptiveSparkPlanExec, query stages, reused exchanges), and fields a version may lack."""
from __future__ import annotations

from harness.spark import engines


def raw_kind(node) -> str:
    # nodeName may carry a suffix: "SortMergeJoin(skew=true)", "WholeStageCodegen (1)".
    return str(node.nodeName()).split("(")[0].strip()


def kind(node) -> str:
    """The operator's Spark name: a native engine's operator is read as the one it
    replaces (`CometSortMergeJoin` is a SortMergeJoin), so every reader keeps its meaning."""
    return engines.spark_name(raw_kind(node))


def children(node, kind: str) -> list:
    if kind == "AdaptiveSparkPlan":
        return [node.executedPlan()]
    if kind.endswith("QueryStage"):
        return [node.plan()]
    if kind == "ReusedExchange":
        return [node.child()]
    seq = node.children()
    return [seq.apply(i) for i in range(seq.size())]


def unwrap_option(text: str) -> str:
    """Scala's `Some(x)` → x, `None` → "" (str.removeprefix needs Python 3.9; 3.0 runs on 3.8)."""
    if text == "None":
        return ""
    return text[5:-1] if text.startswith("Some(") and text.endswith(")") else text


def safe_str(fn) -> str:
    try:
        return str(fn())
    except Exception:  # an operator without that field
        return ""


def safe_call(fn):
    try:
        return fn()
    except Exception:  # a class or method this Spark version does not have
        return None
