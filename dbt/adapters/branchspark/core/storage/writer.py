"""Write segments and tombstones: new immutable Parquet objects, never a rewrite.

Files are written before the catalog commit that references them; a writer
that dies in between leaves only unreferenced files, which `gc` removes.
"""
from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from urllib.parse import unquote

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..catalog.schema import Schema
from ..catalog.state import SegmentInfo, SegmentKind, TableState
from ..catalog.tombstones import TombstoneInfo, TombstoneSummary
from . import direct_writes
from .difference import NEW, OLD, SIDE, observed_changes
from .layout import SEGMENT_COLUMN, Warehouse
from .projection import referenced_bigint, select_sql
from .reader import ROW_FILE, ROW_POS, ROW_SEQ, TOMB_SEQ, quote

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_PARALLEL_WRITES = 4  # Spark jobs writing files at once
# Key types whose Parquet statistics compare in Python as Spark compares the values (strings: by code point,
# which is UTF-8's byte order), so a file's recorded range can rule out a key.
RANGED_KEY_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.StringType)


@dataclass
class SegmentWriter:
    spark: SparkSession
    warehouse: Warehouse

    def write_segments(self, table: TableState, schema: Schema, rows: DataFrame, seq: int, kind: SegmentKind,
                       fault=None) -> list[SegmentInfo]:
        """Write `rows` (already in `schema`'s column order and types) as one or more segments."""
        relative = self.warehouse.new_segment_dir(table.id, seq)
        writer = rows.write.mode("error")  # "errorifexists" is unknown to Spark Connect
        if table.partition_by:
            writer = writer.partitionBy(*table.partition_by)
        committed = direct_writes.write(self.spark, writer, self.warehouse.uri(relative))
        if fault:
            fault("write.after_files")
        # The segment lists its files and their sizes, as a manifest: reads then name files instead of listing
        # folders, and look none up (known_files.py).
        files_by_dir: dict[str, list[tuple[str, int, str | None]]] = {}
        for path, size, etag in self._written_files(relative, committed):
            directory, name = path.rsplit("/", 1)
            files_by_dir.setdefault(directory, []).append((name, size, etag))
        if not table.partition_by:
            names, sizes, etags = _listed(files_by_dir.get(relative, []))
            return self.with_key_ranges(table, schema, [SegmentInfo(
                uuid.uuid4().hex, table.id, relative, seq, schema.id, kind, files=names, file_sizes=sizes,
                file_etags=etags)])
        # One segment per partition directory, so overwriting a partition can drop whole segments.
        segments = []
        for leaf, files in sorted(files_by_dir.items()):
            values = _partition_values(leaf[len(relative):])
            names, sizes, etags = _listed(files)
            segments.append(SegmentInfo(uuid.uuid4().hex, table.id, leaf, seq, schema.id, kind,
                                        tuple(table.partition_by), values, names, sizes, file_etags=etags))
        return self.with_key_ranges(table, schema, segments)

    def with_key_ranges(self, table: TableState, schema: Schema, segments: list[SegmentInfo]) -> list[SegmentInfo]:
        """`segments` (just written, every file listed with its size) with each file's range of the table's first
        key column, from the files' footers (SegmentInfo.key_ranges): what lets a later key check skip the
        file. Unchanged for a keyless table, or a key of a type whose ranges are not kept."""
        column = schema.column(table.primary_key[0]) if table.primary_key else None
        if column is None or column.name in table.partition_by or not isinstance(column.data_type, RANGED_KEY_TYPES):
            return segments
        files = [(f"{s.path}/{name}", size) for s in segments for name, size in zip(s.files, s.file_sizes)]
        if not files or any(len(s.files) != len(s.file_sizes) for s in segments):
            return segments
        ranges = iter(self.warehouse.key_ranges(files, column.name))
        return [replace(s, key_ranges=tuple(next(ranges) for _ in s.files), key_column=column.id) for s in segments]

    def row_count(self, segments: list[SegmentInfo]) -> int:
        """The rows of segments this writer wrote (every file is listed in its segment)."""
        return self.warehouse.parquet_rows(
            (f"{s.path}/{name}", size) if size is not None else f"{s.path}/{name}"
            for s in segments for name, size in itertools.zip_longest(s.files, s.file_sizes[:len(s.files)]))

    def discard_segments(self, segments: list[SegmentInfo]) -> None:
        """Delete the files of segments no commit references (a write whose checks failed)."""
        marker = f"/{SEGMENT_COLUMN}="
        roots = {s.path[:s.path.index("/", s.path.index(marker) + 1)] if "/" in s.path[s.path.index(marker) + 1:]
                 else s.path for s in segments}  # the write's directory, above its partition directories
        for root in sorted(roots):
            self.warehouse.delete_dir(root)

    def write_tombstone(self, table: TableState, schema: Schema, doomed: DataFrame, seq: int,
                        fault=None, summary: TombstoneSummary | Callable[[], TombstoneSummary] | None = None
                        ) -> TombstoneInfo | None:
        """Write the rows `doomed` (with row ids) as a tombstone; None when nothing matched. `summary`: the
        rows' summary if known before the write (nothing is written when it counts none), or a callable
        that gives it after the write (metrics observed while writing)."""
        if isinstance(summary, TombstoneSummary) and summary.rows == 0:
            return None
        relative = self.warehouse.new_tombstone_dir(table.id, seq)
        rows = select_sql(doomed, [*(quote(c.name) for c in schema.columns), SEGMENT_COLUMN, ROW_FILE, ROW_POS,
                                   ROW_SEQ, f"{referenced_bigint(seq)} AS {TOMB_SEQ}"])
        observed = None
        if summary is None:
            # Counted while the write runs (observed metrics), not by reading the tombstone back: a job less
            # per delete, update and merge tombstone (docs/performance.md, "A tombstone counted as it is written").
            observed = Observation()
            rows = rows.observe(observed, *_tombstone_counts())
        committed = direct_writes.write(self.spark, rows.write.mode("error"), self.warehouse.uri(relative))
        if fault:
            fault("write.after_files")
        if callable(summary):
            summary = summary()
        if observed is not None:
            summary, _ = observed_changes(observed)
        if summary.rows == 0:
            self.warehouse.delete_dir(relative, missing_ok=True)
            return None
        names, sizes, etags = _listed((path.rsplit("/", 1)[1], size, etag)
                                      for path, size, etag in self._written_files(relative, committed))
        return TombstoneInfo(uuid.uuid4().hex, table.id, relative, seq, schema.id, summary.rows,
                             tuple(sorted(summary.segments)), tuple(sorted(summary.files)), names, sizes, etags)

    def write_difference(self, table: TableState, schema: Schema, changed: DataFrame, seq: int,
                         counts: Callable[[], tuple[TombstoneSummary, int]], fault=None
                         ) -> tuple[list[SegmentInfo], TombstoneInfo | None]:
        """Write a difference in ONE Spark write: `changed` holds the rows a write removes (SIDE = OLD, with
        their row ids) and the rows it adds (SIDE = NEW, row ids NULL; difference.py). One write split by
        side, each side's files written (committed directly) or moved to where a tombstone and a segment
        live: the model's query, the comparison and both writes run once, with no cache between two writes
        (docs/performance.md). Only for tables without partitions (a partitioned segment's files lack its
        partition columns, a tombstone's must not).

        `counts()`, called after the write: (the removed rows' summary, the number of added rows), from
        metrics observed on `changed`. Returns ([the segment of added rows] or [], the tombstone or None).
        The added rows' files also hold the row-id columns, NULL: readers name the columns they read."""
        assert not table.partition_by, "a difference of a partitioned table is written as two writes"
        segment_dir = self.warehouse.new_segment_dir(table.id, seq)
        rows = select_sql(changed, [*(quote(c.name) for c in schema.columns), SEGMENT_COLUMN, ROW_FILE, ROW_POS,
                                    ROW_SEQ, f"{referenced_bigint(seq)} AS {TOMB_SEQ}", SIDE])
        tombstone_dir = self.warehouse.new_tombstone_dir(table.id, seq)
        removed, added_side = f"{SIDE}={OLD}", f"{SIDE}={NEW}"
        # Committed directly, each side's files are written where they belong: nothing to move afterwards.
        committed = direct_writes.write(
            self.spark, rows.write.mode("error").partitionBy(SIDE), self.warehouse.uri(segment_dir),
            redirects={removed: self.warehouse.uri(tombstone_dir), added_side: self.warehouse.uri(segment_dir)})
        if fault:
            fault("write.after_files")
        try:
            summary, added = counts()
        except BaseException:  # the caller refuses what it counted: nothing of this write stays
            self.warehouse.delete_dir(segment_dir, missing_ok=True)
            self.warehouse.delete_dir(tombstone_dir, missing_ok=True)
            raise
        if committed is not None:
            return self._difference_written(table, schema, seq, segment_dir, tombstone_dir, committed, summary,
                                            added)
        removed_dir = f"{segment_dir}/{removed}"
        added_dir = f"{segment_dir}/{added_side}"
        tombstone = None
        if summary.rows:
            names, sizes, _ = _listed(self.warehouse.move_files(removed_dir, tombstone_dir, ".parquet"))
            tombstone = TombstoneInfo(uuid.uuid4().hex, table.id, tombstone_dir, seq, schema.id, summary.rows,
                                      tuple(sorted(summary.segments)), tuple(sorted(summary.files)), names, sizes)
        segments = []
        if added:
            names, sizes, _ = _listed(self.warehouse.move_files(added_dir, segment_dir, ".parquet"))
            segments = self.with_key_ranges(table, schema, [SegmentInfo(
                uuid.uuid4().hex, table.id, segment_dir, seq, schema.id, SegmentKind.DATA, files=names, file_sizes=sizes)])
            for leftover in (removed_dir, added_dir):  # Spark's checksum and marker files
                self.warehouse.delete_dir(leftover, missing_ok=True)
        else:
            self.warehouse.delete_dir(segment_dir)
        return segments, tombstone

    def _difference_written(self, table: TableState, schema: Schema, seq: int, segment_dir: str, tombstone_dir: str,
                            committed: list[tuple[str, str, int, str | None]], summary: TombstoneSummary, added: int
                            ) -> tuple[list[SegmentInfo], TombstoneInfo | None]:
        """write_difference's result from the files its direct commit named (each side already in place)."""
        sides: dict[str, list[tuple[str, int, str | None]]] = {}
        for folder, name, size, etag in committed:
            sides.setdefault(folder, []).append((name, size, etag))
        tombstone = None
        if summary.rows:
            names, sizes, etags = _listed(sides.get(f"{SIDE}={OLD}", []))
            tombstone = TombstoneInfo(uuid.uuid4().hex, table.id, tombstone_dir, seq, schema.id, summary.rows,
                                      tuple(sorted(summary.segments)), tuple(sorted(summary.files)), names, sizes,
                                      etags)
        segments = []
        if added:
            names, sizes, etags = _listed(sides.get(f"{SIDE}={NEW}", []))
            segments = self.with_key_ranges(table, schema, [SegmentInfo(
                uuid.uuid4().hex, table.id, segment_dir, seq, schema.id, SegmentKind.DATA, files=names, file_sizes=sizes,
                file_etags=etags)])
        return segments, tombstone

    def _written_files(self, relative: str, committed: list[tuple[str, str, int, str | None]] | None
                       ) -> list[tuple[str, int, str | None]]:
        """(path relative to the warehouse, bytes, ETag or None) of the Parquet files a write put under `relative`:
        as its direct commit named them, else from a listing (no ETags)."""
        if committed is None:
            return [(path, size, None) for path, size in self.warehouse.parquet_files(relative)]
        return sorted((f"{relative}/{folder}/{name}" if folder else f"{relative}/{name}", size, etag)
                      for folder, name, size, etag in committed)


def _tombstone_counts() -> list:
    """Metrics of a tombstone's rows, observed as they are written: what its summary needs, named as
    difference.change_counts names them, so that difference.observed_changes reads them."""
    return [F.expr("count(1) AS removed"), F.expr(f"collect_set({SEGMENT_COLUMN}) AS segments"),
            F.expr(f"collect_set({ROW_FILE}) AS files")]


def side_by_side(writes: dict[object, Callable]) -> dict:
    """Run independent writes, {key: write()}, at the same time. Each is a small Spark job of mostly fixed
    cost (planning, task launch, the output committer), so running them together saves that wait; the
    catalog learns of their files only at the commit, so a crash leaves unreferenced files only."""
    if len(writes) <= 1:
        return {key: write() for key, write in writes.items()}
    with ThreadPoolExecutor(max_workers=min(len(writes), _PARALLEL_WRITES)) as pool:
        futures = {key: pool.submit(write) for key, write in writes.items()}
        return {key: future.result() for key, future in futures.items()}


def _listed(files) -> tuple[tuple[str, ...], tuple[int, ...], tuple]:
    """(names sorted, their sizes, their ETags: both in the same order) of (name, bytes[, ETag or None]) items; the
    ETags are () when no file has one."""
    ordered = sorted((name, int(size), *rest) for name, size, *rest in files)
    etags = tuple(rest[0] if rest else None for _, _, *rest in ordered)
    return (tuple(n for n, *_ in ordered), tuple(b for _, b, *_ in ordered),
            etags if any(e is not None for e in etags) else ())


def _partition_values(suffix: str) -> dict:
    values = {}
    for part in suffix.strip("/").split("/"):
        if "=" in part:
            key, value = part.split("=", 1)
            value = unquote(value)
            values[unquote(key)] = None if value == NULL_PARTITION else value
    return values
