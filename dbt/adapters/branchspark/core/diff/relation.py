"""One table's diff as one relation (dbt's `{{ branch_diff(...) }}`, SQL's `branch_diff(...)`): `_diff_type`,
the table's columns, `_diff_changed`; a lazy DataFrame."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from .plan import branch_diff
from .rows import CHANGED, DIFF_TYPE


def version_text(value) -> str:
    """A number (YAML read a commit id prefix as one) as text."""
    return value.strip() if isinstance(value, str) else str(value)


def table_diff_relation(lakehouse, table: str, from_version, to, mode: str | None = None) -> DataFrame:
    """`table`'s diff rows from `from_version` to `to` (a Lakehouse's versions); the same rows in both: no
    rows, with the columns."""
    from_version, to = version_text(from_version), version_text(to)
    found = branch_diff(lakehouse, from_version, to, tables=[table], mode=mode or None, preview=False)
    entry = found.tables[0] if found.tables else None
    frame = entry.relation() if entry is not None else None
    if frame is None:
        columns = lakehouse.snapshot(to).read(table).schema.fields
        frame = lakehouse.spark.createDataFrame([], T.StructType(
            [T.StructField(DIFF_TYPE, T.StringType())] + columns
            + [T.StructField(CHANGED, T.ArrayType(T.StringType()))]))
    return frame
