"""A diff's row counts per table, as the web view's compare page shows them and a merge's dry run reports
them: from the catalog where it knows them exactly (counted.py: appended files, added tombstones, a table
added or dropped; no Spark job), the rest in one Spark job over the diff of every table that needs it, whose
cost grows with the changes (only the counts come to the driver)."""
from __future__ import annotations

from collections.abc import MutableMapping
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..context import WriteContext
from ..merge.report import MergeResult
from ..spark_errors import first_line
from .counted import table_diff_counts
from .plan import THREE_DOT, TWO_DOT, TableDiff, branch_diff
from .rows import ADDED, DIFF_TYPE, DIFF_TYPES, MODIFIED, REMOVED

FROM_FILES, FROM_SPARK = "catalog", "spark"  # where a table's counts came from
_TABLE_COLUMN = "_bs_counted_table"


def table_counts(lakehouse: WriteContext, tables: list[TableDiff],
                 memo: MutableMapping[str, int] | None = None) -> dict[str, tuple[dict[str, int], str]]:
    """Per table name its {added, removed, modified} and where they were counted (FROM_FILES or FROM_SPARK)."""
    found = {t.name: table_diff_counts(lakehouse.store, lakehouse.warehouse, t, memo) for t in tables}
    by_spark = [t for t in tables if found[t.name] is None]
    counted = {name: (n, FROM_FILES) for name, n in found.items() if n is not None}
    counted.update((name, (n, FROM_SPARK)) for name, n in _spark_counts(by_spark).items())
    return counted


def _spark_counts(tables: list[TableDiff]) -> dict[str, dict[str, int]]:
    """Rows per diff type of each table, in one Spark job for all of them (only the counts come back)."""
    counts = {t.name: dict.fromkeys(DIFF_TYPES, 0) for t in tables}
    if tables:
        parts = [t.relation().select(F.lit(t.name).alias(_TABLE_COLUMN), F.col(t.rows.type_column).alias(DIFF_TYPE))
                 for t in tables]
        for row in reduce(DataFrame.unionByName, parts).groupBy(_TABLE_COLUMN, DIFF_TYPE).count().collect():
            counts[row[_TABLE_COLUMN]][row[DIFF_TYPE]] = row["count"]
    return counts


def count_dry_run(lakehouse: WriteContext, result: MergeResult) -> MergeResult:
    """A dry run's rows added and deleted per table: what src changed since the merge base, counted as the
    compare page `dest...src` counts it. A modified row (keyed tables) is one deleted and one added, as in
    `branch_changes`; its count is in the outcome's note."""
    if result.status != "dry-run":
        return result
    return _count_outcomes(lakehouse, result, result.dest, result.src, THREE_DOT)


def count_merged(lakehouse: WriteContext, result: MergeResult) -> MergeResult:
    """A merge's rows added and deleted per table: what its commit changed on dest (the commit against its
    first parent, dest's head it landed on), as `branch_changes` across the merge lists them."""
    if result.status != "merged" or not result.commit_id:
        return result
    commit = lakehouse.store.get_commit(result.commit_id)
    try:
        return _count_outcomes(lakehouse, result, commit.parents[0], commit.id, TWO_DOT)
    except Exception as failed:  # the merge has landed: a count that fails must not report it as failed
        for outcome in result.outcomes:
            if outcome.object_kind == "table":
                outcome.note = ", ".join(filter(None, [outcome.note, f"rows not counted: {first_line(failed)}"]))
        return result


def _count_outcomes(lakehouse: WriteContext, result: MergeResult, from_: str, to: str, mode: str) -> MergeResult:
    tables = [o for o in result.outcomes if o.object_kind == "table"]
    if not tables:
        return result
    diff = branch_diff(lakehouse, from_, to, tables=[o.object_name for o in tables], mode=mode, preview=False)
    counted = table_counts(lakehouse, diff.tables)
    for outcome in tables:
        if outcome.object_name not in counted:
            continue  # no row changed (a table whose only change was its schema, or settled as dest had it)
        n, _ = counted[outcome.object_name]
        outcome.rows_added, outcome.rows_deleted = n[ADDED] + n[MODIFIED], n[REMOVED] + n[MODIFIED]
        if n[MODIFIED]:
            outcome.note = ", ".join(filter(None, [outcome.note, f"{n[MODIFIED]} modified"]))
    return result
