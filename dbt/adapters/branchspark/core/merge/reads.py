"""What one table's row merge reads: its inputs, and every read of rows and catalog records it makes.

A table's row merge (merge/keyless.py, merge/keyed.py, merge/counts.py) is planned over one `TableReads`,
made once for the table and handed down; it alone calls storage (storage/reader.py). The catalog records of
the segments and tombstones the three versions hold are looked up together the first time any is asked for,
and each record and segment group once, so the merge's steps ask for them as often as they need at no cost.
Every read starts from what the sides added since the merge base, so the work grows with the changes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..catalog.schema import Schema
from ..catalog.state import SegmentInfo, SegmentKind, TableState
from ..catalog.tombstones import TombstoneInfo, TombstoneSummary, first_written_in
from ..operations import Op
from ..storage.layout import SEGMENT_COLUMN
from ..storage.reader import (
    PREV_FILE,
    PREV_POS,
    ROW_FILE,
    ROW_ID_COLUMNS,
    ROW_POS,
    STORED_IDENTITY_KINDS,
    TableReader,
    segment_group,
)
from .report import Conflict
from .sides import ObjectChanges

IDENTITY = [ROW_FILE, ROW_POS]
_ROWS_PER_FILE = 1_000_000  # a merge's output files: sized by row count, at least one


def files_for(rows: int) -> int:
    return max(1, -(-rows // _ROWS_PER_FILE))


def origin(column: str = ROW_FILE) -> Column:
    """The segment group a row was first written to (its identity's file names it)."""
    return F.substring_index(F.col(column), "/", 1)


@dataclass
class TableInputs:
    name: str
    base: TableState
    src: TableState
    dest: TableState
    src_changes: ObjectChanges
    dest_changes: ObjectChanges
    schema: Schema  # the merged schema, staged in the namespace the reader looks up
    primary_key: tuple[str, ...]

    @property
    def columns(self) -> list[str]:
        return [c.name for c in self.schema.columns]

    @property
    def tombstone_columns(self) -> list[str]:
        """A row with its identity, as a merge's tombstone and the frames that feed it carry it."""
        return self.columns + list(ROW_ID_COLUMNS)

    def sides(self):
        """(side, its version, its changes since the base) for src ("s") and dest ("d")."""
        return (("s", self.src, self.src_changes), ("d", self.dest, self.dest_changes))


@dataclass
class DataPlan:
    """What the merge adds to dest's version of a table."""

    keep_segments: list[str]
    add_segments: list[str] = field(default_factory=list)  # src's, shared as they are
    new_rows: DataFrame | None = None  # written as one segment at the merge's sequence
    new_rows_kind: SegmentKind = SegmentKind.DATA
    doomed: DataFrame | None = None  # written as one tombstone at the merge's sequence
    tombstones: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    cached: list[DataFrame] = field(default_factory=list)  # change-sized frames shared by several jobs
    # Rows planned one by one (keyed: every key src changed; keyless: the rows of contested segments), with
    # both sides and the merged row; a paused merge shows them as a conflict relation with these columns.
    decided: DataFrame | None = None
    relation_keys: list[str] = field(default_factory=list)
    relation_values: list[str] = field(default_factory=list)
    # Keyless: merged rows a resolution or driver writes in place of contested rows, as update images.
    replacement_rows: DataFrame | None = None
    # Keyless: src's rows that the base had deleted and src holds again (TableReads.revived_rows), written anew
    # on dest: dest's tombstones still delete their old identities.
    revived_rows: DataFrame | None = None
    # Counted while planning (keyed), so the write skips empty outputs and reads nothing back.
    new_rows_count: int | None = None
    doomed_summary: TombstoneSummary | None = None
    # A preview (merge_keyed(report_only=n)): the first n conflicting keys in key order, rows of the keys and _bs_rule.
    shown_keys: list | None = None

    def release(self) -> None:
        for frame in self.cached:
            frame.unpersist()


def ops_text(changes: ObjectChanges) -> str:
    dml = sorted(changes.ops & {Op.INSERT, Op.DELETE, Op.UPDATE, Op.OVERWRITE})
    return "+".join(dml) or "-"


class TableReads:
    def __init__(self, reader: TableReader, lookup, inputs: TableInputs):
        self.reader = reader
        self.lookup = lookup  # a Namespace: finds any committed or staged version by id
        self.inputs = inputs
        self.spark = reader.spark
        self._segments: dict[str, SegmentInfo] = {}  # id -> record, filled by `segments`
        self._tombstones: dict[str, TombstoneInfo] = {}
        self._group: dict[str, str] = {}

    # ------------------------------------------------------- catalog records
    def segments(self, ids) -> list[SegmentInfo]:
        """The records of segments `ids`, in their order. The first call looks up every segment the three
        versions hold as well, in one call; any other is looked up once, when first asked for."""
        return self._records(self._segments, self.lookup.segment_infos, "segments", ids)

    def tombstones(self, ids) -> list[TombstoneInfo]:
        """The records of tombstones `ids`, in their order; looked up as `segments` are."""
        return self._records(self._tombstones, self.lookup.tombstone_infos, "tombstones", ids)

    def _records(self, known: dict, look_up, held: str, ids) -> list:
        ids = list(ids)
        if not known:
            i = self.inputs
            wanted = list(dict.fromkeys([*getattr(i.base, held), *getattr(i.src, held), *getattr(i.dest, held), *ids]))
            known.update(zip(wanted, look_up(wanted)))
        missing = [r for r in dict.fromkeys(ids) if r not in known]
        if missing:
            known.update(zip(missing, look_up(missing)))
        return [known[r] for r in ids]

    def schema(self, schema_id: str) -> Schema:
        return self.lookup.schema(schema_id)

    def group(self, segment: SegmentInfo) -> str:
        """The write a segment came from (the `_bs_seg` value its rows carry)."""
        if segment.id not in self._group:
            self._group[segment.id] = segment_group(segment)
        return self._group[segment.id]

    def groups(self, segment_ids) -> set[str]:
        return {self.group(s) for s in self.segments(segment_ids)}

    def added_groups(self, changes: ObjectChanges) -> set[str]:
        """Segment groups written by a side since the base (its inserts and update images)."""
        added = [s for s in self.segments(dict.fromkeys(changes.segments_added))
                 if s.kind not in STORED_IDENTITY_KINDS]
        return {self.group(s) for s in added} - self.groups(self.inputs.base.segments)

    def base_only(self, state: TableState, changes: ObjectChanges | None = None) -> list[str]:
        """Base segments a side holds no longer and did not replace itself (overwrite or compaction): the
        side descends from the base through a merge that wrote the base's rows anew (a per-key merge the
        other way), so its history is not the base plus additions."""
        held = set(state.segments) | (changes.segments_removed | changes.segments_compacted if changes else set())
        return [s for s in self.inputs.base.segments if s not in held]

    # ----------------------------------------------------------------- rows
    def read(self, state: TableState, segment_ids: list[str]) -> DataFrame:
        """Rows live in `state` of segments `segment_ids`, with identity, read in the merged schema."""
        i = self.inputs
        partial = state.evolve(segments=tuple(segment_ids), schema_id=i.schema.id, primary_key=i.primary_key)
        return self.reader.read(partial, with_row_ids=True)

    def new_rows(self, state: TableState, groups: set[str]) -> DataFrame:
        """Rows live in `state` that were written in `groups`, with identity, read in the merged schema."""
        segments = self.segments(state.segments)
        plain = [s.id for s in segments if s.kind not in STORED_IDENTITY_KINDS and self.group(s) in groups]
        stored = [s.id for s in segments if s.kind in STORED_IDENTITY_KINDS]
        parts = []
        if plain:
            parts.append(self.read(state, plain))
        if stored and groups:
            # Rows a compaction rewrote keep the file they were first written to, which names their group.
            rows = self.read(state, stored)
            parts.append(rows.filter(F.substring_index(F.col(ROW_FILE), "/", 1).isin(sorted(groups))))
        if not parts:
            return self.read(state, [])
        return reduce(DataFrame.unionByName, parts)

    def tombstone_rows(self, table: TableState, tombstones: list[TombstoneInfo], with_image: bool = False):
        """The rows `tombstones` delete, in the merged schema (with their images if `with_image`)."""
        return self.reader.read_tombstones(table, tombstones, self.inputs.schema, with_image=with_image)

    def keys_touched(self, state: TableState) -> DataFrame:
        """The keys of the rows a side wrote or deleted since the base (the key columns of its new files)."""
        i = self.inputs
        base_segments, base_tombstones = set(i.base.segments), set(i.base.tombstones)
        segments = self.segments([s for s in state.segments if s not in base_segments])
        tombstones = self.tombstones([t for t in state.tombstones if t not in base_tombstones])
        return self.reader.read_keys(state.evolve(primary_key=i.primary_key), segments, tombstones, i.schema)

    def deleted_rows(self, state: TableState, changes: ObjectChanges) -> DataFrame | None:
        """Images and identities of every row a side's tombstones deleted since the base. A tombstone the base
        holds too is none of them, though the side's commits added it: a merge of the base's own changes
        into the side (merging back) brought it."""
        i = self.inputs
        in_base = set(i.base.tombstones)
        tombstones = self.tombstones([t for t in dict.fromkeys(changes.tombstones_added) if t not in in_base])
        if not tombstones:
            return None
        rows = self.tombstone_rows(state.evolve(primary_key=i.primary_key), tombstones, with_image=True)
        # A merge's tombstone can name a row the base had deleted already (merging back a branch that merged
        # the base's own deletions): that row is no deletion of the side's. Only merges bring such tombstones.
        by_merges = set(changes.merged_tombstones)
        merged = {g for t in tombstones if t.id in by_merges for g in first_written_in(t)}
        dead = self.dead_at_base(merged) if merged and not i.primary_key else None
        return rows.join(dead, IDENTITY, "left_anti") if dead is not None else rows

    def dead_at_base(self, segments: set[str]) -> DataFrame | None:
        """Identities of rows first written to `segments` that the base had already deleted: a side's tombstone
        can name one again (a merge of a branch that deleted it before the base, merged back). Only the base's
        tombstones of those segments are read."""
        base = self.inputs.base
        earlier = [t for t in self.tombstones(base.tombstones) if segments & set(first_written_in(t))]
        if not earlier:
            return None
        return self.tombstone_rows(base, earlier).select(*IDENTITY)

    def revived_rows(self, state: TableState, changes: ObjectChanges, other: TableState) -> DataFrame | None:
        """Rows live in `state` that the base had deleted, with identity: the side's inserts since the base.
        A side lacks a base tombstone it did not fold in (compaction, whole overwrite) only when a merge gave it
        a row in place of that deletion (the row had the same values as the other side's new one) and the
        base's side is merged back. Rows live in `other` too are no change between the two. Metadata decides
        that no such tombstone exists, the common case."""
        i = self.inputs
        held = set(state.tombstones) | changes.tombstones_removed
        lacking = self.tombstones([t for t in i.base.tombstones if t not in held])
        if not lacking or i.primary_key:
            return None
        groups = {g for t in lacking for g in first_written_in(t)}
        dead = self.tombstone_rows(i.base, lacking).select(*IDENTITY)
        rows = self.new_rows(state, groups).join(dead, IDENTITY, "left_semi")
        elsewhere = self.new_rows(other, groups).select(*IDENTITY)
        return rows.join(elsewhere, IDENTITY, "left_anti").select(*i.tombstone_columns)

    def overwritten_rows(self, changes: ObjectChanges) -> DataFrame | None:
        """Identities of the base rows a side's overwrites (recorded by difference) removed."""
        tombstones = self.tombstones(dict.fromkeys(changes.overwrite_tombstones))
        if not tombstones:
            return None
        return self.tombstone_rows(self.inputs.base.evolve(primary_key=()), tombstones).select(*IDENTITY)

    def prev_identity(self, updates: list[SegmentInfo]) -> DataFrame:
        """(identity, identity of the row it replaced) for the rows of update segments."""
        paths = [self.reader.warehouse.uri(f"{s.path}/{f}") for s in updates for f in s.files]
        raw = self.spark.read.parquet(*paths)
        return raw.select(F.substring_index(F.col("_metadata.file_path"), f"/{SEGMENT_COLUMN}=", -1).alias(ROW_FILE),
                          F.col("_metadata.row_index").alias(ROW_POS), F.col(PREV_FILE), F.col(PREV_POS))

    def base_only_rows(self) -> DataFrame | None:
        """The base's live rows in segments a side does not hold (`base_only`), as base rows of their keys:
        that side's copies of them carry other identities and no tombstone of the originals."""
        i = self.inputs
        ids = []
        for _, state, changes in i.sides():
            # A side's own compaction is no such copy (its rows keep their identities, stored); a compaction
            # a merge brought it (of the other side's segments) leaves the base's segments unaccounted for.
            ids += [s for s in self.base_only(state, changes) if s not in ids]
        return self.read(i.base, ids) if ids else None

    def on_dest(self, segment_ids, segment: Column, row_file: Column) -> Column:
        """The segment group a row lives in on dest (of `segment_ids`), which the merge's tombstone names (what
        `branch_changes` locates deletions by): the group it was read in, else the one it was first written
        to, else (dest compacted it) dest's latest segment that stores row identities."""
        infos = self.segments(segment_ids)
        groups = sorted({self.group(s) for s in infos})
        rewritten = sorted({self.group(s) for s in infos if s.kind in STORED_IDENTITY_KINDS})
        first = F.substring_index(row_file, "/", 1)
        return (F.when(segment.isin(groups), segment).when(first.isin(groups), first)
                .otherwise(F.lit(rewritten[-1]) if rewritten else segment))
