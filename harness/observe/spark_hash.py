"""Spark's answer checksum (harness.spark.query.checksum_frame) computed in Python over
rows held as Arrow: `sum(xxhash64(c0, c1, ...))` with Spark's own XxHash64 (seed 42, each
non-null column hashed into the previous column's hash, a null column skipped).

It lets a reference answer (harness.observe.reference) be compared with Spark's without
running anything in Spark: equal checksums and counts say the answers are equal. A type
this module does not hash the way Spark does gives None, never a guess, and the caller
compares the rows themselves instead."""
from __future__ import annotations

MASK = (1 << 64) - 1
SEED = 42
P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                      0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)
CHECKSUM_MOD = 1 << 64


def _np():
    import numpy as np
    return np


def _rotl(np, x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _fmix(np, h):
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(P2)
    h = h ^ (h >> np.uint64(29))
    h = h * np.uint64(P3)
    return h ^ (h >> np.uint64(32))


def hash_int(np, values, seeds):
    """XXH64.hashInt over uint32 values (the int's bits), one seed per row."""
    h = seeds + np.uint64(P5) + np.uint64(4)
    h = h ^ (values.astype(np.uint64) * np.uint64(P1))
    h = _rotl(np, h, 23) * np.uint64(P2) + np.uint64(P3)
    return _fmix(np, h)


def hash_long(np, values, seeds):
    """XXH64.hashLong over uint64 values (the long's bits), one seed per row."""
    h = seeds + np.uint64(P5) + np.uint64(8)
    k = _rotl(np, values * np.uint64(P2), 31) * np.uint64(P1)
    h = h ^ k
    h = _rotl(np, h, 27) * np.uint64(P1) + np.uint64(P4)
    return _fmix(np, h)


def _hash_bytes(values: list, seeds, np):
    import xxhash
    out = seeds.copy()
    for i, value in enumerate(values):
        if value is not None:
            out[i] = xxhash.xxh64_intdigest(value, int(seeds[i]))
    return out


def _round(np, acc, lane):
    return _rotl(np, acc + lane * np.uint64(P2), 31) * np.uint64(P1)


def _lanes(np, block, start: int, width: int):
    """Little-endian words of `width` bytes at `start` of every row of a 2-D byte block."""
    kind = np.dtype("<u8") if width == 8 else np.dtype("<u4")
    return np.ascontiguousarray(block[:, start:start + width]).view(kind)[:, 0].astype(np.uint64)


def _xxh64_rows(np, block, seeds):
    """XXH64 of each row of `block` (rows of one length, as a 2-D uint8 array), one seed
    per row: the reference algorithm (Spark's XXH64.hashUnsafeBytes), run on all rows at once."""
    length = block.shape[1]
    at = 0
    if length >= 32:
        v = [seeds + np.uint64(P1) + np.uint64(P2), seeds + np.uint64(P2), seeds.copy(), seeds - np.uint64(P1)]
        while at + 32 <= length:
            v = [_round(np, v[i], _lanes(np, block, at + 8 * i, 8)) for i in range(4)]
            at += 32
        h = _rotl(np, v[0], 1) + _rotl(np, v[1], 7) + _rotl(np, v[2], 12) + _rotl(np, v[3], 18)
        for lane in v:
            h = (h ^ _round(np, np.zeros_like(lane), lane)) * np.uint64(P1) + np.uint64(P4)
    else:
        h = seeds + np.uint64(P5)
    h = h + np.uint64(length)
    while at + 8 <= length:
        h = h ^ _round(np, np.zeros_like(h), _lanes(np, block, at, 8))
        h = _rotl(np, h, 27) * np.uint64(P1) + np.uint64(P4)
        at += 8
    if at + 4 <= length:
        h = h ^ (_lanes(np, block, at, 4) * np.uint64(P1))
        h = _rotl(np, h, 23) * np.uint64(P2) + np.uint64(P3)
        at += 4
    while at < length:
        h = h ^ (block[:, at].astype(np.uint64) * np.uint64(P5))
        h = _rotl(np, h, 11) * np.uint64(P1)
        at += 1
    return _fmix(np, h)


# Rows of one length hashed together only where there are enough of them to pay for the
# Python loop over the length's words; the rest one by one.
_ROWS_PER_LENGTH = 16


def _hash_binary_array(np, array, seeds, valid):
    """XXH64 of each value of an Arrow string or binary array (its offsets and bytes read
    in place), grouped by length: a few numpy passes rather than a call per row."""
    offsets_type = np.int64 if str(array.type).startswith("large") else np.int32
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offsets_type)[array.offset:array.offset + len(array) + 1].astype(np.int64)
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    starts, lengths = offsets[:-1], offsets[1:] - offsets[:-1]
    out = seeds.copy()
    by_length = np.where(valid)[0]
    for length in np.unique(lengths[by_length]):
        rows = by_length[lengths[by_length] == length]
        if len(rows) < _ROWS_PER_LENGTH:
            import xxhash
            for row in rows:
                value = data[starts[row]:starts[row] + length].tobytes()
                out[row] = xxhash.xxh64_intdigest(value, int(seeds[row]))
            continue
        block = data[starts[rows][:, None] + np.arange(length, dtype=np.int64)] if length else \
            np.zeros((len(rows), 0), np.uint8)
        out[rows] = _xxh64_rows(np, block, seeds[rows])
    return out


def _java_bytes(unscaled: int) -> bytes:
    """BigInteger.toByteArray: the minimal big-endian two's complement."""
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return unscaled.to_bytes(length, "big", signed=True)


def _column_hashes(np, pa, column, seeds):
    """The seeds after hashing one column into them (nulls keep theirs); None: a type not
    hashed here."""
    kind = column.type
    valid = np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_boolean(kind):
        bits = np.asarray(column.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint32)
        hashed = hash_int(np, bits, seeds)
    elif pa.types.is_int8(kind) or pa.types.is_int16(kind) or pa.types.is_int32(kind) or pa.types.is_date32(kind):
        ints = column.cast(pa.int32()) if not pa.types.is_date32(kind) else column.view(pa.int32())
        raw = np.asarray(ints.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int32)
        hashed = hash_int(np, raw.view(np.uint32), seeds)
    elif pa.types.is_int64(kind) or (pa.types.is_timestamp(kind) and kind.unit == "us"):
        longs = column.view(pa.int64()) if pa.types.is_timestamp(kind) else column
        raw = np.asarray(longs.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        hashed = hash_long(np, raw.view(np.uint64), seeds)
    elif pa.types.is_float32(kind):
        raw = np.asarray(column.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float32)
        bits = raw.view(np.uint32).copy()
        bits[np.isnan(raw)] = 0x7FC00000  # Float.floatToIntBits: one NaN
        bits[raw == 0] = 0  # -0.0 hashed as 0.0 (Spark normalizes it, measured)
        hashed = hash_int(np, bits, seeds)
    elif pa.types.is_float64(kind):
        raw = np.asarray(column.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64)
        bits = raw.view(np.uint64).copy()
        bits[np.isnan(raw)] = 0x7FF8000000000000  # Double.doubleToLongBits: one NaN
        bits[raw == 0] = 0
        hashed = hash_long(np, bits, seeds)
    elif pa.types.is_decimal(kind) and kind.precision <= 18 and kind.bit_width == 128:
        # the unscaled value's low word: a value of 18 digits fits a long (the high word
        # is its sign); Spark hashes it as that long
        words = np.frombuffer(column.buffers()[1], dtype="<i8")[2 * column.offset:2 * (column.offset + len(column))]
        hashed = hash_long(np, words[0::2].astype(np.int64).view(np.uint64), seeds)
    elif pa.types.is_decimal(kind):
        unscaled = [None if v is None else int(v.scaleb(kind.scale)) for v in column.to_pylist()]
        hashed = _hash_bytes([None if v is None else _java_bytes(v) for v in unscaled], seeds, np)
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind) or \
            pa.types.is_large_binary(kind):
        hashed = _hash_binary_array(np, column, seeds, valid)
    elif pa.types.is_null(kind):
        return seeds
    else:
        return None
    return np.where(valid, hashed, seeds)


def checksum(table) -> str | None:
    """Spark's checksum text of the rows of an Arrow table whose columns carry Spark's
    types (harness.spark.query.checksum_text); None where a column's type is not hashed
    here or a hashing library is missing."""
    try:
        import numpy  # noqa: F401
        import pyarrow as pa
        import xxhash  # noqa: F401
    except ImportError:
        return None
    np = _np()
    seeds = np.full(table.num_rows, SEED, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in table.columns:
            column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
            seeds = _column_hashes(np, pa, column, seeds)
            if seeds is None:
                return None
    total = int(seeds.view(np.int64).astype(object).sum()) if table.num_rows else 0
    return f"{total % CHECKSUM_MOD:016x}"

