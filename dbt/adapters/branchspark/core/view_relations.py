"""The relations a view's SQL names, made readable in the Spark session so Spark can analyse or run it.

A view's SQL names branch relations as one quoted identifier each (`` `database.table` ``, as dbt's SQL is
rewritten by sql_text.qualify_branch_relations); in a session dbt never set up those names mean nothing
until each is registered as a session temp view of the version being read.
"""
from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession

from .catalog.state import TableState
from .operations import ObjectKind
from .sql_text import QUOTED, quote_identifier, tokens, unquote


def register_relations(spark: SparkSession, sql: str, seen: set[str], has_table: Callable[[str], bool],
                       state_of: Callable[[str], TableState], read: Callable[[TableState], DataFrame]) -> None:
    """Register every relation `sql` names (and, for a view, the relations its own SQL names) that is not
    in `seen` (lower-case names, updated) as a temp view read by `read`."""
    for kind, start, end in tokens(sql):
        name = unquote(sql[start:end]).lower()
        if kind != QUOTED or name in seen or not has_table(name):
            continue
        seen.add(name)
        state = state_of(name)
        if state.kind == ObjectKind.VIEW:
            register_relations(spark, state.view_sql, seen, has_table, state_of, read)
            spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {quote_identifier(name)} AS {state.view_sql}")
        else:
            read(state).createOrReplaceTempView(quote_identifier(name))
