"""Keyed tombstones applied in the scan: each row's key probed against the deleted keys, no anti-join.

A keyed table's tombstone deletes the rows with its key written before it (a row sequence lower than the
tombstone's). The reader used to anti-join every row with the tombstones' keys: a Spark job to read them,
a broadcast, and a hash join per row. Here the keys of the version's tombstones, each with the newest
sequence of the tombstones that name it, travel in the plan as one constant, and the scan's filter
`branchspark_deleted_key(key, row sequence, keys)` (`jvm/DeletedKeyExpression.java`, registered by the
session extension) probes each row's key, computing the row's sequence only for a key a tombstone names:
the same rows go, with neither the job nor the join (docs/performance.md, "Issue 72: keyed tombstones in
the scan").

Used for a single-column key of an integral type, on sessions with our extension, while the tombstones
hold at most MAX_KEYS rows; otherwise the reader keeps the anti-join, with the same result. The keys are
read on the driver from the tombstone files (pyarrow, two columns), as deletion vectors' positions are:
they are as many as the rows the version deleted, not the table's rows, and tombstone files never change,
so a small cache keeps them for repeated reads.
"""
from __future__ import annotations

import functools
import struct
import threading
import weakref
from collections import OrderedDict

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from . import deletion_vectors, object_store

FUNCTION = "branchspark_deleted_key"
TOMB_SEQ = "_bs_tseq"  # reader.TOMB_SEQ (reader imports this module)
# The keys travel in every task's plan, 16 bytes each: beyond this, the anti-join (a broadcast) is cheaper.
MAX_KEYS = 1_000_000
KEY_TYPES = (T.LongType, T.IntegerType, T.ShortType, T.ByteType)

_present: "weakref.WeakKeyDictionary[SparkSession, bool]" = weakref.WeakKeyDictionary()
# Per session, the literal columns of the last few key sets sent (_literal).
_literals: "weakref.WeakKeyDictionary[SparkSession, OrderedDict[bytes, Column]]" = weakref.WeakKeyDictionary()
_LITERALS = 4
_lock = threading.Lock()


def usable(spark: SparkSession, key_types: list[T.DataType]) -> bool:
    """Whether reads on `spark` can filter by deleted keys: one key column of an integral type, and the
    session has our extension's expression (a server started with an older jar lacks it)."""
    if len(key_types) != 1 or not isinstance(key_types[0], KEY_TYPES) or not deletion_vectors.wanted():
        return False
    if not deletion_vectors.jar_loaded(spark):
        return False
    with _lock:
        if spark not in _present:
            try:
                _present[spark] = bool(spark.catalog.functionExists(FUNCTION))
            except Exception:
                _present[spark] = False
        return _present[spark]


@functools.lru_cache(maxsize=64)  # each holds at most MAX_KEYS keys
def _keys(uri: str, files: tuple[tuple[str, int], ...], column: str) -> tuple[np.ndarray, np.ndarray]:
    """(keys, tombstone sequences) of one tombstone, its key stored as `column`. `files`: its files' (name,
    bytes) as the catalog recorded them, opened without a lookup; without them the folder is read."""
    filesystem, path = object_store.filesystem(uri)
    columns = [column, TOMB_SEQ]
    if files:
        table = pa.concat_tables([object_store.parquet_file(filesystem, f"{path}/{name}", size)
                                  .to_table(columns=columns) for name, size in files])
    else:
        table = pq.read_table(path, columns=columns, filesystem=filesystem)
    keys = table.column(column).to_numpy(zero_copy_only=False).astype(np.int64)
    return keys, table.column(TOMB_SEQ).to_numpy(zero_copy_only=False).astype(np.int64)


def encode(tombstones: list[tuple[str, tuple[tuple[str, int], ...], str]], row_count: int) -> bytes | None:
    """The deleted keys of these tombstones ((folder URI, its files' (name, bytes) or (), the key's stored
    name) each; `row_count` rows in all) with the newest tombstone sequence of each key, as the function's
    constant; None when they are too many to travel in the plan."""
    if row_count > MAX_KEYS:
        return None
    return _encoded(tuple(tombstones))


@functools.lru_cache(maxsize=8)  # a version's reads repeat: the same bytes object, already sent (_literal)
def _encoded(tombstones: tuple[tuple[str, tuple[tuple[str, int], ...], str], ...]) -> bytes:
    parts = [_keys(uri, files, column) for uri, files, column in tombstones]
    keys = np.concatenate([k for k, _ in parts]) if parts else np.empty(0, np.int64)
    sequences = np.concatenate([s for _, s in parts]) if parts else np.empty(0, np.int64)
    order = np.lexsort((sequences, keys))  # by key, then sequence: each key's last entry is its newest
    keys, sequences = keys[order], sequences[order]
    last = np.r_[keys[1:] != keys[:-1], True] if len(keys) else np.empty(0, bool)
    keys, sequences = keys[last], sequences[last]
    return struct.pack(">i", len(keys)) + keys.astype(">i8").tobytes() + sequences.astype(">i8").tobytes()


def without_deleted(rows: DataFrame, key: str, sequence: str, keys: bytes) -> DataFrame:
    """`rows` without those the keys delete: `key` and `sequence` are SQL text of the row's key and of the
    sequence it was written with (each cast to BIGINT here)."""
    deleted = F.call_function(FUNCTION, F.expr(f"CAST({key} AS BIGINT)"), F.expr(f"CAST({sequence} AS BIGINT)"),
                              _literal(rows.sparkSession, keys))
    return rows.where(~deleted)


def _literal(spark: SparkSession, keys: bytes) -> Column:
    """`keys` as a literal column, kept for the session's next reads of the same keys: megabytes sent to the
    JVM once, not on every read (bytes hash once, and a hit on the cached object compares by identity)."""
    with _lock:
        held = _literals.setdefault(spark, OrderedDict())
        column = held.get(keys)
        if column is None:
            column = held[keys] = F.lit(keys)
            while len(held) > _LITERALS:
                held.popitem(last=False)
        else:
            held.move_to_end(keys)
        return column
