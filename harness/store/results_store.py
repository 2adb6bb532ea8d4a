"""The store: one SQLite file (write-ahead log: many readers, concurrent writers, and a
killed writer leaves no half entry), one row per observation key. Every entry carries a
digest of its payload; an entry that fails it, or does not parse, or is of another
format, is dropped with one warning and its case runs again. A store that cannot be
opened or written is one warning: the run goes on without it."""
from __future__ import annotations

import datetime as dt
import json
import os
import socket
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from harness.store.fingerprint import STORE_FORMAT, digest

STORE_FILE = "store.sqlite"
DEFAULT_FOLDER = ".harness-cache"
# Bounds: entries unused for this long go, then the least recently used until the file
# holds at most this much payload (a full 10-version matrix is ~60 MB).
MAX_AGE_DAYS = 30
MAX_BYTES = 512 * 1024 * 1024
BUSY_TIMEOUT_S = 60

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY, format INTEGER NOT NULL, kind TEXT NOT NULL, case_id TEXT NOT NULL,
    spark TEXT NOT NULL, payload TEXT NOT NULL, payload_digest TEXT NOT NULL,
    run_id TEXT NOT NULL, run_at TEXT NOT NULL, host TEXT NOT NULL, seconds REAL NOT NULL,
    bytes INTEGER NOT NULL, used_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS entries_used ON entries (used_at);
CREATE INDEX IF NOT EXISTS entries_case ON entries (spark, case_id);
CREATE TABLE IF NOT EXISTS splits (key TEXT PRIMARY KEY, owner TEXT NOT NULL, made_at REAL NOT NULL);
"""


class StoreWarning(UserWarning):
    """The store could not be used as asked; the run goes on (the case runs)."""


@dataclass(frozen=True)
class RunStamp:
    """Which run observed something: its id, when it started (ISO 8601, UTC), the host."""
    id: str
    at: str
    host: str

    def to_json(self) -> dict:
        return {"id": self.id, "at": self.at, "host": self.host}

    @classmethod
    def from_json(cls, data: dict) -> "RunStamp":
        return cls(str(data["id"]), str(data["at"]), str(data["host"]))

    @classmethod
    def now(cls) -> "RunStamp":
        return cls(uuid.uuid4().hex[:12], dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                   socket.gethostname())

    def words(self) -> str:
        return f"run {self.id} at {self.at} on {self.host}"


@dataclass(frozen=True)
class Stored:
    payload: dict
    stamp: RunStamp
    seconds: float


def store_path(folder: str | os.PathLike) -> Path:
    return Path(folder) / STORE_FILE


class ResultStore:
    """One process's handle on the store file (opened lazily, again after a fork)."""

    def __init__(self, folder: str | os.PathLike, warn: Callable[[str], None]):
        self.path = store_path(folder)
        self.warn = warn
        self.broken: Optional[str] = None
        self._connection: Optional[sqlite3.Connection] = None
        self._pid = 0

    def _db(self) -> Optional[sqlite3.Connection]:
        if self.broken:
            return None
        if self._connection is not None and self._pid == os.getpid():
            return self._connection
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        pause = 0.02
        while True:
            try:
                connection = self._open()
                break
            except sqlite3.OperationalError as exc:
                # Turning a new file to WAL takes it whole, and SQLite answers "locked" at
                # once, without waiting, to the workers that open it at the same moment.
                if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                    self._give_up(f"cannot open {self.path} ({exc})")
                    return None
                time.sleep(pause)
                pause = min(pause * 2, 1.0)
            except (OSError, sqlite3.Error) as exc:
                self._give_up(f"cannot open {self.path} ({exc})")
                return None
        self._connection, self._pid = connection, os.getpid()
        return connection

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":  # WAL stays with the file
                connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.executescript(SCHEMA)
        except BaseException:
            connection.close()
            raise
        return connection

    def _give_up(self, why: str) -> None:
        self.broken = why
        self.warn(f"join harness: result store not used: {why}; every case runs")

    def usable(self) -> bool:
        return self._db() is not None

    def get(self, key: str) -> Optional[Stored]:
        db = self._db()
        if db is None:
            return None
        try:
            row = db.execute("SELECT format, payload, payload_digest, run_id, run_at, host, seconds FROM entries "
                             "WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            self._give_up(f"cannot read {self.path} ({exc})")
            return None
        if row is None:
            return None
        fmt, payload, payload_digest, run_id, run_at, host, seconds = row
        try:
            if fmt != STORE_FORMAT:
                raise ValueError(f"format {fmt}, this harness reads {STORE_FORMAT}")
            if digest(payload) != payload_digest:
                raise ValueError("its digest does not match its contents")
            data = json.loads(payload)
            if not isinstance(data, dict):
                raise ValueError("not an object")
        except (ValueError, TypeError) as exc:
            self.warn(f"join harness: store entry {key[:12]} ignored ({exc}); the case runs again")
            self._delete(key)
            return None
        try:
            db.execute("UPDATE entries SET used_at = ? WHERE key = ?", (time.time(), key))
        except sqlite3.Error:
            pass  # a busy store only loses the entry's recency
        return Stored(data, RunStamp(run_id, run_at, host), float(seconds))

    def has(self, key: str) -> bool:
        """An entry under this key (not yet verified: `get` does that)."""
        db = self._db()
        try:
            return db is not None and db.execute("SELECT 1 FROM entries WHERE key = ?", (key,)).fetchone() is not None
        except sqlite3.Error:
            return False

    def put(self, key: str, kind: str, case_id: str, spark: str, payload: dict, stamp: RunStamp,
            seconds: float) -> None:
        db = self._db()
        if db is None:
            return
        text = json.dumps(payload, sort_keys=True, default=str)
        try:
            db.execute("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (key, STORE_FORMAT, kind, case_id, spark, text, digest(text), stamp.id, stamp.at,
                        stamp.host, float(seconds), len(text), time.time()))
        except sqlite3.Error as exc:
            self._give_up(f"cannot write {self.path} ({exc})")

    def _delete(self, key: str) -> None:
        try:
            self._db().execute("DELETE FROM entries WHERE key = ?", (key,))
        except (sqlite3.Error, AttributeError):
            pass

    def durations(self, spark: str) -> dict[str, float]:
        """case id → seconds of its latest observation on that Spark version."""
        db = self._db()
        if db is None:
            return {}
        try:
            rows = db.execute("SELECT case_id, seconds FROM entries WHERE spark = ? ORDER BY used_at", (spark,))
            return {case_id: float(seconds) for case_id, seconds in rows}
        except sqlite3.Error:
            return {}

    def agreed_split(self, key: str, owner: dict) -> dict:
        """The split of these items into shards that the first shard to start wrote (this
        one, if it is the first): shards run one after another, or at once, against one
        store cut the suite the same way, although each run adds durations."""
        db = self._db()
        if db is None:
            return owner
        try:
            db.execute("INSERT OR IGNORE INTO splits VALUES (?, ?, ?)", (key, json.dumps(owner), time.time()))
            row = db.execute("SELECT owner FROM splits WHERE key = ?", (key,)).fetchone()
            agreed = json.loads(row[0])
            return agreed if isinstance(agreed, dict) and agreed.keys() == owner.keys() else owner
        except (sqlite3.Error, ValueError, TypeError):
            return owner

    def prune(self, max_bytes: int = MAX_BYTES, max_age_days: float = MAX_AGE_DAYS) -> int:
        """Drop entries unused for `max_age_days`, then the least recently used until the
        payloads fit in `max_bytes`; the number of entries dropped."""
        db = self._db()
        if db is None:
            return 0
        try:
            old = time.time() - max_age_days * 86400
            db.execute("DELETE FROM splits WHERE made_at < ?", (old,))
            dropped = db.execute("DELETE FROM entries WHERE used_at < ?", (old,)).rowcount
            total = db.execute("SELECT COALESCE(SUM(bytes), 0) FROM entries").fetchone()[0]
            if total > max_bytes:
                kept, cut = 0, None
                for used_at, size in db.execute("SELECT used_at, bytes FROM entries ORDER BY used_at DESC"):
                    kept += size
                    if kept > max_bytes:
                        cut = used_at
                        break
                if cut is not None:
                    dropped += db.execute("DELETE FROM entries WHERE used_at <= ?", (cut,)).rowcount
            return dropped
        except sqlite3.Error:
            return 0

    def count(self) -> int:
        db = self._db()
        try:
            return db.execute("SELECT COUNT(*) FROM entries").fetchone()[0] if db is not None else 0
        except sqlite3.Error:
            return 0

    def close(self) -> None:
        if self._connection is not None and self._pid == os.getpid():
            self._connection.close()
        self._connection = None
