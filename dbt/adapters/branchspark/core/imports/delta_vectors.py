"""Delta's deletion vectors as sorted row positions (the Delta protocol, "Deletion Vectors"): a descriptor names
where the vector is (`i` inline, Z85 text; `u` a file beside the table named by a Z85 UUID; `p` a path), and the
vector is a RoaringBitmapArray: a magic number, then 32-bit Roaring bitmaps (portable format) keyed by the high
half of each 64-bit position."""
from __future__ import annotations

import struct
import uuid
from urllib.parse import unquote

import numpy as np

from .. import errors
from .source import filesystem, join

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_VALUE = {c: i for i, c in enumerate(_Z85)}
_MAGIC = 1681511377
_RUN_COOKIE, _NO_RUN_COOKIE = 12347, 12346


def positions(table_location: str, descriptor: dict) -> np.ndarray:
    """The sorted row positions a deletion vector descriptor (an add action's `deletionVector`) deletes."""
    kind = descriptor.get("storageType")
    where = descriptor.get("pathOrInlineDv", "")
    if kind == "i":
        data = z85_decode(where)
    elif kind in ("u", "p"):
        if kind == "u":
            prefix, encoded = where[:-20], where[-20:]
            name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
            path = join(table_location, f"{prefix}/{name}" if prefix else name)
        else:
            path = unquote(where)
        data = _read_stored(path, int(descriptor.get("offset") or 0), int(descriptor["sizeInBytes"]))
    else:
        raise errors.InvalidArgument(f"cannot import {table_location}: deletion vector storage type '{kind}' "
                                     f"is not one the Delta protocol defines")
    found = bitmap_array(data)
    expected = descriptor.get("cardinality")
    if expected is not None and len(found) != int(expected):
        raise errors.InvalidArgument(f"cannot import {table_location}: a deletion vector holds {len(found)} rows, "
                                     f"its descriptor says {expected}")
    return found


def z85_decode(text: str) -> bytes:
    if len(text) % 5:
        raise ValueError("Z85 text must be a multiple of 5 characters")
    out = bytearray()
    for start in range(0, len(text), 5):
        value = 0
        for char in text[start:start + 5]:
            value = value * 85 + _Z85_VALUE[char]
        out += value.to_bytes(4, "big")
    return bytes(out)


def _read_stored(path: str, offset: int, size: int) -> bytes:
    """A vector of a deletion vector file: at `offset`, its size (4 bytes, big-endian), then its bytes, then a
    checksum."""
    fs, real = filesystem(path)
    with fs.open_input_file(real) as handle:
        handle.seek(offset)
        header = handle.read(4)
        (stored_size,) = struct.unpack(">i", header)
        if stored_size != size:
            raise errors.InvalidArgument(f"cannot import: deletion vector in {path} at {offset} has {stored_size} "
                                         f"bytes, its descriptor says {size}")
        return handle.read(size)


def bitmap_array(data: bytes) -> np.ndarray:
    """Positions of a serialized RoaringBitmapArray (Delta's "portable" 64-bit format)."""
    (magic,) = struct.unpack_from("<i", data, 0)
    if magic != _MAGIC:
        raise ValueError(f"not a Delta deletion vector (magic {magic})")
    (count,) = struct.unpack_from("<q", data, 4)
    at, parts = 12, []
    for _ in range(count):
        (high,) = struct.unpack_from("<I", data, at)
        low, at = _roaring32(data, at + 4)
        parts.append((np.uint64(high) << np.uint64(32)) | low.astype(np.uint64))
    return np.sort(np.concatenate(parts)).astype(np.int64) if parts else np.empty(0, np.int64)


def _roaring32(data: bytes, at: int) -> tuple[np.ndarray, int]:
    """(values, offset after it) of a 32-bit Roaring bitmap in the portable format (RoaringFormatSpec)."""
    (cookie,) = struct.unpack_from("<I", data, at)
    at += 4
    runs = b""
    if cookie & 0xFFFF == _RUN_COOKIE:
        size = (cookie >> 16) + 1
        runs = data[at:at + (size + 7) // 8]
        at += (size + 7) // 8
    elif cookie == _NO_RUN_COOKIE:
        (size,) = struct.unpack_from("<I", data, at)
        at += 4
    else:
        raise ValueError(f"not a Roaring bitmap (cookie {cookie})")
    header = np.frombuffer(data, dtype="<u2", count=2 * size, offset=at).reshape(size, 2)
    at += 4 * size
    if not runs or size >= 4:  # the offsets header, which a sequential read does not need
        at += 4 * size
    values = []
    for index, (key, cardinality_minus_one) in enumerate(header):
        high = np.uint32(key) << np.uint32(16)
        cardinality = int(cardinality_minus_one) + 1
        if runs and runs[index // 8] >> (index % 8) & 1:
            (pairs,) = struct.unpack_from("<H", data, at)
            spans = np.frombuffer(data, dtype="<u2", count=2 * pairs, offset=at + 2).reshape(pairs, 2)
            at += 2 + 4 * pairs
            low = np.concatenate([np.arange(int(s), int(s) + int(n) + 1, dtype=np.uint32) for s, n in spans])
        elif cardinality <= 4096:
            low = np.frombuffer(data, dtype="<u2", count=cardinality, offset=at).astype(np.uint32)
            at += 2 * cardinality
        else:
            words = np.frombuffer(data, dtype="<u8", count=1024, offset=at)
            at += 8192
            low = np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little")).astype(np.uint32)
        values.append(high | low)
    return (np.concatenate(values) if values else np.empty(0, np.uint32)), at
