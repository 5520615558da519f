"""Reassemble a table version as a Spark DataFrame.

A version is its live segments, each read with its own schema version and
projected by column id onto the current schema (added columns read as their
default or NULL, dropped columns vanish, renamed columns keep their data, a
widened type is cast), minus the rows its tombstones delete:

- keyless tables: a tombstone names rows by identity (file below the segment
  root, row position), so only the segments it targets pay for the anti-join;
- primary-key tables: a tombstone deletes rows with its key whose sequence is
  lower than its own, so an update's new image (same sequence) survives.

A row's identity and sequence survive compaction: compacted segments store
them as hidden columns, other segments derive them from Parquet metadata.
All of it is one lazy Spark plan with native Parquet scans, so filters and
column pruning reach the files.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..catalog.state import Schema, SegmentInfo, TableState, TombstoneInfo
from .layout import SEGMENT_COLUMN, SEQ_DIGITS, Warehouse

ROW_FILE = "_bs_file"  # identity: the data file, relative to the segment root
ROW_POS = "_bs_pos"  # identity: the row's position in that file
ROW_SEQ = "_bs_seq"  # the sequence number the row was written with
TOMB_SEQ = "_bs_tseq"  # the sequence number of the tombstone that deleted a row
PREV_FILE = "_bs_prev_file"  # update segments: identity of the row an image replaced
PREV_POS = "_bs_prev_pos"
ROW_ID_COLUMNS = (SEGMENT_COLUMN, ROW_FILE, ROW_POS, ROW_SEQ)
HIDDEN_PREFIX = "_bs_"
_BROADCAST_TOMBSTONE_ROWS = 2_000_000


class VersionLookup(Protocol):
    def schema(self, schema_id: str) -> Schema: ...
    def segment_infos(self, ids) -> list[SegmentInfo]: ...
    def tombstone_infos(self, ids) -> list[TombstoneInfo]: ...


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def segment_group(segment: SegmentInfo) -> str:
    """The write a segment came from: the `_bs_seg` value its rows carry."""
    after = segment.path.split(f"{SEGMENT_COLUMN}=", 1)[1]
    return after.split("/", 1)[0]


@dataclass
class TableReader:
    spark: SparkSession
    warehouse: Warehouse
    lookup: VersionLookup

    def read(self, table: TableState, with_row_ids: bool = False) -> DataFrame:
        """The rows of `table`; with_row_ids adds `_bs_seg`, `_bs_file`, `_bs_pos` and `_bs_seq`."""
        schema = self.lookup.schema(table.schema_id)
        segments = self.lookup.segment_infos(table.segments)
        tombstones = self.lookup.tombstone_infos(table.tombstones)
        if not segments:
            return self._empty(schema, with_row_ids)
        if table.primary_key:
            targeted = {s.id for s in segments} if tombstones else set()
        else:
            hit = {group for tomb in tombstones for group in tomb.target_segments}
            targeted = {s.id for s in segments if segment_group(s) in hit}
        clean = [s for s in segments if s.id not in targeted]
        dirty = [s for s in segments if s.id in targeted]
        parts = []
        if clean:
            parts.append(self._read_segments(table, clean, schema, with_row_ids))
        if dirty:
            rows = self._read_segments(table, dirty, schema, with_ids=True)
            rows = self._apply_tombstones(table, rows, schema, tombstones)
            if not with_row_ids:
                rows = rows.drop(*ROW_ID_COLUMNS)
            parts.append(rows)
        return _union(parts)

    # ------------------------------------------------------------- segments
    def _read_segments(self, table: TableState, segments: list[SegmentInfo], target: Schema,
                       with_ids: bool) -> DataFrame:
        groups: dict[tuple, list[SegmentInfo]] = defaultdict(list)
        for segment in segments:
            groups[(segment.schema_id, segment.partition_by, segment.kind == "compaction")].append(segment)
        return _union([
            self._read_group(table, group, self.lookup.schema(schema_id), partition_by, compacted, target, with_ids)
            for (schema_id, partition_by, compacted), group in sorted(groups.items(), key=lambda kv: kv[0])
        ])

    def _read_group(self, table, segments, written: Schema, partition_by, compacted, target: Schema,
                    with_ids: bool) -> DataFrame:
        fields = [T.StructField(c.name, c.data_type, True) for c in written.columns]
        if compacted:
            fields += [T.StructField(ROW_FILE, T.StringType()), T.StructField(ROW_POS, T.LongType()),
                       T.StructField(ROW_SEQ, T.LongType())]
        fields.append(T.StructField(SEGMENT_COLUMN, T.StringType()))
        raw = (self.spark.read.schema(T.StructType(fields))
               .option("basePath", self.warehouse.uri(self.warehouse.data_dir(table.id)))
               .parquet(*[self.warehouse.uri(s.path) for s in segments]))
        columns = [project_column(written, c) for c in target.columns]
        if with_ids:
            if compacted:
                ids = [F.col(ROW_FILE), F.col(ROW_POS), F.col(ROW_SEQ)]
            else:
                ids = [F.substring_index(F.col("_metadata.file_path"), f"/{SEGMENT_COLUMN}=", -1).alias(ROW_FILE),
                       F.col("_metadata.row_index").alias(ROW_POS),
                       F.substring(F.col(SEGMENT_COLUMN), 2, SEQ_DIGITS).cast("long").alias(ROW_SEQ)]
            columns += [F.col(SEGMENT_COLUMN)] + ids
        return raw.select(*columns)

    # ----------------------------------------------------------- tombstones
    def read_tombstones(self, table: TableState, tombstones: list[TombstoneInfo], target: Schema,
                        with_image: bool = False) -> DataFrame:
        """Rows of tombstone files: identity, sequences, and (optionally) the deleted image."""
        groups: dict[str, list[TombstoneInfo]] = defaultdict(list)
        for tomb in tombstones:
            groups[tomb.schema_id].append(tomb)
        parts = []
        for schema_id, group in sorted(groups.items()):
            written = self.lookup.schema(schema_id)
            fields = [T.StructField(c.name, c.data_type, True) for c in written.columns]
            fields += [T.StructField(n, t) for n, t in ((SEGMENT_COLUMN, T.StringType()), (ROW_FILE, T.StringType()),
                                                        (ROW_POS, T.LongType()), (ROW_SEQ, T.LongType()),
                                                        (TOMB_SEQ, T.LongType()))]
            raw = self.spark.read.schema(T.StructType(fields)).parquet(*[self.warehouse.uri(t.path) for t in group])
            columns = [project_column(written, c) for c in target.columns] if with_image else []
            if not with_image and table.primary_key:
                columns = [project_column(written, target.column(k)) for k in table.primary_key]
            columns += [F.col(n) for n in (ROW_FILE, ROW_POS, ROW_SEQ, TOMB_SEQ)]
            parts.append(raw.select(*columns))
        return _union(parts)

    def _apply_tombstones(self, table: TableState, rows: DataFrame, schema: Schema,
                          tombstones: list[TombstoneInfo]) -> DataFrame:
        deleted = self.read_tombstones(table, tombstones, schema)
        if sum(t.row_count for t in tombstones) <= _BROADCAST_TOMBSTONE_ROWS:
            deleted = F.broadcast(deleted)
        if table.primary_key:
            keys = [k for k in table.primary_key]
            deleted = deleted.select(*[F.col(quote(k)).alias(f"_bs_k{i}") for i, k in enumerate(keys)],
                                     F.col(TOMB_SEQ))
            condition = [rows[quote(k)] == deleted[f"_bs_k{i}"] for i, k in enumerate(keys)]
            condition.append(rows[ROW_SEQ] < deleted[TOMB_SEQ])
            return rows.join(deleted, condition, "left_anti")
        deleted = deleted.select(F.col(ROW_FILE).alias("_bs_dfile"), F.col(ROW_POS).alias("_bs_dpos"))
        condition = [rows[ROW_FILE] == deleted["_bs_dfile"], rows[ROW_POS] == deleted["_bs_dpos"]]
        return rows.join(deleted, condition, "left_anti")

    def _empty(self, schema: Schema, with_ids: bool) -> DataFrame:
        fields = list(schema.struct().fields)
        if with_ids:
            fields += [T.StructField(SEGMENT_COLUMN, T.StringType()), T.StructField(ROW_FILE, T.StringType()),
                       T.StructField(ROW_POS, T.LongType()), T.StructField(ROW_SEQ, T.LongType())]
        return self.spark.createDataFrame([], T.StructType(fields))


def project_column(written: Schema, column):
    """`column` of the current schema, as read from a file written with schema `written`."""
    source = written.by_id(column.id)
    if source is None:
        value = F.expr(column.default) if column.default is not None else F.lit(None)
        return value.cast(column.data_type).alias(column.name)
    value = F.col(quote(source.name))
    if source.type_json != column.type_json:
        value = value.cast(column.data_type)
    return value.alias(column.name)


def _union(parts: list[DataFrame]) -> DataFrame:
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result
