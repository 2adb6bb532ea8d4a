"""Spark's errors in one line: the Java class, the first line of its message and, for a
failed job, the root cause; never the JVM stack. Used by every command that runs Spark."""
from __future__ import annotations

import re

from harness.core.records import SparkError
from harness.core.text import one_line


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in str(text or "").splitlines() if ln.strip()), "")


def _root_cause(java_exception):
    """The innermost Java cause: a failed job's message is only 'Job aborted ...'."""
    cause, seen = java_exception, 0
    while seen < 20:
        nxt = cause.getCause()
        if nxt is None or nxt.equals(cause):
            return cause
        cause, seen = nxt, seen + 1
    return cause


def _java_throwable(exc: BaseException):
    # Py4JJavaError.java_exception; PySpark's captured exceptions keep it as `_origin`.
    for attr in ("java_exception", "_origin"):
        throwable = getattr(exc, attr, None)
        if throwable is not None and hasattr(throwable, "getClass"):
            return throwable
    return None


def describe_error(exc: BaseException) -> SparkError:
    """Class and a one-line message (with the root cause of a failed job), no JVM stack."""
    throwable = _java_throwable(exc)
    java_class, line, cause = "", "", ""
    if throwable is not None:
        try:
            java_class = str(throwable.getClass().getName())
            line = _first_line(throwable.getMessage())
            root = _root_cause(throwable)
            if not root.equals(throwable):
                cause = f" (caused by {root.getClass().getSimpleName()}: {_first_line(root.getMessage())[:300]})"
        except Exception:
            pass
    if throwable is None:
        java_class = _server_class(exc)
    cls = type(exc).__name__
    if cls == "Py4JJavaError" and java_class:
        cls = java_class.rsplit(".", 1)[-1]
    else:
        line = _first_line(str(exc)) or line  # PySpark's own message for captured errors
    if not line:
        line = _first_line(str(exc)) or cls
    if line.startswith("<_InactiveRpcError") or line.startswith("<_MultiThreadedRendezvous"):
        line = _grpc_words(str(exc)) or line  # Spark Connect: the server did not answer
    match = re.match(r"^([\w.$]+(?:Exception|Error)):\s*(.*)$", line)
    if match:
        java_class, line = java_class or match.group(1), match.group(2)
    return SparkError(cls, _cap(one_line(line + cause)), java_class)


GRPC_STATUS = re.compile(r"status = StatusCode\.(\w+)")
GRPC_DETAILS = re.compile(r'details = "([^"]*)"')


def _grpc_words(text: str) -> str:
    """gRPC's multi-line repr (`<_InactiveRpcError ... status = StatusCode.UNAVAILABLE
    details = "failed to connect ..."`) in one line: status and details."""
    status, details = GRPC_STATUS.search(text), GRPC_DETAILS.search(text)
    if status is None:
        return ""
    return f"{status.group(1)}: {details.group(1)}" if details else status.group(1)


def _server_class(exc: BaseException) -> str:
    """Through Spark Connect: the Java class from the server's stack trace, when sent."""
    trace = getattr(exc, "_stacktrace", None)
    first = _first_line(trace) if isinstance(trace, str) else ""
    match = re.match(r"^([\w.$]+(?:Exception|Error))\b", first)
    return match.group(1) if match else ""


def _cap(line: str) -> str:
    return line if len(line) <= 500 else line[:497] + "..."
