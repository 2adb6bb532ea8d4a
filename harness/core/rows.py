"""Result rows in one comparable form, whatever collected them: numbers as floats,
dates and timestamps as ISO text, sorted (order-independent comparisons)."""
from __future__ import annotations

from decimal import Decimal


def _normalize_value(value):
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float, Decimal)):
        return float(value)
    if hasattr(value, "isoformat"):
        return value.isoformat().replace("T", " ")
    return str(value)


def _row_key(row) -> tuple:
    return tuple((v is None, str(type(v).__name__), v if v is not None else 0) for v in row)


def normalize_rows(rows) -> list[list]:
    normalized = [[_normalize_value(v) for v in row] for row in rows]
    return sorted(normalized, key=_row_key)
