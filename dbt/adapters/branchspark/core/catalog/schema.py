"""A table's columns and schema versions, its schema history, and the rules of column types.

Columns have ids unique in the whole catalog (names change, ids do not); a table version names its
current schema and keeps a history of every schema its rows were written under. Types are parsed from
DDL names, and may only widen (SPEC A6.1): int to bigint, float to double, decimal precision up (keeping
the digits before and after the point). Narrowing is refused.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from pyspark.sql import types as T

from .. import errors


# Imported columns' source field ids stay below this: Iceberg clients see a table's own columns above it.
SOURCE_ID_LIMIT = 1_000_000_000


@dataclass(frozen=True)
class Column:
    id: int
    name: str
    type_json: str  # Spark's JSON form of the type: parsed without a JVM
    nullable: bool = True
    default: str | None = None  # a Spark SQL literal expression, e.g. "0" or "'n/a'"
    # Ids are unique in the whole catalog, so columns added on two branches never collide. A merge that
    # finds the same name added on both sides keeps one id and lists the other here.
    aliases: tuple[int, ...] = ()
    # An imported column's field ids in its source (Iceberg's, Delta's column mapping): (path, id) pairs, the
    # column's own under path (), its nested fields' under their names (`element`, `key`, `value` for lists and
    # maps). The source's files carry them, so Iceberg clients must be served them (iceberg/schema.py).
    source_ids: tuple[tuple[tuple[str, ...], int], ...] = ()

    def source_id(self, path: tuple[str, ...] = ()) -> int | None:
        return next((i for p, i in self.source_ids if p == path), None)

    def known_as(self, column_id: int) -> bool:
        return column_id == self.id or column_id in self.aliases

    @property
    def data_type(self) -> T.DataType:
        return _parse_type_json(self.type_json)

    @property
    def type(self) -> str:
        return self.data_type.simpleString()

    def to_row(self) -> dict:
        row = {"id": self.id, "name": self.name, "type": self.type_json, "nullable": self.nullable,
               "default": self.default}
        if self.aliases:
            row["aliases"] = list(self.aliases)
        if self.source_ids:
            row["source_ids"] = [[list(path), i] for path, i in self.source_ids]
        return row

    @staticmethod
    def from_row(row: dict) -> "Column":
        return Column(row["id"], row["name"], row["type"], row.get("nullable", True), row.get("default"),
                      tuple(row.get("aliases", ())), tuple((tuple(p), i) for p, i in row.get("source_ids", ())))


def _parse_type_json(type_json: str) -> T.DataType:
    return T._parse_datatype_json_value(json.loads(type_json))


@dataclass(frozen=True)
class Schema:
    id: str
    columns: tuple[Column, ...]

    def column(self, name: str) -> Column | None:
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)

    def by_id(self, column_id: int) -> Column | None:
        return next((c for c in self.columns if c.id == column_id), None)

    def source_of(self, column: Column) -> Column | None:
        """The column of this (older) schema that holds `column`'s data, by id or alias."""
        return next((c for c in self.columns if column.known_as(c.id) or c.known_as(column.id)), None)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def struct(self) -> T.StructType:
        return T.StructType([T.StructField(c.name, c.data_type, True) for c in self.columns])


def history_entry(schema_id: str, seq: int, visible: bool = True) -> dict:
    """One entry of a table's schema history: a schema its rows may be written under from commit `seq` on.
    A visible entry is one time travel may show; a merge keeps src's schemas readable but out of sight."""
    return {"schema_id": schema_id, "seq": seq, "visible": visible}


_SIMPLE = {
    "tinyint": T.ByteType(), "byte": T.ByteType(),
    "smallint": T.ShortType(), "short": T.ShortType(),
    "int": T.IntegerType(), "integer": T.IntegerType(),
    "bigint": T.LongType(), "long": T.LongType(),
    "float": T.FloatType(), "real": T.FloatType(),
    "double": T.DoubleType(),
    "string": T.StringType(), "varchar": T.StringType(), "char": T.StringType(), "text": T.StringType(),
    "boolean": T.BooleanType(), "bool": T.BooleanType(),
    "date": T.DateType(),
    "timestamp": T.TimestampType(), "timestamp_ltz": T.TimestampType(),
    "timestamp_ntz": T.TimestampNTZType(),
    "binary": T.BinaryType(),
}
_DECIMAL = re.compile(r"^(?:decimal|numeric|dec)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?$")
_SIZED_STRING = re.compile(r"^(?:varchar|char)\s*\(\s*\d+\s*\)$")

_INTEGRAL_ORDER = [T.ByteType, T.ShortType, T.IntegerType, T.LongType]


def parse_type(type_or_ddl, spark=None) -> T.DataType:
    """A Spark type from a DataType or a DDL name ('bigint', 'decimal(10,2)', 'array<string>', ...)."""
    if isinstance(type_or_ddl, T.DataType):
        return type_or_ddl
    text = str(type_or_ddl).strip().lower()
    if text in _SIMPLE:
        return _SIMPLE[text]
    if _SIZED_STRING.match(text):
        return T.StringType()
    decimal = _DECIMAL.match(text)
    if decimal:
        precision = int(decimal.group(1) or 10)
        scale = int(decimal.group(2) or 0)
        return T.DecimalType(precision, scale)
    if spark is not None:
        # Nested types: let Spark's own parser read them.
        try:
            return spark.createDataFrame([], f"`x` {type_or_ddl}").schema.fields[0].dataType
        except Exception:
            pass
    raise errors.InvalidArgument(f"unknown column type '{type_or_ddl}': use a Spark SQL type such as bigint, "
                                 f"string, decimal(10,2) or array<string>")


def is_widening(old: T.DataType, new: T.DataType) -> bool:
    """True when every value of `old` fits `new` without loss (equal types count)."""
    if old == new:
        return True
    integral = [type(old) in _INTEGRAL_ORDER, type(new) in _INTEGRAL_ORDER]
    if all(integral):
        return _INTEGRAL_ORDER.index(type(old)) <= _INTEGRAL_ORDER.index(type(new))
    if isinstance(old, T.FloatType) and isinstance(new, T.DoubleType):
        return True
    if isinstance(old, (T.ByteType, T.ShortType, T.IntegerType)) and isinstance(new, T.DoubleType):
        return True
    if isinstance(old, T.DecimalType) and isinstance(new, T.DecimalType):
        return new.scale >= old.scale and (new.precision - new.scale) >= (old.precision - old.scale)
    if type(old) in _INTEGRAL_ORDER and isinstance(new, T.DecimalType):
        digits = {T.ByteType: 3, T.ShortType: 5, T.IntegerType: 10, T.LongType: 20}[type(old)]
        return new.precision - new.scale >= digits
    return False


def check_widening(table: str, column: str, old: T.DataType, new: T.DataType) -> None:
    if not is_widening(old, new):
        raise errors.InvalidSchemaChange(
            f"cannot change column '{column}' of '{table}' from {old.simpleString()} to {new.simpleString()}: "
            f"types may only widen (int to bigint, float to double, decimal precision up); "
            f"add a new column and copy the data instead")


def wider_of(left: T.DataType, right: T.DataType) -> T.DataType | None:
    """The type both sides widen to, or None when neither contains the other."""
    if is_widening(left, right):
        return right
    if is_widening(right, left):
        return left
    return None
