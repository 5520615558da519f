"""A SourceTable landed on a branch: one transaction creates the table and records ONE insert of the source's
rows, as borrowed segments (its files where they lie, never copied) and, for rows its deletes hide (Delta's
deletion vectors, Iceberg's position deletes), tombstones: small Parquet files of those rows' images and
identities, picked from the borrowed files by Spark (only the positions leave the driver) and written by
storage/writer.py. No data file is written."""
from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import replace

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from .. import errors
from ..catalog.namespace import split_name
from ..catalog.schema import SOURCE_ID_LIMIT, Schema, history_entry
from ..catalog.state import SegmentInfo, SegmentKind, TableState
from ..catalog.tombstones import TombstoneInfo, first_written_in
from ..operations import ObjectKind, Op
from ..storage.layout import SEQ_DIGITS
from ..storage.reader import ROW_FILE, ROW_POS
from ..transaction import Transaction
from .source import SourceColumn, SourceFile, SourceTable, VersionChanges


def land_import(tx: Transaction, source: SourceTable, name: str, primary_key: list[str] | None) -> None:
    """Create table `name` on the transaction's branch holding `source`'s rows (see the module's doc)."""
    database, _ = split_name(name)
    if tx.has_table(name):
        raise errors.AlreadyExists("table", name, tx.branch)
    too_high = [name for name, ids in source.source_ids().items() if max(i for _, i in ids) >= SOURCE_ID_LIMIT]
    if too_high:
        raise errors.InvalidArgument(f"cannot import {source.location}: column(s) {too_high} have field ids of "
                                     f"{SOURCE_ID_LIMIT} or more, which branchspark does not keep; rewrite the table")
    if not tx.has_database(database):
        tx.create_database(database)
    tx.create_table(name, source.struct(), partition_by=source.partition_by, primary_key=primary_key,
                    source_ids=source.source_ids())
    state = tx._writable_table(name)
    table_schema = tx._schema(state)
    file_schemas: dict[tuple, Schema] = {}
    for file in source.files:
        stored = _stored_names(source.columns, file)
        if stored not in file_schemas:
            file_schemas[stored] = _file_schema(table_schema, stored)
    segments, tombstones, of_file, first_seq = [], [], {}, None
    for files in (_epochs(source.files) if primary_key else [source.files]):
        seq = tx._seq()
        first_seq = first_seq or seq
        landed, of_epoch = _borrowed_segments(state.id, source, files, file_schemas, seq)
        segments += landed
        of_file.update(of_epoch)
        # a key's tombstone deletes the rows of that key written before it: on a keyed table, just after its epoch
        tombstones += _write_tombstones(tx, state, files, file_schemas, of_file, tx._seq() if primary_key else seq)
    schema_ids = {s.schema_id for s in segments} - {table_schema.id}
    for schema in file_schemas.values():
        if schema.id in schema_ids:  # readable, out of sight: the names only the source's files use
            tx.ns.add_schema(schema, state.id)
    history = state.schema_history + tuple(history_entry(i, first_seq, visible=False) for i in sorted(schema_ids))
    tx.ns.add_segments(segments)
    for tombstone in tombstones:
        tx.ns.add_tombstone(tombstone)
    tx.ns.put_table(state.evolve(schema_history=history, segments=tuple(s.id for s in segments),
                                 tombstones=tuple(t.id for t in tombstones)))
    if primary_key:
        tx._check_rows(name, state, table_schema, tx.read(name), list(state.primary_key), "primary key",
                       against_table=False)
    tx.record(ObjectKind.TABLE, state.id, name, Op.INSERT, seq=seq, segments_added=[s.id for s in segments],
              tombstones_added=[t.id for t in tombstones], imported_from=source.location,
              source_format=source.format, source_version=source.version)


def land_refresh(tx: Transaction, name: str, change: VersionChanges, location: str, source_format: str) -> None:
    """One source version's own changes to imported table `name` as one change on the transaction's branch: its new
    files as borrowed segments (an insert), the rows of files it removed and the rows its deletion vectors newly
    hide (Delta's deletion vectors, Iceberg's position deletes) as tombstones (a delete); both at once are an update
    (SPEC 3.3), so merges and branch_changes see the source's rows as it changed them. Columns the version added
    are added to the table first (its earlier rows read NULL in them)."""
    state = tx._writable_table(name)
    borrowed = {(s.path, f): s for s in tx.ns.segment_infos(state.segments) if s.external for f in s.files}
    if not borrowed:
        raise errors.InvalidArgument(f"cannot refresh {name}: it no longer reads any file of {location} (overwritten "
                                     f"or compacted on branch '{tx.branch}'); import it again")
    origin = {"refreshed_from": location, "source_format": source_format, "source_version": change.version}
    for column in change.added_columns:  # recorded with the version, which may change nothing else
        tx.add_column(name, column.name, column.data_type, source_ids=column.source_ids(), origin=origin)
    state = tx._writable_table(name)
    file_schemas = _refreshed_file_schemas(tx, state, {s.schema_id for s in borrowed.values()}, change, name)
    # On a keyed table a tombstone deletes its keys' rows written before it: the version's deletes come before its
    # new files (an update's new rows keep their keys), the rows its new files hide already after them.
    keyed = bool(state.primary_key)
    deletes_seq = tx._seq()
    seq = tx._seq() if keyed else deletes_seq
    # a removed file's rows, but those it hid before (its `deleted`); the rows a file's new deletes hide
    removed = [(file, _borrowed_segment(borrowed, file, name, location, tx.branch)) for file in change.removed]
    hidden = [(file, _borrowed_segment(borrowed, file, name, location, tx.branch)) for file in change.hidden]
    by_segment: dict[tuple, list[SourceFile]] = defaultdict(list)
    for file in change.added:
        stored = _stored_names(change.columns, file)
        by_segment[(file.folder, tuple(sorted(file.partition_values.items())), stored)].append(file)
    segments, of_file = [], {}
    partition_by = next(iter(borrowed.values())).partition_by
    for (folder, values, stored), files in sorted(by_segment.items(), key=lambda kv: (kv[0][0], str(kv[0][1:]))):
        files = sorted(files, key=lambda f: f.name)
        segment = SegmentInfo(f"s{seq:0{SEQ_DIGITS}d}-{uuid.uuid4().hex}", state.id, folder, seq,
                              file_schemas[stored].id, SegmentKind.DATA, partition_by, dict(values),
                              tuple(f.name for f in files), tuple(f.size for f in files), borrowed=True)
        segments.append(segment)
        of_file.update({f.uri: segment for f in files})
    own_hidden = [(f, of_file[f.uri]) for f in change.added if f.deleted is not None and len(f.deleted)]
    deleted = _position_tombstones(tx, state, hidden, deletes_seq, removed=removed)
    carried = _position_tombstones(tx, state, own_hidden, tx._seq() if keyed else seq)
    known = {entry["schema_id"] for entry in state.schema_history}
    new_schemas = [schema for schema in file_schemas.values() if schema.id not in known]
    for schema in new_schemas:  # readable, out of sight: the names the source's files use
        tx.ns.add_schema(schema, state.id)
    tx.ns.add_segments(segments)
    for tombstone in deleted + carried:
        tx.ns.add_tombstone(tombstone)
    history = state.schema_history + tuple(history_entry(s.id, deletes_seq, visible=False) for s in new_schemas)
    tx.ns.put_table(state.evolve(schema_history=history, segments=state.segments + tuple(s.id for s in segments),
                                 tombstones=state.tombstones + tuple(t.id for t in deleted + carried)))
    added = {"segments_added": [s.id for s in segments], "tombstones_added": [t.id for t in carried]}
    if deleted:
        touched = sorted({g for t in deleted for g in first_written_in(t)})
        op = Op.UPDATE if segments else Op.DELETE
        tx.record(ObjectKind.TABLE, state.id, name, op, seq=seq, segments_touched=touched,
                  rows=sum(t.row_count for t in deleted), **origin,
                  **{**added, "tombstones_added": [t.id for t in deleted + carried]})
    elif segments:
        tx.record(ObjectKind.TABLE, state.id, name, Op.INSERT, seq=seq, **added, **origin)


def _refreshed_file_schemas(tx: Transaction, state: TableState, borrowed_schema_ids: set[str],
                            change: VersionChanges, name: str) -> dict[tuple, Schema]:
    """The schema that reads each set of names the version's new files store the source's columns under: the
    table's column ids under those names. A source column is the table column of its field id (Iceberg, Delta's
    column mapping), else the one the borrowed files already store under its name, else the table's column of
    its name (one a refresh added). A schema equal to one the borrowed files use is that one."""
    current = tx._schema(state)
    earlier = [tx.ns.schema(i) for i in sorted(borrowed_schema_ids)]
    by_stored = {c.name: c for schema in earlier for c in schema.columns}
    schemas = {}
    for file in change.added:
        stored = _stored_names(change.columns, file)
        if stored in schemas:
            continue
        columns = []
        for source_column, file_name in zip(change.columns, stored):
            column = next((c for c in current.columns if source_column.field_id is not None
                           and c.source_id() == source_column.field_id), None) \
                or by_stored.get(file_name) or current.column(source_column.name)
            if column is None:
                raise errors.InvalidArgument(f"cannot refresh {name}: source column {source_column.name!r} has no "
                                             f"column in the table (renamed or dropped on branch '{tx.branch}'); "
                                             f"import it again")
            columns.append(replace(column, name=file_name, type_json=source_column.data_type.json()))
        schemas[stored] = next((s for s in earlier if s.columns == tuple(columns)),
                               Schema(uuid.uuid4().hex, tuple(columns)))
    return schemas


def recorded_source(commits, table_id: str) -> dict | None:
    """The newest import or refresh of table `table_id` among `commits` (newest first): its operation's detail
    (where from, which format, which source version), or None when the table was never imported."""
    for commit in commits:
        for op in reversed(commit.operations):
            if op.object_id == table_id and op.detail.get("source_format") and "source_version" in op.detail:
                return op.detail
    return None


def _borrowed_segment(borrowed: dict, file: SourceFile, name: str, location: str, branch: str) -> SegmentInfo:
    found = borrowed.get((file.folder, file.name))
    if found is None:
        raise errors.InvalidArgument(f"cannot refresh {name}: {location} changed {file.uri}, which table {name} no "
                                     f"longer reads on branch '{branch}' (overwritten or compacted); import it again")
    return found


def _position_tombstones(tx: Transaction, state: TableState, hidden: list[tuple[SourceFile, SegmentInfo]], seq: int,
                         removed: list[tuple[SourceFile, SegmentInfo]] = ()) -> list[TombstoneInfo]:
    """_write_position_tombstone of the files of each schema the borrowed segments were written under (a refresh
    that added columns reads its files with more columns than the files before)."""
    schema_ids = sorted({s.schema_id for _, s in list(hidden) + list(removed)})
    return [tombstone for schema_id in schema_ids
            for tombstone in _write_position_tombstone(tx, state, tx.ns.schema(schema_id),
                                                       [(f, s) for f, s in hidden if s.schema_id == schema_id], seq,
                                                       removed=[(f, s) for f, s in removed if s.schema_id == schema_id])]


def _write_position_tombstone(tx: Transaction, state: TableState, written: Schema,
                              hidden: list[tuple[SourceFile, SegmentInfo]], seq: int,
                              removed: list[tuple[SourceFile, SegmentInfo]] = ()) -> list[TombstoneInfo]:
    """A tombstone (none when it holds no row) of the rows at the `deleted` positions of the `hidden` borrowed
    files, and of every row of the `removed` ones but those their `deleted` positions hid already. Spark reads
    the rows from those files alone; only the positions, as many as the rows deleted, leave the driver."""
    hidden = [(f, s) for f, s in hidden if f.deleted is not None and len(f.deleted)]
    picked = []
    if hidden:
        picked.append(_borrowed_rows(tx, written, hidden).join(_positions(tx, hidden), [ROW_FILE, ROW_POS],
                                                               "left_semi"))
    if removed:
        picked.append(_borrowed_rows(tx, written, removed).join(_positions(tx, removed), [ROW_FILE, ROW_POS],
                                                                "left_anti"))
    if not picked:
        return []
    rows = picked[0] if len(picked) == 1 else picked[0].unionByName(picked[1])
    tombstone = tx.lakehouse.writer.write_tombstone(state, written, rows, seq, fault=tx.lakehouse.fault)
    return [tombstone] if tombstone is not None else []


def _borrowed_rows(tx: Transaction, written: Schema, files: list[tuple[SourceFile, SegmentInfo]]) -> DataFrame:
    """Every row of these borrowed files (each segment narrowed to them), with row ids."""
    names: dict[str, set] = defaultdict(set)
    segments = {}
    for file, segment in files:
        names[segment.id].add(file.name)
        segments[segment.id] = segment
    narrowed = []
    for segment_id, segment in sorted(segments.items()):
        kept = [i for i, n in enumerate(segment.files) if n in names[segment_id]]
        narrowed.append(replace(segment, files=tuple(segment.files[i] for i in kept),
                                file_sizes=tuple(segment.file_sizes[i] for i in kept) if segment.file_sizes else (),
                                file_etags=tuple(segment.file_etags[i] for i in kept) if segment.file_etags else ()))
    return tx.reader.read_borrowed(narrowed, written)


def _positions(tx: Transaction, files: list[tuple[SourceFile, SegmentInfo]]) -> DataFrame:
    """(row-id file name, position) of each file's `deleted` positions, as a DataFrame."""
    listed = [(f"{s.id}/{f.name}", f.deleted) for f, s in files if f.deleted is not None and len(f.deleted)]
    table = pa.table({ROW_FILE: pa.array([name for name, p in listed for _ in range(len(p))], pa.string()),
                      ROW_POS: pa.array(np.concatenate([p for _, p in listed]) if listed else np.empty(0, np.int64),
                                        pa.int64())})
    return tx.lakehouse.spark.createDataFrame(
        table, T.StructType([T.StructField(ROW_FILE, T.StringType()), T.StructField(ROW_POS, T.LongType())]))


def _stored_names(columns: list[SourceColumn], file: SourceFile) -> tuple[str, ...]:
    """The name each of the source's `columns` has in this file's schema (in the source's column order)."""
    own = dict(file.file_names)
    return tuple(own.get(c.name, c.file_name) for c in columns)


def _stored_name(source: SourceTable, column_name: str) -> str:
    return next(c.file_name for c in source.columns if c.name == column_name)


def _file_schema(table_schema: Schema, stored: tuple[str, ...]) -> Schema:
    """The table's schema, or (when the files use other names) a schema of the same column ids under those names:
    reads project by id, so the table's names read the files' columns."""
    if tuple(c.name for c in table_schema.columns) == stored:
        return table_schema
    columns = tuple(replace(c, name=name) for c, name in zip(table_schema.columns, stored))
    return Schema(uuid.uuid4().hex, columns)


def _epochs(files: list[SourceFile]) -> list[list[SourceFile]]:
    """The files in the order the source wrote them, cut after each write that left rows hidden. On a table with a
    primary key, landing each epoch's hidden rows in a tombstone just after it deletes them and never a later row
    of their key (an update's new row): a key's older row cannot be live beside a newer one."""
    epochs: list[list[SourceFile]] = [[]]
    order = sorted({f.order for f in files})
    for at in order:
        written = [f for f in files if f.order == at]
        epochs[-1] += written
        if any(f.deleted is not None and len(f.deleted) for f in written) and at != order[-1]:
            epochs.append([])
    return epochs


def _borrowed_segments(table_id: str, source: SourceTable, files: list[SourceFile], file_schemas: dict,
                       seq: int) -> tuple[list[SegmentInfo], dict[str, SegmentInfo]]:
    """Borrowed segments at `seq` of `files`, one per folder, partition and file schema, and each file's (by URI)."""
    by_segment: dict[tuple, list[SourceFile]] = defaultdict(list)
    for file in files:
        values = tuple(sorted(file.partition_values.items(), key=lambda kv: kv[0]))
        by_segment[(file.folder, values, _stored_names(source.columns, file))].append(file)
    segments, of_file = [], {}
    for (folder, values, stored), grouped in sorted(by_segment.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        grouped = sorted(grouped, key=lambda f: f.name)
        segment = SegmentInfo(f"s{seq:0{SEQ_DIGITS}d}-{uuid.uuid4().hex}", table_id, folder, seq,
                              file_schemas[stored].id, SegmentKind.DATA,
                              tuple(_stored_name(source, c) for c in source.partition_by), dict(values),
                              tuple(f.name for f in grouped), tuple(f.size for f in grouped), borrowed=True)
        segments.append(segment)
        of_file.update({f.uri: segment for f in grouped})
    return segments, of_file


def _write_tombstones(tx: Transaction, state: TableState, files: list[SourceFile], file_schemas: dict,
                      of_file: dict, seq: int) -> list[TombstoneInfo]:
    """One tombstone per file schema of the rows the source's deletes hide in `files`: their images and
    identities."""
    hidden: dict[str, list[SourceFile]] = defaultdict(list)
    for file in files:
        if file.deleted is not None and len(file.deleted):
            hidden[of_file[file.uri].schema_id].append(file)
    schemas = {s.id: s for s in file_schemas.values()}
    tombstones = []
    for schema_id, files in sorted(hidden.items()):
        tombstones += _write_position_tombstone(tx, state, schemas[schema_id], [(f, of_file[f.uri]) for f in files],
                                                seq)
    return tombstones
