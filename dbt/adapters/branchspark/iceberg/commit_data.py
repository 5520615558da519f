"""What a client's new Iceberg snapshot changed, as branchspark segments and tombstones (SPEC 11).

A writer's snapshot lists every live data file of the table. Compared with the files of the branch head's
version (its segments' files):
- a data file it adds becomes a segment where it lies (referenced, never copied): the served metadata's
  `write.data.path` is a segment directory of the table (files.writers_segment_dir), so a writer's files
  are already where segments live;
- a data file it no longer lists (a copy-on-write rewrite) deletes the rows it still held: a tombstone of
  them, as a branchspark delete or update writes;
- a position delete file it adds deletes those rows: a tombstone too. Equality deletes and deletion vectors
  are refused with one line.

Tombstones are written with pyarrow from the data files' rows (their images, as branch_changes returns
them), in the layout storage/writer.py writes: no JVM in the server.
"""
from __future__ import annotations

import re
import uuid
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFileContent, FileFormat
from pyiceberg.table.snapshots import Snapshot
from pyspark.sql import types as T

from . import deletes, files
from ..core import errors
from ..core.catalog.schema import Schema
from ..core.catalog.state import SegmentInfo, SegmentKind, TableState
from ..core.catalog.tombstones import TombstoneInfo
from ..core.storage.layout import SEGMENT_COLUMN, Warehouse, seq_of_segment_name
from ..core.storage.reader import ROW_FILE, ROW_POS, ROW_SEQ, STORED_IDENTITY_KINDS, TOMB_SEQ, segment_group
from .deletes import DataFileRef

_WRITERS_DIR = re.compile(r"^s\d{16}-[0-9a-f]{12}$")


@dataclass
class SnapshotChanges:
    added: list[SegmentInfo]
    deleted: dict[str, tuple[DataFileRef, np.ndarray]]  # relative data file -> (its file, positions newly deleted)

    @property
    def empty(self) -> bool:
        return not self.added and not self.deleted


def snapshot_changes(warehouse: Warehouse, io: FileIO, snapshot: Snapshot, table: TableState, lookup,
                     memo: dict, full_name: str) -> SnapshotChanges:
    """What `snapshot` (a client's, on top of `table`'s version) adds and deletes."""
    refs = {r.relative: r for s in lookup.segment_infos(table.segments) for r in deletes.segment_files(warehouse, s)}
    gone = deletes.position_deletes(warehouse, table, lookup.schema, list(refs.values()),
                                    lookup.tombstone_infos(table.tombstones), memo)
    live: set[str] = set()
    delete_files: list[str] = []
    for manifest in snapshot.manifests(io):
        for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
            data = entry.data_file
            if data.content == DataFileContent.DATA:
                relative = files.relative_location(warehouse, data.file_path)
                if relative is None:
                    raise errors.InvalidArgument(
                        f"table {full_name}: data file {data.file_path} lies outside the warehouse; write data files "
                        f"where the table's write.data.path says (files are referenced, never copied)")
                if relative not in refs and data.file_format != FileFormat.PARQUET:
                    raise errors.InvalidArgument(f"table {full_name}: data file {data.file_path} is "
                                                 f"{data.file_format}; branchspark serve takes Parquet data files")
                live.add(relative)
            elif entry.snapshot_id == snapshot.snapshot_id:
                if data.content == DataFileContent.EQUALITY_DELETES:
                    raise errors.InvalidArgument(
                        f"table {full_name}: equality deletes are not supported by branchspark serve; write position "
                        f"deletes (Spark: merge-on-read) or rewrite the files (copy-on-write)")
                if data.file_format != FileFormat.PARQUET:
                    raise errors.InvalidArgument(
                        f"table {full_name}: delete file {data.file_path} is {data.file_format} (a deletion vector?); "
                        f"branchspark serve takes Parquet position deletes (format version 2)")
                delete_files.append(data.file_path)
    removed = set(refs) - live
    deleted: dict[str, tuple[DataFileRef, np.ndarray]] = {}
    for relative in sorted(removed):
        rows = _footer(warehouse, relative).num_rows
        doomed = np.setdiff1d(np.arange(rows, dtype=np.int64), gone.get(relative, np.empty(0, np.int64)))
        if len(doomed):
            deleted[relative] = (refs[relative], doomed)
    for location in delete_files:
        table_of = _table(warehouse, _inside(warehouse, location, full_name), ["file_path", "pos"])
        paths = table_of.column("file_path").to_pylist()
        positions = table_of.column("pos").to_numpy()
        by_file: dict[str, list[int]] = defaultdict(list)
        for path, position in zip(paths, positions):
            by_file[path].append(int(position))
        for path, found in by_file.items():
            relative = files.relative_location(warehouse, path)
            if relative in removed:
                continue
            if relative not in refs:
                raise errors.InvalidArgument(f"table {full_name}: position delete file {location} names {path}, "
                                             f"which is no data file of the table's version it was written on")
            doomed = np.setdiff1d(np.unique(np.asarray(found, dtype=np.int64)),
                                  gone.get(relative, np.empty(0, np.int64)))
            if relative in deleted:
                doomed = np.union1d(deleted[relative][1], doomed)
            if len(doomed):
                deleted[relative] = (refs[relative], doomed)
    return SnapshotChanges(_added_segments(warehouse, table, live - set(refs), full_name), deleted)


def _added_segments(warehouse: Warehouse, table: TableState, added: set[str], full_name: str) -> list[SegmentInfo]:
    prefix = f"{warehouse.data_dir(table.id)}/{SEGMENT_COLUMN}="
    by_dir: dict[str, list[str]] = defaultdict(list)
    for relative in sorted(added):
        directory, name = relative.rsplit("/", 1)
        if not directory.startswith(prefix) or not _WRITERS_DIR.match(directory[len(prefix):]):
            raise errors.InvalidArgument(
                f"table {full_name}: data file {files.absolute(warehouse, relative)} is not in the table's "
                f"write.data.path; write data files where loadTable's write.data.path says")
        by_dir[directory].append(name)
    segments = []
    for directory, names in sorted(by_dir.items()):
        for name in names:
            _footer(warehouse, f"{directory}/{name}")  # a file that is not there or no Parquet: refused
        group = directory[len(prefix):]
        segments.append(SegmentInfo(uuid.uuid4().hex, table.id, directory, seq_of_segment_name(group), table.schema_id,
                                    SegmentKind.DATA, files=tuple(sorted(names))))
    return segments


def write_tombstones(warehouse: Warehouse, table: TableState, schema_of, deleted: dict, seq: int
                     ) -> list[TombstoneInfo]:
    """One tombstone per schema version of the rows `deleted` names: their images and identities."""
    by_schema: dict[str, list[tuple[DataFileRef, np.ndarray]]] = defaultdict(list)
    for ref, positions in deleted.values():
        by_schema[ref.segment.schema_id].append((ref, positions))
    tombstones = []
    for schema_id, group in sorted(by_schema.items()):
        written: Schema = schema_of(schema_id)
        parts, segments, row_files = [], set(), set()
        for ref, positions in group:
            rows = _table(warehouse, ref.relative).take(pa.array(positions, pa.int64()))
            columns = {}
            for column in written.columns:
                target = _arrow_type(column)
                if column.name in rows.column_names:
                    value = rows.column(column.name)
                    columns[column.name] = value if target is None else value.cast(target)
                else:
                    columns[column.name] = pa.nulls(len(positions), target or pa.string())
            name = segment_group(ref.segment)
            columns[SEGMENT_COLUMN] = pa.array([name] * len(positions), pa.string())
            if ref.segment.kind in STORED_IDENTITY_KINDS:
                for hidden in (ROW_FILE, ROW_POS, ROW_SEQ):
                    columns[hidden] = rows.column(hidden)
            else:
                columns[ROW_FILE] = pa.array([ref.row_file] * len(positions), pa.string())
                columns[ROW_POS] = pa.array(positions, pa.int64())
                columns[ROW_SEQ] = pa.array(np.full(len(positions), seq_of_segment_name(name), np.int64))
            columns[TOMB_SEQ] = pa.array(np.full(len(positions), seq, np.int64))
            part = pa.table(columns)
            row_files.update(part.column(ROW_FILE).to_pylist())
            segments.add(name)
            parts.append(part)
        rows = pa.concat_tables(parts, promote_options="permissive")
        relative = warehouse.new_tombstone_dir(table.id, seq)
        fs, base = files.filesystem(warehouse)
        if not warehouse.on_object_store:
            fs.create_dir(f"{base}/{relative}", recursive=True)
        pq.write_table(rows, f"{base}/{relative}/part-00000-{uuid.uuid4().hex}.parquet", filesystem=fs,
                       coerce_timestamps="us", allow_truncated_timestamps=True)
        tombstones.append(TombstoneInfo(uuid.uuid4().hex, table.id, relative, seq, schema_id, rows.num_rows,
                                        tuple(sorted(segments)), tuple(sorted(row_files))))
    return tombstones


def _arrow_type(column) -> pa.DataType | None:
    """The Parquet type a tombstone stores a column's image in (None: nested, kept as the data file has it)."""
    if isinstance(column.data_type, (T.StructType, T.ArrayType, T.MapType)):
        return None
    return deletes._arrow_type(column)


def _inside(warehouse: Warehouse, location: str, full_name: str) -> str:
    relative = files.relative_location(warehouse, location)
    if relative is None:
        raise errors.InvalidArgument(f"table {full_name}: file {location} lies outside the warehouse; write it where "
                                     f"the table's write.data.path says")
    return relative


def _footer(warehouse: Warehouse, relative: str) -> pq.FileMetaData:
    fs, base = files.filesystem(warehouse)
    try:
        with fs.open_input_file(f"{base}/{relative}") as handle:
            return pq.read_metadata(handle)
    except (OSError, pa.ArrowInvalid) as exc:
        raise errors.InvalidArgument(f"data file {files.absolute(warehouse, relative)} cannot be read as Parquet: "
                                     f"{str(exc).splitlines()[0]}") from None


def _table(warehouse: Warehouse, relative: str, columns: list[str] | None = None) -> pa.Table:
    fs, base = files.filesystem(warehouse)
    with fs.open_input_file(f"{base}/{relative}") as handle:
        return pq.read_table(handle, columns=columns)
