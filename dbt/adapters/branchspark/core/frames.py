"""Spark types and DataFrame shapes: what a write hands the core must match the table."""

import re
from functools import lru_cache
from typing import List, Optional

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import CharType, DataType, StringType, StructField, StructType, VarcharType, _parse_datatype_string

from .sql_text import quote_identifier as quote_column
from .sql_text import split_top_level, unquote

# SQL type names dbt's generic macros use that Spark's DDL parser does not know.
_TYPE_ALIASES = {
    "text": "string",
    "character varying": "string",
    "integer": "int",
    "numeric": "decimal",
    "timestamp without time zone": "timestamp",
    "timestamp with time zone": "timestamp",
    "double precision": "double",
    "real": "float",
    "character": "string",
    "bpchar": "string",
    "timestamptz": "timestamp",
    "bool": "boolean",
}


@lru_cache(maxsize=512)
def spark_type(type_text: str) -> DataType:
    """A Spark type from DDL text; char/varchar become string, as Spark stores them. Cached: through
    Spark Connect each parse is a round trip to the server, and a run asks for the same few types often."""
    text = type_text.strip()
    text = _TYPE_ALIASES.get(text.lower(), text)
    lowered = " ".join(text.lower().split())
    if lowered.startswith(("character varying", "varchar", "character(", "char(", "text")):
        return StringType()
    if lowered.startswith("timestamp with"):
        return _parse_datatype_string("timestamp")
    data_type = _parse_datatype_string(text)
    if isinstance(data_type, (VarcharType, CharType)):
        return StringType()
    return data_type


def normalize_type(type_text: str) -> str:
    """The canonical Spark spelling of a type (`int`, `decimal(10,2)`, `array<string>`)."""
    try:
        return spark_type(type_text).simpleString()
    except Exception:  # something Spark cannot parse: keep it as given
        return type_text.strip().lower()


_COLUMN_DEF = re.compile(r'^\s*(?P<name>`(?:[^`]|``)+`|"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_]*)\s+(?P<rest>.+)$', re.DOTALL)
_AFTER_TYPE = re.compile(r"\s+(?:not\s+null|null|default|comment|primary\s+key|unique|references|check|constraint|generated)\b",
                         re.IGNORECASE)


def schema_from_ddl(columns_ddl: str) -> StructType:
    """Column definitions of a CREATE TABLE / ADD COLUMNS, also in the SQL of other databases
    (`TEXT`, `TIMESTAMP WITHOUT TIME ZONE`, `VARCHAR(20)`, `DEFAULT NULL`), as Spark fields."""
    fields = []
    for definition in split_top_level(columns_ddl, type_brackets=True):
        m = _COLUMN_DEF.match(definition)
        if not m:
            raise ValueError(f"cannot read the column definition {definition.strip()[:60]!r}")
        rest = m["rest"].strip()
        cut = _AFTER_TYPE.search(rest)
        type_text = rest[: cut.start()] if cut else rest
        constraints = rest[cut.start():].lower() if cut else ""
        name = m["name"]
        name = name[1:-1].replace('""', '"') if name.startswith('"') else unquote(name)
        fields.append(StructField(name, spark_type(type_text), "not null" not in " ".join(constraints.split())))
    if not fields:
        raise ValueError(f"no column definitions in: {columns_ddl[:80]}")
    return StructType(fields)


def struct_of(columns) -> StructType:
    """The Spark schema of a catalog table's columns (ColumnInfo list)."""
    return StructType([StructField(c.name, spark_type(c.type), True) for c in columns])


def align_to_schema(df: DataFrame, target: StructType, columns: Optional[List[str]] = None) -> DataFrame:
    """`df` shaped as `target`: named `columns` (or all of target, by position), cast to
    target's types; target columns the statement does not give are NULL."""
    if columns is None:
        if len(df.columns) != len(target.fields):
            raise ValueError(
                f"the query gives {len(df.columns)} columns, the table has {len(target.fields)}: "
                f"name the columns to insert"
            )
        columns = [f.name for f in target.fields]
    elif len(columns) != len(df.columns):
        raise ValueError(f"{len(columns)} column names for a query of {len(df.columns)} columns")
    given = {name.lower(): df[df.columns[i]] for i, name in enumerate(columns)}
    unknown = set(given) - {f.name.lower() for f in target.fields}
    if unknown:
        raise ValueError(f"no column {sorted(unknown)[0]!r} in the table")
    return df.select(
        [
            _cast(given.get(f.name.lower()), f.dataType).alias(f.name)
            for f in target.fields
        ]
    )


def conform_by_name(df: DataFrame, target: StructType) -> DataFrame:
    """`df` without the columns the target lacks (dbt ignores them unless on_schema_change
    adds them); the core casts and fills in the target's missing columns."""
    wanted = {f.name.lower() for f in target.fields}
    return df.select([F.col(quote_column(c)) for c in df.columns if c.lower() in wanted])


def _cast(column: Optional[Column], data_type: DataType) -> Column:
    if column is None:
        return F.lit(None).cast(data_type)
    return column.cast(data_type)
