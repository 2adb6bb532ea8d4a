"""Text that is safe to show: control characters escaped (an ESC sequence in a scenario
could rewrite a terminal), one-line messages, paths as the user typed them, durations."""
from __future__ import annotations

import os
import re
from pathlib import Path

from harness.core.records import BYTE_UNITS

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


def quoted_identifier(name: str) -> str:
    """A name as Spark SQL reads it whatever it holds: in backticks, each backtick doubled."""
    return "`" + name.replace("`", "``") + "`"


def string_literal(text: str) -> str:
    """Text as a Spark SQL string literal (backslash escapes, Spark's default parser)."""
    return "'" + str(text).replace("\\", "\\\\").replace("'", "\\'") + "'"


def bytes_text(size: int) -> str:
    """Spark's Utils.bytesToString: what the server prints for an estimate of `size` bytes
    (Java's `%.1f` rounds half up: 160,000 B is 156.25 KiB, printed `156.3 KiB`)."""
    from decimal import ROUND_HALF_UP, Decimal
    for unit in ("EiB", "PiB", "TiB", "GiB", "MiB", "KiB"):
        if size >= 2 * BYTE_UNITS[unit]:
            value = (Decimal(size) / Decimal(BYTE_UNITS[unit])).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
            return f"{value} {unit}"
    return f"{size}.0 B"


def parse_bytes(text) -> int:
    """Spark's byte strings: 10485760b, 10m, 10MB, -1."""
    value = str(text).strip().lower()
    match = re.fullmatch(r"(-?\d+)\s*([kmgtp]?)i?b?", value)
    if not match:
        return int(float(value))
    number, unit = int(match.group(1)), match.group(2)
    return number * 1024 ** " kmgtp".index(unit or " ")


def counted(count: int, noun: str) -> str:
    """`1 case`, `4 cases`: a count and its noun, in the plural unless it is one."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"
