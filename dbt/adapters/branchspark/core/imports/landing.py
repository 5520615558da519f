"""A SourceTable landed on a branch: one transaction creates the table and records ONE insert of the source's
rows, as borrowed segments (its files where they lie, never copied) and, for rows its deletes hide (Delta's
deletion vectors, Iceberg's position deletes), tombstones: small Parquet files of those rows' images and
identities, written with pyarrow as storage/writer.py lays tombstones out. No data file is written."""
from __future__ import annotations

import uuid
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import types as T

from .. import errors
from ..catalog.namespace import split_name
from ..catalog.schema import Schema, history_entry
from ..catalog.state import SegmentInfo, SegmentKind, TableState
from ..catalog.tombstones import TombstoneInfo
from ..operations import ObjectKind, Op
from ..storage import object_store
from ..storage.layout import SEGMENT_COLUMN, SEQ_DIGITS, Warehouse
from ..storage.reader import ROW_FILE, ROW_POS, ROW_SEQ, TOMB_SEQ
from ..transaction import Transaction
from .source import SourceFile, SourceTable, arrow_type, filesystem


def land_import(tx: Transaction, source: SourceTable, name: str, primary_key: list[str] | None) -> None:
    """Create table `name` on the transaction's branch holding `source`'s rows (see the module's doc)."""
    database, _ = split_name(name)
    if tx.has_table(name):
        raise errors.AlreadyExists("table", name, tx.branch)
    if primary_key and any(f.deleted is not None and len(f.deleted) for f in source.files):
        raise errors.InvalidArgument(f"cannot import {source.location} with a primary key: it has deleted rows "
                                     f"(deletion vectors or position deletes), which an import keeps only on "
                                     f"tables without one yet; import it without --primary-key")
    if not tx.has_database(database):
        tx.create_database(database)
    tx.create_table(name, source.struct(), partition_by=source.partition_by, primary_key=primary_key)
    state = tx._writable_table(name)
    table_schema = tx._schema(state)
    seq = tx._seq()
    file_schemas: dict[tuple, Schema] = {}
    by_segment: dict[tuple, list[SourceFile]] = defaultdict(list)
    for file in source.files:
        stored = _stored_names(source, file)
        if stored not in file_schemas:
            file_schemas[stored] = _file_schema(table_schema, stored)
        values = tuple(sorted(file.partition_values.items(), key=lambda kv: kv[0]))
        by_segment[(file.folder, values, stored)].append(file)
    segments, of_file = [], {}
    for (folder, values, stored), files in sorted(by_segment.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        files = sorted(files, key=lambda f: f.name)
        segment = SegmentInfo(f"s{seq:0{SEQ_DIGITS}d}-{uuid.uuid4().hex}", state.id, folder, seq,
                              file_schemas[stored].id, SegmentKind.DATA,
                              tuple(_stored_name(source, c) for c in source.partition_by), dict(values),
                              tuple(f.name for f in files), tuple(f.size for f in files), borrowed=True)
        segments.append(segment)
        of_file.update({f.uri: segment for f in files})
    schema_ids = {s.schema_id for s in segments} - {table_schema.id}
    for schema in file_schemas.values():
        if schema.id in schema_ids:  # readable, out of sight: the names only the source's files use
            tx.ns.add_schema(schema, state.id)
    history = state.schema_history + tuple(history_entry(i, seq, visible=False) for i in sorted(schema_ids))
    tombstones = _write_tombstones(tx.lakehouse.warehouse, state, source, file_schemas, of_file, seq)
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


def _stored_names(source: SourceTable, file: SourceFile) -> tuple[str, ...]:
    """The name each source column has in this file's schema (in the source's column order)."""
    own = dict(file.file_names)
    return tuple(own.get(c.name, c.file_name) for c in source.columns)


def _stored_name(source: SourceTable, column_name: str) -> str:
    return next(c.file_name for c in source.columns if c.name == column_name)


def _file_schema(table_schema: Schema, stored: tuple[str, ...]) -> Schema:
    """The table's schema, or (when the files use other names) a schema of the same column ids under those names:
    reads project by id, so the table's names read the files' columns."""
    if tuple(c.name for c in table_schema.columns) == stored:
        return table_schema
    columns = tuple(type(c)(c.id, name, c.type_json, c.nullable, c.default, c.aliases)
                    for c, name in zip(table_schema.columns, stored))
    return Schema(uuid.uuid4().hex, columns)


def _write_tombstones(warehouse: Warehouse, state: TableState, source: SourceTable, file_schemas: dict,
                      of_file: dict, seq: int) -> list[TombstoneInfo]:
    """One tombstone per file schema of the rows the source's deletes hide: their images and identities."""
    hidden: dict[str, list[SourceFile]] = defaultdict(list)
    for file in source.files:
        if file.deleted is not None and len(file.deleted):
            hidden[of_file[file.uri].schema_id].append(file)
    schemas = {s.id: s for s in file_schemas.values()}
    tombstones = []
    for schema_id, files in sorted(hidden.items()):
        parts = [_deleted_rows(schemas[schema_id], file, of_file[file.uri], seq) for file in files]
        rows = pa.concat_tables(parts)
        relative = warehouse.new_tombstone_dir(state.id, seq)
        fs, base = object_store.filesystem(warehouse.root)
        if not warehouse.on_object_store:
            fs.create_dir(f"{base}/{relative}", recursive=True)
        name = f"part-00000-{uuid.uuid4().hex}.parquet"
        pq.write_table(rows, f"{base}/{relative}/{name}", filesystem=fs, coerce_timestamps="us",
                       allow_truncated_timestamps=True)
        size = fs.get_file_info(f"{base}/{relative}/{name}").size
        segments = sorted({of_file[f.uri].id for f in files})
        row_files = sorted({f"{of_file[f.uri].id}/{f.name}" for f in files})
        tombstones.append(TombstoneInfo(uuid.uuid4().hex, state.id, relative, seq, schema_id, rows.num_rows,
                                        tuple(segments), tuple(row_files), (name,), (size,)))
    return tombstones


def _deleted_rows(written: Schema, file: SourceFile, segment: SegmentInfo, seq: int) -> pa.Table:
    """The rows of `file` at its deleted positions, in `written`'s columns, with their row ids."""
    fs, path = filesystem(file.uri)
    with fs.open_input_file(path) as handle:
        parquet = pq.ParquetFile(handle)
        present = [c.name for c in written.columns if c.name in parquet.schema_arrow.names]
        rows = parquet.read(columns=present).take(pa.array(file.deleted, pa.int64()))
    count = len(file.deleted)
    columns = {}
    for column in written.columns:
        flat = not isinstance(column.data_type, (T.StructType, T.ArrayType, T.MapType))
        if column.name in rows.column_names:
            value = rows.column(column.name)
            columns[column.name] = value.cast(arrow_type(column.data_type)) if flat else value
        elif column.name in segment.partition_values:
            text = segment.partition_values[column.name]
            columns[column.name] = pa.array([text] * count, pa.string()).cast(arrow_type(column.data_type)) \
                if text is not None else pa.nulls(count, arrow_type(column.data_type))
        else:
            columns[column.name] = pa.nulls(count, arrow_type(column.data_type))
    columns[SEGMENT_COLUMN] = pa.array([segment.id] * count, pa.string())
    columns[ROW_FILE] = pa.array([f"{segment.id}/{file.name}"] * count, pa.string())
    columns[ROW_POS] = pa.array(file.deleted, pa.int64())
    columns[ROW_SEQ] = pa.array(np.full(count, seq, np.int64))
    columns[TOMB_SEQ] = pa.array(np.full(count, seq, np.int64))
    return pa.table(columns)
