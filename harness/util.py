"""Small helpers shared by every stage: safe text for terminals and pages, atomic files."""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

# C0/C1 control characters (ESC sequences could rewrite a terminal), DEL, and the
# Unicode line/paragraph separators that JavaScript treats as line ends; tab and
# newline are kept.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: str) -> str:
    """`text` with control characters written as escapes (\\x1b, \\u2028)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", str(text))


def one_line(text: str) -> str:
    """Printable and on one line: newlines and tabs become spaces."""
    return printable(re.sub(r"[\r\n\t]+", " ", str(text)))


# The checkout (or installed tree) the harness runs from.
ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = Path(__file__).resolve().parent / "templates"


def display_path(path) -> str:
    """A path relative to the working directory when it lies below it."""
    try:
        return str(Path(path).resolve().relative_to(os.getcwd()))
    except ValueError:
        return str(path)


def clock(seconds: float) -> str:
    """2m05s / 42s: durations in progress lines and timing tables."""
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def jinja_env():
    """The one template environment of every page (autoescaped)."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape
    return Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]),
                       trim_blocks=True, lstrip_blocks=True)


TEMP_MARK = ".tmp-"


def atomic_write_text(path: Path, text: str) -> None:
    """Write the whole file or nothing: a temp file beside it, then a rename. A failure
    leaves no temp file; a kill leaves one that `remove_stale_temps` clears."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}{TEMP_MARK}{os.getpid()}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; reports are for everyone to read
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_stale_temps(folder: Path) -> int:
    """Delete temp files that an atomic write of a process that no longer runs left behind."""
    removed = 0
    for tmp in Path(folder).glob(f".*{TEMP_MARK}*.tmp"):
        match = re.search(re.escape(TEMP_MARK) + r"(\d+)-", tmp.name)
        if match and not _pid_alive(int(match.group(1))):
            try:
                tmp.unlink()
                removed += 1
            except OSError:
                pass
    return removed


def script_json(data) -> str:
    """JSON that is inert inside a <script> element whatever the scenario text holds:
    `<`, `>` and `&` as \\u escapes, so no `</script>` or `<!--<script` can change how
    the HTML parser reads the element, and the JavaScript line separators escaped too."""
    text = json.dumps(data, default=str)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return text
