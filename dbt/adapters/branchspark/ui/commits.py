"""The row counts a commit page shows per table: what the commit's operations did to the table's files against
its first parent, from the catalog alone (core/diff/counted.py), so the page runs no Spark job:
- rows written: the rows of the segments it added (their Parquet footers);
- rows deleted: the rows its new tombstones delete (recorded with each), unless another tombstone may delete
  the same row (a merge bringing both sides' deletes of it: then not known without a scan);
- rows in dropped files: the live rows of segments it removed (an overwrite, a compaction, a drop).
An update of n rows writes n and deletes n. The net row-level change (added, removed, modified) is the compare
page of the parent and the commit, counted in Spark where the catalog cannot say."""
from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass

from ..core.catalog.commits import CommitInfo
from ..core.diff.counted import dropped_file_rows, newly_deleted_rows, segment_rows
from ..core.lakehouse import Lakehouse
from ..core.operations import ObjectKind


@dataclass
class FileRows:
    written: int | None  # None: a segment lists no files, so only a scan could say
    deleted: int | None  # None: a row it deletes may be deleted by another tombstone too (a merge's)
    dropped: int | None  # None: a tombstone spans dropped and kept files, so only a scan could say


def file_rows(lakehouse: Lakehouse, commit: CommitInfo, memo: MutableMapping[str, int] | None = None
              ) -> dict[str, FileRows]:
    """Per table id the commit's operations touched: its FileRows against the first parent (all of a first
    commit's tables are new)."""
    store = lakehouse.store
    table_ids = {o.object_id for o in store.operations(commit.id) if o.object_kind == ObjectKind.TABLE}
    after_root = store.root(commit.id).tables
    before_root = store.root(commit.parents[0]).tables if commit.parents else {}
    versions = store.tables({root[t][0] for root in (after_root, before_root) for t in table_ids if t in root})
    found = {}
    for table_id in sorted(table_ids):
        after = versions[after_root[table_id][0]] if table_id in after_root else None
        before = versions[before_root[table_id][0]] if table_id in before_root else None
        if (after or before) is None or (after or before).kind != ObjectKind.TABLE:
            continue
        added = [s for s in (after.segments if after else ()) if not before or s not in before.segments]
        tombstones = [t for t in (after.tombstones if after else ()) if not before or t not in before.tombstones]
        found[table_id] = FileRows(segment_rows(store, lakehouse.warehouse, added, memo),
                                   newly_deleted_rows(store, lakehouse.warehouse, tombstones,
                                                      after.tombstones if after else ()),
                                   dropped_file_rows(store, lakehouse.warehouse, before, after, memo))
    return found
