"""What every HTML page shares: the one template environment (autoescaped) and JSON that
is inert inside a <script> element."""
from __future__ import annotations

import json
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates"


def jinja_env():
    """The one template environment of every page (autoescaped)."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape
    return Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]),
                       trim_blocks=True, lstrip_blocks=True)


def script_json(data) -> str:
    """JSON that is inert inside a <script> element whatever the scenario text holds:
    `<`, `>` and `&` as \\u escapes, so no `</script>` or `<!--<script` can change how
    the HTML parser reads the element, and the JavaScript line separators escaped too."""
    text = json.dumps(data, default=str)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return text
