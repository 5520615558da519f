"""What a statement returns: rows (a lazy DataFrame) or a status line; and the small result sets of the
branch statements (a merge report, a log, a merge status), made as DataFrames so every caller (dbt's cursor,
`Lakehouse.sql`, the shell) shows them as it shows a query's rows."""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession


@dataclass
class RoutedResult:
    """What a routed statement returns to the cursor: rows (a DataFrame) or a status line."""

    df: DataFrame | None = None
    message: str = "OK"


def rows_frame(spark: SparkSession, schema: str, rows: list[tuple]) -> DataFrame:
    """A DataFrame of a few catalog-sized rows (branches, commits, merge outcomes), by a DDL schema."""
    return spark.createDataFrame(rows, schema)
