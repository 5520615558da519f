"""The rows one commit inserted into and deleted from one table, read from what the commit wrote.

A commit's delta is derived generically from the table version before it (B, at the first
parent) and after it (A), so every kind of commit (DML, overwrite, restore, merge) is covered
without trusting operation details:

- segments A added: their rows live at A are inserts (only those segments are read);
- tombstones A added: their row images are deletes, for rows that sat in a segment B and A
  share and that B had not already deleted (a row deleted on both sides of a merge is
  deleted once); identities are de-duplicated;
- segments A removed (overwrite, restore): their rows live at B are deletes;
- tombstones A removed without a compaction (restore): the rows they deleted come back as
  inserts when they sit in a shared segment and no tombstone of A still deletes them.

A row keeps its identity (`_bs_file`, `_bs_pos`) through compaction, so when a commit swaps
compacted and uncompacted segments (a restore across a compaction) the rows present on both
sides cancel out. A commit whose only data operation on the table is a compaction is skipped
outright: it changes no rows. The cost is that of the changed rows: the reader is handed
synthetic table versions that hold only the added (or removed) segments and the tombstones
that can touch them.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from pyspark.sql import DataFrame, SparkSession

from ..catalog.namespace import Namespace
from ..catalog.schema import Schema
from ..catalog.state import Root, SegmentInfo, TableState
from ..catalog.store import CatalogStore
from ..catalog.tombstones import TombstoneInfo
from ..storage.difference import NEW, OLD, SIDE, unpaired
from ..storage import deletion_vectors
from ..storage.layout import SEGMENT_COLUMN, Warehouse
from ..storage.projection import Constant, select_sql
from ..storage.reader import (
    ROW_FILE,
    ROW_POS,
    STORED_IDENTITY_KINDS,
    TableReader,
    moved_tombstones,
    project_column,
    quote,
    recorded_files,
    segment_group,
)
from .versions import Step
from ..operations import ROW_OPS, Op

IDENTITY = (ROW_FILE, ROW_POS)  # a row's identity: stable across compaction, unique per written row
INSERT, DELETE = "insert", "delete"  # the change types; 'delete' < 'insert': sorting by type puts deletes first
# Up to this many tombstone rows, whether a commit's tombstones delete a row again is decided on the driver.
_DRIVER_IDENTITIES = 1_000_000
ROW_CHANGING_OPS = ROW_OPS | {Op.CREATE, Op.DROP}


@dataclass(frozen=True)
class StepDelta:
    """Deletes and inserts of one commit: the target schema's columns plus IDENTITY (None: no rows); a side
    named in `labelled` has the caller's label columns in place of IDENTITY (DeltaReader.delta)."""

    deletes: DataFrame | None
    inserts: DataFrame | None
    labelled: frozenset = frozenset()


def _rewrites(step: Step) -> bool:
    """Whether `step` refreshed an imported table from a source version that rewrote files (imports/landing.py):
    its removed files' rows are deleted whole, and their unchanged rows come back in the new files."""
    return any(o.op == Op.UPDATE and o.detail.get("refreshed_from") for o in step.operations)


def only_compaction(step: Step) -> bool:
    kinds = {o.op for o in step.operations}
    return Op.COMPACTION in kinds and not kinds & ROW_CHANGING_OPS


class DeltaReader:
    def __init__(self, spark: SparkSession, warehouse: Warehouse, store: CatalogStore, target: Schema,
                 dropped_values: bool = False):
        """`dropped_values`: a row image shows a column the version dropped (and the target has) with the value
        its file still holds, as the change feed needs (its images are the rows as they were before the
        drop); else NULL, as the version reads the row (a diff compares versions as they read)."""
        self.lookup = Namespace(store, Root({}, {}), "changes")  # version lookups straight from the store
        self.reader = TableReader(spark, warehouse, self.lookup)
        self.target = target
        self.dropped_values = dropped_values

    def delta(self, step: Step, by_identity: bool = True,
              labels: dict[str, tuple[Constant, ...]] | None = None) -> StepDelta:
        """The rows `step` deleted and inserted. `by_identity`: each row once even when several tombstones
        delete it; a caller that pairs rows by primary key (where such copies are the same row) may skip
        that shuffle. `labels`, {"delete" | "insert": columns}: where a side is one read with nothing done
        to it after (the common commit: one segment added, one tombstone), that read gives these in place of
        IDENTITY (as its source's values where it can, else in its projection; `labelled` names the side)."""
        if step.after is None or only_compaction(step):
            return StepDelta(None, None)
        after = step.after
        before = step.before or after.evolve(segments=(), tombstones=())
        in_before, in_after = set(before.segments), set(after.segments)
        tombs_before, tombs_after = set(before.tombstones), set(after.tombstones)
        added = [s for s in after.segments if s not in in_before]
        removed = [s for s in before.segments if s not in in_after]
        shared = [s for s in after.segments if s in in_before]
        tombs_added = [t for t in after.tombstones if t not in tombs_before]
        tombs_removed = [t for t in before.tombstones if t not in tombs_after]

        # Which sides are final as read: one part, and none of the steps below applies to it.
        paired = self._has_compacted(added + removed) or len(step.commit.parents) > 1 or _rewrites(step)
        final = set()
        if labels and not paired:
            if bool(added) + bool(tombs_removed) == 1 and not (len(tombs_removed) > 1 and by_identity):
                final.add(INSERT)
            if bool(removed) + bool(tombs_added) == 1 and not (len(tombs_added) + bool(removed) > 1 and by_identity):
                final.add(DELETE)
        own = {side: labels[side] if side in final else None for side in (INSERT, DELETE)}
        inserts = [self._live_rows(after, added, own[INSERT])] if added else []
        deletes = [self._live_rows(before, removed, own[DELETE])] if removed else []
        if tombs_added:
            deletes.append(self._tombstoned_rows(after, tombs_added, shared, before, by_identity, own[DELETE]))
        if tombs_removed:
            inserts.append(self._tombstoned_rows(before, tombs_removed, shared, after, by_identity, own[INSERT]))
        inserts, deletes = [d for d in inserts if d is not None], [d for d in deletes if d is not None]

        insert_df, delete_df = _union(inserts), _union(deletes)
        if delete_df is not None and len(tombs_added) + bool(removed) > 1 and by_identity:
            delete_df = delete_df.dropDuplicates(list(IDENTITY))
        if insert_df is not None and len(tombs_removed) > 1 and by_identity:
            insert_df = insert_df.dropDuplicates(list(IDENTITY))
        if insert_df is not None and delete_df is not None and self._has_compacted(added + removed):
            # Rows on both sides (same identity, in compacted and uncompacted form) did not change.
            insert_df, delete_df = (insert_df.join(delete_df.select(*IDENTITY), list(IDENTITY), "left_anti"),
                                    delete_df.join(insert_df.select(*IDENTITY), list(IDENTITY), "left_anti"))
        if insert_df is not None and delete_df is not None and (len(step.commit.parents) > 1 or _rewrites(step)):
            delete_df, insert_df = self._without_unchanged(after, delete_df, insert_df)
        return StepDelta(delete_df, insert_df, frozenset(final))

    def _without_unchanged(self, after: TableState, deletes: DataFrame, inserts: DataFrame):
        """A merge commit brings the other side's deletion and new image of a row whose values, in the columns
        the merge keeps, are the ones it had (changed only in a column the merge drops, or the same row
        rewritten); a refresh of a source's copy-on-write rewrite deletes every row of the files it replaced and
        inserts every row of the new ones. Neither is a change at that commit (SPEC 4): pairs of identical rows
        leave both lists. Compared in
        the feed's columns, which is exact when they hold every column the merge commit has."""
        columns = [c.name for c in self.target.columns]
        if not all(any(t.known_as(c.id) for t in self.target.columns)
                   for c in self.lookup.schema(after.schema_id).columns):
            return deletes, inserts
        changed = unpaired(deletes, inserts, columns, list(IDENTITY))
        if changed is None:
            return deletes, inserts
        return (changed.where(f"{SIDE} = {OLD}").drop(SIDE), changed.where(f"{SIDE} = {NEW}").drop(SIDE))

    # ------------------------------------------------------------ segments
    def _live_rows(self, state: TableState, segment_ids: list[str], labels: tuple[Constant, ...] | None = None
                   ) -> DataFrame:
        """Rows of `segment_ids` that are live in `state`, reading only those segments; with `labels` in place
        of IDENTITY when given."""
        segments = self.lookup.segment_infos(segment_ids)
        tombstones = self._tombstones_touching(state, segments)
        written = self._with_target_columns(state)
        partial = state.evolve(segments=tuple(segment_ids), tombstones=tuple(t.id for t in tombstones),
                               schema_id=written.id)
        columns = [project_column(written, c) for c in self.target.columns]
        if not labels:
            return select_sql(self.reader.read(partial, with_row_ids=True), [*columns, *IDENTITY])
        # Labelled rows need no row ids, and the read gives the labels: often no projection at all is left.
        rows = self.reader.read(partial, constants=labels)
        return select_sql(rows, [*columns, *(quote(c.name) for c in labels)],
                          loaded=[*(c.name for c in written.columns), *(c.name for c in labels)])

    def _with_target_columns(self, state: TableState) -> Schema:
        """`state`'s schema, plus the target's columns it lacks (a column it dropped that the target has): its
        files may still hold their values (a compaction keeps a dropped column's values, hidden), which
        the rows' images then show, as they were before the drop."""
        schema = self.lookup.schema(state.schema_id)
        missing = [c for c in self.target.columns if schema.source_of(c) is None]
        if not missing or not self.dropped_values:
            return schema
        taken = {c.name.lower() for c in schema.columns}
        extra = tuple(replace(c, name=f"_bs_target_{c.id}") if c.name.lower() in taken else c for c in missing)
        wide = Schema(f"{schema.id}+{self.target.id}", schema.columns + extra)
        self.lookup.add_schema(wide, state.id)
        return wide

    def _tombstones_touching(self, state: TableState, segments: list[SegmentInfo],
                             files: set[str] | None = None) -> list[TombstoneInfo]:
        """The tombstones of `state` that can delete rows of `segments` (metadata only)."""
        tombstones = self.lookup.tombstone_infos(state.tombstones)
        if not segments or not tombstones:
            return []
        if state.primary_key:
            # A key tombstone deletes rows written before it; compacted rows keep older sequences.
            if any(s.kind in STORED_IDENTITY_KINDS for s in segments):
                return tombstones
            floor = min(s.seq for s in segments)
            return [t for t in tombstones if t.seq > floor]
        groups = {segment_group(s) for s in segments}
        moved = set()
        if any(s.kind in STORED_IDENTITY_KINDS for s in segments):  # where the reader applies them too
            moved = moved_tombstones(tombstones, self.lookup.segment_infos(state.segments))
        return [t for t in tombstones if (groups & set(t.target_segments) or t.id in moved)
                and (files is None or not t.target_files or files & set(t.target_files))]

    # ---------------------------------------------------------- tombstones
    def _tombstoned_rows(self, holder: TableState, tombstone_ids: list[str], shared: list[str],
                         still_deleted_in: TableState, by_identity: bool = True,
                         labels: tuple[Constant, ...] | None = None) -> DataFrame | None:
        """Images of rows that `tombstone_ids` delete, for rows in a `shared` segment that
        `still_deleted_in` does not delete itself; with `labels` in place of IDENTITY when given.

        A tombstone names the segment its rows sat in when it was written. Where that segment is not shared
        (a merge brought the tombstone onto a branch that has since compacted those rows), its rows are
        found by identity in the shared segments that store identities, as the reader applies it."""
        tombstones = self.lookup.tombstone_infos(tombstone_ids)
        groups = {g for t in tombstones for g in t.target_segments}
        shared_segments = self.lookup.segment_infos(shared)
        located = [s for s in shared_segments if segment_group(s) in groups]
        moved_to = []
        if groups - {segment_group(s) for s in shared_segments}:
            moved_to = [s for s in shared_segments if s.kind in STORED_IDENTITY_KINDS and s not in located]
        if not located and not moved_to:
            return None
        places = {_location_key(s) for s in located}
        # An image's location is its group where this holds, which is one the tombstones name and a located
        # segment is: a filter by location would keep every image (and costs a plan to analyze).
        unfiltered = (not moved_to and groups <= places and not holder.partition_by
                      and all(_location_key(s) == segment_group(s) for s in located))
        files = {f for t in tombstones for f in t.target_files}
        others = self._tombstones_touching(still_deleted_in, located + moved_to, files or None)
        again = bool(others) and self._may_overlap(tombstones, others)
        deduplicated = (len(tombstones) > 1 or bool(located and moved_to)) and by_identity
        kept = self._dropped_values(tombstones, located + moved_to)
        columns = [quote(c.name) for c in self.target.columns]
        if labels and unfiltered and not (again or deduplicated or kept):
            # The images as the tombstones hold them: the read gives the labels, often with no projection left.
            images = self.reader.read_tombstones(holder, tombstones, self.target, constants=labels)
            labelled = [quote(c.name) for c in labels]
            return select_sql(images, [*columns, *labelled], loaded=[*(c.name for c in self.target.columns),
                                                                     *(c.name for c in labels)])
        images = self.reader.read_tombstones(holder, tombstones, self.target, with_image=True)
        parts = []
        if located:
            if unfiltered:
                parts.append(images)
            else:
                listed = ", ".join(f"'{key}'" for key in sorted(places))
                parts.append(images.where(f"{_LOCATION} IN ({listed})"))
        if moved_to:
            stored = self.reader.read(holder.evolve(segments=tuple(s.id for s in moved_to), tombstones=()),
                                      with_row_ids=True)
            parts.append(images.join(stored.select(*IDENTITY), list(IDENTITY), "left_semi"))
        images = _union(parts)
        located += moved_to
        if again:
            own_schema = self.lookup.schema(still_deleted_in.schema_id)
            already = self.reader.read_tombstones(still_deleted_in, others, own_schema).select(*IDENTITY)
            images = images.join(already, list(IDENTITY), "left_anti")
        if deduplicated:
            images = images.dropDuplicates(list(IDENTITY))
        images = self._with_dropped_values(holder, images, kept, located)
        return select_sql(images, [*columns, *([c.projected() for c in labels] if labels else IDENTITY)])

    def _may_overlap(self, tombstones: list[TombstoneInfo], others: list[TombstoneInfo]) -> bool:
        """Whether a row `tombstones` name may be one `others` deleted already. Both are tombstone files, as many
        rows as were deleted: up to _DRIVER_IDENTITIES rows their identities are read on the driver (cached:
        tombstones never change), so the common case, no row deleted twice, needs no anti-join and no Spark job
        to build one. True where they are more, or a row names no identity (the join decides then)."""
        if (sum(t.row_count for t in tombstones) + sum(t.row_count for t in others) > _DRIVER_IDENTITIES
                or not deletion_vectors.wanted()):
            return True
        warehouse = self.reader.warehouse
        try:
            mine, theirs = ({} if not group else deletion_vectors.named_positions(
                [(warehouse.uri(t.path), recorded_files(t)) for t in group]) for group in (tombstones, others))
        except (TypeError, ValueError, OSError):  # an identity missing, or a file pyarrow cannot read
            return True
        return any(np.intersect1d(positions, theirs[name], assume_unique=True).size
                   for name, positions in mine.items() if name in theirs)

    def _dropped_values(self, tombstones: list[TombstoneInfo], located: list[SegmentInfo]) -> list:
        """The target's columns some of `tombstones` lack (written after their branch dropped the column) that
        the rows' files of `located` hold."""
        return [c for c in self.target.columns
                if not all(self.lookup.schema(t.schema_id).source_of(c) for t in tombstones)
                and any(self.lookup.schema(s.schema_id).source_of(c) for s in located)]

    def _with_dropped_values(self, holder: TableState, images: DataFrame, kept: list,
                             located: list[SegmentInfo]) -> DataFrame:
        """A tombstone written after its branch dropped a column lacks that column, yet the row's file holds it:
        where the target schema has the column again (a table restored to before the drop, or a merge taking
        the other side's version, A6.3), the deleted image takes the value from the file, as the insert did
        (`kept`: those columns, _dropped_values)."""
        if not kept:
            return images
        rows = self.reader.read(holder.evolve(segments=tuple(s.id for s in located), tombstones=(),
                                              schema_id=self.target.id), with_row_ids=True)
        names = [quote(c.name) for c in kept]
        return images.drop(*[c.name for c in kept]).join(rows.select(*names, *IDENTITY), list(IDENTITY), "left")

    def _has_compacted(self, segment_ids: list[str]) -> bool:
        return any(s.kind in STORED_IDENTITY_KINDS for s in self.lookup.segment_infos(segment_ids))


# Where a tombstoned row lived: its segment directory below `_bs_seg=`, or for a compacted row (whose file
# names its original segment) the compaction's segment group. SQL text: one JVM call, not one per function.
_LOCATION = (f"CASE WHEN {SEGMENT_COLUMN} = substring_index({ROW_FILE}, '/', 1) "
             f"THEN regexp_extract({ROW_FILE}, '^(.*)/[^/]*$', 1) ELSE {SEGMENT_COLUMN} END")


def _location_key(segment: SegmentInfo) -> str:
    if segment.kind in STORED_IDENTITY_KINDS or segment.external:
        return segment_group(segment)
    return segment.path.split(f"{SEGMENT_COLUMN}=", 1)[1]


def _union(parts: list[DataFrame]) -> DataFrame | None:
    if not parts:
        return None
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result
