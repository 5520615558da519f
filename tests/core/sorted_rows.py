"""Rows of small test DataFrames, comparable in assertions.

A module of its own (not conftest) so test modules can import it whatever order pytest loads the
two conftest files in.
"""


def rows(df, *columns):
    """The rows of a small test DataFrame as sorted tuples."""
    if columns:
        df = df.select(*columns)
    return sorted(tuple(r) for r in df.collect())
