"""What a table's page shows at any ref: its schema, partitioning, primary key, row count, first rows and its
history, the commits of the ref's first-parent history that changed it (found from the commits' roots, which
the store keeps: no data read).

The row count comes from the catalog (core/diff/counted.py: segment footers minus tombstone counts) when that
is exact, else from a Spark count; the first rows are one Spark job cut at FIRST_ROWS rows."""
from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field

from ..core.catalog.commits import CommitInfo
from ..core.catalog.state import TableInfo
from ..core.diff.counted import live_rows
from ..core.lakehouse import Lakehouse
from ..core.operations import ObjectKind
from .cells import cell_text

FIRST_ROWS = 20
HISTORY_SHOWN = 30


@dataclass
class TableChange:
    commit: CommitInfo
    operations: list[str]  # this table's operations in the commit


@dataclass
class TablePage:
    ref: str
    commit: CommitInfo
    info: TableInfo
    row_count: int | None = None  # None for a view
    counted_by: str = ""  # "catalog" (footers and tombstones) or "spark" (a count job)
    columns: list[str] = field(default_factory=list)
    first_rows: list[list[str]] = field(default_factory=list)
    history: list[TableChange] = field(default_factory=list)


def table_page(lakehouse: Lakehouse, ref: str, name: str, memo: MutableMapping[str, int] | None = None
               ) -> TablePage:
    """`memo`: rows per segment id already read from footers (segments never change)."""
    snapshot = lakehouse.snapshot(ref)
    info = snapshot.table(name)
    page = TablePage(ref, snapshot.commit, info)
    frame = snapshot.read(name)
    page.columns = frame.columns
    page.first_rows = [[cell_text(v) for v in row] for row in frame.limit(FIRST_ROWS).collect()]
    if info.kind != ObjectKind.VIEW:
        page.row_count = live_rows(lakehouse.store, lakehouse.warehouse, snapshot.state(name), memo)
        page.counted_by = "catalog"
        if page.row_count is None:
            page.row_count, page.counted_by = frame.count(), "spark"
    page.history = changes_of(lakehouse, snapshot.commit, info.id)
    return page


def changes_of(lakehouse: Lakehouse, head: CommitInfo, table_id: str) -> list[TableChange]:
    """The commits of `head`'s first-parent history where the table's version changed, newest first."""
    store = lakehouse.store
    found: list[TableChange] = []
    newer: CommitInfo | None = None
    newer_version = None
    for commit in store.first_parents(head.id):
        entry = store.root(commit.id).tables.get(table_id)
        version = entry[0] if entry else None
        if newer is not None and version != newer_version:
            found.append(_change(store, newer, table_id))
            if len(found) >= HISTORY_SHOWN:
                return found
        if version is None:
            return found
        newer, newer_version = commit, version
    if newer is not None:
        found.append(_change(store, newer, table_id))  # the commit that created it
    return found


def _change(store, commit: CommitInfo, table_id: str) -> TableChange:
    ops = [o.op for o in store.operations(commit.id) if o.object_id == table_id]
    return TableChange(commit, list(dict.fromkeys(ops)))
