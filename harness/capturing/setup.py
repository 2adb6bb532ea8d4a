"""What production's session did before its query ran, done in the capturing session
first (`capture --setup FILE`, `--setup-sql TEXT`): caching tables and views
(`CACHE [LAZY] TABLE t`, `CACHE [LAZY] TABLE v AS SELECT …`), setting configs
(`SET key=value`), temporary views (`CREATE [OR REPLACE] [GLOBAL] TEMPORARY VIEW v AS
SELECT …`). Each statement is told from Spark's parse of it before anything runs; a
statement of any other kind (one that writes data, drops or alters a table, reads a path
as a view) refuses the whole setup in one line naming it, and nothing is run. A `SET`
takes a config a scenario may set (a runtime SQL config of Spark's registry, typed, its
value one its converter takes): the capture then records it with the query's others."""
from __future__ import annotations

from harness.capturing.relations import CaptureError
from harness.core.text import one_line
from harness.scenario import confs
from harness.spark import conf_registry
from harness.spark.sql_trees import parsed_query

CACHE_STATEMENTS = ("CacheTableStatement", "CacheTable", "CacheTableAsSelect", "CacheTableCommand")
VIEW_STATEMENTS = ("CreateViewStatement", "CreateViewCommand")
TEMPORARY_VIEWS = ("LocalTempView", "GlobalTempView")
ALLOWED = "CACHE [LAZY] TABLE, SET key=value, CREATE TEMPORARY VIEW … AS SELECT"


def statements(text: str) -> list[str]:
    """The statements of a setup text, split at semicolons outside quotes and comments."""
    out, current, quote, index = [], [], None, 0
    while index < len(text):
        char = text[index]
        pair = text[index:index + 2]
        if quote is None and pair == "--":
            end = text.find("\n", index)
            index = len(text) if end < 0 else end
            continue
        if quote is None and pair == "/*":
            end = text.find("*/", index + 2)
            index = len(text) if end < 0 else end + 2
            current.append(" ")
            continue
        if quote is None and char in ("'", '"', "`"):
            quote = char
        elif quote == char and text[index - 1:index] != "\\":
            quote = None
        if quote is None and char == ";":
            out.append("".join(current).strip())
            current = []
        else:
            current.append(char)
        index += 1
    out.append("".join(current).strip())
    return [statement for statement in out if statement]


def check(spark, text: str, where: str) -> list[str]:
    """The setup's statements, each one Spark parses as a cache, a SET of a config a
    scenario may set, or a temporary view; else a CaptureError naming the statement."""
    found = statements(text)
    for number, statement in enumerate(found, 1):
        at = f"{where}: statement {number} ({one_line(statement)[:80]})"
        try:
            plan = parsed_query(spark, statement)
        except Exception as exc:
            raise CaptureError(f"{at}: Spark cannot parse it ({one_line(str(exc))[:160]})") from None
        kind = plan.getClass().getSimpleName()
        if kind in CACHE_STATEMENTS:
            continue
        if kind in VIEW_STATEMENTS and str(plan.viewType()).rstrip("$").rsplit(".", 1)[-1] in TEMPORARY_VIEWS:
            continue
        if kind == "SetCommand":
            _check_set(spark, plan, at)
            continue
        raise CaptureError(f"{at}: {kind} is not a setup statement ({ALLOWED} only): it would change the "
                           "catalog or its data; nothing was run")
    return found


def _check_set(spark, plan, at: str) -> None:
    pair = plan.kv()
    if pair.isEmpty() or pair.get()._2().isEmpty():
        raise CaptureError(f"{at}: a SET without a value sets nothing")
    key, value = str(pair.get()._1()), str(pair.get()._2().get())
    reason = conf_refusal(conf_registry.registry_of(spark), key, value)
    if reason:
        raise CaptureError(f"{at}: {reason}; nothing was run")


def conf_refusal(registry, key: str, value: str) -> str | None:
    """Why a scenario may not set `key` to `value` (this Spark's registry: a runtime SQL
    config, typed or vetted, a value its converter takes), None when it may."""
    if key in confs.ICEBERG_CONFS:
        return None if str(value).strip().lower() in ("true", "false") else f"{key} takes true or false"
    declared = registry.declared(key) if key.startswith("spark.sql.") else None
    if declared is None:
        return f"{key} is not a SQL config this Spark declares"
    if declared.static:
        return f"{key} is a static config: it is the application's, set before the session starts"
    if key in confs.DATA_CONFS:
        return f"{key} decides how data is written, not how a query is planned"
    if declared.kind == conf_registry.STRING and key not in confs.VETTED_STRINGS:
        return f"{key} takes free text (a class name, a path): not a config a scenario sets"
    try:
        confs.check(key, value)
    except confs.ConfError as exc:
        return str(exc)
    return registry.refusal(key, value)


def run(spark, found: list[str]) -> None:
    """The checked statements, in order, in the capturing session."""
    for statement in found:
        spark.sql(statement)
