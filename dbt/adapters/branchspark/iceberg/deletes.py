"""Tombstones as Iceberg position deletes: for each data file of a table version, the positions of the rows
the version's tombstones delete.

Iceberg's equality deletes could carry a keyed tombstone as it is, but pyiceberg does not read them, so both
kinds become position deletes, computed with pyarrow from change-sized inputs where they can be:
- keyless tables: a tombstone names (row-id file, position). A plain segment's row-id file is its data file,
  so the positions are the tombstone's own. Rows of compacted or merged segments keep their identity as
  hidden columns: those files' two identity columns are read to find where each named row now is (the
  reader applies a tombstone to them in the same cases, storage/reader.py);
- keyed tables: a tombstone deletes the rows with its key written before it (row sequence lower than the
  tombstone's). Those are found by reading the key columns of the data files older than the tombstone.
"""
from __future__ import annotations

import posixpath
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import files
from ..core.catalog.schema import Schema
from ..core.catalog.state import SegmentInfo, TableState
from ..core.catalog.tombstones import TombstoneInfo
from ..core.storage.layout import SEGMENT_COLUMN, Warehouse, seq_of_segment_name
from ..core.storage.reader import (
    ROW_FILE,
    ROW_POS,
    ROW_SEQ,
    STORED_IDENTITY_KINDS,
    TOMB_SEQ,
    moved_tombstones,
    segment_group,
)

_POS = "_bs_iceberg_pos"
_TSEQ_MAX = "_bs_iceberg_tseq"


@dataclass(frozen=True)
class DataFileRef:
    """One Parquet data file of a segment: its location relative to the warehouse."""

    segment: SegmentInfo
    relative: str

    @property
    def row_file(self) -> str:
        """Its row-id name: the path below the segment root (`_bs_seg=`); a borrowed file's, its segment's id and
        its name (storage/reader.py)."""
        if self.segment.external:
            return f"{self.segment.id}/{posixpath.basename(self.relative)}"
        return self.relative.split(f"{SEGMENT_COLUMN}=", 1)[1]


def segment_files(warehouse: Warehouse, segment: SegmentInfo) -> list[DataFileRef]:
    names = segment.files
    if not names:  # segments written before segments listed their files
        prefix = segment.path + "/"
        names = sorted(p[len(prefix):] for p, _ in warehouse.list_files(segment.path) if p.endswith(".parquet")
                       and "/_" not in "/" + p[len(prefix):] and "/." not in "/" + p[len(prefix):])
    return [DataFileRef(segment, f"{segment.path}/{name}") for name in names]


def position_deletes(warehouse: Warehouse, table: TableState, schema_of, data: list[DataFileRef],
                     tombstones: list[TombstoneInfo], memo: dict) -> dict[str, np.ndarray]:
    """Relative data file path -> sorted positions deleted in it (files without deletions left out).

    `memo` keeps what one tombstone deletes in one data file (both immutable) across the versions of a
    table, so each new version pays only for its new tombstones."""
    if not tombstones or not data:
        return {}
    found: dict[str, list[np.ndarray]] = defaultdict(list)
    if table.primary_key:
        current = schema_of(table.schema_id)
        for tomb in tombstones:
            for ref in data:
                key = (tomb.id, ref.relative)
                if key not in memo:
                    memo[key] = _keyed(warehouse, table, schema_of, current, ref, tomb, memo)
                found[ref.relative].append(memo[key])
    else:
        targets = {g for t in tombstones for g in t.target_segments}
        moved = bool(moved_tombstones(tombstones, [d.segment for d in data]))
        for tomb in tombstones:
            for ref in data:
                stored = ref.segment.kind in STORED_IDENTITY_KINDS
                if stored and not (moved or segment_group(ref.segment) in targets):
                    continue
                key = (tomb.id, ref.relative)
                if key not in memo:
                    memo[key] = _keyless(warehouse, ref, tomb, stored, memo)
                found[ref.relative].append(memo[key])
    out = {}
    for relative, parts in found.items():
        parts = [p for p in parts if len(p)]
        if len(parts) == 1 and _increasing(parts[0]):  # one tombstone's rows, in file order: sorted already
            out[relative] = parts[0]
        elif parts:
            out[relative] = np.unique(np.concatenate(parts))
    return out


def _increasing(positions: np.ndarray) -> bool:
    return bool(np.all(positions[1:] > positions[:-1]))


def repeated_label(value: str, count: int) -> pa.Array:
    """`count` copies of `value` as a dictionary array of one entry: no copies in memory (a file written
    with store_schema=False reads back as plain strings; Parquet encodes a string column by dictionary anyway)."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(count, dtype=np.int32)), pa.array([value], pa.string()))


def repeated_text(value: str | None, count: int) -> pa.Array:
    """A string column of `count` copies of `value` (NULL for None), built in Arrow: a Python list of a
    million strings took seconds."""
    return pa.repeat(pa.scalar(value, pa.string()), count)


def _read(warehouse: Warehouse, relative: str, columns: list[str]) -> pa.Table:
    fs, path = files.located(warehouse, relative)
    return pq.read_table(path, columns=columns, filesystem=fs, partitioning=None)


def _keyless(warehouse, ref: DataFileRef, tomb: TombstoneInfo, stored: bool, memo: dict) -> np.ndarray:
    named = memo.get(tomb.id)
    if named is None:
        named = memo[tomb.id] = _read(warehouse, tomb.path, [ROW_FILE, ROW_POS])
    if not stored:  # a plain segment's data file is the row-id file the tombstone names
        hit = named.filter(pc.equal(named.column(ROW_FILE), ref.row_file))
        return np.asarray(hit.column(ROW_POS).to_numpy(), dtype=np.int64)
    rows = _read(warehouse, ref.relative, [ROW_FILE, ROW_POS])
    rows = rows.append_column(_POS, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    hit = rows.join(named, [ROW_FILE, ROW_POS], join_type="inner")
    return np.asarray(hit.column(_POS).to_numpy(), dtype=np.int64)


def _keyed(warehouse, table, schema_of, current: Schema, ref: DataFileRef, tomb: TombstoneInfo,
           memo: dict) -> np.ndarray:
    """Positions in `ref` of rows with a key `tomb` deletes and a sequence lower than the tombstone's."""
    segment = ref.segment
    stored = segment.kind in STORED_IDENTITY_KINDS
    if not stored and seq_of_segment_name(segment_group(segment)) >= tomb.seq:
        return np.empty(0, dtype=np.int64)  # written with or after the tombstone
    keys = [current.column(k) for k in table.primary_key]
    key_names = [f"_bs_k{i}" for i in range(len(keys))]
    doomed = memo.get(tomb.id)
    if doomed is None:
        written = schema_of(tomb.schema_id)
        raw = _read(warehouse, tomb.path, [written.source_of(k).name for k in keys] + [TOMB_SEQ])
        doomed = _project_keys(raw, written, keys, key_names, {}).append_column(TOMB_SEQ, raw.column(TOMB_SEQ))
        doomed = doomed.group_by(key_names).aggregate([(TOMB_SEQ, "max")]).rename_columns([*key_names, _TSEQ_MAX])
        memo[tomb.id] = doomed
    written = schema_of(segment.schema_id)
    in_file = [written.source_of(k).name for k in keys if written.source_of(k).name not in segment.partition_by]
    raw = _read(warehouse, ref.relative, in_file + ([ROW_SEQ] if stored else []))
    rows = _project_keys(raw, written, keys, key_names, segment.partition_values)
    seq = raw.column(ROW_SEQ) if stored else pa.array(
        np.full(raw.num_rows, seq_of_segment_name(segment_group(segment)), dtype=np.int64))
    rows = rows.append_column(ROW_SEQ, seq).append_column(_POS, pa.array(np.arange(raw.num_rows, dtype=np.int64)))
    hit = rows.join(doomed, key_names, join_type="inner")
    hit = hit.filter(pc.less(hit.column(ROW_SEQ), hit.column(_TSEQ_MAX)))
    return np.asarray(hit.column(_POS).to_numpy(), dtype=np.int64)


def _project_keys(raw: pa.Table, written: Schema, keys, key_names, partition_values: dict) -> pa.Table:
    """The key columns of `raw` (written with `written`) in the current key types, named _bs_k<i>."""
    columns = []
    for key in keys:
        source = written.source_of(key)
        target = _arrow_type(key)
        if source.name in partition_values:
            value = partition_values[source.name]
            column = repeated_text(value, raw.num_rows).cast(target)
        else:
            column = raw.column(source.name).cast(target)
        columns.append(column)
    return pa.table(dict(zip(key_names, columns)))


def _arrow_type(column) -> pa.DataType:
    from_spark = {"integer": pa.int32(), "long": pa.int64(), "short": pa.int16(), "byte": pa.int8(),
                  "string": pa.string(), "date": pa.date32(), "boolean": pa.bool_(), "double": pa.float64(),
                  "float": pa.float32(), "binary": pa.binary()}
    name = column.data_type.typeName()
    if name == "decimal":
        return pa.decimal128(column.data_type.precision, column.data_type.scale)
    if name in ("timestamp", "timestamp_ntz"):
        return pa.timestamp("us", tz="UTC" if name == "timestamp" else None)
    return from_spark.get(name, pa.string())
