"""What an import reads of a source table, whatever its format: columns, partition columns, and its live data files
with the rows its deletes hide. Nothing here writes; the readers of each format (parquet_dir.py, delta_log.py,
iceberg_table.py) build these, landing.py commits them."""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from datetime import date

import numpy as np
import pyarrow as pa
from pyarrow import fs as pafs
from pyspark.sql import types as T

from .. import errors
from ..storage import object_store
from ..storage.layout import resolve_location

# A borrowed file's row id is its segment's id and its name as Spark's `_metadata.file_path` ends (a URI: a name
# that a URI escapes would not compare equal), so names must read the same either way.
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9._=+,@-]+$")


@dataclass(frozen=True)
class SourceColumn:
    name: str  # as the source names it
    data_type: T.DataType
    nullable: bool = True
    stored_as: str | None = None  # the name in its data files when another (Delta column mapping), else `name`
    field_id: int | None = None  # its field id in the source (Iceberg's, Delta's column mapping id), if any
    nested_ids: tuple[tuple[tuple[str, ...], int], ...] = ()  # its nested fields' ids, by path (Column.source_ids)

    @property
    def file_name(self) -> str:
        return self.stored_as or self.name

    def source_ids(self) -> tuple:
        """Its field ids in the source as Column.source_ids keeps them."""
        return ((((), self.field_id),) if self.field_id is not None else ()) + self.nested_ids


@dataclass(frozen=True)
class SourceFile:
    folder: str  # absolute path or URI of the folder holding it
    name: str
    size: int
    partition_values: dict = field(default_factory=dict)  # stored name -> text (None: NULL), for folder values
    deleted: np.ndarray | None = None  # sorted positions of rows the source's deletes hide
    file_names: tuple[tuple[str, str], ...] = ()  # (column name, name in this file) where they differ (Iceberg)
    order: int = 0  # when the source wrote it, as it orders writes (Iceberg's data sequence number, Delta's mtime)

    @property
    def uri(self) -> str:
        return f"{self.folder}/{self.name}"


@dataclass
class SourceTable:
    location: str
    format: str  # parquet | delta | iceberg
    version: str | None  # the source version imported, as its format names it ("3", a snapshot id), or None
    columns: list[SourceColumn]
    partition_by: list[str]  # source column names whose values come from the files' folders
    files: list[SourceFile]

    def struct(self) -> T.StructType:
        return T.StructType([T.StructField(c.name, c.data_type, c.nullable) for c in self.columns])

    def source_ids(self) -> dict[str, tuple]:
        """Each column's field ids in the source, by column name (its files carry them: Iceberg clients must be
        served them)."""
        return {c.name: c.source_ids() for c in self.columns if c.source_ids()}


def added_columns(location: str, version: str, old: list[SourceColumn], new: list[SourceColumn]) -> list[SourceColumn]:
    """The columns schema `new` adds to `old` (matched by field id where the source has them, else by name); any
    other change (a rename, a drop, a new type) is refused in one line: a refresh follows added columns only."""
    def key(column: SourceColumn):
        return column.field_id if column.field_id is not None else column.name.lower()

    after = {key(c): c for c in new}
    changed = [c.name for c in old if key(c) not in after or
               (after[key(c)].name, after[key(c)].data_type) != (c.name, c.data_type)]
    if changed:
        raise errors.InvalidArgument(f"cannot refresh from {location}: version {version} renamed, dropped or retyped "
                                     f"column(s) {changed}, which a refresh does not follow yet (it follows added "
                                     f"columns); import it again")
    known = {key(c) for c in old}
    return [c for c in new if key(c) not in known]


@dataclass
class VersionChanges:
    """What one source version (a Delta version, an Iceberg snapshot) did to the files of the one before it."""

    version: str
    added: list[SourceFile]  # new files (`deleted`: what their own deletion vectors hide)
    removed: list[SourceFile]  # files it no longer lists (`deleted`: what was hidden of them before)
    hidden: list[SourceFile]  # files whose deletion vector grew (`deleted`: the positions newly hidden)
    columns: list[SourceColumn]  # the source's columns at this version (its new files hold them)
    added_columns: list[SourceColumn] = field(default_factory=list)  # those the version added to the schema


def normalized_location(source: str) -> str:
    """A source location as the import keeps it: local ones as absolute paths (also `file:` URIs, which
    Spark and pyarrow then read alike), other URIs as given (`s3://` as `s3a://`)."""
    location = resolve_location(source)
    if location.startswith("file:"):
        location = location[len("file:"):]
        location = "/" + location.lstrip("/")
    return location.rstrip("/") or "/"


def filesystem(location: str) -> tuple[pafs.FileSystem, str]:
    return object_store.filesystem(location)


def delete_external_file(uri: str) -> None:
    """Delete a file outside the warehouse that branchspark was handed (gc, after `import --take-ownership`); one
    already gone is no error."""
    fs, path = filesystem(uri)
    try:
        fs.delete_file(path)
    except FileNotFoundError:
        pass


def join(location: str, relative: str) -> str:
    return posixpath.join(location, relative) if "://" not in location else f"{location.rstrip('/')}/{relative}"


def source_file(location: str, relative: str, size: int, **kwargs) -> SourceFile:
    """The SourceFile at `relative` below `location` (or at an absolute path or URI)."""
    full = relative if relative.startswith("/") or "://" in relative else join(location, relative)
    full = normalized_location(full) if full.startswith("file:") else full
    folder, name = full.rsplit("/", 1)
    if not _PLAIN_NAME.match(name):
        raise errors.InvalidArgument(f"cannot import {location}: data file name '{name}' has characters branchspark "
                                     f"cannot borrow a file under yet (letters, digits and ._=+,@- only)")
    return SourceFile(folder, name, int(size), **kwargs)


def spark_type(arrow: pa.DataType, where: str) -> T.DataType:
    """The Spark type Spark reads a Parquet column of this Arrow type as."""
    if pa.types.is_dictionary(arrow):
        return spark_type(arrow.value_type, where)
    simple = [(pa.types.is_boolean, T.BooleanType()), (pa.types.is_int8, T.ByteType()), (pa.types.is_int16, T.ShortType()),
              (pa.types.is_int32, T.IntegerType()), (pa.types.is_int64, T.LongType()),
              (pa.types.is_float32, T.FloatType()), (pa.types.is_float64, T.DoubleType()),
              (pa.types.is_string, T.StringType()), (pa.types.is_large_string, T.StringType()),
              (pa.types.is_binary, T.BinaryType()), (pa.types.is_large_binary, T.BinaryType()),
              (pa.types.is_date32, T.DateType())]
    for check, result in simple:
        if check(arrow):
            return result
    if pa.types.is_timestamp(arrow):
        return T.TimestampType() if arrow.tz else T.TimestampNTZType()
    if pa.types.is_decimal(arrow):
        return T.DecimalType(arrow.precision, arrow.scale)
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
        return T.ArrayType(spark_type(arrow.value_type, where), True)
    if pa.types.is_map(arrow):
        return T.MapType(spark_type(arrow.key_type, where), spark_type(arrow.item_type, where), True)
    if pa.types.is_struct(arrow):
        return T.StructType([T.StructField(f.name, spark_type(f.type, where), True) for f in arrow])
    raise errors.InvalidArgument(f"cannot import {where}: column type {arrow} is not supported")


def arrow_type(data_type: T.DataType) -> pa.DataType:
    """The Arrow type of a flat Spark type (a partition column's constant in a tombstone)."""
    simple = {T.BooleanType: pa.bool_(), T.ByteType: pa.int8(), T.ShortType: pa.int16(), T.IntegerType: pa.int32(),
              T.LongType: pa.int64(), T.FloatType: pa.float32(), T.DoubleType: pa.float64(),
              T.StringType: pa.string(), T.BinaryType: pa.binary(), T.DateType: pa.date32(),
              T.TimestampType: pa.timestamp("us", tz="UTC"), T.TimestampNTZType: pa.timestamp("us")}
    if isinstance(data_type, T.DecimalType):
        return pa.decimal128(data_type.precision, data_type.scale)
    return simple.get(type(data_type), pa.string())


def partition_type(values: list[str | None]) -> T.DataType:
    """The type Spark infers for a partition column from its folder values: int, bigint, double, date, else string."""
    present = [v for v in values if v is not None]
    if not present:
        return T.StringType()

    def all_parse(parse) -> bool:
        try:
            for value in present:
                parse(value)
            return True
        except ValueError:
            return False

    if all(re.fullmatch(r"-?\d+", v) for v in present):
        return T.IntegerType() if all(-2**31 <= int(v) < 2**31 for v in present) else T.LongType()
    if all_parse(float) and not any(v.lower() in ("nan", "inf", "-inf", "infinity") for v in present):
        return T.DoubleType()
    if all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", v) for v in present) and all_parse(date.fromisoformat):
        return T.DateType()
    return T.StringType()
