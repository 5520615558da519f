"""Reassemble a table version as a Spark DataFrame.

A version is its live segments, each read with its own schema version and
projected by column id onto the current schema (added columns read as their
default or NULL, dropped columns vanish, renamed columns keep their data, a
widened type is cast), minus the rows its tombstones delete:

- keyless tables: a tombstone names rows by identity (file below the segment
  root, row position), so only the files it targets pay: one scan of them that
  leaves out the deleted positions (deletion vectors, `deletion_vectors.py`; an
  anti-join on the row position where they cannot be used); the others are a
  plain scan;
- primary-key tables: a tombstone deletes rows with its key whose sequence is
  lower than its own, so an update's new image (same sequence) survives. Where
  a tombstone's own rows are exactly those (segments every newer tombstone was
  written over: by_position), its deletion vectors apply, in one scan of the
  group's files; elsewhere each row's key is probed (`deleted_keys.py`).

A row's identity and sequence survive compaction: compacted segments store
them as hidden columns, other segments derive them from Parquet metadata.
All of it is one lazy Spark plan with native Parquet scans, so filters and
column pruning reach the files.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from . import deleted_keys, deletion_vectors, known_files
from .projection import Constant, select_sql, type_sql
from ..catalog.schema import Schema
from ..catalog.state import SegmentInfo, SegmentKind, TableState
from ..catalog.tombstones import TombstoneInfo
from ..sql_text import quote_identifier as quote  # the readers' callers import it from here
from .layout import SEGMENT_COLUMN, SEQ_DIGITS, Warehouse, seq_of_segment_name

ROW_FILE = "_bs_file"  # identity: the data file, relative to the segment root
ROW_POS = "_bs_pos"  # identity: the row's position in that file
ROW_SEQ = "_bs_seq"  # the sequence number the row was written with
TOMB_SEQ = "_bs_tseq"  # the sequence number of the tombstone that deleted a row
PREV_FILE = "_bs_prev_file"  # update segments: identity of the row an image replaced
PREV_POS = "_bs_prev_pos"
ROW_ID_COLUMNS = (SEGMENT_COLUMN, ROW_FILE, ROW_POS, ROW_SEQ)
HIDDEN_PREFIX = "_bs_"
# Join-only columns of the data side, dropped before a read returns.
_J_FILE, _J_POS, _J_ORDER = "_bs_jfile", "_bs_jpos", "_bs_jorder"
# An external file's (an import's) row-id name and row position, taken from its scan before the projection.
_B_FILE, _B_POS = "_bs_bfile", "_bs_bpos"
_JOIN_COLUMNS = (_J_FILE, _J_POS, _J_ORDER)
_BROADCAST_TOMBSTONE_ROWS = 2_000_000
# Beyond this many targeted files, the generic anti-join (files unlisted in the plan) plans faster.
_TARGETED_FILES_LIMIT = 10_000
# Segments whose files store each row's identity and sequence as columns: compaction output, and
# rows a merge carried over from a compacted branch.
STORED_IDENTITY_KINDS = (SegmentKind.COMPACTION, SegmentKind.MERGE)


class VersionLookup(Protocol):
    def schema(self, schema_id: str) -> Schema: ...
    def segment_infos(self, ids) -> list[SegmentInfo]: ...
    def tombstone_infos(self, ids) -> list[TombstoneInfo]: ...


def segment_group(segment: SegmentInfo) -> str:
    """The write a segment came from: the `_bs_seg` value its rows carry (an external segment's id: its files lie
    in another system's folders, which name no segment)."""
    if segment.external:
        return segment.id
    after = segment.path.split(f"{SEGMENT_COLUMN}=", 1)[1]
    return after.split("/", 1)[0]


def by_position(table: TableState, segments: list[SegmentInfo], tombstones: list[TombstoneInfo]) -> set[str]:
    """Ids of a keyed table's segments whose rows `tombstones` delete are exactly the rows they name by row id.

    A keyed tombstone deletes every row of its keys written before it (a lower sequence), in any segment. Its own
    rows are the live rows of those keys in the version it was written over (TombstoneInfo.over_segments): in a
    segment of that version, the two agree, and whatever was deleted there before, the tombstones of that version
    delete. So a segment's rows read by position when every tombstone newer than it covers it, and the version
    still holds every tombstone each of those covered. A segment a merge or a concurrent commit brought in after a
    tombstone was written, or a tombstone without that record (a merge's, an import's, an older catalog's), keeps
    the key probe. Segments that store their rows' ids (compactions, merges) and imported files are probed too:
    a tombstone names their rows by the ids they were first written with, not where they lie now."""
    present = set(table.tombstones)
    covering = [t for t in tombstones if t.over_segments is not None and t.over_tombstones <= present]
    unknown = [t.seq for t in tombstones if t.over_segments is None or not t.over_tombstones <= present]
    newest_unknown = max(unknown, default=-1)
    exact = set()
    for segment in segments:
        if segment.kind in STORED_IDENTITY_KINDS or segment.external:
            continue
        seq = seq_of_segment_name(segment_group(segment))
        if newest_unknown > seq:
            continue
        if all(segment.id in t.over_segments for t in covering if t.seq > seq):
            exact.add(segment.id)
    return exact


def moved_tombstones(tombstones: list[TombstoneInfo], segments: list[SegmentInfo]) -> set[str]:
    """Ids of the keyless tombstones that name a segment `segments` no longer has: a merge brought them onto a
    branch that has since compacted those rows, which now live in segments that store their identity, where
    such a tombstone deletes by identity (SegmentKind.COMPACTION, MERGE)."""
    present = {segment_group(s) for s in segments}
    return {t.id for t in tombstones if set(t.target_segments) - present}


@dataclass
class TableReader:
    spark: SparkSession
    warehouse: Warehouse
    lookup: VersionLookup

    def read(self, table: TableState, with_row_ids: bool = False, key_range: tuple | None = None,
             constants: tuple[Constant, ...] = ()) -> DataFrame:
        """The rows of `table`; with_row_ids adds `_bs_seg`, `_bs_file`, `_bs_pos` and `_bs_seq`. key_range,
        (column id, low, high; None: no bound on that side): at least the rows whose value of that column lies in
        [low, high], from the files
        whose recorded range of it can hold one (SegmentInfo.key_ranges); other files are not opened. `constants`
        come last: in one plain scan, as values its source gives (projection.Constant), else as literals."""
        schema = self.lookup.schema(table.schema_id)
        segments = self.lookup.segment_infos(table.segments)
        if key_range is not None:
            segments = [s for s in (_files_in_range(s, *key_range) for s in segments) if s is not None]
        tombstones = self.lookup.tombstone_infos(table.tombstones)
        if not segments:
            return _with_constants(self._empty(schema, with_row_ids), constants)
        positional: set[str] = set()
        if table.primary_key:
            hit = {segment_group(s) for s in segments} if tombstones else set()
            positional = by_position(table, segments, tombstones) if tombstones else set()
        else:
            hit = {group for tomb in tombstones for group in tomb.target_segments}
            if moved_tombstones(tombstones, segments):
                hit |= {segment_group(s) for s in segments if s.kind in STORED_IDENTITY_KINDS}
        groups: dict[tuple, list[SegmentInfo]] = defaultdict(list)
        for segment in segments:
            key = (segment.schema_id, segment.partition_by, segment.kind in STORED_IDENTITY_KINDS,
                   segment_group(segment) in hit, segment.external, segment.id in positional)
            groups[key].append(segment)
        if constants and len(groups) == 1:
            ((schema_id, _, compacted, targeted, external, exact), group), = groups.items()
            if not (targeted or external or exact):  # one plain scan: the constants are its source's values
                return self._read_group(table, group, self.lookup.schema(schema_id), compacted, schema,
                                        join_ids=False, row_ids=with_row_ids, keyed=bool(table.primary_key),
                                        constants=constants)
        # The tombstones' side of an anti-join, built on first need: a keyless table's targeted files drop
        # their deleted rows without it (_targeted_anti_join), as do a keyed table's segments whose deleted rows
        # its tombstones name by position (by_position); other keyed rows go by their keys where they can
        # (deleted_keys.py).
        deleted = None
        keys, keys_read = None, False
        parts = []
        for (schema_id, partition_by, compacted, targeted, external, exact), group in sorted(groups.items(),
                                                                                              key=lambda kv: kv[0]):
            if exact:
                rows = self._by_position(table, group, self.lookup.schema(schema_id), schema, tombstones, with_row_ids)
                if rows is not None:
                    parts.append(rows)
                    continue
            if targeted and table.primary_key and not keys_read:
                keys, keys_read = self._deleted_keys(table, schema, tombstones), True
            if external:
                # Deletion vectors find a file's vector by its path below `_bs_seg=`, which an external file lacks:
                # its tombstones are applied by the anti-join.
                rows = self._read_external(group, self.lookup.schema(schema_id), schema, join_ids=targeted,
                                           row_ids=with_row_ids, keyed=bool(table.primary_key))
                if targeted and keys is not None:
                    rows = deleted_keys.without_deleted(rows, quote(table.primary_key[0]), _J_ORDER, keys)
                elif targeted:
                    if deleted is None:
                        deleted = self._deleted_rows(table, schema, tombstones)
                    rows = self._anti_join(table, rows, deleted, compacted=False)
                parts.append(rows.drop(*_JOIN_COLUMNS) if targeted else rows)
                continue
            if targeted and not compacted and not table.primary_key:
                per_file = self._targeted_anti_join(table, group, self.lookup.schema(schema_id), schema, tombstones,
                                                    with_row_ids)
                if per_file is not None:
                    parts.append(per_file)
                    continue
            rows = self._read_group(table, group, self.lookup.schema(schema_id), compacted, schema,
                                    join_ids=targeted, row_ids=with_row_ids, keyed=bool(table.primary_key))
            if targeted and keys is not None:
                rows = deleted_keys.without_deleted(rows, quote(table.primary_key[0]), _J_ORDER, keys)
            elif targeted:
                if deleted is None:
                    deleted = self._deleted_rows(table, schema, tombstones)
                rows = self._anti_join(table, rows, deleted, compacted)
            # Only a targeted group's rows carry the join columns (a drop is one more plan to analyze).
            parts.append(rows.drop(*_JOIN_COLUMNS) if targeted else rows)
        return _with_constants(_union(parts), constants)

    def read_segments(self, table: TableState, schema: Schema, segments: list[SegmentInfo]) -> DataFrame:
        """The rows of `segments` just written with `schema` (no tombstones apply): a plain scan."""
        if not segments:
            return self._empty(schema, False)
        return self._read_group(table, segments, schema, False, schema, join_ids=False, row_ids=False, keyed=False)

    # ------------------------------------------------------------- segments
    def _read_group(self, table, segments, written: Schema, compacted, target: Schema, join_ids: bool,
                    row_ids: bool, keyed: bool, constants: tuple[Constant, ...] = ()) -> DataFrame:
        fields = [T.StructField(c.name, c.data_type, True) for c in written.columns]
        if compacted:
            fields += [T.StructField(ROW_FILE, T.StringType()), T.StructField(ROW_POS, T.LongType()),
                       T.StructField(ROW_SEQ, T.LongType())]
        paths = self._paths(segments)
        given = constants if constants and known_files.knows(paths, self._recorded(segments)[0]) else ()
        raw = self._load(self._reader(table, segments, fields + _fields(given), join_ids or row_ids), paths,
                         segments, constants=given)
        columns = [project_column(written, c) for c in target.columns]
        if join_ids:
            # Only columns that cost nothing per row: the raw file path and row index, and the segment
            # (a partition value). Everything derived is computed on the small tombstone side.
            if keyed and compacted:
                columns.append(f"lpad(CAST({ROW_SEQ} AS STRING), {SEQ_DIGITS}, '0') AS {_J_ORDER}")
            elif keyed:
                columns.append(f"substring({SEGMENT_COLUMN}, 2, {SEQ_DIGITS}) AS {_J_ORDER}")
            elif compacted:
                columns += [f"{ROW_FILE} AS {_J_FILE}", f"{ROW_POS} AS {_J_POS}"]
            else:
                columns += [f"_metadata.file_path AS {_J_FILE}", f"_metadata.row_index AS {_J_POS}"]
        if row_ids:
            if compacted:
                columns += [SEGMENT_COLUMN, ROW_FILE, ROW_POS, ROW_SEQ]
            else:
                columns += [SEGMENT_COLUMN,
                            f"substring_index(_metadata.file_path, '/{SEGMENT_COLUMN}=', -1) AS {ROW_FILE}",
                            f"_metadata.row_index AS {ROW_POS}",
                            f"CAST(substring({SEGMENT_COLUMN}, 2, {SEQ_DIGITS}) AS BIGINT) AS {ROW_SEQ}"]
        columns += [quote(c.name) if c in given else c.projected() for c in constants]
        loaded = _loaded(segments, fields, join_ids or row_ids)
        return select_sql(raw, columns, loaded=loaded and loaded + [c.name for c in given])

    def read_borrowed(self, segments: list[SegmentInfo], written: Schema) -> DataFrame:
        """Every row of these external segments' files (an import's, where the source keeps them) in `written`,
        with row ids, no tombstone applied: what an import's or a refresh's tombstone picks its rows from."""
        return self._read_external(segments, written, written, join_ids=False, row_ids=True, keyed=False)

    def _read_external(self, segments: list[SegmentInfo], written: Schema, target: Schema, join_ids: bool,
                       row_ids: bool, keyed: bool) -> DataFrame:
        """External segments (an import's files, where the source keeps them) as _read_group reads own ones:
        each segment's files are one scan whose `_bs_seg` and partition values are constants, since their
        folders are not ours; a row's file id is `<segment id>/<file name>`."""
        raw = _union([self._external_scan(segment, written) for segment in segments])
        columns = [project_column(written, c) for c in target.columns]
        if join_ids and keyed:
            columns.append(f"substring({SEGMENT_COLUMN}, 2, {SEQ_DIGITS}) AS {_J_ORDER}")
        elif join_ids:
            columns += [f"{_B_FILE} AS {_J_FILE}", f"{_B_POS} AS {_J_POS}"]
        if row_ids:
            columns += [SEGMENT_COLUMN, f"{_B_FILE} AS {ROW_FILE}", f"{_B_POS} AS {ROW_POS}",
                        f"CAST(substring({SEGMENT_COLUMN}, 2, {SEQ_DIGITS}) AS BIGINT) AS {ROW_SEQ}"]
        return select_sql(raw, columns)

    def _external_scan(self, segment: SegmentInfo, written: Schema) -> DataFrame:
        """One external segment's files with every column of `written` (partition columns from the catalog), its
        `_bs_seg`, and each row's file id and position."""
        values = segment.partition_values
        fields = [T.StructField(c.name, c.data_type, True) for c in written.columns if c.name not in values]
        uris = [external_uri(segment, n) for n in segment.files]
        scan = self.spark.read.schema(T.StructType(fields)).parquet(*uris)
        columns = [F.lit(values[c.name]).cast(c.data_type).alias(c.name) if c.name in values else F.col(quote(c.name))
                   for c in written.columns]
        columns += [F.lit(segment.id).alias(SEGMENT_COLUMN),
                    F.concat(F.lit(f"{segment.id}/"), F.substring_index(F.col("_metadata.file_path"), "/", -1))
                    .alias(_B_FILE),
                    F.col("_metadata.row_index").alias(_B_POS)]
        return scan.select(*columns)

    def _reader(self, table, segments, fields: list, with_segment: bool):
        """A Parquet reader of segment files with `fields`, plus the `_bs_seg` partition column when asked
        for or when the segments have partition columns (both come from the directories below the
        table's data root). Otherwise the files are read as they are: no partition column per row."""
        if not (with_segment or any(s.partition_by for s in segments)):
            return self.spark.read.schema(T.StructType(fields))
        schema = T.StructType([*fields, T.StructField(SEGMENT_COLUMN, T.StringType())])
        return self.spark.read.schema(schema).option("basePath", self.warehouse.uri(self.warehouse.data_dir(table.id)))

    def _paths(self, segments: list[SegmentInfo], only: set[str] | None = None) -> list[str]:
        """Data files of `segments` (all, or those whose row-id file name is in `only`)."""
        paths = []
        for segment in segments:
            if not segment.files:
                paths.append(self.warehouse.uri(segment.path))
                continue
            for name in segment.files:
                if only is None or _row_file(segment, name) in only:
                    paths.append(self.warehouse.uri(f"{segment.path}/{name}"))
        return paths

    def _recorded(self, items) -> tuple[dict[str, int] | None, dict[str, str] | None]:
        """({file URI: size}, {file URI: ETag}) the catalog recorded for the files of `items` (segments or
        tombstones), where reads go through the known-files source; else (None, None)."""
        if not known_files.usable(self.spark):
            return None, None
        sizes = {self.warehouse.uri(f"{item.path}/{name}"): size for item in items
                 for name, size in zip(item.files, item.file_sizes)}
        return sizes, _etags(self.warehouse, items)

    def _load(self, reader, paths: list[str], segments: list[SegmentInfo], plain=None,
              constants: tuple[Constant, ...] = ()) -> DataFrame:
        """`reader` reading `paths` (files of `segments`): with the sizes the catalog recorded where it did, so
        that no file is looked up before it is opened (known_files.py); else as `plain()` reads them (default:
        Spark's Parquet source). `constants`: for a read that known_files.knows."""
        sizes, etags = self._recorded(segments)
        return known_files.load(reader, paths, sizes, plain, etags=etags, constants=constants)

    def _load_tombstones(self, reader, tombstones: list[TombstoneInfo], constants: tuple[Constant, ...] = ()
                         ) -> DataFrame:
        """`reader` reading the files of `tombstones`: named, with their sizes, where the catalog recorded them,
        else their folders. `constants`: where `_tombstones_known`."""
        if self._tombstones_known(tombstones):
            sizes, etags = self._recorded(tombstones)
            return known_files.load(reader, list(sizes), sizes, etags=etags, constants=constants)
        return reader.parquet(*[self.warehouse.uri(t.path) for t in tombstones])

    def _tombstones_known(self, tombstones: list[TombstoneInfo]) -> bool:
        return known_files.usable(self.spark) and all(t.file_sizes for t in tombstones)

    def _targeted_anti_join(self, table, group, written, target, tombstones, row_ids) -> DataFrame | None:
        """Keyless rows minus tombstones, where only the files a tombstone targets pay: untouched files are
        a plain scan; the targeted ones are one scan with their row position, anti-joined on the position
        alone (a long: cheap to hash and probe) with the file checked on the few matching rows only.
        None when a segment does not list its files."""
        targeted = {f for t in tombstones for f in t.target_files}
        if any(not s.files for s in group):
            return None
        mine = {_row_file(s, n) for s in group for n in s.files} & targeted
        if not mine or len(mine) > _TARGETED_FILES_LIMIT:
            return None
        untouched = [self.warehouse.uri(f"{s.path}/{n}") for s in group for n in s.files
                     if _row_file(s, n) not in mine]
        hit = [self.warehouse.uri(f"{s.path}/{n}") for s in group for n in s.files if _row_file(s, n) in mine]
        mine_tombstones = [t for t in tombstones if mine & set(t.target_files)]
        vectors = None
        if deletion_vectors.enabled(self.spark):
            vectors = deletion_vectors.encode([(self.warehouse.uri(t.path), recorded_files(t)) for t in mine_tombstones],
                                              sum(t.row_count for t in mine_tombstones))
        if vectors is not None:
            rows = self._scan(table, group, written, target, hit, row_ids, vectors=vectors)
        else:
            rows = self._anti_joined_scan(table, group, written, target, hit, row_ids, mine_tombstones)
        if not untouched:
            return rows
        return self._scan(table, group, written, target, untouched, row_ids).unionByName(rows)

    def _by_position(self, table, group, written, target, tombstones, row_ids) -> DataFrame | None:
        """A keyed table's segments whose deleted rows `tombstones` name by position (by_position): one scan of
        all their files with the deletion vectors of those hit (a file without one loses nothing), so that the
        plan's shape does not change with which files a write happened to hit. None where the keys are probed
        instead: a segment that does not list its files, too many files hit, or no deletion vectors."""
        if any(not s.files for s in group):
            return None
        files = {_row_file(s, n) for s in group for n in s.files}
        hit = [t for t in tombstones if files.intersection(t.target_files)]
        if not hit:
            return self._read_group(table, group, written, False, target, join_ids=False, row_ids=row_ids,
                                    keyed=True)
        if len(files) > _TARGETED_FILES_LIMIT or not deletion_vectors.enabled(self.spark):
            return None
        vectors = deletion_vectors.encode([(self.warehouse.uri(t.path), recorded_files(t)) for t in hit],
                                          sum(t.row_count for t in hit))
        if vectors is None:
            return None
        paths = [self.warehouse.uri(f"{s.path}/{n}") for s in group for n in s.files]
        return self._scan(table, group, written, target, paths, row_ids, vectors=vectors)

    def _anti_joined_scan(self, table, group, written, target, hit, row_ids, mine_tombstones) -> DataFrame:
        deleted = (self.read_tombstones(table, mine_tombstones, target)
                   .select(F.col(ROW_FILE).alias("_bs_dfile"), F.col(ROW_POS).alias("_bs_dpos")))
        if sum(t.row_count for t in mine_tombstones) <= _BROADCAST_TOMBSTONE_ROWS:
            deleted = F.broadcast(deleted)
        rows = self._scan(table, group, written, target, hit, row_ids, with_pos=True)
        # A data file's full path ends with its row-id name (below the segment root).
        return rows.join(deleted, [rows[_J_POS] == deleted["_bs_dpos"], rows[_J_FILE].endswith(deleted["_bs_dfile"])],
                         "left_anti").drop(_J_POS, _J_FILE)

    def _scan(self, table, segments, written: Schema, target: Schema, paths: list[str], row_ids: bool,
              with_pos: bool = False, vectors: bytes | None = None) -> DataFrame:
        """A plain scan of `paths` (files of `segments`), projected onto `target`, without the rows
        `vectors` (deletion vectors) delete."""
        fields = [T.StructField(c.name, c.data_type, True) for c in written.columns]
        position = "_metadata.row_index"
        reader = self._reader(table, segments, fields, row_ids)
        if vectors is not None and not (with_pos or row_ids) and deletion_vectors.scan_leaves_out_deleted(self.spark, fields):
            # Our Parquet source leaves the deleted rows out as it reads: no position column, no filter.
            live = deletion_vectors.live_rows_reader(reader, vectors)
            raw = self._load(live, paths, segments, plain=lambda: live.load(paths))
        elif vectors is not None:
            if not (with_pos or row_ids):
                # Only the position is needed: read it as a plain column of the scan (Spark refuses it beside
                # `_metadata`), which skips building the `_metadata` struct for every row.
                fields.append(T.StructField(deletion_vectors.ROW_INDEX, T.LongType()))
                position = deletion_vectors.ROW_INDEX
                reader = self._reader(table, segments, fields, row_ids)
            raw = deletion_vectors.without_deleted(self._load(reader, paths, segments), F.col(position), vectors)
        else:
            raw = self._load(reader, paths, segments)
        columns = [project_column(written, c) for c in target.columns]
        if with_pos:
            columns += [f"{position} AS {_J_POS}", f"_metadata.file_path AS {_J_FILE}"]
        if row_ids:
            columns += [SEGMENT_COLUMN, f"substring_index(_metadata.file_path, '/{SEGMENT_COLUMN}=', -1) AS {ROW_FILE}",
                        f"{position} AS {ROW_POS}",
                        f"CAST(substring({SEGMENT_COLUMN}, 2, {SEQ_DIGITS}) AS BIGINT) AS {ROW_SEQ}"]
        return select_sql(raw, columns, loaded=_loaded(segments, fields, row_ids))

    # ----------------------------------------------------------- tombstones
    def read_tombstones(self, table: TableState, tombstones: list[TombstoneInfo], target: Schema,
                        with_image: bool = False, constants: tuple[Constant, ...] = ()) -> DataFrame:
        """Rows of tombstone files: identity, sequences, and (optionally) the deleted image. With `constants` (an
        image's columns, then those): the images only, without identity or sequences."""
        groups: dict[str, list[TombstoneInfo]] = defaultdict(list)
        for tomb in tombstones:
            groups[tomb.schema_id].append(tomb)
        ids = [] if constants else [SEGMENT_COLUMN, ROW_FILE, ROW_POS, ROW_SEQ, TOMB_SEQ]
        parts = []
        for schema_id, group in sorted(groups.items()):
            written = self.lookup.schema(schema_id)
            fields = [T.StructField(c.name, c.data_type, True) for c in written.columns]
            fields += [T.StructField(n, t) for n, t in ((SEGMENT_COLUMN, T.StringType()), (ROW_FILE, T.StringType()),
                                                        (ROW_POS, T.LongType()), (ROW_SEQ, T.LongType()),
                                                        (TOMB_SEQ, T.LongType())) if n in ids]
            given = constants if self._tombstones_known(group) else ()
            raw = self._load_tombstones(self.spark.read.schema(T.StructType(fields + _fields(given))), group, given)
            columns = [project_column(written, c) for c in target.columns] if with_image or constants else []
            if not columns and table.primary_key:
                columns = [project_column(written, target.column(k)) for k in table.primary_key]
            columns += ids + [quote(c.name) if c in given else c.projected() for c in constants]
            parts.append(select_sql(raw, columns, loaded=[f.name for f in fields] + [c.name for c in given]))
        return _union(parts)

    def read_keys(self, table: TableState, segments: list[SegmentInfo], tombstones: list[TombstoneInfo],
                  target: Schema) -> DataFrame:
        """The primary-key values (in `target`'s names and types) of every row of `segments` and every row
        `tombstones` delete, live or not: only the key columns of those files are read."""
        keys = [target.column(k) for k in table.primary_key]
        parts = []
        for kind, objects in (("segment", segments), ("tombstone", tombstones)):
            groups: dict[tuple, list] = defaultdict(list)
            for item in objects:
                groups[(item.schema_id, getattr(item, "external", False))].append(item)
            for (schema_id, external), group in sorted(groups.items()):
                written = self.lookup.schema(schema_id)
                # Data and tombstone files both hold every column of the schema they were written with
                # (a partition column in a data file's directory, which basePath reads).
                fields = T.StructType([T.StructField(c.name, c.data_type, True) for c in written.columns])
                if external:
                    raw = self._read_external(group, written, written, join_ids=False, row_ids=False, keyed=False)
                elif kind == "segment":
                    raw = self._load(self.spark.read.schema(fields.add(SEGMENT_COLUMN, T.StringType()))
                                     .option("basePath", self.warehouse.uri(self.warehouse.data_dir(table.id))),
                                     self._paths(group), group)
                else:
                    raw = self._load_tombstones(self.spark.read.schema(fields), group)
                parts.append(select_sql(raw, [project_column(written, k) for k in keys]))
        if not parts:
            return self.spark.createDataFrame([], T.StructType([T.StructField(k.name, k.data_type) for k in keys]))
        return _union(parts)

    def _deleted_keys(self, table: TableState, schema: Schema, tombstones: list[TombstoneInfo]) -> bytes | None:
        """The keys `tombstones` delete, as the scan's filter takes them (deleted_keys.py), or None where the
        anti-join applies them: a key of several columns or of another type, too many, or no extension."""
        key = schema.column(table.primary_key[0])
        if key is None or not deleted_keys.usable(self.spark, [schema.column(k).data_type for k in table.primary_key]):
            return None
        named = []
        for tomb in tombstones:
            stored = self.lookup.schema(tomb.schema_id).source_of(key)
            if stored is None:  # a tombstone written before the key existed holds no key to read
                return None
            named.append((self.warehouse.uri(tomb.path), recorded_files(tomb), stored.name))
        return deleted_keys.encode(named, sum(t.row_count for t in tombstones))

    def _deleted_rows(self, table: TableState, schema: Schema, tombstones: list[TombstoneInfo]) -> DataFrame:
        """The tombstone side of the anti-join, with its join columns in the shapes the data side has."""
        deleted = self.read_tombstones(table, tombstones, schema)
        keys = [f"{quote(k)} AS _bs_k{i}" for i, k in enumerate(table.primary_key)]
        deleted = deleted.selectExpr(*keys, f"{ROW_FILE} AS _bs_dfile", f"{ROW_POS} AS _bs_dpos",
                                     f"lpad(CAST({TOMB_SEQ} AS STRING), {SEQ_DIGITS}, '0') AS _bs_dseq")
        if sum(t.row_count for t in tombstones) <= _BROADCAST_TOMBSTONE_ROWS:
            deleted = F.broadcast(deleted)
        return deleted

    def _anti_join(self, table: TableState, rows: DataFrame, deleted: DataFrame, compacted: bool) -> DataFrame:
        if table.primary_key:
            # A key tombstone deletes only rows written before it (zero-padded sequences compare as text).
            condition = [rows[quote(k)] == deleted[f"_bs_k{i}"] for i, k in enumerate(table.primary_key)]
            condition.append(rows[_J_ORDER] < deleted["_bs_dseq"])
            return rows.join(deleted, condition, "left_anti")
        # Hash on the row position only; the file is then checked on the few candidates. A data file's
        # full path ends with its row-id name, which starts with its segment's unique name.
        same_file = rows[_J_FILE] == deleted["_bs_dfile"] if compacted else rows[_J_FILE].endswith(deleted["_bs_dfile"])
        return rows.join(deleted, [rows[_J_POS] == deleted["_bs_dpos"], same_file], "left_anti")


    def _empty(self, schema: Schema, with_ids: bool) -> DataFrame:
        fields = list(schema.struct().fields)
        if with_ids:
            fields += [T.StructField(SEGMENT_COLUMN, T.StringType()), T.StructField(ROW_FILE, T.StringType()),
                       T.StructField(ROW_POS, T.LongType()), T.StructField(ROW_SEQ, T.LongType())]
        return self.spark.createDataFrame([], T.StructType(fields))


def _files_in_range(segment: SegmentInfo, column: int, low, high) -> SegmentInfo | None:
    """`segment` with only the files whose range of `column` (SegmentInfo.key_ranges) meets [low, high] (None: no
    bound on that side), or None when none does. Files without a recorded range of that column stay."""
    if segment.key_column != column or len(segment.key_ranges) != len(segment.files):
        return segment
    kept = [i for i, known in enumerate(segment.key_ranges)
            if known is None or ((high is None or known[0] <= high) and (low is None or low <= known[1]))]
    if not kept:
        return None
    if len(kept) == len(segment.files):
        return segment
    return replace(segment, files=tuple(segment.files[i] for i in kept),
                   file_sizes=tuple(segment.file_sizes[i] for i in kept) if segment.file_sizes else (),
                   file_etags=tuple(segment.file_etags[i] for i in kept) if segment.file_etags else (),
                   key_ranges=tuple(segment.key_ranges[i] for i in kept))


def _row_file(segment: SegmentInfo, name: str) -> str:
    """The row-id file name of data file `name`: its path below the segment root (`_bs_seg=`); for an external
    file, its segment's id and its name."""
    if segment.external:
        return f"{segment.id}/{name}"
    return f"{segment.path.split(f'{SEGMENT_COLUMN}=', 1)[1]}/{name}"


def external_uri(segment: SegmentInfo, name: str) -> str:
    """Where an external segment's file `name` lies: its folder is an absolute URI, not below the warehouse."""
    return f"{segment.path}/{name}"


def project_column(written: Schema, column) -> str:
    """`column` of the current schema, as read from a file written with schema `written`: SQL text for
    select_sql (projection.py). A column the file lacks reads as its default, or NULL."""
    source = written.source_of(column)
    if source is None:
        value = f"({column.default})" if column.default is not None else "NULL"
        return f"CAST({value} AS {type_sql(column.data_type)}) AS {quote(column.name)}"
    if source.type_json != column.type_json:
        return f"CAST({quote(source.name)} AS {type_sql(column.data_type)}) AS {quote(column.name)}"
    return f"{quote(source.name)} AS {quote(column.name)}"


def _loaded(segments: list[SegmentInfo], fields: list, with_segment: bool) -> list[str] | None:
    """The columns `_reader` loads segment files with (`fields`, then `_bs_seg` when asked for), where no
    partition folder adds more; None where it may."""
    if any(s.partition_by for s in segments):
        return None
    return [f.name for f in fields] + ([SEGMENT_COLUMN] if with_segment else [])


def _fields(constants: tuple[Constant, ...]) -> list[T.StructField]:
    return [T.StructField(c.name, c.data_type, False) for c in constants]


def _with_constants(frame: DataFrame, constants: tuple[Constant, ...]) -> DataFrame:
    return select_sql(frame, ["*", *(c.projected() for c in constants)]) if constants else frame


def _union(parts: list[DataFrame]) -> DataFrame:
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result


def _etags(warehouse, items) -> dict[str, str]:
    """{file URI: ETag} of the files of segments or tombstones whose ETags the catalog recorded."""
    return {warehouse.uri(f"{item.path}/{name}"): etag for item in items if len(item.file_etags) == len(item.files)
            for name, etag in zip(item.files, item.file_etags) if etag}


def recorded_files(item) -> tuple[tuple[str, int], ...]:
    """(name, bytes) of a segment's or tombstone's files where the catalog recorded every size, else ()."""
    if not item.files or len(item.file_sizes) != len(item.files):
        return ()
    return tuple(zip(item.files, item.file_sizes))
