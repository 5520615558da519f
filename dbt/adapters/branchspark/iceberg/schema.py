"""branchspark schemas as Iceberg schemas: types, field ids, the name mapping, identity partitions.

Field ids are branchspark's column ids (unique in the whole catalog), or an imported column's source ids.
The fields inside nested columns (struct fields, list elements, map keys and values) have no branchspark id:
`FieldIds` numbers them above the table's column ids, by column and path. Segment files were written by
Spark without field ids, under the names their schema version had, so a name mapping maps every name a file
may hold to a field id: current and older names of each column (and the names inside nested ones), and the names of columns
the current schema no longer has (dropped columns, the hidden identity columns of compacted segments and
of segments written in one write with their tombstone) to ids no schema uses, because pyiceberg refuses a
file with an unmapped column.
"""
from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Iterable

from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema as IcebergSchema
from pyiceberg.table.name_mapping import MappedField, NameMapping
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    IcebergType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)
from pyspark.sql import types as T

from ..core import errors
from ..core.catalog.schema import SOURCE_ID_LIMIT, Column, Schema

# Ids for names found in files but absent from the current schema: far above any column id.
UNMAPPED_ID_BASE = 2_000_000_000
# Served ids of a table's own columns when it has imported ones (FieldIds): above any source's field id.
OWN_ID_OFFSET = SOURCE_ID_LIMIT
PARTITION_FIELD_ID_BASE = 1000
_NO_COLUMN = -1  # a name held only by columns no snapshot schema has

_PRIMITIVES = {
    T.BooleanType: BooleanType(), T.ByteType: IntegerType(), T.ShortType: IntegerType(),
    T.IntegerType: IntegerType(), T.LongType: LongType(), T.FloatType: FloatType(), T.DoubleType: DoubleType(),
    T.StringType: StringType(), T.VarcharType: StringType(), T.CharType: StringType(), T.BinaryType: BinaryType(),
    T.DateType: DateType(), T.TimestampType: TimestamptzType(), T.TimestampNTZType: TimestampType(),
}


class Unsupported(errors.BranchsparkError):
    """A table shape this server cannot describe to an Iceberg client."""


class FieldIds:
    """The field id Iceberg clients see for each column and nested field of a table.

    A column's id is its branchspark id. Fields inside nested columns are numbered from `first` on (above every
    column id of the table), in order of first use, one per (column id, path of names): the same field in every
    schema of a table's metadata has one id. Lists name their element `element`, maps their `key` and `value`,
    as Spark's Parquet files and Iceberg's name mappings do.

    Imported columns keep their source's ids (Column.source_ids), nested fields' too, because the source's
    files carry them and readers match files by them. A table with such columns serves its own columns (added
    on a branch, or columns of its own files) at `offset` + their id, above any source id; `offset` is decided
    from every schema of the table's history, which only grows, so no served id moves between versions."""

    def __init__(self, first: int, offset: int = 0):
        self.first = first
        self.offset = offset
        self._ids: dict[tuple[int, tuple[str, ...]], int] = {}

    @staticmethod
    def of_table(schemas: Iterable[Schema], history: Iterable[Schema] = ()) -> "FieldIds":
        """The ids of a table whose metadata describes `schemas`, with `history` its other schemas."""
        schemas = list(schemas)
        offset = OWN_ID_OFFSET if any(c.source_ids for s in [*schemas, *history] for c in s.columns) else 0
        top = FieldIds(0, offset).last_id(schemas)
        return FieldIds(top + 1, offset)

    def column(self, column: Column) -> int:
        own = column.source_id()
        return own if own is not None else self.offset + column.id

    def id(self, column: Column, path: tuple[str, ...]) -> int:
        own = column.source_id(path)
        if own is not None:
            return own
        return self._ids.setdefault((column.id, path), self.first + len(self._ids))

    def last_id(self, schemas: Iterable[Schema]) -> int:
        """The highest id these schemas' columns (and their source's nested fields) are served under."""
        return max([self.column(c) for s in schemas for c in s.columns] +
                   [i for s in schemas for c in s.columns for _, i in c.source_ids] + [0])

    def find(self, schema: Schema, field_id: int) -> Column | None:
        """The column of `schema` served as `field_id` (what a client's schema names)."""
        return next((c for c in schema.columns if self.column(c) == field_id), None)

    @property
    def last(self) -> int:
        """The highest nested id given so far (first - 1 when none)."""
        return self.first + len(self._ids) - 1


def iceberg_type(column: Column, table_name: str, ids: FieldIds | None = None) -> IcebergType:
    return _iceberg_type(column.data_type, column, (), ids, table_name)


def _iceberg_type(data_type: T.DataType, column: Column, path: tuple[str, ...], ids: FieldIds | None,
                  table_name: str) -> IcebergType:
    if isinstance(data_type, T.DecimalType):
        return DecimalType(data_type.precision, data_type.scale)
    for spark_type, iceberg in _PRIMITIVES.items():
        if isinstance(data_type, spark_type):
            return iceberg
    nested = isinstance(data_type, (T.StructType, T.ArrayType, T.MapType))
    if not nested or ids is None:
        raise Unsupported(f"table {table_name}: column '{column.name}' has type {column.type}, which branchspark "
                          f"serve does not yet describe to Iceberg clients; read it with branchspark in Spark")

    def inner(name: str, of: T.DataType) -> tuple[int, IcebergType]:
        return ids.id(column, path + (name,)), _iceberg_type(of, column, path + (name,), ids, table_name)

    # Every nested field optional: Iceberg readers accept files without NULLs in optional fields.
    if isinstance(data_type, T.StructType):
        fields = []
        for field in data_type.fields:
            field_id, field_type = inner(field.name, field.dataType)
            fields.append(NestedField(field_id, field.name, field_type, required=False))
        return StructType(*fields)
    if isinstance(data_type, T.ArrayType):
        element_id, element = inner("element", data_type.elementType)
        return ListType(element_id=element_id, element_type=element, element_required=False)
    key_id, key = inner("key", data_type.keyType)
    value_id, value = inner("value", data_type.valueType)
    return MapType(key_id=key_id, key_type=key, value_id=value_id, value_type=value, value_required=False)


def iceberg_schema(schema: Schema, schema_id: int, table_name: str, ids: FieldIds) -> IcebergSchema:
    fields = []
    for column in schema.columns:
        default = literal_default(column, table_name)
        fields.append(NestedField(ids.column(column), column.name, iceberg_type(column, table_name, ids), required=False,
                                  initial_default=default))
    return IcebergSchema(*fields, schema_id=schema_id)


def literal_default(column: Column, table_name: str):
    """The column's default as a value, when it is a plain literal (Iceberg's `initial-default`), else None."""
    if column.default is None or isinstance(column.data_type, (T.StructType, T.ArrayType, T.MapType)):
        return None
    text = column.default.strip()
    kind = iceberg_type(column, table_name)
    try:
        if text.lower() == "null":
            return None
        if isinstance(kind, StringType) and re.fullmatch(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", text):
            return text[1:-1]
        if isinstance(kind, BooleanType) and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if isinstance(kind, (IntegerType, LongType)):
            return int(text)
        if isinstance(kind, (FloatType, DoubleType)):
            return float(text)
        if isinstance(kind, DecimalType):
            return decimal.Decimal(text)
    except (ValueError, decimal.InvalidOperation):
        return None
    return None


def name_mapping(snapshot_schemas: list[Schema], written: Iterable[Schema], hidden: Iterable[str],
                 ids: FieldIds) -> tuple[NameMapping, list[str]]:
    """The mapping of every name a file may hold to a field id, and the names whose meaning differs between
    files (one name, two columns): those the mapping cannot express. `snapshot_schemas` (newest first) are
    the schemas clients read with: their columns keep their ids, the newest name first."""
    known: list[Column] = []
    for schema in snapshot_schemas:
        known += [c for c in schema.columns if all(k.id != c.id for k in known)]
    names: dict[int, list[str]] = {}
    owner: dict[str, int] = {}
    ambiguous: list[str] = []
    for column in known:
        names[column.id] = []
        if column.name.lower() not in owner:  # a name maps to one id: the newest column holding it
            owner[column.name.lower()] = column.id
            names[column.id].append(column.name)
        else:
            ambiguous.append(column.name)
    extra: list[str] = []
    for schema in written:
        for old in schema.columns:
            column = next((c for c in known if c.known_as(old.id) or old.known_as(c.id)), None)
            holder = owner.get(old.name.lower())
            mine = column.id if column is not None else _NO_COLUMN
            if holder is None:
                owner[old.name.lower()] = mine
                if column is None:
                    extra.append(old.name)
                else:
                    names[column.id].append(old.name)
            elif holder != mine:
                ambiguous.append(old.name)
    newest = {c.id: c for c in known}
    fields = [MappedField(field_id=ids.column(newest[column_id]), names=list(dict.fromkeys(n)),
                          fields=_nested_mapping(newest[column_id].data_type, newest[column_id], (), ids))
              for column_id, n in names.items() if n]
    taken = {n.lower() for n in extra}
    extra += [h for h in hidden if h.lower() not in owner and h.lower() not in taken]
    fields += [MappedField(field_id=UNMAPPED_ID_BASE + i, names=[n]) for i, n in enumerate(extra)]
    return NameMapping(fields), sorted(set(ambiguous))


def _nested_mapping(data_type: T.DataType, column: Column, path: tuple[str, ...], ids: FieldIds) -> list:
    """The mapped fields inside a nested column, by the names Spark's Parquet files give them."""
    if isinstance(data_type, T.StructType):
        inner = [(f.name, f.dataType) for f in data_type.fields]
    elif isinstance(data_type, T.ArrayType):
        inner = [("element", data_type.elementType)]
    elif isinstance(data_type, T.MapType):
        inner = [("key", data_type.keyType), ("value", data_type.valueType)]
    else:
        return []
    return [MappedField(field_id=ids.id(column, path + (name,)), names=[name],
                        fields=_nested_mapping(of, column, path + (name,), ids)) for name, of in inner]


def partition_spec(schema: Schema, partition_by: Iterable[str], spec_id: int, field_ids: dict[int, int],
                   ids: FieldIds) -> PartitionSpec:
    """Identity partitions on `partition_by`; `field_ids` gives each source column's partition field id (one id
    per column id in every spec of the table), `ids` the columns' served ids."""
    fields = []
    for name in partition_by:
        column = schema.column(name)
        fields.append(PartitionField(source_id=ids.column(column), field_id=field_ids[column.id],
                                     transform=IdentityTransform(), name=column.name))
    return PartitionSpec(*fields, spec_id=spec_id)


def partition_value(text: str | None, kind: PrimitiveType):
    """A partition directory's value (as Spark wrote it in the path) as the value Iceberg stores."""
    if text is None:
        return None
    if isinstance(kind, (IntegerType, LongType)):
        return int(text)
    if isinstance(kind, (FloatType, DoubleType)):
        return float(text)
    if isinstance(kind, BooleanType):
        return text.lower() == "true"
    if isinstance(kind, DecimalType):
        return decimal.Decimal(text)
    if isinstance(kind, DateType):
        return dt.date.fromisoformat(text)
    if isinstance(kind, StringType):
        return text
    raise Unsupported(f"partition values of type {kind} are not yet supported by branchspark serve")


# Iceberg's primitive types as Spark's, for schemas a client sends (create table, add-schema): the reverse of
# _PRIMITIVES, with Iceberg's `timestamp` (no zone) as Spark's timestamp_ntz and `timestamptz` as timestamp.
_SPARK_TYPES = {
    BooleanType: T.BooleanType(), IntegerType: T.IntegerType(), LongType: T.LongType(), FloatType: T.FloatType(),
    DoubleType: T.DoubleType(), StringType: T.StringType(), BinaryType: T.BinaryType(), DateType: T.DateType(),
    TimestamptzType: T.TimestampType(), TimestampType: T.TimestampNTZType(),
}


def spark_type(field: NestedField, table_name: str) -> T.DataType:
    """The Spark type of a top-level field of a schema a client sent; types branchspark serve cannot write
    (nested, uuid, fixed, time, ...) are refused naming the column."""
    kind = field.field_type
    if isinstance(kind, DecimalType):
        return T.DecimalType(kind.precision, kind.scale)
    found = _SPARK_TYPES.get(type(kind))
    if found is None:
        raise Unsupported(f"table {table_name}: column '{field.name}' has Iceberg type {kind}, which branchspark "
                          f"serve does not yet take in a write; use one of boolean, int, long, float, double, "
                          f"decimal, date, timestamp, timestamptz, string, binary")
    return found
