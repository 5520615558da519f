"""Deletion vectors: a keyless tombstone applied per row position instead of by a join.

A keyless tombstone names deleted rows by (data file, row position). Reading a table used to
anti-join every row of a targeted file with those pairs. Here the pairs become one bitmap per file
(or sorted positions, for few deletions in a long file), and the scan of those files leaves out the
positions they name: no broadcast job and no hash probe (docs/performance.md has the numbers).

The code is Java (`jvm/`), compiled when the package is installed (jvm_build.py) with the JDK's `javac`
against the installed pyspark's jars; nothing compiles at run time. It applies the vectors in one of
three ways, fastest first:
- `SegmentParquetFormat`, Spark's Parquet source that leaves the deleted rows out of each batch as it
  reads it (the live rows move down in place), so no filter and no position column follow the scan.
  It needs our jar on the session's class path: `session_config()` adds it, with our extension, to
  every in-process session branchspark builds. Plain reads of flat columns use it;
- `branchspark_deleted_row(position, vectors)`, a Catalyst expression registered by the session
  extension `branchspark.Extensions`, filters the scan by each row's position (Spark's row index)
  against the bitmap of the file the task is reading: reads with row ids, and columns of nested types;
- the same function as a Java UDF (the position boxed per row), for a session without the extension:
  `ADD JAR` on an in-process session, `addArtifacts` on a Spark Connect session (the server gets the
  jar from the client).
Where none works (no jar built, a server of another Spark version or one that refuses artifacts), or the
vectors would be large, or
`BRANCHSPARK_DELETION_VECTORS=off`, the reader keeps the anti-join: results are the same.

The positions are read on the driver from the tombstone files (pyarrow, two columns), which are
immutable: a small cache keeps them for repeated reads of one version.
"""
from __future__ import annotations

import base64
import functools
import logging
import os
import struct
import sys
import threading
import weakref

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pyspark
from pyspark.sql import Column, DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..connect import is_connect
from . import direct_writes, jvm_build, object_store

FUNCTION = "branchspark_deleted_row"
# Spark's Parquet reader fills a read-schema column of this name with each row's position in its file
# (it is how `_metadata.row_index` is computed). Naming it directly skips building the `_metadata` struct
# for every row; the function refuses a NULL position, so a Spark that stopped filling it fails loudly.
ROW_INDEX = "_tmp_metadata_row_index"
_CLASS = "branchspark.DeletedRow"
EXTENSIONS = "branchspark.Extensions"
SEGMENT_FORMAT = "branchspark.SegmentParquetFormat"
_VECTORS_OPTION = "branchspark.deletionvectors"  # SegmentParquetFormat.VECTORS_OPTION
# The column types SegmentParquetFormat moves live rows of in place (LiveRows.supports).
_IN_PLACE_TYPES = (T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType,
                   T.DateType, T.TimestampType, T.TimestampNTZType, T.DecimalType, T.StringType, T.BinaryType,
                   T.DayTimeIntervalType, T.YearMonthIntervalType)
_BITMAP, _SORTED = 0, 1
# Above this many deleted positions (the vectors travel in every task's plan), join instead.
MAX_POSITIONS = 4_000_000
MAX_ENCODED_BYTES = 8 << 20

log = logging.getLogger(__name__)
_EXPRESSION, _UDF = "expression", "udf"
_modes: "weakref.WeakKeyDictionary[SparkSession, str | None]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def wanted() -> bool:
    return os.environ.get("BRANCHSPARK_DELETION_VECTORS", "on").lower() not in ("off", "0", "false", "no")


def session_config(config: dict) -> dict:
    """`config` for a new in-process session plus our jar and session extension, which make
    branchspark_deleted_row the compiled expression; unchanged when vectors are off or no JDK."""
    jar = jar_path() if wanted() else None
    if jar is None:
        return config

    def joined(key: str, value: str) -> str:
        present = [v for v in str(config.get(key, "")).split(",") if v.strip()]
        return ",".join(present + [value]) if value not in present else ",".join(present)

    with_jar = {**config, "spark.jars": joined("spark.jars", jar),
                "spark.sql.extensions": joined("spark.sql.extensions", EXTENSIONS)}
    return direct_writes.session_config(with_jar, jar_added=True)  # the jar's commit protocol too


def enabled(spark: SparkSession) -> bool:
    """True when `spark` can run branchspark_deleted_row: built in by our extension, or registered here
    as a UDF on first call (per session)."""
    return _mode(spark) is not None


def scan_leaves_out_deleted(spark: SparkSession, fields: list[T.StructField]) -> bool:
    """True when segment files of these columns can be read with our Parquet source, which leaves the
    deleted rows out as it reads: our jar is on the session's class path (the extension's expression
    shows it is) and every column is of a flat type, whose rows the source moves in place."""
    return _mode(spark) == _EXPRESSION and all(isinstance(f.dataType, _IN_PLACE_TYPES) for f in fields)


def jar_loaded(spark: SparkSession) -> bool:
    """Whether branchspark's jar came with the session (spark.jars and the extension), so that its data
    sources load: known_files.py reads through one."""
    return _mode(spark) == _EXPRESSION


def live_rows_reader(reader: DataFrameReader, vectors: bytes) -> DataFrameReader:
    """`reader` (a DataFrameReader of segment files, schema set) as our Parquet source, which reads only
    the rows `vectors` do not delete."""
    return reader.format(SEGMENT_FORMAT).option(_VECTORS_OPTION, base64.b64encode(vectors).decode("ascii"))


def _mode(spark: SparkSession) -> str | None:
    if not wanted():
        return None
    with _lock:
        if spark not in _modes:
            _modes[spark] = _register(spark)
        return _modes[spark]


def _register(spark: SparkSession) -> str | None:
    try:
        if spark.catalog.functionExists(FUNCTION):
            return _EXPRESSION  # the extension's expression (registering the UDF would shadow it)
    except Exception:
        pass
    try:
        spark.udf.registerJavaFunction(FUNCTION, _CLASS, T.BooleanType())
        return _UDF  # already on the class path (spark.jars, or added earlier)
    except Exception:
        pass
    jar = jar_path()
    if jar is None:
        return None
    try:
        if is_connect(spark) and spark.version != pyspark.__version__:
            log.warning("branchspark: the Spark Connect server runs Spark %s and branchspark's jar is built for "
                        "%s, so tombstones are applied by a join (slower)", spark.version, pyspark.__version__)
            return None
        if is_connect(spark):
            spark.addArtifacts(jar)
        else:
            spark.sql(f"ADD JAR '{jar}'")
        spark.udf.registerJavaFunction(FUNCTION, _CLASS, T.BooleanType())
        return _UDF
    except Exception as error:  # the reader falls back to the anti-join, with the same results
        log.warning("branchspark: deletion vectors unavailable on this session (%s); tombstones are "
                    "applied by a join", str(error).splitlines()[0] if str(error) else type(error).__name__)
        return None


@functools.lru_cache(maxsize=None)
def jar_path() -> str | None:
    """The jar built at install for the installed pyspark (jvm_build.py); None without it, said once."""
    jar = jvm_build.SOURCES / jvm_build.jar_name(pyspark.__version__)
    if jar.is_file():
        return str(jar)
    log.warning("branchspark: %s is not built, so tombstones are applied by a join and local writes start a "
                "chmod process per directory (both slower); build it with a JDK 17: %s -m %s", jar.name,
                sys.executable, jvm_build.__name__)
    return None


# ----------------------------------------------------------------- vectors
@functools.lru_cache(maxsize=32)  # each holds at most MAX_POSITIONS positions
def _positions(uri: str, files: tuple[tuple[str, int], ...] = ()) -> tuple[tuple[str, np.ndarray], ...]:
    """(row-id file name, sorted positions) of one tombstone; tombstone files never change. `files`: its
    files' (name, bytes) as the catalog recorded them, opened without a lookup or a listing (on S3 a HEAD
    and a LIST less each); without them the folder is read."""
    filesystem, path = object_store.filesystem(uri)
    columns = ["_bs_file", "_bs_pos"]
    if files:
        table = pa.concat_tables([object_store.parquet_file(filesystem, f"{path}/{name}", size)
                                  .to_table(columns=columns) for name, size in files])
    else:
        table = pq.read_table(path, columns=columns, filesystem=filesystem)
    if table.num_rows == 0:
        return ()
    files = table.column("_bs_file").to_numpy(zero_copy_only=False)
    positions = table.column("_bs_pos").to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.lexsort((positions, files))
    files, positions = files[order], positions[order]
    starts = np.flatnonzero(np.r_[True, files[1:] != files[:-1]])
    ends = np.r_[starts[1:], len(files)]
    return tuple((str(files[s]), positions[s:e]) for s, e in zip(starts, ends))


def named_positions(tombstones: list[tuple[str, tuple[tuple[str, int], ...]]]) -> dict[str, np.ndarray]:
    """{row-id file: sorted unique positions} of the rows these tombstones ((folder URI, its files' (name, bytes)
    or ()) each) name, read on the driver as encode() reads them."""
    by_file: dict[str, list[np.ndarray]] = {}
    for uri, files in tombstones:
        for name, positions in _positions(uri, files):
            by_file.setdefault(name, []).append(positions)
    return {name: np.unique(np.concatenate(chunks)) for name, chunks in by_file.items()}


def encode(tombstones: list[tuple[str, tuple[tuple[str, int], ...]]], row_count: int) -> bytes | None:
    """The deleted positions of these tombstones ((folder URI, its files' (name, bytes) or ()) each; `row_count`
    rows in all), one vector per data file, as the function's constant; None when they are too many to travel
    in the plan."""
    if row_count > MAX_POSITIONS:
        return None
    by_file: dict[str, list[np.ndarray]] = {}
    for uri, files in tombstones:
        for name, positions in _positions(uri, files):
            by_file.setdefault(name, []).append(positions)
    parts, size = [], 0
    for name, chunks in sorted(by_file.items()):
        positions = np.unique(np.concatenate(chunks)) if len(chunks) > 1 else chunks[0]
        bitmap_bytes = int(positions[-1]) // 8 + 1
        if bitmap_bytes <= 4 * 8 * len(positions):  # a bitmap probes faster: use it unless 4x larger
            bits = np.zeros(bitmap_bytes * 8, dtype=bool)
            bits[positions] = True
            kind, payload = _BITMAP, np.packbits(bits, bitorder="little").tobytes()
        else:
            kind, payload = _SORTED, positions.astype(">i8").tobytes()
        name_bytes = name.encode()
        parts.append(struct.pack(">i", len(name_bytes)) + name_bytes + struct.pack(">bi", kind, len(payload)) + payload)
        size += len(parts[-1])
        if size > MAX_ENCODED_BYTES:
            return None
    return b"".join(parts)


def without_deleted(scan: DataFrame, position: Column, vectors: bytes) -> DataFrame:
    """`scan` (a plain Parquet scan of segment files, nothing between) minus the rows `vectors` delete;
    `position` is the scan's row index (`_metadata.row_index`, or the ROW_INDEX column of its schema)."""
    if _mode(scan.sparkSession) == _UDF:
        # The expression declares itself nondeterministic (it reads the task's input file), so Catalyst never
        # infers it onto the other side of a join on the position (a tombstone scan, where it fails). A Java
        # UDF cannot declare it; a nondeterministic argument makes the call so (it adds zero).
        position = position + F.spark_partition_id() * F.lit(0)
    deleted: Column = F.call_function(FUNCTION, position, F.lit(vectors))
    return scan.where(~deleted)
