"""What a client's new Iceberg snapshot changed, as branchspark segments and tombstones (SPEC 11).

A writer's snapshot lists every live data file of the table. Compared with the files of the branch head's
version (its segments' files):
- a data file it adds becomes a segment where it lies (referenced, never copied): the served metadata's
  `write.data.path` is a segment directory of the table (files.writers_segment_dir), so a writer's files
  are already where segments live;
- a data file it no longer lists (a copy-on-write rewrite) deletes the rows it still held: a tombstone of
  them, as a branchspark delete or update writes;
- a position delete file it adds deletes those rows: a tombstone too. Equality deletes and deletion vectors
  are refused with one line;
- a rewrite copies the rows of a file it did not change into its new file: those rows did not change
  (SPEC 4), so the old row stays live (`_without_carried`): the change feed, diff and merges see only the
  rows that changed. A new file mostly of copies is then not referenced: its other rows are written to a
  segment of the commit (`_split_copies`, `write_extracted`), so the table holds no second copy of the rows
  a copy-on-write statement rewrote; in a file mostly of new rows, the copies are deleted in the same commit.

Tombstones are written with pyarrow from the data files' rows (their images, as branch_changes returns
them), in the layout storage/writer.py writes: no JVM in the server.
"""
from __future__ import annotations

import re
import threading
import uuid
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field, replace
from datetime import date
from decimal import Decimal
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFileContent, FileFormat
from pyiceberg.table.snapshots import Snapshot
from pyspark.sql import types as T

from . import deletes, files, row_match
from ..core import errors
from ..core.catalog.schema import Schema
from ..core.catalog.state import SegmentInfo, SegmentKind, TableState
from ..core.catalog.tombstones import TombstoneInfo
from ..core.storage.layout import SEGMENT_COLUMN, Warehouse, seq_of_segment_name
from ..core.storage.writer import NULL_PARTITION
from ..core.storage.reader import ROW_FILE, ROW_POS, ROW_SEQ, STORED_IDENTITY_KINDS, TOMB_SEQ, segment_group
from .deletes import DataFileRef

_WRITERS_DIR = re.compile(r"^s\d{16}-[0-9a-f]{12}$")


class DecodedFiles:
    """The rows of the data files a server read, by location (and footer), within `budget` bytes (the least
    recently used dropped first). A data file never changes (each one a writer or branchspark writes has a new
    name; a borrowed file rewritten in place would show another footer), and a
    table's next commits mostly read the files its last one read: a merge-on-read's deleted rows' images lie
    in the files the copy-on-write before it matched, and the next rewrite matches them again. At 10M rows a
    file's read is 0.1-0.4 s of a commit's 0.3-1.2 s."""

    def __init__(self, budget: int):
        self.budget, self.held = budget, 0
        self._tables: OrderedDict[tuple, pa.Table] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> pa.Table | None:
        with self._lock:
            table = self._tables.get(key)
            if table is not None:
                self._tables.move_to_end(key)
            return table

    def put(self, key: tuple, table: pa.Table) -> None:
        size = table.get_total_buffer_size()
        if size > self.budget:
            return
        with self._lock:
            if key in self._tables:
                return
            while self._tables and self.held + size > self.budget:
                self.held -= self._tables.popitem(last=False)[1].get_total_buffer_size()
            self._tables[key] = table
            self.held += size


class FileRows:
    """The data files one commit reads, each read once and kept for the commit (and in `decoded`, the
    server's, for the commits after it): the match reads the removed and new files whole, then the tombstones
    and extracted rows take from them (a second read of a 10M-row rewrite cost 1 s)."""

    def __init__(self, warehouse: Warehouse, decoded: DecodedFiles | None = None):
        self.warehouse, self.decoded = warehouse, decoded
        self._footers: dict[str, pq.FileMetaData] = {}
        self._tables: dict[str, pa.Table] = {}

    def footer(self, relative: str) -> pq.FileMetaData:
        if relative not in self._footers:
            self._footers[relative] = _footer(self.warehouse, relative)
        return self._footers[relative]

    def table(self, relative: str) -> pa.Table:
        """Every column of the file."""
        if relative not in self._tables:
            footer = self.footer(relative)
            key = (relative, footer.num_rows, footer.serialized_size)
            table = self.decoded.get(key) if self.decoded is not None else None
            if table is None:
                table = _table(self.warehouse, relative)
                if self.decoded is not None:
                    self.decoded.put(key, table)
            self._tables[relative] = table
        return self._tables[relative]


@dataclass
class SnapshotChanges:
    added: list[SegmentInfo]
    deleted: dict[str, tuple[DataFileRef, np.ndarray]]  # relative data file -> (its file, positions newly deleted)
    # new data file -> (its file, positions of rows a rewrite copied unchanged from a file it replaced)
    carried: dict[str, tuple[DataFileRef, np.ndarray]] = field(default_factory=dict)
    new_rows: int = 0  # rows the new files add that are no copies
    # new data file that is mostly copies -> (its segment, positions of its other rows): those rows only are
    # kept, written to a segment of the commit (write_extracted); the file itself is not referenced
    extract: dict[str, tuple[SegmentInfo, np.ndarray]] = field(default_factory=dict)
    rows: FileRows | None = None  # the files it read, for write_tombstones and write_extracted

    @property
    def empty(self) -> bool:
        return not self.added and not self.deleted and not self.extract


@dataclass(frozen=True)
class _Listed:
    """What a commit needs of one live entry of a manifest."""

    snapshot_id: int | None
    content: DataFileContent
    file_path: str
    file_format: FileFormat
    partition: tuple


class ListedEntries:
    """The live entries of manifests a server has read, by manifest location: a manifest never changes, and a
    writer's next snapshot names the served manifests and its own earlier ones again (PyIceberg's appends add
    one each), so each is read once. Holds at most `limit` entries (then starts over)."""

    def __init__(self, limit: int = 500_000):
        self.limit, self.held, self._by_location = limit, 0, {}

    def of(self, io: FileIO, manifest) -> list[_Listed]:
        found = self._by_location.get(manifest.manifest_path)
        if found is None:
            found = [_Listed(e.snapshot_id, e.data_file.content, e.data_file.file_path, e.data_file.file_format,
                             tuple(e.data_file.partition) if e.data_file.partition is not None else ())
                     for e in manifest.fetch_manifest_entry(io, discard_deleted=True)]
            if self.held + len(found) > self.limit:
                self._by_location, self.held = {}, 0
            self._by_location[manifest.manifest_path] = found
            self.held += len(found)
        return found


def snapshot_changes(warehouse: Warehouse, io: FileIO, snapshot: Snapshot | None, table: TableState, lookup,
                     memo: dict, full_name: str, commit_snapshots: set[int], listed: ListedEntries,
                     decoded: DecodedFiles | None = None) -> SnapshotChanges:
    """What `snapshot` (a client's, on top of `table`'s version) adds and deletes; its delete files added by
    any of `commit_snapshots` (the snapshots of this commit) are new. `listed`: manifests' entries already
    read; `decoded`: data files' rows already read."""
    refs = {r.relative: r for s in lookup.segment_infos(table.segments) for r in deletes.segment_files(warehouse, s)}
    # an import's borrowed files lie outside the warehouse: a client names them as they were served
    borrowed = {files.plain_location(files.absolute(warehouse, r)): r for r in refs if files.is_borrowed_location(r)}

    def known(location: str) -> str | None:
        relative = files.relative_location(warehouse, location)
        return relative if relative is not None else borrowed.get(files.plain_location(location))

    file_rows = FileRows(warehouse, decoded)
    gone = deletes.position_deletes(warehouse, table, lookup.schema, list(refs.values()),
                                    lookup.tombstone_infos(table.tombstones), memo)
    live: set[str] = set()
    partitions: dict[str, tuple] = {}  # a data file -> the partition values its manifest entry gives
    delete_files: list[str] = []
    for manifest in snapshot.manifests(io) if snapshot is not None else []:  # None: no rows at all
        for data in listed.of(io, manifest):
            if data.content == DataFileContent.DATA:
                relative = known(data.file_path)
                if relative is None:
                    raise errors.InvalidArgument(
                        f"table {full_name}: data file {data.file_path} lies outside the warehouse; write data files "
                        f"where the table's write.data.path says (files are referenced, never copied)")
                if relative not in refs and data.file_format != FileFormat.PARQUET:
                    raise errors.InvalidArgument(f"table {full_name}: data file {data.file_path} is "
                                                 f"{data.file_format}; branchspark serve takes Parquet data files")
                live.add(relative)
                partitions[relative] = data.partition
            elif data.snapshot_id in commit_snapshots:
                if data.content == DataFileContent.EQUALITY_DELETES:
                    raise errors.InvalidArgument(
                        f"table {full_name}: equality deletes are not supported by branchspark serve; write position "
                        f"deletes (Spark: merge-on-read) or rewrite the files (copy-on-write)")
                if data.file_format == FileFormat.PUFFIN:
                    raise errors.InvalidArgument(
                        f"table {full_name}: deletion vectors (Iceberg v3, {data.file_path}) are not supported by "
                        f"branchspark serve; write Parquet position deletes (format version 2) or copy-on-write")
                if data.file_format != FileFormat.PARQUET:
                    raise errors.InvalidArgument(
                        f"table {full_name}: delete file {data.file_path} is {data.file_format}; branchspark serve "
                        f"takes Parquet position deletes (format version 2)")
                delete_files.append(data.file_path)
    removed = set(refs) - live
    # the rows each removed file still held, as a mask (None: all of them): a rewrite removes files of
    # millions of rows, and their positions would cost passes over them all that the change does not need
    removed_live: dict[str, tuple[DataFileRef, np.ndarray | None]] = {}
    for relative in sorted(removed):
        rows, before = file_rows.footer(relative).num_rows, gone.get(relative)
        still = None
        if before is not None and len(before):
            still = np.ones(rows, dtype=bool)
            still[before] = False
        if rows and (still is None or still.any()):
            removed_live[relative] = (refs[relative], still)
    deleted: dict[str, tuple[DataFileRef, np.ndarray]] = {}
    for location in delete_files:
        table_of = _table(warehouse, _inside(warehouse, location, full_name), ["file_path", "pos"])
        paths = table_of.column("file_path").to_pylist()
        positions = table_of.column("pos").to_numpy()
        by_file: dict[str, list[int]] = defaultdict(list)
        for path, position in zip(paths, positions):
            by_file[path].append(int(position))
        for path, found in by_file.items():
            relative = known(path)
            if relative in removed or (relative not in refs and relative not in live):
                continue  # a file this commit removes (or added, then removed again)
            if relative not in refs:
                raise errors.InvalidArgument(f"table {full_name}: position delete file {location} names {path}, "
                                             f"which is no data file of the table's version it was written on")
            doomed = np.setdiff1d(np.unique(np.asarray(found, dtype=np.int64)),
                                  gone.get(relative, np.empty(0, np.int64)))
            if relative in deleted:
                doomed = np.union1d(deleted[relative][1], doomed)
            if len(doomed):
                deleted[relative] = (refs[relative], doomed)
    added = _added_segments(warehouse, table, lookup.schema(table.schema_id), live - set(refs), partitions, full_name)
    copied: dict[str, tuple[DataFileRef, np.ndarray]] = {}
    if removed_live and added:
        remaining, copied = _without_carried(file_rows, table, lookup.schema, removed_live, added)
    else:
        remaining = {relative: (ref, _positions(file_rows, ref, still))
                     for relative, (ref, still) in removed_live.items()}
    deleted.update(remaining)  # delete files' rows lie in files the snapshot keeps: no overlap
    written = sum(file_rows.footer(f"{s.path}/{n}").num_rows for s in added for n in s.files)
    new_rows = written - sum(int(np.count_nonzero(mask)) for _, mask in copied.values())
    added, carried, extract = _split_copies(added, copied)
    return SnapshotChanges(added, deleted, carried, new_rows, extract, file_rows)


def _positions(file_rows: FileRows, ref: DataFileRef, still: np.ndarray | None) -> np.ndarray:
    """The positions a mask of a file's rows holds (None: all its rows)."""
    if still is None:
        return np.arange(file_rows.footer(ref.relative).num_rows, dtype=np.int64)
    return np.flatnonzero(still)


def _split_copies(added: list[SegmentInfo], copied: dict) -> tuple[list, dict, dict]:
    """(segments, copies, files to extract from) from the new files' masks of copies (`copied`): a new file
    whose rows are at least half copies is not referenced. Referenced, its copies would stay in the table
    beside the rows they copy (deleted, but read by every scan: a copy-on-write MERGE of a whole table doubles
    what it holds, and each one after it adds as much again); instead its other rows, the change, are written
    to a segment of their own. A file of copies only adds nothing. A file mostly of new rows stays where it
    lies, its few copies deleted."""
    if not copied:
        return added, {}, {}
    carried, extract, segments = {}, {}, []
    for segment in added:
        names = []
        for name in segment.files:
            relative = f"{segment.path}/{name}"
            if relative not in copied:
                names.append(name)
                continue
            ref, mask = copied[relative]
            if 2 * int(np.count_nonzero(mask)) < len(mask):
                names.append(name)
                carried[relative] = (ref, np.flatnonzero(mask))
                continue
            other = np.flatnonzero(~mask)
            if len(other):
                extract[relative] = (segment, other)
        if names:
            segments.append(replace(segment, files=tuple(names)))
    return segments, carried, extract


def write_extracted(warehouse: Warehouse, table: TableState, extract: dict, seq: int, file_rows: FileRows
                    ) -> list[SegmentInfo]:
    """The rows `extract` names (SnapshotChanges.extract), one segment of the commit's sequence per
    segment they come from (its partition directories below a directory of its own), written with pyarrow
    as the writer wrote them (its columns and field ids)."""
    by_segment: dict[str, list] = defaultdict(list)
    for relative, (segment, positions) in sorted(extract.items()):
        by_segment[segment.id].append((segment, row_match.take_rows([file_rows.table(relative)], positions)))
    fs, base = files.filesystem(warehouse)
    segments = []
    for parts in by_segment.values():
        segment = parts[0][0]
        rows = pa.concat_tables([p for _, p in parts], promote_options="permissive")
        below = segment.path.split(f"{SEGMENT_COLUMN}=", 1)[1].partition("/")[2]  # partition directories
        directory = warehouse.new_segment_dir(table.id, seq) + (f"/{below}" if below else "")
        name = f"part-00000-{uuid.uuid4().hex}.parquet"
        if not warehouse.on_object_store:
            fs.create_dir(f"{base}/{directory}", recursive=True)
        pq.write_table(rows, f"{base}/{directory}/{name}", filesystem=fs, coerce_timestamps="us",
                       allow_truncated_timestamps=True, compression=files.parquet_codec(table.properties))
        segments.append(replace(segment, id=uuid.uuid4().hex, path=directory, seq=seq, files=(name,)))
    return segments


def _without_carried(file_rows: FileRows, table: TableState, schema_of, removed_live: dict, added: list[SegmentInfo]
                     ) -> tuple[dict, dict]:
    """(the positions of the rows the removed files still held (`removed_live`: masks) that no new row copies,
    for each new file holding copies a mask of them).

    The rows the removed files still held and the new files' rows are matched as multisets by their values
    in the table's current columns (row_match.py): a copied row pairs with one identical old row."""
    current = schema_of(table.schema_id)
    old = [found for _, found in sorted(removed_live.items())]
    new = [ref for s in added for ref in deletes.segment_files(file_rows.warehouse, s)
           if file_rows.footer(ref.relative).num_rows]
    if not new:
        return {ref.relative: (ref, _positions(file_rows, ref, still)) for ref, still in old}, {}
    keep_old, dead_new = row_match.copies(
        [_values(file_rows, ref, still, schema_of(ref.segment.schema_id), current) for ref, still in old],
        [_values(file_rows, ref, None, current, current) for ref in new])
    remaining, at = {}, 0
    for ref, still in old:
        held = file_rows.footer(ref.relative).num_rows if still is None else int(np.count_nonzero(still))
        kept = keep_old[at:at + held]
        at += held
        if not kept.all():
            remaining[ref.relative] = (ref, np.flatnonzero(~kept) if still is None else np.flatnonzero(still)[~kept])
    copied, at = {}, 0
    for ref in new:
        rows = file_rows.footer(ref.relative).num_rows
        dead = dead_new[at:at + rows]
        at += rows
        if dead.any():
            copied[ref.relative] = (ref, dead)
    return remaining, copied


def _values(file_rows: FileRows, ref: DataFileRef, still: np.ndarray | None, written: Schema, current: Schema
            ) -> pa.Table:
    """The rows of a data file written with `written` that `still` holds (None: all), in `current`'s columns
    and types."""
    names = {c.id: written.source_of(c) for c in current.columns}
    in_file = set(file_rows.footer(ref.relative).schema.to_arrow_schema().names)
    wanted = sorted({s.name for s in names.values() if s is not None and s.name in in_file})
    rows = file_rows.table(ref.relative).select(wanted)
    if still is not None:  # a filter by mask: twice as fast as a take of positions at 10M rows
        rows = rows.filter(pa.array(still))
    count = rows.num_rows
    partition_values = ref.segment.partition_values or {}
    columns = {}
    for column in current.columns:
        target = _arrow_type(column) or pa.string()
        source = names[column.id]
        if source is not None and source.name in wanted:
            value = rows.column(source.name)
        elif source is not None and source.name in partition_values:
            value = deletes.repeated_text(partition_values[source.name], count)
        else:
            value = pa.nulls(count, target)
        columns[f"c{column.id}"] = value.cast(target)
    return pa.table(columns)


def _added_segments(warehouse: Warehouse, table: TableState, current: Schema, added: set[str],
                    partitions: dict[str, tuple], full_name: str) -> list[SegmentInfo]:
    """One segment per directory of new files; a partitioned table's writer puts each file in `col=value`
    directories below write.data.path (Iceberg's layout, Hive's too), one segment per partition, as
    branchspark writes them. Its directory names must read back as the values the manifest gives."""
    prefix = f"{warehouse.data_dir(table.id)}/{SEGMENT_COLUMN}="
    depth = len(table.partition_by)
    by_dir: dict[str, list[str]] = defaultdict(list)
    for relative in sorted(added):
        directory, name = relative.rsplit("/", 1)
        parts = directory[len(prefix):].split("/") if directory.startswith(prefix) else []
        if len(parts) != depth + 1 or not _WRITERS_DIR.match(parts[0]):
            raise errors.InvalidArgument(
                f"table {full_name}: data file {files.absolute(warehouse, relative)} is not in the table's "
                f"write.data.path" + (f" below its partition directories ({'/'.join(c + '=...' for c in table.partition_by)})"
                                       if depth else "") + "; write data files where loadTable's write.data.path says")
        by_dir[directory].append(name)
    segments = []
    for directory, names in sorted(by_dir.items()):
        for name in names:
            _footer(warehouse, f"{directory}/{name}")  # a file that is not there or no Parquet: refused
        group, *leaves = directory[len(prefix):].split("/")
        values = _partition_values(full_name, table, current, leaves, {partitions.get(f"{directory}/{n}") for n in names},
                                   files.absolute(warehouse, directory))
        segments.append(SegmentInfo(uuid.uuid4().hex, table.id, directory, seq_of_segment_name(group), table.schema_id,
                                    SegmentKind.DATA, tuple(table.partition_by) if depth else (), values,
                                    files=tuple(sorted(names))))
    return segments


def _partition_values(full_name: str, table: TableState, current: Schema, leaves: list[str], given: set,
                      where: str) -> dict:
    """A partition directory's values as branchspark keeps them (the text Spark reads from the path), checked
    against the values the writer's manifest entries give."""
    if not table.partition_by:
        return {}
    values = {}
    for column_name, leaf in zip(table.partition_by, leaves):
        key, _, text = leaf.partition("=")
        if unquote(key) != column_name:
            raise errors.InvalidArgument(f"table {full_name}: directory {where} is not partitioned as the table is "
                                         f"({', '.join(table.partition_by)}); write with the table's partition spec")
        values[column_name] = None if unquote(text) == NULL_PARTITION else unquote(text)
    expected = tuple(_iceberg_value(values[c], current.column(c)) for c in table.partition_by)
    if given != {expected}:
        raise errors.InvalidArgument(
            f"table {full_name}: directory {where} reads as partition {expected}, but its files' manifest entries "
            f"give {sorted(map(str, given))}; branchspark reads partition values from directory names (NULL and "
            f"values with characters a path escapes are not supported through Iceberg writes yet)")
    return values


def _iceberg_value(text: str | None, column):
    """A partition directory's text as the value an Iceberg manifest holds (dates as days since the epoch)."""
    if text is None:
        return None
    kind = column.data_type.typeName()
    if kind in ("integer", "long", "short", "byte"):
        return int(text)
    if kind in ("double", "float"):
        return float(text)
    if kind == "boolean":
        return text.lower() == "true"
    if kind == "decimal":
        return Decimal(text)
    if kind == "date":
        return (date.fromisoformat(text) - date(1970, 1, 1)).days
    return text


def write_tombstones(warehouse: Warehouse, table: TableState, schema_of, deleted: dict, seq: int,
                     file_rows: FileRows) -> list[TombstoneInfo]:
    """One tombstone per schema version of the rows `deleted` names (`file_rows`: the files the commit
    read): their images and identities."""
    by_schema: dict[str, list[tuple[DataFileRef, np.ndarray]]] = defaultdict(list)
    for ref, positions in deleted.values():
        by_schema[ref.segment.schema_id].append((ref, positions))
    tombstones = []
    for schema_id, group in sorted(by_schema.items()):
        written: Schema = schema_of(schema_id)
        parts, segments, row_files = [], set(), set()
        for ref, positions in group:
            rows = row_match.take_rows([file_rows.table(ref.relative)], positions)
            columns = {}
            for column in written.columns:
                target = _arrow_type(column)
                if column.name in rows.column_names:
                    value = rows.column(column.name)
                    columns[column.name] = value if target is None else value.cast(target)
                elif column.name in ref.segment.partition_values:  # kept in the directory name, not the file
                    value = deletes.repeated_text(ref.segment.partition_values[column.name], len(positions))
                    columns[column.name] = value.cast(target or pa.string())
                else:
                    columns[column.name] = pa.nulls(len(positions), target or pa.string())
            name = segment_group(ref.segment)
            columns[SEGMENT_COLUMN] = deletes.repeated_label(name, len(positions))
            if ref.segment.kind in STORED_IDENTITY_KINDS:
                for hidden in (ROW_POS, ROW_SEQ):
                    columns[hidden] = rows.column(hidden)
                columns[ROW_FILE] = pc.dictionary_encode(rows.column(ROW_FILE).combine_chunks())
            else:
                columns[ROW_FILE] = deletes.repeated_label(ref.row_file, len(positions))
                columns[ROW_POS] = pa.array(positions, pa.int64())
                columns[ROW_SEQ] = pa.array(np.full(len(positions), seq_of_segment_name(name), np.int64))
            columns[TOMB_SEQ] = pa.array(np.full(len(positions), seq, np.int64))
            part = pa.table(columns)
            row_files.update(pc.unique(part.column(ROW_FILE)).to_pylist())
            segments.add(name)
            parts.append(part)
        rows = pa.concat_tables(parts, promote_options="permissive")
        relative = warehouse.new_tombstone_dir(table.id, seq)
        fs, base = files.filesystem(warehouse)
        if not warehouse.on_object_store:
            fs.create_dir(f"{base}/{relative}", recursive=True)
        pq.write_table(rows, f"{base}/{relative}/part-00000-{uuid.uuid4().hex}.parquet", filesystem=fs,
                       store_schema=False, coerce_timestamps="us", allow_truncated_timestamps=True)
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
    fs, path = files.located(warehouse, relative)  # a borrowed file where it lies
    try:
        with fs.open_input_file(path) as handle:
            return pq.read_metadata(handle)
    except (OSError, pa.ArrowInvalid) as exc:
        raise errors.InvalidArgument(f"data file {files.absolute(warehouse, relative)} cannot be read as Parquet: "
                                     f"{str(exc).splitlines()[0]}") from None


def _table(warehouse: Warehouse, relative: str, columns: list[str] | None = None) -> pa.Table:
    fs, path = files.located(warehouse, relative)
    with fs.open_input_file(path) as handle:
        return pq.read_table(handle, columns=columns)
