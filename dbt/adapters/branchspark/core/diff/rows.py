"""The rows that differ between two versions of one table, read only from what the versions do not share.

The change feed's delta reader (changes/delta.py) already compares any two versions of a table by what
they hold: the rows of segments only one version has, and the rows of shared segments that a tombstone
only one version has deletes. Those are the candidates; the rows they do not name are the same rows (the
same files) in both versions. The candidates are then netted by value, as multisets in the `to` schema
(older rows projected by column id): a row removed and added again with the same values (an overwrite
that reproduced it, a compaction, a restore) is no difference. On a keyed table, a key on both sides of
the netted difference is a modified key, with its old and new row and the columns that differ.

Everything here is a lazy Spark plan over change-sized data: nothing is collected.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import errors
from ..catalog.state import CommitInfo, Schema, TableState
from ..catalog.store import CatalogStore
from ..changes.delta import DeltaReader
from ..changes.versions import Step
from ..storage.difference import comparable_columns, comparable_value
from ..storage.layout import Warehouse
from ..storage.reader import quote

DIFF_TYPE, CHANGED = "_diff_type", "_diff_changed"  # the relation's metadata columns
OLD, NEW = "_diff_old", "_diff_new"  # a modified key's rows, as structs of the columns
ADDED, REMOVED, MODIFIED = "added", "removed", "modified"
DIFF_TYPES = (ADDED, REMOVED, MODIFIED)
_SIDE, _NET, _ROW = "_bs_diff_side", "_bs_diff_net", "_bs_diff_row"


@dataclass
class RowDifference:
    """`removed`: rows only in `from` (keyed: keys only in `from`); `added`: rows only in `to` (keyed: keys
    only in `to`); `modified` (keyed only): key columns, CHANGED (names of the columns that differ), OLD and
    NEW (the rows). All in the columns of the `to` version (of `from`, for a dropped table)."""

    columns: list[str]
    primary_key: tuple[str, ...]
    removed: DataFrame
    added: DataFrame
    modified: DataFrame | None

    @property
    def type_column(self) -> str:
        """DIFF_TYPE, or with more leading underscores when the table has a column of that name (a table
        built from a diff)."""
        return _free_name(DIFF_TYPE, self.columns)

    @property
    def changed_column(self) -> str:
        return _free_name(CHANGED, self.columns)

    def relation(self) -> DataFrame:
        """One frame: `type_column` (DIFF_TYPE), the columns (`to`'s values; `from`'s for removed rows),
        `changed_column` (CHANGED: modified rows only, else NULL)."""
        kind, changed = self.type_column, self.changed_column
        columns = [F.col(quote(c)) for c in self.columns]
        none = F.lit(None).cast(T.ArrayType(T.StringType()))
        parts = [self.removed.select(F.lit(REMOVED).alias(kind), *columns, none.alias(changed)),
                 self.added.select(F.lit(ADDED).alias(kind), *columns, none.alias(changed))]
        if self.modified is not None:
            parts.append(self.modified.select(F.lit(MODIFIED).alias(kind),
                                              *[F.col(NEW)[c].alias(c) for c in self.columns],
                                              F.col(CHANGED).alias(changed)))
        return reduce(DataFrame.unionByName, parts)

    def counts(self) -> dict[str, int]:
        """Rows per diff type, in one Spark job (only the counts come back)."""
        kind = self.type_column
        found = {r[kind]: r["count"] for r in self.relation().groupBy(kind).count().collect()}
        return {k: found.get(k, 0) for k in DIFF_TYPES}


def row_difference(spark: SparkSession, warehouse: Warehouse, store: CatalogStore, at: CommitInfo,
                   before: TableState | None, after: TableState | None, primary_key: tuple[str, ...],
                   whole: bool = False) -> RowDifference:
    """The difference from `before` to `after` (None: the table is absent from that version). `whole`: compare
    every row, not only the unshared ones (rows of shared files read differently in the two schemas)."""
    if after is None:  # dropped: every row of `before` is removed, in its own columns
        schema = store.schemas([before.schema_id])[before.schema_id]
        delta = DeltaReader(spark, warehouse, store, schema).delta(Step(at, None, before, ()))
        removed, added = delta.inserts, None
    else:
        schema = store.schemas([after.schema_id])[after.schema_id]
        reader = DeltaReader(spark, warehouse, store, schema)
        if whole and before is not None:  # every live row of each version, in `to`'s columns
            removed = reader.delta(Step(at, None, before, ())).inserts
            added = reader.delta(Step(at, None, after, ())).inserts
        else:
            delta = reader.delta(Step(at, before, after, ()))
            removed, added = delta.deletes, delta.inserts
    columns = [c.name for c in schema.columns]
    empty = spark.createDataFrame([], schema.struct())
    removed, added = _net(removed, added, columns, empty)
    if not primary_key or not all(schema.column(k) for k in primary_key):
        return RowDifference(columns, (), removed, added, None)
    return _by_key(removed, added, columns, tuple(primary_key), schema)


def _net(deletes: DataFrame | None, inserts: DataFrame | None, columns: list[str],
         empty: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(removed, added): the multiset difference of the deleted and inserted row images, by value."""
    selected = [F.col(quote(c)) for c in columns]
    parts = [frame.select(*selected, F.lit(sign).alias(_SIDE))
             for frame, sign in ((deletes, -1), (inserts, 1)) if frame is not None]
    if not parts:
        return empty, empty
    events = reduce(DataFrame.unionByName, parts)
    values = comparable_columns(events.schema, columns)
    if values is None:
        raise errors.InvalidArgument("the table has a column whose values Spark cannot compare (a map inside "
                                     "another type): diff the other tables, or compare that one with SQL")
    net = (events.groupBy(*[v.alias(f"_bs_diff_v{i}") for i, v in enumerate(values)])
           .agg(F.sum(_SIDE).alias(_NET), F.first(F.struct(*selected)).alias(_ROW))
           .filter(F.col(_NET) != 0))
    # One output row per copy: a row present twice in `from` and once in `to` is removed once.
    copies = net.select(F.col(_NET), F.explode(F.sequence(F.lit(1), F.abs(F.col(_NET)))).alias("_bs_copy"),
                        F.col(_ROW))
    removed = copies.filter(F.col(_NET) < 0).select(*[F.col(_ROW)[c].alias(c) for c in columns])
    added = copies.filter(F.col(_NET) > 0).select(*[F.col(_ROW)[c].alias(c) for c in columns])
    return removed, added


def _by_key(removed: DataFrame, added: DataFrame, columns: list[str], primary_key: tuple[str, ...],
            schema: Schema) -> RowDifference:
    keys = [schema.column(k).name for k in primary_key]
    old = removed.select(*[F.col(quote(k)) for k in keys], F.struct(*[F.col(quote(c)) for c in columns]).alias(OLD))
    new = added.select(*[F.col(quote(k)) for k in keys], F.struct(*[F.col(quote(c)) for c in columns]).alias(NEW))
    values = [c for c in columns if c not in keys]
    changed = F.filter(F.array(*[F.when(_differs(F.col(OLD)[c], F.col(NEW)[c], schema.column(c).data_type), F.lit(c))
                                 for c in values]) if values else F.array().cast("array<string>"),
                       lambda name: name.isNotNull())
    modified = old.join(new, keys, "inner").select(*keys, changed.alias(CHANGED), OLD, NEW)
    key_columns = [F.col(quote(k)) for k in keys]
    return RowDifference(columns, tuple(keys),
                         removed.join(added.select(*key_columns), keys, "left_anti"),
                         added.join(removed.select(*key_columns), keys, "left_anti"),
                         modified)


def _differs(old: SparkColumn, new: SparkColumn, data_type: T.DataType) -> SparkColumn:
    """Whether two values differ, NULLs equal; a value Spark cannot compare counts as changed."""
    old_value, new_value = comparable_value(old, data_type), comparable_value(new, data_type)
    if old_value is None:
        return F.lit(True)
    return ~old_value.eqNullSafe(new_value)


def _free_name(name: str, columns: list[str]) -> str:
    taken = {c.lower() for c in columns}
    while name.lower() in taken:
        name = "_" + name
    return name
