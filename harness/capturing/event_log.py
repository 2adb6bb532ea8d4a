"""The join nodes production ran with, read from a Spark event log.

`python -m harness baseline EVENTLOG_DIR_OR_FILE --out baseline.json`: for each SQL
execution of the log, the join nodes of its initial physical plan (the plan of
SparkListenerSQLExecutionStart) and, under AQE, of its final plan (the last
SparkListenerSQLAdaptiveExecutionUpdate), pre-order like harness.observe.jvm_plans, with the
execution's description and the configs it modified. The Spark version comes from the
log's SparkListenerLogStart. Event logs of 3.x and 4.x are read: plain, zstd (4.x's
default), lz4 (3.0/3.1's default when compression was on) and snappy in the framing of
Spark's Java codecs (lz4-java's block stream, snappy-java's stream), or gzip; single files
or rolling logs (a folder of events_N files). lzf is refused by name.
"""
from __future__ import annotations

import gzip
import io
import json
import re
import struct
from pathlib import Path

from harness.core.files import atomic_write_text
from harness.observe.plan_tree import join_of

START = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"
ADAPTIVE_UPDATE = "org.apache.spark.sql.execution.ui.SparkListenerSQLAdaptiveExecutionUpdate"
LOG_START = "SparkListenerLogStart"


class BaselineError(Exception):
    """One line: which log, which line, what is wrong."""


def log_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted((p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")),
                       key=lambda p: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.name)])
        if not files:
            raise BaselineError(f"{path}: no event log files in this folder")
        return files
    if not path.exists():
        raise BaselineError(f"{path}: no such file or folder")
    return [path]


def _lines(path: Path):
    """The log's lines, by the codec its name ends with (as Spark names them)."""
    if path.suffix == ".lzf":
        raise BaselineError(f"{path}: compressed with Spark's lzf codec, which only Spark reads; "
                            "write the log with spark.eventLog.compression.codec=zstd or uncompressed")
    if path.suffix in (".zstd", ".zst"):
        import zstandard
        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), read_across_frames=True)
    elif path.suffix in (".lz4", ".snappy"):
        raw = _ChunkReader(path, _lz4_blocks if path.suffix == ".lz4" else _snappy_blocks)
    elif path.suffix == ".gz":
        raw = gzip.open(path, "rb")
    else:
        raw = open(path, "rb")
    with io.TextIOWrapper(io.BufferedReader(raw) if isinstance(raw, _ChunkReader) else raw,
                          encoding="utf-8", errors="replace") as handle:
        try:
            yield from enumerate(handle, start=1)
        except (OSError, EOFError, ValueError) as exc:  # a cut-off or corrupt compressed stream
            raise BaselineError(f"{path}: cannot read on: {exc}") from None


class _ChunkReader(io.RawIOBase):
    """A raw stream over the decompressed chunks a block decoder yields."""

    def __init__(self, path: Path, blocks):
        self._file = open(path, "rb")
        self._chunks = blocks(self._file)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._pending:
            self._pending = next(self._chunks, None)
            if self._pending is None:
                self._pending = b""
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def close(self) -> None:
        self._file.close()
        super().close()


def _exactly(handle, size: int, what: str) -> bytes:
    data = handle.read(size)
    if len(data) != size:
        raise EOFError(f"truncated {what} at byte {handle.tell()}")
    return data


LZ4_MAGIC = b"LZ4Block"


def _lz4_blocks(handle):
    """lz4-java's LZ4BlockOutputStream (Spark's lz4 codec): per block the magic, a token
    (method in the high bits), compressed and original lengths and a checksum (little
    endian), then the block; a block of length 0 ends a stream, and streams may follow."""
    import cramjam
    while True:
        magic = handle.read(len(LZ4_MAGIC))
        if not magic:
            return
        if magic != LZ4_MAGIC:
            raise ValueError(f"not an lz4 block stream at byte {handle.tell() - len(magic)}")
        token, compressed, original, _checksum = struct.unpack("<BiiI", _exactly(handle, 13, "lz4 header"))
        data = _exactly(handle, compressed, "lz4 block")
        if original == 0:
            continue
        if token & 0xF0 == 0x10:  # stored raw
            yield data
        else:
            yield bytes(cramjam.lz4.decompress_block(data, output_len=original))


SNAPPY_MAGIC = b"\x82SNAPPY\x00"


def _snappy_blocks(handle):
    """snappy-java's SnappyOutputStream (Spark's snappy codec): a 16-byte header (magic,
    version, compatible version), then blocks of a big-endian length and raw snappy."""
    import cramjam
    header = handle.read(16)
    if header[:8] != SNAPPY_MAGIC:
        raise ValueError("not a snappy-java stream (no SNAPPY header)")
    while True:
        length = handle.read(4)
        if not length:
            return
        if length == SNAPPY_MAGIC[:4]:  # another stream appended
            _exactly(handle, 12, "snappy header")
            continue
        if len(length) < 4:
            raise EOFError(f"truncated snappy block length at byte {handle.tell()}")
        (size,) = struct.unpack(">i", length)
        yield bytes(cramjam.snappy.decompress_raw(_exactly(handle, size, "snappy block")))


SCAN = re.compile(r"^Scan \S+ (?:\S+\.)?([^.\s]+)$")


def scanned_tables(plan_info: dict) -> list[str]:
    """The catalog tables a SparkPlanInfo tree scans (to tell executions apart)."""
    found, stack = set(), [plan_info]
    while stack:
        node = stack.pop()
        match = SCAN.match(str(node.get("nodeName", "")))
        if match:
            found.add(match.group(1))
        stack.extend(node.get("children") or [])
    return sorted(found)


def join_nodes(plan_info: dict) -> list[dict]:
    """Join operators of a SparkPlanInfo tree, pre-order (codegen stages and AQE
    wrappers are walked through)."""
    found, stack = [], [plan_info]
    while stack:
        node = stack.pop()
        join = join_of(str(node.get("nodeName", "")), str(node.get("simpleString", "")))
        if join:
            found.append(join)
        stack.extend(reversed(node.get("children") or []))
    return found


def read_log(path: Path) -> dict:
    """{spark, executions: [{id, description, initial, final, modified_configs}]} of one log."""
    version, executions = None, {}
    for file in log_files(path):
        for number, line in _lines(file):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                raise BaselineError(f"{file}:{number}: not a JSON event (a truncated or foreign log?)") from None
            kind = event.get("Event") if isinstance(event, dict) else None
            if kind == LOG_START:
                version = event.get("Spark Version")
            elif kind == START:
                executions[event["executionId"]] = {
                    "id": event["executionId"], "description": event.get("description", ""),
                    "tables": scanned_tables(event.get("sparkPlanInfo") or {}),
                    "initial": join_nodes(event.get("sparkPlanInfo") or {}), "final": None,
                    "modified_configs": event.get("modifiedConfigs") or {}}
            elif kind == ADAPTIVE_UPDATE and event.get("executionId") in executions:
                # each update replaces the plan; the last one is the final plan
                executions[event["executionId"]]["final"] = join_nodes(event.get("sparkPlanInfo") or {})
    if version is None:
        raise BaselineError(f"{path}: no SparkListenerLogStart event: not a Spark event log, or an unknown version")
    if not re.match(r"[34]\.\d+", version):
        raise BaselineError(f"{path}: written by Spark {version}; baseline reads logs of Spark 3.x and 4.x")
    return {"spark": version, "executions": list(executions.values())}


def main(path: str, out: str | None) -> int:
    try:
        baseline = read_log(Path(path))
    except BaselineError as exc:
        print(f"error: {exc}")
        return 2
    text = json.dumps(baseline, indent=2) + "\n"
    if out:
        atomic_write_text(Path(out), text)
        with_joins = sum(1 for e in baseline["executions"] if e["initial"] or e["final"])
        print(f"{len(baseline['executions'])} SQL executions ({with_joins} with joins) of Spark {baseline['spark']} "
              f"-> {out}")
    else:
        print(text, end="")
    return 0


def expectation(baseline_path: str, execution: int) -> dict:
    """An override for `expect.overrides`: the initial join nodes production planned on
    its version for one execution (a captured scenario is plan-only)."""
    baseline = json.loads(Path(baseline_path).read_text(encoding="utf-8"))
    chosen = [e for e in baseline["executions"] if e["id"] == execution]
    if not chosen:
        raise BaselineError(f"{baseline_path}: no SQL execution {execution} "
                            f"(it has {', '.join(str(e['id']) for e in baseline['executions'][:20])})")
    joins = chosen[0]["initial"]
    override = {"when": {"spark": f"=={baseline['spark']}"}}
    if joins:
        override["joins"] = joins
    else:
        override["strategy"] = "none"
    return override
