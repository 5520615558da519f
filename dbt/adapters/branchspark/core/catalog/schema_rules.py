"""Column types: parsing DDL type names and the widening rule (SPEC A6.1).

A type may only widen: int to bigint, float to double, decimal precision up
(keeping the digits before and after the point). Narrowing is refused.
"""
from __future__ import annotations

import re

from pyspark.sql import types as T

from .. import errors

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
