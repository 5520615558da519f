"""The change feed of one table over a range: every commit's deletes, then its inserts, labelled.

Columns: the table's columns at `to` (older rows projected by column id: renamed columns keep
their data, dropped ones vanish, added ones read as their default or NULL), then
`_change_type` ('insert' | 'delete'), `_commit_id`, `_commit_ts` (timestamp) and
`_commit_seq` (long).

`frame()` is one lazy Spark plan: a union, in commit order, of each commit's deletes then
inserts. A union keeps its inputs' partitions in that order, so iterating it partition by
partition (the streaming handle, `collect`) already sees commit order without a sort;
`table_changes` adds an explicit `orderBy` only where commit times do not rise along the range
(`in_feed_order`) or the changes are netted.
"""
from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from ..catalog.commits import CommitInfo
from ..context import WriteContext
from ..storage.projection import Constant, select_sql
from ..storage.reader import quote
from .delta import DELETE, INSERT, DeltaReader
from .versions import ChangeRange

CHANGE_TYPE, COMMIT_ID, COMMIT_TS, COMMIT_SEQ = "_change_type", "_commit_id", "_commit_ts", "_commit_seq"
METADATA_COLUMNS = (CHANGE_TYPE, COMMIT_ID, COMMIT_TS, COMMIT_SEQ)
ORDER = (COMMIT_TS, COMMIT_SEQ, CHANGE_TYPE)
_EPOCH = datetime(1970, 1, 1)


def _sql_text(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def commit_micros(commit: CommitInfo) -> int:
    """The commit time (naive UTC in the catalog) as microseconds since the epoch."""
    return (commit.ts - _EPOCH) // timedelta(microseconds=1)


def metadata_columns(commit: CommitInfo, change_type: str) -> tuple[Constant, ...]:
    """The labels of one commit's rows: a read gives them as its source's values where it can (no projection,
    nothing for Spark to compile anew for each commit), else as literals."""
    micros = commit_micros(commit)
    stamp = (_EPOCH + timedelta(microseconds=micros)).isoformat(timespec="microseconds") + "Z"
    return (Constant(CHANGE_TYPE, T.StringType(), change_type, _sql_text(change_type)),
            Constant(COMMIT_ID, T.StringType(), commit.id, _sql_text(commit.id)),
            Constant(COMMIT_TS, T.TimestampType(), stamp, f"timestamp_micros({micros})"),
            Constant(COMMIT_SEQ, T.LongType(), str(int(commit.seq)), f"CAST({int(commit.seq)} AS BIGINT)"))


class ChangeFeed:
    def __init__(self, lakehouse: WriteContext, plan: ChangeRange):
        self.lakehouse = lakehouse
        self.plan = plan
        self.deltas = DeltaReader(lakehouse.spark, lakehouse.warehouse, lakehouse.store, plan.schema,
                                  dropped_values=True)

    @property
    def columns(self) -> list[str]:
        return [c.name for c in self.plan.schema.columns]

    def schema(self) -> T.StructType:
        fields = list(self.plan.schema.struct().fields)
        fields += [T.StructField(CHANGE_TYPE, T.StringType(), False), T.StructField(COMMIT_ID, T.StringType(), False),
                   T.StructField(COMMIT_TS, T.TimestampType(), False), T.StructField(COMMIT_SEQ, T.LongType(), False)]
        return T.StructType(fields)

    def parts(self) -> Iterator[tuple[CommitInfo, str, DataFrame]]:
        """(commit, change type, rows) in feed order: by commit, deletes before inserts."""
        if self.plan.snapshot:
            labels = metadata_columns(self.plan.to_commit, INSERT)
            rows = self.deltas.reader.read(self.plan.state, constants=labels)
            read = [c.name for c in self.deltas.lookup.schema(self.plan.state.schema_id).columns]
            yield self.plan.to_commit, INSERT, select_sql(
                rows, [*(quote(name) for name in self.columns), *(quote(c.name) for c in labels)],
                loaded=[*read, *(c.name for c in labels)])
            return
        for step in self.plan.steps:
            labels = {kind: metadata_columns(step.commit, kind) for kind in (DELETE, INSERT)}
            delta = self.deltas.delta(step, labels=labels)
            for change_type, rows in ((DELETE, delta.deletes), (INSERT, delta.inserts)):
                if rows is not None:
                    yield step.commit, change_type, (rows if change_type in delta.labelled
                                                     else self._labelled(rows, step.commit, change_type))

    def frame(self) -> DataFrame:
        """Every change of the range as one lazy plan, in feed order (see the module doc)."""
        result = None
        for _, _, rows in self.parts():
            result = rows if result is None else result.union(rows)
        if result is None:
            return self.lakehouse.spark.createDataFrame([], self.schema())
        return result

    def in_feed_order(self) -> bool:
        """Whether `frame()` already lists its rows in ORDER: its parts are in commit order, deletes before
        inserts, so it does when the commits' (time, sequence) rise along the range (always for one commit)."""
        keys = [(commit_micros(s.commit), s.commit.seq) for s in self.plan.steps]
        return all(a < b for a, b in zip(keys, keys[1:]))

    def _labelled(self, rows: DataFrame, commit: CommitInfo, change_type: str) -> DataFrame:
        return select_sql(rows, [*(quote(name) for name in self.columns),
                                 *(c.projected() for c in metadata_columns(commit, change_type))])
