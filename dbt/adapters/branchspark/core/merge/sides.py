"""What one side of a merge did since the merge base, from commit metadata alone.

A side is the commits reachable from its head and not from the base. For
every object it lists the operation kinds (SPEC section 2) and, for tables,
the segments and tombstones its DML added and the segments it removed or
touched. Nothing here reads data.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..catalog.store import CatalogStore
from ..operations import ROW_OPS, ObjectKind, Op



@dataclass
class ObjectChanges:
    """The operations one side made to one database or table since the base."""

    ops: set[str] = field(default_factory=set)
    segments_added: list[str] = field(default_factory=list)
    segments_removed: set[str] = field(default_factory=set)  # by overwrite (compaction keeps rows)
    tombstones_removed: set[str] = field(default_factory=set)  # folded in by compaction or a whole overwrite
    segments_compacted: set[str] = field(default_factory=set)  # rewritten by its own compactions (rows kept)
    tombstones_added: list[str] = field(default_factory=list)
    touched: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # op -> segment groups
    overwritten_partitions: list[dict] = field(default_factory=list)  # {columns, partitions} per partial overwrite
    whole_overwrite: bool = False  # an overwrite that replaced every segment (catalogs before overwrites by difference)
    overwrite_tombstones: list[str] = field(default_factory=list)  # the rows its overwrites removed (by difference)
    merged_tombstones: list[str] = field(default_factory=list)  # tombstones its merge commits added
    # Its records describe it against another version than this merge's base: a merge commit of the side changed
    # it (the records are against that merge's first parent), or the side's line forked before the base's version
    # of it (merging back after a merge that kept dest's table). Only the side's version then says what it holds.
    off_base: bool = False
    row_commits: int = 0  # commits that changed its rows (a row changed and changed back needs two)

    @property
    def overwrote(self) -> bool:
        return Op.OVERWRITE in self.ops


def rows_merge_by_count(src: ObjectChanges, dest: ObjectChanges) -> bool:
    """SPEC 3.3: a keyless table a side overwrote since the base (recorded by difference) merges each distinct
    row's count three-way, rows having no identity across an overwrite; A1/A3 (same segment) do not apply."""
    return (src.overwrote or dest.overwrote) and not (src.segments_removed or dest.segments_removed
                                                      or src.whole_overwrite or dest.whole_overwrite)


@dataclass
class Side:
    head: str
    commits: list[str]
    databases: dict[str, ObjectChanges]
    tables: dict[str, ObjectChanges]

    def table(self, table_id: str) -> ObjectChanges:
        return self.tables.get(table_id) or ObjectChanges()

    def database(self, database_id: str) -> ObjectChanges:
        return self.databases.get(database_id) or ObjectChanges()


def side_since(store: CatalogStore, head: str, base: str) -> Side:
    """The commits of `head` not reachable from `base`, oldest first, and what they did."""
    behind = {c.id for c in store.ancestors(base)}
    commits = [c for c in store.ancestors(head) if c.id not in behind]
    commits.reverse()
    databases: dict[str, ObjectChanges] = defaultdict(ObjectChanges)
    tables: dict[str, ObjectChanges] = defaultdict(ObjectChanges)
    for commit in commits:
        changed_rows = set()
        for op in store.operations(commit.id):
            changes = databases[op.object_id] if op.object_kind == ObjectKind.DATABASE else tables[op.object_id]
            detail = op.detail or {}
            if op.op == Op.ALTER_PROPERTIES and "primary_key" in detail:
                changes.ops.add(Op.ALTER_PRIMARY_KEY)
            changes.ops.add(op.op)
            if op.op in ROW_OPS and op.object_id not in changed_rows:
                changed_rows.add(op.object_id)
                changes.row_commits += 1
            changes.segments_added += detail.get("segments_added", [])
            changes.tombstones_added += detail.get("tombstones_added", [])
            changes.tombstones_removed.update(detail.get("tombstones_removed", []))
            if len(commit.parents) > 1:
                changes.merged_tombstones += detail.get("tombstones_added", [])
                changes.off_base = True
            if op.op == Op.COMPACTION:
                changes.segments_compacted.update(detail.get("segments_removed", []))
            if op.op in (Op.UPDATE, Op.DELETE):
                changes.touched[op.op].update(detail.get("segments_touched", []))
            if op.op == Op.OVERWRITE and detail.get("difference"):
                changes.overwrite_tombstones += detail.get("overwrite_tombstones", detail.get("tombstones_added", []))
            elif op.op == Op.OVERWRITE:
                changes.segments_removed.update(detail.get("segments_removed", []))
                if "partitions" in detail:
                    changes.overwritten_partitions.append({"columns": detail.get("partition_columns", []),
                                                           "partitions": detail["partitions"]})
                else:
                    changes.whole_overwrite = True
    _mark_tables_forked_elsewhere(store, head, base, behind, tables)
    return Side(head, [c.id for c in commits], dict(databases), dict(tables))


def _mark_tables_forked_elsewhere(store: CatalogStore, head: str, base: str, behind: set[str],
                                  tables: dict[str, ObjectChanges]) -> None:
    """Tables whose version where the side's first-parent line leaves the base's history is not the base's."""
    start = next((c.id for c in store.first_parents(head) if c.id in behind), base)
    if start == base or not tables:
        return
    at_start, at_base = store.root(start).tables, store.root(base).tables
    for table_id, changes in tables.items():
        if (at_start.get(table_id) or [None])[0] != (at_base.get(table_id) or [None])[0]:
            changes.off_base = True
