"""The rows that differ between two versions of one table, read only from what the versions do not share.

The change feed's delta reader (changes/delta.py) already compares any two versions of a table by what
they hold: the rows of segments only one version has, and the rows of shared segments that a tombstone
only one version has deletes. Those are the candidates; the rows they do not name are the same rows (the
same files) in both versions. The candidates are then compared in one aggregation, in the `to` schema
(older rows projected by column id): on a keyless table as multisets, by value (a row removed and added
again with the same values, by an overwrite that reproduced it, a compaction or a restore, is no
difference); on a keyed table per key, whose old and new rows either differ (a modified key, with the
columns that differ) or not (no difference).

Everything here is a lazy Spark plan over change-sized data: nothing is collected.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import errors
from ..catalog.commits import CommitInfo
from ..catalog.schema import Schema
from ..catalog.state import TableState
from ..catalog.store import CatalogStore
from ..changes.delta import DeltaReader
from ..changes.versions import Step
from ..storage.difference import comparable_expression, comparable_sql
from ..storage.layout import Warehouse
from ..storage.reader import quote

DIFF_TYPE, CHANGED = "_diff_type", "_diff_changed"  # the relation's metadata columns
OLD, NEW = "_diff_old", "_diff_new"  # a modified key's rows, as structs of the columns
ADDED, REMOVED, MODIFIED = "added", "removed", "modified"
DIFF_TYPES = (ADDED, REMOVED, MODIFIED)
# a keyed `differing` row's diff type, from the rows it pairs (SQL over OLD and NEW)
KEYED_DIFF_TYPE = f"CASE WHEN {NEW} IS NULL THEN '{REMOVED}' WHEN {OLD} IS NULL THEN '{ADDED}' ELSE '{MODIFIED}' END"
_SIDE, _NET, _ROW = "_bs_diff_side", "_bs_diff_net", "_bs_diff_row"


@dataclass
class RowDifference:
    """The netted difference, as one frame `differing` that every view below reads (so the relation is one
    aggregation over the candidates, not one per diff type):
    - keyed tables: one row per key that differs, with the key columns, OLD and NEW (the rows as structs,
      NULL on the side that lacks the key) and CHANGED (the columns that differ, when both have it);
    - keyless tables: one row per distinct row whose count differs, with its net count and the row.

    `removed`: rows only in `from` (keyed: keys only in `from`); `added`: rows only in `to` (keyed: keys
    only in `to`); `modified` (keyed only): key columns, CHANGED, OLD and NEW. All in the columns of the
    `to` version (of `from`, for a dropped table)."""

    columns: list[str]
    primary_key: tuple[str, ...]
    differing: DataFrame

    @property
    def type_column(self) -> str:
        """DIFF_TYPE, or with more leading underscores when the table has a column of that name (a table
        built from a diff)."""
        return _free_name(DIFF_TYPE, self.columns)

    @property
    def changed_column(self) -> str:
        return _free_name(CHANGED, self.columns)

    # Built from SQL text: one JVM call per select, where Column expressions take several per column.
    @property
    def removed(self) -> DataFrame:
        if self.primary_key:
            return self.differing.where(f"{NEW} IS NULL").selectExpr(*self._of(OLD))
        return self._copies().where(f"{_NET} < 0").selectExpr(*self._of(_ROW))

    @property
    def added(self) -> DataFrame:
        if self.primary_key:
            return self.differing.where(f"{OLD} IS NULL").selectExpr(*self._of(NEW))
        return self._copies().where(f"{_NET} > 0").selectExpr(*self._of(_ROW))

    @property
    def modified(self) -> DataFrame | None:
        if not self.primary_key:
            return None
        return (self.differing.where(f"{OLD} IS NOT NULL AND {NEW} IS NOT NULL")
                .selectExpr(*[quote(k) for k in self.primary_key], CHANGED, OLD, NEW))

    def relation(self) -> DataFrame:
        """One frame: `type_column` (DIFF_TYPE), the columns (`to`'s values; `from`'s for removed rows),
        `changed_column` (CHANGED: modified rows only, else NULL)."""
        kind, changed = quote(self.type_column), quote(self.changed_column)
        none = "CAST(NULL AS ARRAY<STRING>)"
        if not self.primary_key:
            return self._copies().selectExpr(f"IF({_NET} < 0, '{REMOVED}', '{ADDED}') AS {kind}", *self._of(_ROW),
                                             f"{none} AS {changed}")
        values = [f"IF({NEW} IS NULL, {OLD}.{quote(c)}, {NEW}.{quote(c)}) AS {quote(c)}" for c in self.columns]
        return self.differing.selectExpr(f"{KEYED_DIFF_TYPE} AS {kind}", *values,
                                         f"IF({NEW} IS NULL OR {OLD} IS NULL, {none}, {CHANGED}) AS {changed}")

    def counts(self) -> dict[str, int]:
        """Rows per diff type, in one Spark job (only the counts come back)."""
        kind = self.type_column
        found = {r[kind]: r["count"] for r in self.relation().groupBy(kind).count().collect()}
        return {k: found.get(k, 0) for k in DIFF_TYPES}

    def _of(self, struct: str) -> list[str]:
        return [f"{struct}.{quote(c)} AS {quote(c)}" for c in self.columns]

    def _copies(self) -> DataFrame:
        """Keyless: one row per copy (a row present twice in `from` and once in `to` is removed once)."""
        return self.differing.selectExpr(_NET, f"explode(sequence(1, abs({_NET}))) AS _bs_copy", _ROW)


def row_difference(spark: SparkSession, warehouse: Warehouse, store: CatalogStore, at: CommitInfo,
                   before: TableState | None, after: TableState | None, primary_key: tuple[str, ...],
                   whole: bool = False) -> RowDifference:
    """The difference from `before` to `after` (None: the table is absent from that version). `whole`: compare
    every row, not only the unshared ones (rows of shared files read differently in the two schemas)."""
    version = after if after is not None else before  # the columns compared: `to`'s (`from`'s when dropped)
    schema = store.schemas([version.schema_id])[version.schema_id]
    keyed = bool(primary_key) and all(schema.column(k) for k in primary_key)
    reader = DeltaReader(spark, warehouse, store, schema)
    # Keyed rows are paired by key, where copies of one deleted row are that row: no shuffle to drop them.
    by_identity = not keyed
    if after is None:  # dropped: every row of `before` is removed
        removed, added = reader.delta(Step(at, None, before, ()), by_identity).inserts, None
    elif whole and before is not None:  # every live row of each version
        removed = reader.delta(Step(at, None, before, ()), by_identity).inserts
        added = reader.delta(Step(at, None, after, ()), by_identity).inserts
    else:
        delta = reader.delta(Step(at, before, after, ()), by_identity)
        removed, added = delta.deletes, delta.inserts
    columns = [c.name for c in schema.columns]
    events = _events(removed, added, columns, lambda: spark.createDataFrame([], schema.struct()))
    if any(comparable_sql(c.name, c.data_type) is None for c in schema.columns):
        raise errors.InvalidArgument("the table has a column whose values Spark cannot compare (a map inside "
                                     "another type): diff the other tables, or compare that one with SQL")
    if not keyed:
        return RowDifference(columns, (), _net(events, columns, schema))
    keys = tuple(schema.column(k).name for k in primary_key)
    return RowDifference(columns, keys, _by_key(events, columns, keys, schema))


def _events(deletes: DataFrame | None, inserts: DataFrame | None, columns: list[str],
            empty: Callable[[], DataFrame]) -> DataFrame:
    """The deleted (-1) and inserted (+1) row images, in `columns`, with their side in _SIDE."""
    selected = [quote(c) for c in columns]
    parts = [frame.selectExpr(*selected, f"{sign} AS {_SIDE}")
             for frame, sign in ((deletes, -1), (inserts, 1)) if frame is not None]
    return reduce(DataFrame.unionByName, parts) if parts else empty().selectExpr(*selected, f"1 AS {_SIDE}")


def _row(columns: list[str]) -> str:
    return "struct(" + ", ".join(quote(c) for c in columns) + ")"


def _net(events: DataFrame, columns: list[str], schema: Schema) -> DataFrame:
    """Keyless: each distinct row (by value) whose count differs, with its net count (_NET) and itself (_ROW)."""
    values = [comparable_sql(c, schema.column(c).data_type) for c in columns]
    grouped = events.selectExpr(*[f"{v} AS _bs_diff_v{i}" for i, v in enumerate(values)], f"{_row(columns)} AS {_ROW}",
                                _SIDE)
    return (grouped.groupBy(*[f"_bs_diff_v{i}" for i in range(len(values))])
            .agg(F.expr(f"sum({_SIDE})").alias(_NET), F.expr(f"first({_ROW})").alias(_ROW))
            .where(f"{_NET} <> 0"))


def _by_key(events: DataFrame, columns: list[str], keys: tuple[str, ...], schema: Schema) -> DataFrame:
    """Keyed: each key whose row differs, with OLD and NEW (NULL where a side lacks the key) and CHANGED.
    A version holds one row per key, so each side gives a key at most one image."""
    row = _row(columns)
    sides = (events.groupBy(*keys)
             .agg(F.expr(f"first(IF({_SIDE} < 0, {row}, NULL), true)").alias(OLD),
                  F.expr(f"first(IF({_SIDE} > 0, {row}, NULL), true)").alias(NEW)))
    values = [c for c in columns if c not in keys]
    cases = [f"CASE WHEN {_differs(f'{OLD}.{quote(c)}', f'{NEW}.{quote(c)}', schema.column(c).data_type)} "
             f"THEN '{_sql_string(c)}' END" for c in values]
    changed = f"filter(array({', '.join(cases)}), name -> name IS NOT NULL)" if values else "CAST(array() AS ARRAY<STRING>)"
    return (sides.selectExpr(*[quote(k) for k in keys], OLD, NEW, f"{changed} AS {CHANGED}")
            .where(f"{OLD} IS NULL OR {NEW} IS NULL OR size({CHANGED}) > 0"))


def _differs(old: str, new: str, data_type: T.DataType) -> str:
    """SQL: whether two values differ, NULLs equal; a value Spark cannot compare counts as changed."""
    old_value, new_value = comparable_expression(old, data_type), comparable_expression(new, data_type)
    if old_value is None:
        return "true"
    return f"NOT ({old_value} <=> {new_value})"


def _sql_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _free_name(name: str, columns: list[str]) -> str:
    taken = {c.lower() for c in columns}
    while name.lower() in taken:
        name = "_" + name
    return name
