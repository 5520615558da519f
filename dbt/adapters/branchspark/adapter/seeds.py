"""A seed's agate table as a typed Spark DataFrame.

Values travel as Python objects with a schema, never as SQL text, so empty
cells are NULL and quotes or backslashes in strings need no escaping.
Columns with a `column_types` override arrive as text (dbt reads them so) and
are cast by Spark to the requested type.
"""

import datetime as dt
import decimal
from typing import Any, Callable, Dict, List

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from dbt.adapters.branchspark.core.frames import spark_type

BATCH_ROWS = 10000


def _converter(data_type: DataType) -> Callable[[Any], Any]:
    """How an agate cell becomes a value of `data_type` in a Spark row."""
    if isinstance(data_type, (LongType, IntegerType)):
        return lambda v: int(v)
    if isinstance(data_type, (DoubleType, FloatType)):
        return lambda v: float(v)
    if isinstance(data_type, DecimalType):
        return lambda v: decimal.Decimal(str(v))
    if isinstance(data_type, BooleanType):
        return lambda v: bool(v)
    if isinstance(data_type, (TimestampType, TimestampNTZType)):
        return lambda v: v if isinstance(v, dt.datetime) else dt.datetime.combine(v, dt.time())
    if isinstance(data_type, DateType):
        return lambda v: v.date() if isinstance(v, dt.datetime) else v
    return lambda v: v if isinstance(v, str) else str(v)


def seed_dataframe(
    spark: SparkSession,
    agate_table,
    inferred_types: List[str],
    column_types: Dict[str, str],
) -> DataFrame:
    """`inferred_types`: the adapter's convert_type per column; `column_types`: the seed's overrides."""
    names = [str(n) for n in agate_table.column_names]
    overrides = {k.lower(): v for k, v in (column_types or {}).items()}
    load_types: List[DataType] = []
    final_types: List[DataType] = []
    for name, inferred in zip(names, inferred_types):
        if name.lower() in overrides:
            load_types.append(StringType())  # read as text by dbt; Spark casts it below
            final_types.append(spark_type(overrides[name.lower()]))
        else:
            load_types.append(spark_type(inferred))
            final_types.append(spark_type(inferred))
    converters = [_converter(t) for t in load_types]
    rows = [
        tuple(None if value is None else convert(value) for value, convert in zip(row, converters))
        for row in agate_table.rows
    ]
    schema = StructType([StructField(n, t, True) for n, t in zip(names, load_types)])
    df = spark.createDataFrame(rows, schema) if rows else spark.createDataFrame([], schema)
    return df.select(
        [
            F.col(f"`{n}`").cast(t).alias(n) if lt != t else F.col(f"`{n}`")
            for n, lt, t in zip(names, load_types, final_types)
        ]
    )
