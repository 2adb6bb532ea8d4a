"""Instants as scenario files write them: ISO timestamps, UTC where no zone is given."""
from __future__ import annotations

import datetime as dt

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def utc_instant(text) -> dt.datetime:
    """An ISO timestamp (a date alone: its midnight) as an aware UTC datetime: one without
    a zone is UTC; `Z` and a space between date and time are taken. ValueError otherwise."""
    value = dt.datetime.fromisoformat(str(text).replace("Z", "+00:00").replace(" ", "T"))
    return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value.astimezone(dt.timezone.utc)
