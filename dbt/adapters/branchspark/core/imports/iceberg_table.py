"""An Iceberg table at a snapshot, read from its metadata with pyiceberg, as a SourceTable: the snapshot's data
files are its files, its position delete files the rows they hide; each file's own column names come from its
footer's field ids (a file written before a rename keeps the old name). Equality deletes and deletion vectors
(format 3) are refused by name. Partitions stay in the files (Iceberg writes every column), so the table lands
unpartitioned."""
from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from .. import errors
from ..storage import object_store
from .source import (SourceColumn, SourceFile, SourceTable, VersionChanges, added_columns, filesystem,
                     normalized_location, source_file, spark_type)

_FIELD_ID = b"PARQUET:field_id"
_FOOTER_READS = 8  # footers read side by side (on S3, a GET each)
_VERSION = re.compile(r"^v?(\d+)")


def read_iceberg(location: str, snapshot_id: int | None) -> SourceTable:
    table = _load(location)
    snapshot = table.current_snapshot() if snapshot_id is None else table.metadata.snapshot_by_id(snapshot_id)
    if snapshot is None and snapshot_id is not None:
        known = ", ".join(str(s.snapshot_id) for s in table.metadata.snapshots) or "none"
        raise errors.InvalidArgument(f"cannot import {location} at snapshot {snapshot_id}: the Iceberg table has no "
                                     f"such snapshot (its snapshots: {known})")
    # the current schema for the current snapshot (a later rename shows, as engines read it); a given snapshot's own
    pinned = snapshot_id is not None and snapshot.schema_id is not None
    columns = _columns(table.schemas()[snapshot.schema_id] if pinned else table.schema(), location)
    if snapshot is None:  # a table created without rows
        return SourceTable(location, "iceberg", None, columns, [], [])
    files = _live_files(table, snapshot, columns, location)
    return SourceTable(location, "iceberg", str(snapshot.snapshot_id), columns, [], files)


def iceberg_changes(location: str, since: int) -> list[VersionChanges]:
    """The changes of every snapshot after `since` up to the current one (its ancestors), in order: the data files
    each added and removed, the rows its new position deletes hide and the columns its schema added (a refresh lands
    each as one commit). Any other schema change is refused in one line. A table imported from one of its metadata
    files (`register`, or a path to the file) is followed by the newest metadata file beside it."""
    table = _load(_table_folder(location))
    chain, snapshot = [], table.current_snapshot()
    while snapshot is not None and snapshot.snapshot_id != since:
        chain.append(snapshot)
        parent = snapshot.parent_snapshot_id
        snapshot = table.metadata.snapshot_by_id(parent) if parent is not None else None
    if snapshot is None:
        raise errors.InvalidArgument(f"cannot refresh from {location}: snapshot {since} is not an ancestor of its "
                                     f"current snapshot (rolled back, or expired); import it again")
    columns = _columns(table.schemas()[snapshot.schema_id], location)
    before = {f.uri: f for f in _live_files(table, snapshot, columns, location)}
    out = []
    for later in reversed(chain):
        new_columns = []
        if later.schema_id != snapshot.schema_id and later.schema_id is not None:
            wider = _columns(table.schemas()[later.schema_id], location)
            new_columns = added_columns(location, str(later.snapshot_id), columns, wider)
            columns, snapshot = wider, later
        now = {f.uri: f for f in _live_files(table, later, columns, location)}
        hidden = []
        for uri in sorted(set(before) & set(now)):
            newly = np.setdiff1d(_positions(now[uri]), _positions(before[uri]))
            if len(newly):
                hidden.append(replace(now[uri], deleted=newly))
        out.append(VersionChanges(str(later.snapshot_id), [f for u, f in sorted(now.items()) if u not in before],
                                  [f for u, f in sorted(before.items()) if u not in now], hidden, columns, new_columns))
        before = now
    return out


def _load(location: str):
    # Only here: importing pyiceberg costs about 0.9 s, which every invocation would pay (tests/core/test_imports.py)
    from pyiceberg.table import StaticTable

    metadata_file = location if location.endswith(".metadata.json") else _current_metadata(location)
    try:
        return StaticTable.from_metadata(metadata_file, object_store.client_properties(metadata_file, True))
    except Exception as exc:  # pyiceberg's own errors, JSON and file-system ones alike: one line
        raise errors.InvalidArgument(f"cannot import {location}: its Iceberg metadata cannot be read: "
                                     f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
                                     ) from None


def _columns(schema, location: str) -> list[SourceColumn]:
    from pyiceberg.io.pyarrow import schema_to_pyarrow  # as in _load

    arrow = schema_to_pyarrow(schema)
    return [SourceColumn(f.name, spark_type(a.type, location), f.optional, field_id=f.field_id,
                         nested_ids=tuple(_nested_ids(f.field_type, ())))
            for f, a in zip(schema.fields, arrow)]


def _nested_ids(kind, path: tuple[str, ...]):
    """(path, field id) of every field inside a nested Iceberg type, named as Spark's Parquet files name them."""
    if hasattr(kind, "fields"):  # a struct (pyiceberg's types told apart by their fields: no import here)
        inner = [(f.name, f.field_id, f.field_type) for f in kind.fields]
    elif hasattr(kind, "element_id"):  # a list
        inner = [("element", kind.element_id, kind.element_type)]
    elif hasattr(kind, "key_id"):  # a map
        inner = [("key", kind.key_id, kind.key_type), ("value", kind.value_id, kind.value_type)]
    else:
        return
    for name, field_id, of in inner:
        yield path + (name,), field_id
        yield from _nested_ids(of, path + (name,))


def _live_files(table, snapshot, columns: list[SourceColumn], location: str) -> list[SourceFile]:
    """The snapshot's data files, with the rows its position deletes hide; its equality deletes, deletion vectors
    and files of other formats refused by name."""
    from pyiceberg.manifest import DataFileContent, FileFormat  # as in _load

    # The manifests, read once: the live data files with their data sequence numbers (the order the table wrote
    # files in), and the live position delete files. A position delete names the data file it applies to, and a
    # path is written once, so no plan pairs them (pyiceberg's plan_files would read every manifest again).
    data_files, written_at, delete_paths = [], {}, set()
    for manifest in snapshot.manifests(table.io):
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            data = entry.data_file
            if data.content == DataFileContent.DATA:
                data_files.append(data)
                written_at[data.file_path] = entry.sequence_number or 0
            if data.content == DataFileContent.POSITION_DELETES and data.file_format != FileFormat.PUFFIN:
                delete_paths.add(data.file_path)
            if data.content == DataFileContent.EQUALITY_DELETES:
                raise errors.InvalidArgument(f"cannot import {location}: it has equality deletes ({data.file_path}), "
                                             f"which import does not support yet; rewrite them as position deletes "
                                             f"(Spark: CALL system.rewrite_position_delete_files) or compact first")
            if data.file_format == FileFormat.PUFFIN:
                raise errors.InvalidArgument(f"cannot import {location}: it has deletion vectors (Iceberg format 3, "
                                             f"{data.file_path}), which import does not support yet")
            if data.file_format != FileFormat.PARQUET:
                raise errors.InvalidArgument(f"cannot import {location}: file {data.file_path} is "
                                             f"{data.file_format.name}; import takes Parquet files only")
    deletes = _position_deletes(delete_paths, location)
    by_id = {c.field_id: c.name for c in columns}
    if _renamed_ever(table, by_id):  # each file's names from its footer's field ids, footers read side by side
        with ThreadPoolExecutor(max_workers=min(len(data_files), _FOOTER_READS) or 1) as pool:
            names = list(pool.map(lambda f: _file_names(f.file_path, by_id, location), data_files))
    else:  # no column was ever renamed: every file stores the names the table has
        names = [()] * len(data_files)
    return [source_file(location, _readable(f.file_path), f.file_size_in_bytes, deleted=deletes.get(f.file_path),
                        file_names=file_names, order=written_at[f.file_path])
            for f, file_names in zip(data_files, names)]


def _renamed_ever(table, by_id: dict[int, str]) -> bool:
    """Whether a schema of the table's history named one of these columns (by field id) otherwise: only then
    can a data file hold a name the table no longer has."""
    return any(by_id.get(field.field_id, field.name) != field.name
               for schema in table.metadata.schemas for field in schema.fields)


def _positions(file: SourceFile) -> np.ndarray:
    return file.deleted if file.deleted is not None else np.empty(0, np.int64)


def _table_folder(location: str) -> str:
    """The table folder of a metadata file in its `metadata/` folder (its newest metadata is the table's now), or
    `location` as it is."""
    folder, name = posixpath.split(location)
    if name.endswith(".metadata.json") and posixpath.basename(folder) == "metadata":
        return posixpath.dirname(folder)
    return location


def _current_metadata(location: str) -> str:
    """The table's current metadata file: the version hint's, else the highest numbered one."""
    fs, base = filesystem(location)
    folder = posixpath.join(base, "metadata")
    try:
        with fs.open_input_stream(posixpath.join(folder, "version-hint.text")) as stream:
            hint = stream.read().decode().strip()
        if fs.get_file_info(posixpath.join(folder, f"v{hint}.metadata.json")).type == pafs.FileType.File:
            return f"{location}/metadata/v{hint}.metadata.json"
    except (OSError, pa.ArrowException):
        pass
    try:
        names = [i.base_name for i in fs.get_file_info(pafs.FileSelector(folder)) if i.base_name.endswith(".metadata.json")]
    except (OSError, pa.ArrowException) as exc:
        raise errors.InvalidArgument(f"cannot import {location}: {str(exc).strip().splitlines()[0]}") from None
    if not names:
        raise errors.InvalidArgument(f"cannot import {location}: metadata/ holds no Iceberg metadata file")
    numbered = sorted(names, key=lambda n: (int(m.group(1)) if (m := _VERSION.match(n)) else -1, n))
    return f"{location}/metadata/{numbered[-1]}"


def _readable(path: str) -> str:
    """A data file's location as Spark and pyarrow read it (local `file:` URIs as paths, `s3://` as `s3a://`)."""
    return normalized_location(path) if path.startswith("file:") else object_store.spark_uri(path)


def _position_deletes(paths: set[str], location: str) -> dict[str, np.ndarray]:
    """Data file path (as the manifests name it) -> sorted positions the position delete files delete."""
    found: dict[str, list[np.ndarray]] = defaultdict(list)
    for path in sorted(paths):
        fs, real = filesystem(_readable(path))
        try:
            with fs.open_input_file(real) as handle:
                rows = pq.read_table(handle, columns=["file_path", "pos"])
        except (OSError, pa.ArrowException, KeyError) as exc:
            raise errors.InvalidArgument(f"cannot import {location}: delete file {path} cannot be read: "
                                         f"{str(exc).strip().splitlines()[0]}") from None
        targets = rows.column("file_path").to_numpy(zero_copy_only=False)
        positions = rows.column("pos").to_numpy(zero_copy_only=False).astype(np.int64)
        for target in np.unique(targets):
            found[str(target)].append(positions[targets == target])
    return {path: np.unique(np.concatenate(parts)) for path, parts in found.items()}


def _file_names(path: str, by_id: dict[int, str], location: str) -> tuple[tuple[str, str], ...]:
    """(column name, the name this file stores it under) where they differ, by the footer's field ids."""
    fs, real = filesystem(_readable(path))
    try:
        with fs.open_input_file(real) as handle:
            schema = pq.read_schema(handle)
    except (OSError, pa.ArrowException) as exc:
        raise errors.InvalidArgument(f"cannot import {location}: data file {path} cannot be read: "
                                     f"{str(exc).strip().splitlines()[0]}") from None
    differ = []
    for field in schema:
        field_id = int(field.metadata[_FIELD_ID]) if field.metadata and _FIELD_ID in field.metadata else None
        name = by_id.get(field_id)
        if name is not None and name != field.name:
            differ.append((name, field.name))
    return tuple(differ)
