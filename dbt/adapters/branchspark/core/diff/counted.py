"""Row counts the catalog knows without a Spark job: a segment's rows from its Parquet footers (no data read),
a tombstone's from its recorded row count. Each function answers only when the figure is exact, and None
otherwise (the caller then counts in Spark); none of them estimates.

When metadata is exact:
- a table version's live rows: footer rows of its segments minus its tombstones' rows, when no two tombstones
  delete the same row (as after a merge that brought both sides' deletes of one row: it would be subtracted
  twice; tombstones naming a data file in common are compared by the row ids they hold, a small read of
  their own files), every tombstone deletes rows of the version's own files, and every segment lists its
  files;
- a diff's counts (`diff_counts`): when one version only appended segments to the other (every new row is
  added: a keyed version holds one row per key, so they are new keys), or only added tombstones that delete no
  row another tombstone deletes (every deleted row is removed); an added or dropped table is all added or
  removed.
  Anything else (an update, an overwrite, a compaction, rows compared in full) needs the rows compared.
"""
from __future__ import annotations

from collections.abc import Iterable, MutableMapping

from ..catalog.state import SegmentInfo, TableState
from ..catalog.store import CatalogStore
from ..storage.layout import SEGMENT_COLUMN, Warehouse
from ..storage.reader import ROW_FILE, ROW_POS, STORED_IDENTITY_KINDS
from .plan import TableDiff
from .rows import ADDED, MODIFIED, REMOVED

ROW_IDS_READ = 100_000  # tombstones naming a file in common are compared by row id up to this many rows


def segment_rows(store: CatalogStore, warehouse: Warehouse, segment_ids: Iterable[str],
                 memo: MutableMapping[str, int] | None = None) -> int | None:
    """The rows written to these segments (before any tombstone), from their files' footers; None when a
    segment does not list its files. `memo`: rows per segment id already read (segments never change)."""
    memo = {} if memo is None else memo
    wanted = [s for s in dict.fromkeys(segment_ids) if s not in memo]
    infos = store.segments(wanted) if wanted else {}
    for segment_id in wanted:
        info = infos.get(segment_id)
        if info is None or not info.files:
            return None
        memo[segment_id] = warehouse.parquet_rows(f"{info.path}/{name}" for name in info.files)
    return sum(memo[s] for s in dict.fromkeys(segment_ids))


def deleted_rows(store: CatalogStore, tombstone_ids: Iterable[str]) -> int:
    """The rows these tombstones delete, as recorded when each was written."""
    return sum(t.row_count for t in store.tombstones(list(dict.fromkeys(tombstone_ids))).values())


def newly_deleted_rows(store: CatalogStore, warehouse: Warehouse, tombstone_ids: Iterable[str],
                       among: Iterable[str]) -> int | None:
    """The rows these tombstones delete that no other tombstone of `among` (the version's) deletes too: their
    recorded counts, or None when a row may be deleted twice (a merge that brought both sides' deletes)."""
    tombstone_ids = list(tombstone_ids)
    if not _tombstones_disjoint(store, tombstone_ids, among, warehouse):
        return None
    return deleted_rows(store, tombstone_ids)


def live_rows(store: CatalogStore, warehouse: Warehouse, state: TableState,
              memo: MutableMapping[str, int] | None = None) -> int | None:
    """A table version's rows, or None when the metadata cannot say exactly (see the module doc)."""
    if not _tombstones_disjoint(store, state.tombstones, state.tombstones, warehouse) or \
            not _targets_held(store, state.tombstones, state.segments):
        return None
    written = segment_rows(store, warehouse, state.segments, memo)
    return None if written is None else written - deleted_rows(store, state.tombstones)


def diff_counts(store: CatalogStore, warehouse: Warehouse, before: TableState | None, after: TableState | None,
                memo: MutableMapping[str, int] | None = None) -> dict[str, int] | None:
    """{added, removed, modified} from `before` to `after` (None: the table is absent there) when the metadata
    gives them exactly, else None. The caller has ruled out a changed primary key and rows compared in full."""
    if before is None or after is None:
        rows = live_rows(store, warehouse, after if before is None else before, memo)
        if rows is None:
            return None
        return {ADDED: rows if before is None else 0, REMOVED: rows if after is None else 0, MODIFIED: 0}
    old_segments, new_segments = set(before.segments), set(after.segments)
    old_tombstones, new_tombstones = set(before.tombstones), set(after.tombstones)
    if not old_segments <= new_segments or not old_tombstones <= new_tombstones:
        return None  # an overwrite or a compaction dropped files: their rows may come back in the new ones
    appended = [s for s in after.segments if s not in old_segments]
    tombstoned = [t for t in after.tombstones if t not in old_tombstones]
    if appended and tombstoned:
        return None  # an update, a merge of both: which rows changed needs them compared
    if appended:
        if any(s.kind in STORED_IDENTITY_KINDS for s in store.segments(appended).values()):
            return None  # rows under their old names: the diff pairs them with the rows they were
        rows = segment_rows(store, warehouse, appended, memo)
        return None if rows is None else {ADDED: rows, REMOVED: 0, MODIFIED: 0}
    if not _tombstones_disjoint(store, tombstoned, after.tombstones, warehouse) or \
            not _targets_held(store, tombstoned, after.segments):
        return None
    return {ADDED: 0, REMOVED: deleted_rows(store, tombstoned), MODIFIED: 0}


def _targets_held(store: CatalogStore, tombstone_ids: Iterable[str], segment_ids: Iterable[str]) -> bool:
    """Whether these tombstones delete only rows of data files these segments hold, none of which stores its
    rows' identity (a compaction's or a merge's segment holds rows under the names of files it replaced,
    which a tombstone deletes by identity: the metadata alone cannot say which)."""
    tombstone_ids = list(dict.fromkeys(tombstone_ids))
    if not tombstone_ids:
        return True
    segments = store.segments(list(dict.fromkeys(segment_ids)))
    if any(s.kind in STORED_IDENTITY_KINDS or not s.files for s in segments.values()):
        return False
    held = _row_files(segments.values())
    infos = store.tombstones(tombstone_ids)
    return all(i in infos and infos[i].target_files and set(infos[i].target_files) <= held for i in tombstone_ids)


def _row_files(segments: Iterable[SegmentInfo]) -> set[str]:
    """The names tombstones give the segments' data files: their paths below the `_bs_seg=` directory."""
    return {f"{s.path.split(f'{SEGMENT_COLUMN}=', 1)[1]}/{name}" for s in segments for name in s.files}


def _tombstones_disjoint(store: CatalogStore, these: Iterable[str], among: Iterable[str],
                         warehouse: Warehouse | None = None) -> bool:
    """Whether no tombstone of `these` deletes a row that another tombstone of `among` deletes too. Tombstones
    naming different data files cannot; those naming a file in common (a second delete in a file, or a merge
    that brought two sides' deletes of one row) are compared by the row ids they hold, read from their small
    Parquet files when `warehouse` is given and they hold at most ROW_IDS_READ rows in all."""
    these, among = list(dict.fromkeys(these)), list(dict.fromkeys(among))
    infos = store.tombstones(set(these) | set(among))
    if any(i not in infos or (i in these and not infos[i].target_files) for i in these + among):
        return False
    owners: dict[str, set[str]] = {}
    for i in dict.fromkeys(these + among):
        for name in infos[i].target_files:
            owners.setdefault(name, set()).add(i)
    sharing = {j for i in these for name in infos[i].target_files if owners[name] != {i} for j in owners[name]}
    if not sharing:
        return True
    if warehouse is None or sum(infos[i].row_count for i in sharing) > ROW_IDS_READ:
        return False
    seen: set[tuple] = set()
    for i in sorted(sharing):
        ids = warehouse.parquet_column_values(infos[i].path, [ROW_FILE, ROW_POS])
        if len(ids) != infos[i].row_count or seen & set(ids):
            return False
        seen.update(ids)
    return True


def table_diff_counts(store: CatalogStore, warehouse: Warehouse, table: TableDiff,
                      memo: MutableMapping[str, int] | None = None) -> dict[str, int] | None:
    """A TableDiff's {added, removed, modified} from metadata when exact (see the module doc), else None."""
    if table.rows is None:
        return {ADDED: 0, REMOVED: 0, MODIFIED: 0}  # the same files: the same rows
    if table.whole or table.primary_key_before is not None:
        return None
    return diff_counts(store, warehouse, table.before, table.after, memo)


def dropped_file_rows(store: CatalogStore, warehouse: Warehouse, before: TableState | None,
                      after: TableState | None, memo: MutableMapping[str, int] | None = None) -> int | None:
    """The live rows of the segments `before` holds and `after` does not (an overwrite's, a compaction's or a
    drop's), or None when a tombstone deletes rows both there and in a kept segment, or tombstones overlap."""
    if before is None:
        return 0
    kept = set(after.segments) if after is not None else set()
    dropped = [s for s in before.segments if s not in kept]
    if not dropped:
        return 0
    if not _targets_held(store, before.tombstones, before.segments):
        return None
    dropped_files = _row_files(store.segments(dropped).values())
    inside = []
    for tombstone in store.tombstones(list(before.tombstones)).values():
        targets = set(tombstone.target_files)
        if targets & dropped_files and targets - dropped_files:
            return None  # it deletes rows both in dropped and in kept files: how many of each is not recorded
        if targets <= dropped_files:
            inside.append(tombstone.id)
    if not _tombstones_disjoint(store, inside, before.tombstones, warehouse):
        return None
    written = segment_rows(store, warehouse, dropped, memo)
    return None if written is None else written - deleted_rows(store, inside)
