"""Iceberg v2 table metadata for a table's versions on one branch, over the table's own files.

Each version the branch's first-parent history went through is a snapshot (the oldest first), so clients
time-travel by snapshot id or timestamp. A snapshot's data manifests are the previous snapshot's manifests
whose segments all remain, plus one manifest of the segments that are new or no longer covered; its delete
manifest lists one position delete file per data file its tombstones delete rows of (deletes.py). Data files
carry their segment's sequence number; delete files the snapshot's, which is higher than every data file's,
and name exact positions, so a tombstone deletes only the rows it deleted in branchspark.

Every file is written once, named by its content (files.py); the metadata JSON's name is a hash of the chain
of (commit, version) it describes, so a later request or another process reads it instead of building it.
"""
from __future__ import annotations

import hashlib
import io
import json
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import timezone
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.io import InputFile, OutputFile, OutputStream
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriterV2,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.table.metadata import TableMetadataV2
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRef, SnapshotRefType
from pyiceberg.table.snapshots import Operation, Snapshot, SnapshotLogEntry, Summary
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.typedef import Record
from pyiceberg.types import DateType
from pyiceberg.utils.datetime import date_to_days

from . import deletes, files
from ..core.catalog.commits import CommitInfo
from ..core.catalog.schema import Schema
from ..core.catalog.state import SegmentInfo, TableState
from ..core.catalog.tombstones import TombstoneInfo
from ..core.storage.layout import Warehouse
from .schema import (
    PARTITION_FIELD_ID_BASE,
    FieldIds,
    Unsupported,
    iceberg_schema,
    literal_default,
    name_mapping,
    partition_spec,
    partition_value,
)

_WRITTEN_KEPT = 50_000  # manifests, manifest lists and versions' delete files a server remembers (MetadataBuilder)
# Bump when the files this module writes change shape: new names, so old files are never misread.
REVISION = "3"  # 2: the unsorted sort order, which Iceberg's Java reader requires; 3: where writers write
POS_FILE_PATH_ID, POS_POS_ID = 2147483546, 2147483545
_POSITION_DELETE_SCHEMA = pa.schema([
    pa.field("file_path", pa.string(), nullable=False, metadata={b"PARQUET:field_id": str(POS_FILE_PATH_ID).encode()}),
    pa.field("pos", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": str(POS_POS_ID).encode()}),
])
# Part of a position delete file's name: bump when its bytes change, so a file an older server wrote under
# the same name (other bytes, another size) is never described with the size of this one's. 2: no Arrow schema.
_POSITION_DELETES_REVISION = "2"
# The same columns with the one file path as a dictionary (deletes.repeated_label); the file holds strings.
_POSITION_DELETE_LABELS = _POSITION_DELETE_SCHEMA.set(0, _POSITION_DELETE_SCHEMA.field(0).with_type(
    pa.dictionary(pa.int32(), pa.string())))
INEXACT_PROPERTY = "branchspark.iceberg.inexact"
# Table properties of Iceberg's own that a client set (write.delete.mode, ...): served under their names too.
ICEBERG_PROPERTY_PREFIXES = ("write.", "read.", "commit.", "history.")
# Served per version, never stored: where writers put data files (a segment directory of the table).
WRITER_OWNED_PROPERTIES = ("write.data.path", "write.folder-storage.path", "write.object-storage.enabled",
                           "write.object-storage.path", "write.metadata.path", "write.location-provider.impl")


class Lookup(Protocol):
    def schema(self, schema_id: str) -> Schema: ...
    def segment_infos(self, ids) -> list[SegmentInfo]: ...
    def tombstone_infos(self, ids) -> list[TombstoneInfo]: ...


@dataclass(frozen=True)
class VersionAt:
    """A table version, and the commit of the branch's history where it first appeared."""

    table: TableState
    commit: CommitInfo

    @property
    def snapshot_id(self) -> int:
        return int(files.content_name("", [self.commit.id, self.table.version_id], "x")[1:16], 16)


@dataclass(frozen=True)
class FileStats:
    record_count: int
    size: int
    columns: tuple[str, ...]


@dataclass(frozen=True)
class DeleteFile:
    """A position delete file the server wrote for one data file: where it lies (relative), its rows, bytes."""

    relative: str
    record_count: int
    size: int


@dataclass(frozen=True)
class _Described:
    """A version's snapshot as a chain described it, with what describing the chain up to it left behind."""

    snapshot: Snapshot
    carried: tuple  # the manifests the next version may keep, with their segments
    specs: tuple  # the partition specs registered so far, by source ids, in order
    written_schemas: tuple  # the schemas of the segments so far, in order
    file_columns: frozenset  # the column names their files hold


class _BufferFile(OutputFile):
    """An OutputFile in memory: pyiceberg's Avro writers write here, then files.write_once stores the bytes."""

    def __init__(self, location: str):
        super().__init__(location)
        self.data = b""

    def __len__(self) -> int:
        return len(self.data)

    def exists(self) -> bool:
        return False

    def to_input_file(self) -> InputFile:
        raise NotImplementedError

    def create(self, overwrite: bool = False) -> OutputStream:
        owner = self

        class _Stream(io.BytesIO):
            def close(self):
                owner.data = self.getvalue()
                super().close()

        return _Stream()


class _DeleteManifestWriter(ManifestWriterV2):
    """pyiceberg's v2 manifest writer, for delete files."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class MetadataBuilder:
    """Builds (or finds) the metadata of a chain of versions; safe to share between threads."""

    def __init__(self, warehouse: Warehouse, lookup: Lookup):
        self.warehouse = warehouse
        self.lookup = lookup
        self._stats: dict[str, FileStats] = {}  # data files never change: their footers are read once
        self.deletes_memo: dict = {}  # what a tombstone deletes in a data file (deletes.py)
        # (table id, version id) -> its position delete files by data file: a version's snapshot is described
        # again in the metadata of every later version (its history), without computing its deletes again
        self._delete_files: dict[tuple[str, str], dict[str, DeleteFile]] = {}
        # manifests (relative name -> ManifestFile) and manifest lists (-> True) this process wrote or found:
        # each version's are named again in the metadata of every later version, and not built again
        self.written: dict[str, object] = {}
        self.described: dict[str, _Described] = {}  # a version's snapshot, by its chain up to it (_Build.run)
        self._lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {}

    def metadata(self, table_name: str, chain: list[VersionAt]) -> tuple[str, dict]:
        """(absolute metadata location, metadata JSON) of `chain` (oldest first, the current version last)."""
        head = chain[-1].table
        key = [REVISION, head.id, table_name] + [f"{v.commit.id}:{v.table.version_id}" for v in chain]
        relative = f"{files.version_dir(head.id, head.version_id)}/{files.content_name('m', key, 'metadata.json')}"
        with self._lock:
            building = self._building.setdefault(relative, threading.Lock())
        with building:
            if not files.exists(self.warehouse, relative):
                document = _Build(self, table_name, chain).run()
                files.write_once(self.warehouse, relative, json.dumps(document).encode())
        return files.absolute(self.warehouse, relative), json.loads(files.read(self.warehouse, relative))

    def delete_files(self, table: TableState, refs: list[deletes.DataFileRef], tombstones: list[TombstoneInfo]
                     ) -> dict[str, DeleteFile]:
        """The position delete file of each data file of `table` (a version) its tombstones delete rows of,
        written once (named by the data file and the positions)."""
        key = (table.id, table.version_id)
        found = self._delete_files.get(key) if table.version_id else None
        if found is None:
            doomed = deletes.position_deletes(self.warehouse, table, self.lookup.schema, refs, tombstones,
                                              self.deletes_memo)
            found = {relative: self._write_position_deletes(table, relative, positions)
                     for relative, positions in sorted(doomed.items())}
            if table.version_id:
                if len(self._delete_files) >= _WRITTEN_KEPT:  # a long-running server's memory stays bounded
                    self._delete_files.clear()
                self._delete_files[key] = found
        return found

    def _write_position_deletes(self, table: TableState, relative: str, positions: np.ndarray) -> DeleteFile:
        target = files.absolute(self.warehouse, relative)
        name = files.content_name("pos", [target, _digest(positions), _POSITION_DELETES_REVISION], "parquet")
        delete_relative = f"{files.version_dir(table.id, table.version_id)}/{name}"
        sink = pa.BufferOutputStream()
        pq.write_table(pa.table({"file_path": deletes.repeated_label(target, len(positions)),
                                 "pos": pa.array(positions, pa.int64())}, schema=_POSITION_DELETE_LABELS), sink,
                       store_schema=False)
        data = sink.getvalue().to_pybytes()
        files.write_once(self.warehouse, delete_relative, data)
        return DeleteFile(delete_relative, len(positions), len(data))

    def remember_described(self, prefix: str, described: "_Described") -> None:
        if len(self.described) >= _WRITTEN_KEPT:
            self.described.clear()
        self.described[prefix] = described

    def remember(self, relative: str, value: object) -> None:
        if len(self.written) >= _WRITTEN_KEPT:  # a long-running server's memory stays bounded
            self.written.clear()
        self.written[relative] = value

    def stats(self, relative: str) -> FileStats:
        found = self._stats.get(relative)
        if found is None:
            fs, path = files.located(self.warehouse, relative)
            with fs.open_input_file(path) as handle:
                footer = pq.read_metadata(handle)
                size = handle.size()
            arrow = footer.schema.to_arrow_schema()
            found = FileStats(footer.num_rows, size, tuple(arrow.names))
            self._stats[relative] = found
        return found


class _Build:
    def __init__(self, builder: MetadataBuilder, table_name: str, chain: list[VersionAt]):
        self.b, self.table_name, self.chain = builder, table_name, chain
        self.warehouse = builder.warehouse
        self.schema_ids: dict[str, int] = {}
        for version in chain:
            self.schema_ids.setdefault(version.table.schema_id, len(self.schema_ids))
        self.head = chain[-1].table
        self.current = builder.lookup.schema(self.head.schema_id)
        described = [builder.lookup.schema(sid) for sid in self.schema_ids]
        self.ids = FieldIds.of_table(described, [builder.lookup.schema(e["schema_id"])
                                                 for e in self.head.schema_history])
        self.last_column = self.ids.first - 1
        self.iceberg_schemas = {sid: iceberg_schema(builder.lookup.schema(sid), n, table_name, self.ids)
                                for sid, n in self.schema_ids.items()}
        # One partition spec per partitioning the segments were written with (set_partitioning changes it
        # without rewriting data); the table's current one is spec 0, the default.
        self.specs: dict[tuple[int, ...], PartitionSpec] = {}
        self._field_ids: dict[int, int] = {}
        self._spec_by_ids(tuple(self.current.column(n).id for n in self.head.partition_by))

    def run(self) -> dict:
        snapshots, log = [], []
        carried: list[tuple[ManifestFile, frozenset]] = []
        parent = None
        written_schemas: dict[str, Schema] = {}
        file_columns: set[str] = set()
        # A version's snapshot depends on the versions before it and on what the whole chain fixes (the
        # schemas' numbers and field ids, the head's schema and partitioning): described once under that key,
        # so the metadata of a new version describes only the new version (a chain of k versions was k
        # snapshots' work on every commit).
        context = [REVISION, self.table_name, self.head.id, self.head.schema_id, self.head.partition_by,
                   json.dumps(self.head.schema_history, sort_keys=True, default=str), list(self.schema_ids)]
        prefix = files.content_name("chain", context, "")
        for version in self.chain:
            prefix = files.content_name("chain", [prefix, version.commit.id, version.table.version_id], "")
            known = self.b.described.get(prefix)
            if known is not None:
                for source_ids in known.specs:  # the specs it named, registered in the same order
                    self._spec_by_ids(source_ids)
                for schema_id in known.written_schemas:
                    written_schemas.setdefault(schema_id, self.b.lookup.schema(schema_id))
                file_columns |= known.file_columns
                snapshot, carried = known.snapshot, list(known.carried)
            else:
                segments = self.b.lookup.segment_infos(version.table.segments)
                for s in segments:
                    written_schemas.setdefault(s.schema_id, self.b.lookup.schema(s.schema_id))
                refs = {s.id: deletes.segment_files(self.warehouse, s) for s in segments}
                for group in refs.values():
                    for ref in group:
                        file_columns.update(self.b.stats(ref.relative).columns)
                snapshot, carried = self._snapshot(version, parent, segments, refs, carried)
                self.b.remember_described(prefix, _Described(snapshot, tuple(carried), tuple(self.specs),
                                                             tuple(written_schemas), frozenset(file_columns)))
            snapshots.append(snapshot)
            log.append(SnapshotLogEntry(snapshot_id=snapshot.snapshot_id, timestamp_ms=snapshot.timestamp_ms))
            parent = snapshot
        return self._document(snapshots, log, written_schemas, file_columns)

    # ------------------------------------------------------------ snapshots
    def _snapshot(self, version: VersionAt, parent, segments, refs, carried):
        table, snapshot_id, seq = version.table, version.snapshot_id, version.commit.seq
        schema = self.iceberg_schemas[table.schema_id]
        live = {s.id for s in segments}
        kept = [(m, ids) for m, ids in carried if ids <= live]
        covered = set().union(*[ids for _, ids in kept]) if kept else set()
        fresh = [s for s in segments if s.id not in covered]
        manifests = [m for m, _ in kept]
        by_spec: dict[int, list[SegmentInfo]] = {}
        for segment in fresh:
            by_spec.setdefault(self._spec(segment).spec_id, []).append(segment)
        for group in by_spec.values():
            manifest = self._data_manifest(table, snapshot_id, seq, schema, group, refs)
            kept.append((manifest, frozenset(s.id for s in group)))
            manifests.append(manifest)
        tombstones = self.b.lookup.tombstone_infos(table.tombstones)
        all_refs = [ref for s in segments for ref in refs[s.id]]
        doomed = self.b.delete_files(table, all_refs, tombstones)
        deleted_rows = sum(d.record_count for d in doomed.values())
        doomed_by_spec: dict[int, dict] = {}
        segment_of = {r.relative: r.segment for r in all_refs}
        for relative, delete_file in doomed.items():
            doomed_by_spec.setdefault(self._spec(segment_of[relative]).spec_id, {})[relative] = delete_file
        for group in doomed_by_spec.values():
            manifests.append(self._delete_manifest(table, snapshot_id, seq, schema, all_refs, group))
        name = files.content_name("snap", [snapshot_id, seq] + [m.manifest_path for m in manifests], "avro")
        relative = f"{files.version_dir(table.id, table.version_id)}/{name}"
        location = files.absolute(self.warehouse, relative)
        if relative not in self.b.written:
            out = _BufferFile(location)
            with write_manifest_list(2, out, snapshot_id, parent.snapshot_id if parent else None, seq,
                                     "deflate") as w:
                w.add_manifests(manifests)
            files.write_once(self.warehouse, relative, out.data)
            self.b.remember(relative, True)
        records = sum(self.b.stats(r.relative).record_count for r in all_refs)
        summary = Summary(Operation.OVERWRITE if parent else Operation.APPEND, **{
            "branchspark.commit": version.commit.id, "branchspark.version": table.version_id,
            "total-data-files": str(len(all_refs)), "total-records": str(records - deleted_rows),
            "total-delete-files": str(len(doomed)), "total-position-deletes": str(deleted_rows)})
        snapshot = Snapshot(snapshot_id=snapshot_id, parent_snapshot_id=parent.snapshot_id if parent else None,
                            sequence_number=seq, timestamp_ms=commit_ms(version.commit), manifest_list=location,
                            summary=summary, schema_id=self.schema_ids[table.schema_id])
        return snapshot, kept

    def _spec_by_ids(self, source_ids: tuple[int, ...]) -> PartitionSpec:
        spec = self.specs.get(source_ids)
        if spec is None:
            for source in source_ids:
                self._field_ids.setdefault(source, PARTITION_FIELD_ID_BASE + len(self._field_ids))
            names = [self.current.by_id(i).name for i in source_ids]
            spec = partition_spec(self.current, names, len(self.specs), self._field_ids, self.ids)
            self.specs[source_ids] = spec
        return spec

    def _spec(self, segment: SegmentInfo) -> PartitionSpec:
        written = self.b.lookup.schema(segment.schema_id)
        ids = []
        for name in segment.partition_by:
            column = self.current.source_of(written.column(name))
            if column is None:
                raise Unsupported(f"table {self.table_name}: files are partitioned by column '{name}', which the "
                                  f"table no longer has; branchspark serve does not yet describe such files")
            ids.append(column.id)
        return self._spec_by_ids(tuple(ids))

    def _partition(self, segment: SegmentInfo) -> Record:
        spec = self._spec(segment)
        values = []
        for field, name in zip(spec.fields, segment.partition_by):
            iceberg = self.iceberg_schemas[self.head.schema_id].find_field(field.source_id).field_type
            value = partition_value(segment.partition_values.get(name), iceberg)
            values.append(date_to_days(value) if isinstance(iceberg, DateType) and value is not None else value)
        return Record(*values)

    def _data_manifest(self, table, snapshot_id, seq, schema, fresh, refs) -> ManifestFile:
        def entries():
            for segment in fresh:
                for ref in refs[segment.id]:
                    stats = self.b.stats(ref.relative)
                    data = DataFile.from_args(
                        content=DataFileContent.DATA, file_path=files.absolute(self.warehouse, ref.relative),
                        file_format=FileFormat.PARQUET, partition=self._partition(segment),
                        record_count=stats.record_count, file_size_in_bytes=stats.size)
                    data.spec_id = self._spec(segment).spec_id
                    yield ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id,
                                                  sequence_number=segment.seq, file_sequence_number=segment.seq,
                                                  data_file=data)
        key = ["data", snapshot_id] + sorted(s.id for s in fresh)
        return self._write_manifest(ManifestWriterV2, self._spec(fresh[0]), table, snapshot_id, seq, schema, key,
                                    entries)

    def _delete_manifest(self, table, snapshot_id, seq, schema, refs, doomed) -> ManifestFile:
        by_path = {r.relative: r for r in refs}
        ordered = sorted(doomed.items())

        def entries():
            for relative, delete_file in ordered:
                bound = files.absolute(self.warehouse, relative).encode()
                delete = DataFile.from_args(
                    content=DataFileContent.POSITION_DELETES,
                    file_path=files.absolute(self.warehouse, delete_file.relative),
                    file_format=FileFormat.PARQUET, partition=self._partition(by_path[relative].segment),
                    record_count=delete_file.record_count, file_size_in_bytes=delete_file.size,
                    lower_bounds={POS_FILE_PATH_ID: bound}, upper_bounds={POS_FILE_PATH_ID: bound})
                delete.spec_id = self._spec(by_path[relative].segment).spec_id
                yield ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id,
                                              sequence_number=seq, file_sequence_number=seq, data_file=delete)
        key = ["deletes", snapshot_id] + [files.absolute(self.warehouse, d.relative) for _, d in ordered]
        spec = self._spec(by_path[ordered[0][0]].segment)
        return self._write_manifest(_DeleteManifestWriter, spec, table, snapshot_id, seq, schema, key, entries)

    def _write_manifest(self, writer_class, spec, table, snapshot_id, seq, schema, key, entries) -> ManifestFile:
        """The manifest of `entries()` (built only when this process has not written or found it yet)."""
        # A manifest names its spec and schema by their ids, which depend on the chain: part of its name too.
        key = [*key, spec.spec_id, spec.model_dump_json(), schema.schema_id]
        relative = f"{files.version_dir(table.id, table.version_id)}/{files.content_name('manifest', key, 'avro')}"
        found = self.b.written.get(relative)
        if found is not None:
            return found
        out = _BufferFile(files.absolute(self.warehouse, relative))
        writer = writer_class(spec, schema, out, snapshot_id, "deflate")
        with writer:
            for entry in entries():
                writer.add_entry(entry)
        manifest = writer.to_manifest_file()
        manifest.sequence_number = seq
        files.write_once(self.warehouse, relative, out.data)
        self.b.remember(relative, manifest)
        return manifest

    # ------------------------------------------------------------- document
    def _document(self, snapshots, log, written_schemas, file_columns) -> dict:
        snapshot_schemas = [self.b.lookup.schema(sid) for sid in reversed(list(self.schema_ids))]
        mapping, ambiguous = name_mapping(snapshot_schemas, written_schemas.values(), sorted(file_columns),
                                          self.ids)
        inexact = []
        for column in self.current.columns:
            if column.default is not None and any(s.source_of(column) is None for s in written_schemas.values()):
                plain = literal_default(column, self.table_name) is not None
                inexact.append(f"column {column.name}: rows written before it existed read its default "
                               f"{column.default} in branchspark; " +
                               ("it is the field's initial-default (an Iceberg v3 field): pyiceberg and DuckDB apply it, "
                                "readers without it read NULL" if plain
                                else "Iceberg clients read NULL"))
        inexact += [f"name {n}: files hold it for two different columns; the name mapping gives it to one"
                    for n in ambiguous]
        head = self.chain[-1]
        properties = {
            "schema.name-mapping.default": mapping.model_dump_json(),
            "branchspark.table-id": self.head.id, "branchspark.version-id": self.head.version_id,
            "branchspark.commit": head.commit.id, "branchspark.primary-key": ",".join(self.head.primary_key),
        }
        if inexact:
            properties[INEXACT_PROPERTY] = "; ".join(inexact)
        properties.update({f"branchspark.property.{k}": str(v) for k, v in self.head.properties.items()})
        properties.update({k: str(v) for k, v in self.head.properties.items()
                           if k.startswith(ICEBERG_PROPERTY_PREFIXES) and k not in WRITER_OWNED_PROPERTIES})
        properties.update({k: v for k, v in files.ICEBERG_TABLE_DEFAULTS.items() if k not in properties})
        properties["write.data.path"] = files.absolute(self.warehouse, files.writers_segment_dir(
            self.warehouse, self.head.id, head.commit.seq, self.head.version_id))
        properties["write.object-storage.enabled"] = "false"
        metadata = TableMetadataV2(
            location=files.absolute(self.warehouse, self.warehouse.table_dir(self.head.id)),
            table_uuid=uuid.UUID(hex=self.head.id) if len(self.head.id) == 32 else uuid.uuid5(uuid.NAMESPACE_URL,
                                                                                               self.head.id),
            last_updated_ms=snapshots[-1].timestamp_ms if snapshots else int(time.time() * 1000),
            last_column_id=max(self.last_column, self.ids.last), schemas=list(self.iceberg_schemas.values()),
            current_schema_id=self.schema_ids[self.head.schema_id], partition_specs=list(self.specs.values()),
            default_spec_id=0, last_partition_id=max(self._field_ids.values(), default=PARTITION_FIELD_ID_BASE - 1), properties=properties,
            current_snapshot_id=snapshots[-1].snapshot_id, snapshots=snapshots, snapshot_log=log,
            last_sequence_number=snapshots[-1].sequence_number,
            # Iceberg's Java reader (Spark's) refuses metadata without the sort order its default id names
            sort_orders=[UNSORTED_SORT_ORDER], default_sort_order_id=UNSORTED_SORT_ORDER.order_id,
            refs={MAIN_BRANCH: SnapshotRef(snapshot_id=snapshots[-1].snapshot_id,
                                           snapshot_ref_type=SnapshotRefType.BRANCH)})
        return json.loads(metadata.model_dump_json(exclude_none=True))


def commit_ms(commit: CommitInfo) -> int:
    moment = commit.ts if commit.ts.tzinfo is not None else commit.ts.replace(tzinfo=timezone.utc)  # naive UTC
    return int(moment.timestamp() * 1000)


def _digest(positions: np.ndarray) -> str:
    return hashlib.sha256(positions.astype(np.int64).tobytes()).hexdigest()
