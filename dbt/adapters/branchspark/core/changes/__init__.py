"""Changes (CDC) of one table between two versions: a Spark DataFrame, or a streaming handle.

    from dbt.adapters.branchspark.changes import open_changes, table_changes
    table_changes(lh, "shop.orders", from_="a1b2c3d4e5f6", to="main")           # DataFrame
    table_changes(lh, "shop.orders", "2026-11-20T10:00:00", "dev", net=True)    # net per key (or row)
    with open_changes(lh, "shop.orders", last_seen, "main") as changes:         # arrow batches
        for data, tombstones, hint in changes: ...

Plain PySpark: nothing here imports dbt. See docs/changes.md.
"""
from __future__ import annotations

from pyspark.sql import DataFrame

from ..context import WriteContext
from .feed import CHANGE_TYPE, COMMIT_ID, COMMIT_SEQ, COMMIT_TS, DELETE, INSERT, ORDER, ChangeFeed
from .handle import DEFAULT_BATCH_ROWS, ChangesHandle, Hint
from .net import net_changes, net_rows
from .versions import ChangeRange, plan_range

__all__ = ["table_changes", "open_changes", "ChangesHandle", "Hint", "plan_range", "ChangeRange", "CHANGE_TYPE",
           "COMMIT_ID", "COMMIT_TS", "COMMIT_SEQ", "INSERT", "DELETE"]


def table_changes(lakehouse: WriteContext, table: str, from_, to=None, branch: str | None = None,
                  net: bool = False) -> DataFrame:
    """Rows inserted into and deleted from `table` after version `from_` up to version `to`.

    Ordered by commit time, and at one commit deletes before inserts (an update is a delete
    of the old image and an insert of the new one). `from_` empty, None or 0: the rows of
    `to`, all as inserts of the `to` commit. `to` None: the head of `branch` (default main).
    net=True folds each primary key's changes into their net effect; on a keyless table, identical
    rows net out (see changes/net.py).
    """
    plan = plan_range(lakehouse, table, from_, to, branch)
    feed = ChangeFeed(lakehouse, plan)
    frame = feed.frame()
    if net:
        frame = (net_changes(frame, plan.state.primary_key, feed.columns) if plan.state.primary_key
                 else net_rows(frame, feed.columns))
    elif feed.in_feed_order():
        # Already in ORDER (the union lists each commit's deletes, then its inserts, commit by commit): a sort
        # would cost a sampling job and a shuffle of every changed row.
        return frame
    return frame.orderBy(*ORDER)


def open_changes(lakehouse: WriteContext, table: str, from_, to=None, branch: str | None = None,
                 batch_rows: int = DEFAULT_BATCH_ROWS) -> ChangesHandle:
    """A streaming handle over the same changes as table_changes (see changes/handle.py)."""
    plan = plan_range(lakehouse, table, from_, to, branch)
    return ChangesHandle(ChangeFeed(lakehouse, plan).frame(), snapshot=plan.snapshot, batch_rows=batch_rows)
