"""Row-level merge of one table that both sides changed: plans in Spark, written only on request.

Everything starts from what the sides added since the merge base (their new
segments and tombstones), so the work grows with the changes, not the table.

Keyless tables (3.3) merge by row identity, which every row keeps for life:
src's new segments join dest as they are (zero copy), and one merge
tombstone carries src's deletions, less the rows dest already deleted (A2)
or overwrote (A5), plus src's update images of rows dest overwrote (A4).
A paused merge or a merge driver decides the rows of segments A1/A3 contest
one by one instead (merge/contested.py): their decisions replace the rules'
for those rows.

Primary-key tables (3.4) merge per key: a key only one side changed takes
that side's row; keys both sides changed are decided here (same row, cell by
cell, or conflict). The merge writes one tombstone for every key it changes
on dest and one segment with those keys' new rows, both at the merge's
sequence, so they replace whatever dest held for those keys. When no key was
changed by both sides (one small job compares the keys of the two sides' new
files), src's segments and tombstones join dest as they are, with nothing
written: a key tombstone deletes the rows of its keys written before it, so on
dest it deletes exactly the base rows it deleted on src.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial, reduce

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..catalog.schema import Schema
from ..catalog.state import SegmentInfo, SegmentKind, TableState
from ..catalog.tombstones import TombstoneSummary, first_written_in
from ..storage.difference import comparable_columns
from ..storage.layout import SEGMENT_COLUMN
from ..storage.reader import (
    PREV_FILE,
    PREV_POS,
    ROW_FILE,
    ROW_ID_COLUMNS,
    ROW_POS,
    ROW_SEQ,
    STORED_IDENTITY_KINDS,
    TOMB_SEQ,
    TableReader,
    quote,
    segment_group,
)
from . import contested as contested_rows
from .conflict_tables import KEEP, MERGED, apply_resolutions
from .drivers import driver_outputs
from .report import Conflict
from .rules import Rule
from .sides import ObjectChanges, rows_merge_by_count
from ..operations import Op

IDENTITY = [ROW_FILE, ROW_POS]
_SHOWN_KEYS = 20  # conflicting keys listed in a report; the count covers all of them
# The operation pair a contested keyless row's rule stands for, as conflict reports name it.
_CONTESTED_OPS = {Rule.A1: (Op.UPDATE, Op.DELETE), Rule.A3: (Op.UPDATE, Op.UPDATE)}
_ROWS_PER_FILE = 1_000_000  # a merge's output files: sized by row count, at least one


def _files_for(rows: int) -> int:
    return max(1, -(-rows // _ROWS_PER_FILE))


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
    # Keyless: src's rows that the base had deleted and src holds again (_revived_rows), written anew on dest:
    # dest's tombstones still delete their old identities.
    revived_rows: DataFrame | None = None
    # Counted while planning (keyed), so the write skips empty outputs and reads nothing back.
    new_rows_count: int | None = None
    doomed_summary: TombstoneSummary | None = None
    # A preview (keyed(report_only=n)): the first n conflicting keys in key order, rows of the keys and _bs_rule.
    shown_keys: list | None = None

    def release(self) -> None:
        for frame in self.cached:
            frame.unpersist()


class DataMerger:
    def __init__(self, reader: TableReader, lookup):
        self.reader = reader
        self.lookup = lookup  # a Namespace: finds any committed or staged version by id

    # ------------------------------------------------------------ helpers
    def _groups(self, segment_ids) -> set[str]:
        return {segment_group(s) for s in self.lookup.segment_infos(list(segment_ids))}

    def _added_groups(self, inputs: TableInputs, changes: ObjectChanges) -> set[str]:
        """Segment groups written by a side since the base (its inserts and update images)."""
        added = [s for s in self.lookup.segment_infos(list(dict.fromkeys(changes.segments_added)))
                 if s.kind not in STORED_IDENTITY_KINDS]
        return {segment_group(s) for s in added} - self._groups(inputs.base.segments)

    def _new_rows(self, inputs: TableInputs, state: TableState, groups: set[str]) -> DataFrame:
        """Rows live in `state` that were written in `groups`, with identity, read in the merged schema."""
        segments = self.lookup.segment_infos(state.segments)
        plain = [s.id for s in segments if s.kind not in STORED_IDENTITY_KINDS and segment_group(s) in groups]
        stored = [s.id for s in segments if s.kind in STORED_IDENTITY_KINDS]
        parts = []
        if plain:
            parts.append(self._read(inputs, state, plain))
        if stored and groups:
            # Rows a compaction rewrote keep the file they were first written to, which names their group.
            rows = self._read(inputs, state, stored)
            parts.append(rows.filter(F.substring_index(F.col(ROW_FILE), "/", 1).isin(sorted(groups))))
        if not parts:
            return self._read(inputs, state, [])
        return reduce(DataFrame.unionByName, parts)

    def _read(self, inputs: TableInputs, state: TableState, segment_ids: list[str]) -> DataFrame:
        partial = state.evolve(segments=tuple(segment_ids), schema_id=inputs.schema.id,
                               primary_key=inputs.primary_key)
        return self.reader.read(partial, with_row_ids=True)

    def _deleted_rows(self, inputs: TableInputs, state: TableState, changes: ObjectChanges) -> DataFrame | None:
        """Images and identities of every row a side's tombstones deleted since the base. A tombstone the base
        holds too is none of them, though the side's commits added it: a merge of the base's own changes
        into the side (merging back) brought it."""
        in_base = set(inputs.base.tombstones)
        tombstones = self.lookup.tombstone_infos([t for t in dict.fromkeys(changes.tombstones_added)
                                                  if t not in in_base])
        if not tombstones:
            return None
        rows = self.reader.read_tombstones(state.evolve(primary_key=inputs.primary_key), tombstones,
                                           inputs.schema, with_image=True)
        # A merge's tombstone can name a row the base had deleted already (merging back a branch that merged
        # the base's own deletions): that row is no deletion of the side's. Only merges bring such tombstones.
        by_merges = set(changes.merged_tombstones)
        merged = {g for t in tombstones if t.id in by_merges for g in first_written_in(t)}
        dead = self._dead_at_base(inputs, merged) if merged and not inputs.primary_key else None
        return rows.join(dead, IDENTITY, "left_anti") if dead is not None else rows

    @staticmethod
    def _origin(column: str = ROW_FILE):
        return F.substring_index(F.col(column), "/", 1)

    # ------------------------------------------------------------ keyless
    def keyless(self, inputs: TableInputs, contested: dict[str, set[str]] | None = None, prefer: str | None = None,
                driver=None, resolutions: DataFrame | None = None) -> DataPlan:
        """`contested`: the A1/A3 segments (merge/contested.py) to decide row by row, with the table's merge
        `driver`, `prefer` and a paused merge's `resolutions`; None or empty: the merge as SPEC 3.3 plans it."""
        src, dest = inputs.src_changes, inputs.dest_changes
        if src.whole_overwrite:
            # Replaying src's overwrite on dest leaves src's rows, whatever dest did.
            return DataPlan(keep_segments=list(inputs.src.segments), tombstones=list(inputs.src.tombstones))
        base_ids = set(inputs.base.segments)
        dest_ids = set(inputs.dest.segments)
        src_infos = self.lookup.segment_infos(inputs.src.segments)
        src_added = self._added_groups(inputs, src)
        shared = [s.id for s in src_infos if s.id not in base_ids and s.id not in dest_ids
                  and s.kind not in STORED_IDENTITY_KINDS and segment_group(s) in src_added]
        plan = DataPlan(keep_segments=list(inputs.dest.segments), add_segments=shared,
                        tombstones=list(inputs.dest.tombstones))
        # Rows src compacted together with older rows: carry src's own rows over, identities kept.
        carried_groups = src_added - self._groups(shared)
        if any(s.kind in STORED_IDENTITY_KINDS and s.id not in base_ids for s in src_infos) and carried_groups:
            carried = self._new_rows(inputs, inputs.src, carried_groups).drop(SEGMENT_COLUMN)
            plan.new_rows, plan.new_rows_kind = carried, SegmentKind.MERGE
        # Partitions src overwrote: dest's segments there go, as replaying the overwrite would drop them.
        if src.segments_removed:
            removed = set(src.segments_removed)
            dest_new = [s for s in self.lookup.segment_infos(inputs.dest.segments) if s.id not in base_ids]
            for spec in src.overwritten_partitions:
                wanted = {tuple(v) for v in spec["partitions"]}
                columns = spec["columns"]
                removed |= {s.id for s in dest_new
                            if tuple(s.partition_values.get(c) for c in columns) in wanted}
            plan.keep_segments = [s for s in plan.keep_segments if s not in removed]
        gone = self._groups(dest.segments_removed) | self._groups(src.segments_removed)
        doomed = self._deleted_rows(inputs, inputs.src, src)
        if doomed is not None:
            doomed = doomed.filter(~self._origin().isin(sorted(gone | carried_groups)) if gone | carried_groups
                                   else F.lit(True))
            already = self._deleted_rows(inputs, inputs.dest, dest)
            if already is not None:
                doomed = doomed.join(already.select(*IDENTITY), IDENTITY, "left_anti")  # A2: deleted once
            doomed = doomed.dropDuplicates(IDENTITY).select(*_tombstone_columns(inputs))
        stale = dropped_updates = None
        if (shared or carried_groups) and (dest.segments_removed or dest.overwrite_tombstones):
            # src's update segments, shared as they are or compacted since (their rows then carried over)
            updates = shared + [s.id for s in self.lookup.segment_infos(list(dict.fromkeys(src.segments_added)))
                                if segment_group(s) in carried_groups]
            stale, dropped_updates = self._stale_update_images(inputs, updates, self._groups(dest.segments_removed),
                                                               self._overwritten_rows(inputs, dest))
            if stale is not None:
                stale = stale.select(*_tombstone_columns(inputs))
                if plan.new_rows is not None:  # A4 drops a carried image: it is not written
                    plan.new_rows = plan.new_rows.join(stale.select(*IDENTITY), IDENTITY, "left_anti")
                in_shared = stale.filter(self._origin().isin(sorted(self._groups(shared)))) if shared else None
                if in_shared is not None:
                    doomed = in_shared if doomed is None else doomed.unionByName(in_shared)
        revived = self._revived_rows(inputs, inputs.src, src, inputs.dest)
        if rows_merge_by_count(src, dest):
            doomed, revived, unwritten = self._count_merge(inputs, src_added, doomed, stale, carried_groups, revived,
                                                           dropped_updates, carrying=plan.new_rows is not None)
            if plan.new_rows is not None:  # carried rows the count merge does not add are not written
                plan.new_rows = plan.new_rows.join(unwritten, IDENTITY, "left_anti")
        if revived is not None:
            doomed, revived = _pair_off(doomed, revived, [c.name for c in inputs.schema.columns], src_added)
            plan.revived_rows = revived.select(*[quote(c.name) for c in inputs.schema.columns])
        if doomed is not None:
            located = self._on_dest(plan.keep_segments + plan.add_segments, F.col(SEGMENT_COLUMN), F.col(ROW_FILE))
            doomed = doomed.withColumn(SEGMENT_COLUMN, located)
        plan.doomed = doomed
        if contested:
            self._decide_contested(inputs, plan, contested, prefer, driver, resolutions)
        return plan

    def _decide_contested(self, inputs: TableInputs, plan: DataPlan, contested: dict[str, set[str]],
                          prefer: str | None, driver, resolutions: DataFrame | None) -> None:
        """Rows of contested segments, decided one by one; their decisions replace the rules' for them."""
        columns = [c.name for c in inputs.schema.columns]
        sides = {"s": (inputs.src, inputs.src_changes), "d": (inputs.dest, inputs.dest_changes)}
        deleted = {side: self._deleted_rows(inputs, state, changes) for side, (state, changes) in sides.items()}
        base = contested_rows.base_rows({k: v for k, v in deleted.items() if v is not None}, columns, contested,
                                        self._dead_at_base(inputs, set().union(*contested.values())))
        base = base.localCheckpoint()  # change-sized, read by each step below
        images = {side: self._current_images(inputs, state, changes, base, columns, side)
                  for side, (state, changes) in sides.items()}
        removed = {side: self._groups(changes.segments_removed) for side, (_, changes) in sides.items()}
        paired = contested_rows.pair(base, images, removed, columns)
        decided = contested_rows.decide(paired, columns, contested, prefer, driver)
        if resolutions is not None:
            decided = apply_resolutions(decided, resolutions, contested_rows.CONTESTED_KEYS, columns)
        decided = decided.cache()
        plan.cached.append(decided)
        plan.decided, plan.relation_keys, plan.relation_values = decided, list(contested_rows.CONTESTED_KEYS), columns
        if prefer is not None and driver is None and resolutions is None:
            # ours/theirs settle only the contested rows (SPEC 3.6); the segments' other rows merge by the rules,
            # as plan.doomed already has them. The conflicts settled are the segments' (SPEC 3.3 decides A1/A3
            # per segment), as a merge without on_conflict reports them.
            decided = plan.decided = decided.filter(contested_rows.contested())
            per_segment = dict(decided.groupBy(contested_rows.ROW_SEGMENT).count().collect())
            for rule, segments in sorted(contested.items()):
                count = sum(per_segment.get(s, 0) for s in segments)
                plan.conflicts.append(Conflict("table", inputs.name, *_CONTESTED_OPS[rule], rule,
                                               f"segments {', '.join(sorted(segments))} ({count} contested rows)"))
        else:
            self._report_decided(inputs, plan, decided)
        doomed, replacements, decided_ids = contested_rows.writes(decided, columns)
        if plan.doomed is not None:
            plan.doomed = plan.doomed.join(decided_ids, IDENTITY, "left_anti").unionByName(doomed)
        else:
            plan.doomed = doomed
        plan.replacement_rows = replacements

    @staticmethod
    def _report_decided(inputs: TableInputs, plan: DataPlan, decided: DataFrame) -> None:
        """The conflicts of rows decided one by one (a paused merge, a driver): counts per rule and segment only,
        as a report lists segments, not rows."""
        found = (decided.filter(F.col("_bs_rule").isNotNull()).groupBy("_bs_rule", contested_rows.ROW_SEGMENT)
                 .count().collect())
        for rule in sorted({r["_bs_rule"] for r in found}):
            segments = sorted(r[contested_rows.ROW_SEGMENT] for r in found if r["_bs_rule"] == rule)
            count = sum(r["count"] for r in found if r["_bs_rule"] == rule)
            src_op, dest_op = _CONTESTED_OPS.get(rule, (_ops(inputs.src_changes), _ops(inputs.dest_changes)))
            plan.conflicts.append(Conflict("table", inputs.name, src_op, dest_op, rule,
                                           f"segments {', '.join(segments)} ({count} rows)"))

    def _revived_rows(self, inputs: TableInputs, state: TableState, changes: ObjectChanges,
                      other: TableState) -> DataFrame | None:
        """Rows live in `state` that the base had deleted, with identity: the side's inserts since the base.
        A side lacks a base tombstone it did not fold in (compaction, whole overwrite) only when a merge gave it
        a row in place of that deletion (the row had the same values as the other side's new one) and the
        base's side is merged back. Rows live in `other` too are no change between the two. Metadata decides
        that no such tombstone exists, the common case."""
        held = set(state.tombstones) | changes.tombstones_removed
        lacking = self.lookup.tombstone_infos([t for t in inputs.base.tombstones if t not in held])
        if not lacking or inputs.primary_key:
            return None
        groups = {g for t in lacking for g in first_written_in(t)}
        dead = self.reader.read_tombstones(inputs.base, lacking, inputs.schema).select(*IDENTITY)
        rows = self._new_rows(inputs, state, groups).join(dead, IDENTITY, "left_semi")
        elsewhere = self._new_rows(inputs, other, groups).select(*IDENTITY)
        return rows.join(elsewhere, IDENTITY, "left_anti").select(*_tombstone_columns(inputs))

    def _dead_at_base(self, inputs: TableInputs, segments: set[str]) -> DataFrame | None:
        """Identities of rows first written to `segments` that the base had already deleted: a side's tombstone
        can name one again (a merge of a branch that deleted it before the base, merged back). Only the base's
        tombstones of those segments are read."""
        earlier = [t for t in self.lookup.tombstone_infos(inputs.base.tombstones) if segments & set(first_written_in(t))]
        if not earlier:
            return None
        return self.reader.read_tombstones(inputs.base, earlier, inputs.schema).select(*IDENTITY)

    def _current_images(self, inputs: TableInputs, state: TableState, changes: ObjectChanges, base: DataFrame,
                        columns: list[str], side: str) -> DataFrame | None:
        """(base identity, the side's live update image of that base row), following updates of updates."""
        updates = [s for s in self.lookup.segment_infos(list(dict.fromkeys(changes.segments_added)))
                   if s.kind == SegmentKind.UPDATE]
        if not updates:
            return None
        lineage = contested_rows.update_lineage(self._prev_identity(updates), base.select(*IDENTITY), len(updates))
        live = self._new_rows(inputs, state, {segment_group(s) for s in updates})
        return contested_rows.current_images(live, lineage, columns, side)

    def _overwritten_rows(self, inputs: TableInputs, changes: ObjectChanges) -> DataFrame | None:
        """Identities of the base rows a side's overwrites (recorded by difference) removed."""
        tombstones = self.lookup.tombstone_infos(list(dict.fromkeys(changes.overwrite_tombstones)))
        if not tombstones:
            return None
        return self.reader.read_tombstones(inputs.base.evolve(primary_key=()), tombstones, inputs.schema).select(*IDENTITY)

    def _stale_update_images(self, inputs: TableInputs, segments: list[str], overwritten: set[str],
                             overwritten_rows: DataFrame | None = None):
        """A4: (src's update images, of the update segments among `segments` (live or compacted since), of rows
        that dest overwrote (in `overwritten` segment groups, or among `overwritten_rows` identities), following
        chains of updates; the identities of those base rows, whose update A4 drops as a whole); (None, None)
        when src updated nothing."""
        updates = [s for s in self.lookup.segment_infos(segments) if s.kind == SegmentKind.UPDATE]
        if not updates:
            return None, None
        # Every image ever written (live or replaced since), with the row it replaced.
        replaced = self._prev_identity(updates)
        stale = replaced.filter(F.substring_index(F.col(PREV_FILE), "/", 1).isin(sorted(overwritten)))
        if overwritten_rows is not None:
            roots = overwritten_rows.select(F.col(ROW_FILE).alias(PREV_FILE), F.col(ROW_POS).alias(PREV_POS))
            stale = stale.unionByName(replaced.join(roots, [PREV_FILE, PREV_POS], "left_semi"))
        updated_base_rows = stale.select(F.col(PREV_FILE).alias(ROW_FILE), F.col(PREV_POS).alias(ROW_POS))
        stale = stale.select(*IDENTITY)
        frontier = stale
        for _ in range(len(updates)):  # each round follows one more update of an update
            frontier = replaced.join(frontier.select(F.col(ROW_FILE).alias(PREV_FILE), F.col(ROW_POS).alias(PREV_POS)),
                                     [PREV_FILE, PREV_POS], "left_semi").select(*IDENTITY)
            stale = stale.unionByName(frontier)
        live = self._new_rows(inputs, inputs.src, {segment_group(s) for s in updates})
        return live.join(stale.distinct(), IDENTITY, "left_semi"), updated_base_rows

    def _count_merge(self, inputs: TableInputs, src_added: set[str], doomed: DataFrame | None,
                     stale: DataFrame | None, carried: set[str], revived: DataFrame | None,
                     dropped_updates: DataFrame | None = None, carrying: bool = False):
        """SPEC 3.3 on a keyless table an overwrite touched: rows have no identity across an overwrite, so each
        distinct row's count merges three-way. Per distinct row, src's net change ds (its live new rows less
        the base rows it deleted) and dest's dd: dest gains ds, except where dd == ds (the same change, taken
        once). The identity merge planned so far (src's new rows shared, src's deletions of rows still live
        on dest in `doomed`) is corrected to that: fewer of src's new rows, more or fewer deletions. Every
        frame here holds only rows the sides wrote or deleted since the base. Rows a side holds again that the
        base had deleted (`revived`, src's; dest's read here) count as its new rows; src's the merge does not
        add are dropped from `revived`. An update A4 drops (`dropped_updates`: the base rows it replaced) is
        no change of src's: neither its image nor its deletion of the base row counts. src's rows the merge
        carries over (`carrying`: src compacted them, in `carried` groups) are src's new rows too, written
        anew rather than shared. Returns (doomed, revived, the identities of carried rows not to write)."""
        columns = [c.name for c in inputs.schema.columns]
        dest_added = self._added_groups(inputs, inputs.dest_changes)
        parts = []
        src_new = self._new_rows(inputs, inputs.src, src_added - carried)
        if stale is not None:
            src_new = src_new.join(stale.select(*IDENTITY), IDENTITY, "left_anti")  # A4: dropped already
        parts.append(src_new.select(*_tombstone_columns(inputs), F.lit("sa").alias("_bs_tag")))
        parts.append(self._new_rows(inputs, inputs.dest, dest_added).select(*_tombstone_columns(inputs),
                                                                             F.lit("da").alias("_bs_tag")))
        dest_revived = self._revived_rows(inputs, inputs.dest, inputs.dest_changes, inputs.src)
        if dest_revived is not None:
            parts.append(dest_revived.withColumn("_bs_tag", F.lit("da")))
        written_anew = [revived] if revived is not None else []
        if carrying:
            carried_rows = self._new_rows(inputs, inputs.src, carried)
            if stale is not None:
                carried_rows = carried_rows.join(stale.select(*IDENTITY), IDENTITY, "left_anti")
            written_anew.append(carried_rows.select(*_tombstone_columns(inputs)))
        for rows in written_anew:
            parts.append(rows.withColumn("_bs_tag", F.lit("sa")).withColumn("_bs_written", F.lit(True)))
        deleted = {}
        for tag, state, changes, own in (("sd", inputs.src, inputs.src_changes, src_added),
                                         ("dd", inputs.dest, inputs.dest_changes, dest_added)):
            rows = self._deleted_rows(inputs, state, changes)
            if rows is not None:
                # Base rows only: a row the side wrote and deleted again is no change of it.
                rows = (rows.filter(~self._origin().isin(sorted(own))) if own else rows).dropDuplicates(IDENTITY)
                if tag == "sd" and dropped_updates is not None:
                    rows = rows.join(dropped_updates, IDENTITY, "left_anti")
                deleted[tag] = rows.select(*_tombstone_columns(inputs))
        if "sd" in deleted:
            dead = deleted["dd"].select(*IDENTITY, F.lit(True).alias("_bs_dead")) if "dd" in deleted else None
            src_deleted = deleted["sd"]
            src_deleted = (src_deleted.join(dead, IDENTITY, "left").fillna(False, ["_bs_dead"]) if dead is not None
                           else src_deleted.withColumn("_bs_dead", F.lit(False)))
            parts.append(src_deleted.withColumn("_bs_tag", F.when(F.col("_bs_dead"), "sd_dead").otherwise("sd"))
                         .drop("_bs_dead"))
        if "dd" in deleted:
            parts.append(deleted["dd"].withColumn("_bs_tag", F.lit("dd")))
        events = reduce(partial(DataFrame.unionByName, allowMissingColumns=True), parts).fillna(False, ["_bs_written"]) \
            if written_anew else reduce(DataFrame.unionByName, parts).withColumn("_bs_written", F.lit(False))
        nothing = self.reader.spark.createDataFrame([], "`{}` string, `{}` long".format(*IDENTITY))
        values = comparable_columns(events.schema, columns)
        if values is None:
            return doomed, revived, nothing  # values that cannot be compared: the identity merge stands
        per_row = Window.partitionBy(*values)
        per_tag = Window.partitionBy(*values, "_bs_tag").orderBy(*IDENTITY)

        def count(*tags):
            return F.sum(F.col("_bs_tag").isin(*tags).cast("long")).over(per_row)

        n_sa, n_da, n_dd = count("sa"), count("da"), count("dd")
        n_sd_live, n_sd = count("sd"), count("sd", "sd_dead")
        ds, dd = n_sa - n_sd, n_da - n_dd
        wanted = F.when(ds == dd, F.lit(0)).otherwise(ds)
        excess = (n_sa - n_sd_live) - wanted  # what the identity merge adds beyond the wanted change
        rank = F.row_number().over(per_tag)
        tag = F.col("_bs_tag")
        decided = events.select("*", excess.alias("_bs_excess"), n_sa.alias("_bs_n_sa"), n_da.alias("_bs_n_da"),
                                rank.alias("_bs_rank"))
        excess_c, n_sa_c, n_da_c, rank_c = F.col("_bs_excess"), F.col("_bs_n_sa"), F.col("_bs_n_da"), F.col("_bs_rank")
        # Too many: take back src's new rows first, then delete dest's own new copies.
        unadd = (tag == "sa") & (rank_c <= F.least(excess_c, n_sa_c))
        extra = (tag == "da") & (rank_c <= excess_c - n_sa_c)
        # Too few: keep some of the base rows src deleted.
        kept = (tag == "sd") & (rank_c <= -excess_c)
        # Still too many: src deleted copies dest deleted too, beyond the new copies to take back. Each such
        # deletion counts against another copy dest still holds from the base (one marker row per value).
        short = (tag == "sd_dead") & (rank_c == 1) & (excess_c > n_sa_c + n_da_c)
        decided = decided.filter(unadd | extra | kept | short).localCheckpoint()
        more = decided.filter(~F.col("_bs_tag").isin("sd", "sd_dead") & ~F.col("_bs_written")) \
            .select(*_tombstone_columns(inputs))
        shortfall = decided.filter(F.col("_bs_tag") == "sd_dead")
        if not shortfall.isEmpty():
            held = self._dest_base_copies(inputs, dest_added, shortfall, columns, doomed)
            more = more.unionByName(held)
        unwritten = decided.filter(F.col("_bs_written")).select(*IDENTITY)  # a row written anew, not added: not written
        if revived is not None:
            revived = revived.join(unwritten, IDENTITY, "left_anti")
        spared = decided.filter(F.col("_bs_tag") == "sd").select(*IDENTITY)
        if doomed is not None:
            doomed = doomed.join(spared, IDENTITY, "left_anti").unionByName(more)
        else:
            doomed = more
        return _without_churn(doomed.dropDuplicates(IDENTITY), src_new.select(*_tombstone_columns(inputs)), columns,
                              src_added), revived, unwritten

    def _dest_base_copies(self, inputs: TableInputs, dest_added: set[str], shortfall: DataFrame,
                          columns: list[str], doomed: DataFrame | None) -> DataFrame:
        """Rows dest holds from the base that a count merge deletes beyond the changed rows: per value of
        `shortfall` (excess less the new copies taken back), that many live base copies on dest, not among
        `doomed` already. Only when such a shortfall exists (rare: both sides removed copies of one value) does
        it scan dest's rows, keeping those of the few values by a broadcast join."""
        live = self._read(inputs, inputs.dest, list(inputs.dest.segments))
        if dest_added:
            live = live.filter(~self._origin().isin(sorted(dest_added)))
        if doomed is not None:
            live = live.join(doomed.select(*IDENTITY), IDENTITY, "left_anti")
        # values compared as the count merge grouped them (comparable_columns: a map as its sorted entries)
        wanted = shortfall.select(*[v.alias(f"_bs_w{i}") for i, v in enumerate(comparable_columns(shortfall.schema, columns))],
                                  (F.col("_bs_excess") - F.col("_bs_n_sa") - F.col("_bs_n_da")).alias("_bs_short"))
        live = live.select("*", *[v.alias(f"_bs_v{i}") for i, v in enumerate(comparable_columns(live.schema, columns))])
        same = reduce(lambda a, b: a & b, [F.col(f"_bs_v{i}").eqNullSafe(F.col(f"_bs_w{i}")) for i in range(len(columns))])
        matched = live.join(F.broadcast(wanted), same)
        per_value = Window.partitionBy(*[f"_bs_w{i}" for i in range(len(columns))]).orderBy(*IDENTITY)
        return (matched.withColumn("_bs_pick", F.row_number().over(per_value))
                .filter(F.col("_bs_pick") <= F.col("_bs_short")).select(*_tombstone_columns(inputs)))

    def _prev_identity(self, updates: list[SegmentInfo]) -> DataFrame:
        """(identity, identity of the row it replaced) for the rows of update segments."""
        paths = [self.reader.warehouse.uri(f"{s.path}/{f}") for s in updates for f in s.files]
        raw = self.reader.spark.read.parquet(*paths)
        return raw.select(F.substring_index(F.col("_metadata.file_path"), f"/{SEGMENT_COLUMN}=", -1).alias(ROW_FILE),
                          F.col("_metadata.row_index").alias(ROW_POS), F.col(PREV_FILE), F.col(PREV_POS))

    # --------------------------------------------------------------- keyed
    def keyed(self, inputs: TableInputs, prefer: str | None, driver=None, resolutions: DataFrame | None = None,
              share: bool = True, report_only: int = 0) -> DataPlan:
        """Per key, from one shuffle: every changed row and deleted image of both sides, grouped by key.

        When no key was changed by both sides (and `share`), src's segments and tombstones join dest as
        they are, as a keyless merge shares src's segments: nothing is written. `driver` is the table's
        merge driver (merge/drivers.py); `resolutions` is a paused merge's conflict relation, whose merged
        values replace the rules' for every key it lists; both mean the rows are decided one by one.

        `report_only` (a merge preview: nothing will be written): the conflicts only, and the first
        `report_only` conflicting keys in key order (`DataPlan.shown_keys`), from one Spark job; no check
        whether src's files could be shared (shared, they would conflict with nothing: no key is changed by
        both sides, which the per-key decision finds as well) and no counts for a write."""
        if share and not report_only and driver is None and resolutions is None and self._shareable(inputs) \
                and not (src_rows_may_come_back(inputs.src_changes, self.lookup.schema(inputs.base.schema_id),
                                                self.lookup.schema(inputs.src.schema_id), inputs.schema)
                         and self.src_rows_come_back(inputs)) \
                and self._disjoint_keys(inputs):
            return self._shared(inputs)
        keys = list(inputs.primary_key)
        values = [c.name for c in inputs.schema.columns if c.name not in keys]
        row_columns = _tombstone_columns(inputs)
        written = self._added_groups(inputs, inputs.src_changes) | self._added_groups(inputs, inputs.dest_changes)
        parts = []
        for side, state, changes in (("s", inputs.src, inputs.src_changes), ("d", inputs.dest, inputs.dest_changes)):
            live, gone = self._side_changes(inputs, state, changes)
            parts.append(_tagged(live, keys, row_columns, side, "row", ROW_SEQ, F.lit(False)))
            if gone is not None:
                # A deleted image of a row older than both sides' writes is the base row of its key, unless
                # the base itself deleted that row in a tombstone this side lacks (_marked_dead_in_base).
                older = ~self._origin().isin(sorted(written)) if written else F.lit(True)
                gone, dead_in_base = self._marked_dead_in_base(inputs, state, gone)
                parts.append(_tagged(gone, keys, row_columns, side, "gone", TOMB_SEQ, older & ~dead_in_base))
        base_only = self._base_only_rows(inputs)
        if base_only is not None:
            parts.append(_tagged(base_only, keys, row_columns, "b", "base", ROW_SEQ, F.lit(True)))
        events = reduce(DataFrame.unionByName, parts)
        # What a side changed is decided by values (SPEC 3.4): its row for the key now (the base row where it
        # wrote nothing for the key) against the base row, absence included.
        same_as_base = {side: _same_values(side, "b", [c.name for c in inputs.schema.columns]) for side in "sd"}
        grouped = (events.groupBy(*[quote(k) for k in keys]).agg(
            F.expr(_final_row("s")).alias("s"),
            F.expr(_final_row("d")).alias("d"),
            F.expr("first(CASE WHEN _bs_base THEN _bs_row END, true)").alias("b"),
            F.expr("max(_bs_side = 's')").alias("s_wrote"),
            F.expr("max(_bs_side = 'd')").alias("d_wrote"))
            .selectExpr(*[quote(k) for k in keys], "b",
                        "CASE WHEN s_wrote THEN s ELSE b END AS s", "CASE WHEN d_wrote THEN d ELSE b END AS d")
            .selectExpr("*", f"NOT ({same_as_base['s']}) AS s_touched", f"NOT ({same_as_base['d']}) AS d_touched")
            .filter("s_touched"))  # keys only dest changed stay as dest has them
        s_in, d_in, b_in = (F.col(p).isNotNull() for p in "sdb")
        both = F.col("d_touched")

        def cell(side: str, column: str) -> str:
            return f"{side}.{quote(column)}"

        # A merge driver decides first, for keys both sides changed; the default rules cover the rest.
        driven, driver_conflict = driver_outputs(driver, values) if driver is not None else ({}, None)
        undriven = [c for c in values if c not in driven]
        all_driven = bool(driven) and not undriven

        # The per-column rules are SQL text: one call into the JVM per expression, not per column and side.
        def clashes(c: str) -> str:
            return (f"(NOT {cell('s', c)} <=> {cell('b', c)} AND NOT {cell('d', c)} <=> {cell('b', c)} "
                    f"AND NOT {cell('s', c)} <=> {cell('d', c)})")

        same = F.expr(" AND ".join(f"{cell('s', c)} <=> {cell('d', c)}" for c in undriven) or "true")
        cell_clash = F.expr(" OR ".join(clashes(c) for c in undriven) or "false")
        rule = F.when(~both, F.lit(None))
        if driver_conflict is not None:
            rule = rule.when(F.coalesce(driver_conflict, F.lit(False)), F.lit(Rule.DRIVER.value))
        if all_driven:
            rule = rule.when(s_in | d_in, F.lit(None))
        rule = (rule.when(~s_in & ~d_in, F.lit(None))
                .when(s_in & d_in & same, F.lit(None))
                .when(s_in != d_in, F.lit(Rule.KEY_UPDATE_DELETE.value))
                .when(~b_in, F.lit(Rule.KEY_INSERT.value))
                .when(cell_clash, F.lit(Rule.KEY_CELLS.value)))
        clash = F.col("_bs_rule").isNotNull()
        ours = prefer == "ours"
        preferred = "d" if ours else "s"

        def merged_sql(column: str) -> str:
            """A column only one side changed takes that side's value; else the preferred side's."""
            return (f"CASE WHEN b IS NOT NULL AND {cell('s', column)} <=> {cell('b', column)} THEN {cell('d', column)} "
                    f"WHEN b IS NOT NULL AND {cell('d', column)} <=> {cell('b', column)} THEN {cell('s', column)} "
                    f"ELSE {cell(preferred, column)} END")

        def new_value(column: str):
            if column in keys:
                return F.col(quote(column))
            if column in driven:  # the driver's value is a Column: the same rules, composed as Columns
                merged = driven[column]
                if prefer is None:
                    settled = F.when(F.expr(clashes(column)), F.lit(None)).otherwise(merged)
                else:  # a cell clash settles those cells only; a row-level clash takes the preferred row
                    settled = (F.when(F.col("_bs_rule") == Rule.KEY_CELLS.value, merged)
                               .otherwise(F.expr(cell(preferred, column))))
                return F.when(~both, F.expr(cell("s", column))).when(clash, settled).otherwise(merged)
            merged = merged_sql(column)
            if prefer is None:  # an open conflict: cells both sides changed differently stay undecided
                settled = f"CASE WHEN {clashes(column)} THEN NULL ELSE {merged} END"
            else:  # SPEC 3.4: a cell clash settles those cells only (`merged` prefers a side there), the
                # other cells merge; a row-level clash (update/delete, insert) takes the preferred side's row
                settled = (f"CASE WHEN _bs_rule = '{Rule.KEY_CELLS.value}' THEN {merged} "
                           f"ELSE {cell(preferred, column)} END")
            return F.expr(f"CASE WHEN NOT d_touched THEN {cell('s', column)} WHEN _bs_rule IS NOT NULL THEN {settled} "
                          f"ELSE {merged} END")

        winner_in = d_in if ours else s_in
        kept_when_merged = (s_in | d_in) if all_driven else (s_in & d_in)
        keep = ((~both & s_in) | (both & ~clash & kept_when_merged)
                | (both & clash & (winner_in if prefer else F.lit(None))))
        decided = (grouped.withColumn("_bs_rule", rule)
                   .withColumn(MERGED, F.struct(*[new_value(c.name).cast(c.data_type).alias(c.name)
                                                  for c in inputs.schema.columns]))
                   .withColumn(KEEP, keep))
        if resolutions is not None:
            decided = apply_resolutions(decided, resolutions, keys, values)
        if report_only:
            count, shown = _first_conflicting_keys(decided, keys, report_only)
            plan = DataPlan(keep_segments=list(inputs.dest.segments), tombstones=list(inputs.dest.tombstones),
                            decided=decided, relation_keys=keys, relation_values=values, shown_keys=shown)
            plan.conflicts = _key_conflicts(inputs, keys, shown[:_SHOWN_KEYS], count)
            return plan
        decided = decided.cache()
        plan = DataPlan(keep_segments=list(inputs.dest.segments), tombstones=list(inputs.dest.tombstones),
                        cached=[decided], decided=decided, relation_keys=keys, relation_values=values)
        # Doomed on dest: the row dest holds for every key the merge rewrites, unless it already holds the
        # merged row (the same change on both sides): then the key is no change at all.
        unchanged = F.coalesce(F.col(KEEP), F.lit(False)) & d_in & F.expr(
            _same_values(MERGED, "d", [c.name for c in inputs.schema.columns]))
        doomed_here = d_in & ~unchanged
        written_here = F.coalesce(F.col(KEEP), F.lit(False)) & ~unchanged
        current = F.col("d")
        # Where dest holds that row (_on_dest): a base row's image comes from src, which may hold it in its own
        # compaction; a row keeps its identity, whose file names the segment it was first written to. The
        # tombstone then names a segment of dest (what `branch_changes` locates deletions by). A base row
        # in neither is in a segment dest rewrote it into (its compaction): dest did not change the key,
        # so the row is live there, and the latest such segment stands for where.
        segment = self._on_dest(inputs.dest.segments, current[SEGMENT_COLUMN], current[ROW_FILE])
        # One job counts everything the write needs: conflicts, rows to write, and what the tombstone
        # touches (one small struct per data file: metadata), so no output is read back.
        stats = decided.agg(
            F.count(F.when(F.col("_bs_rule").isNotNull(), 1)).alias("conflicts"),
            F.count(F.when(written_here, 1)).alias("kept"),
            F.count(F.when(doomed_here, 1)).alias("doomed"),
            F.collect_set(F.when(doomed_here, F.struct(segment.alias("segment"),
                                                       current[ROW_FILE].alias("file")))).alias("touched"),
        ).first()
        plan.new_rows_count = stats["kept"]
        plan.doomed_summary = TombstoneSummary(stats["doomed"], frozenset(t["segment"] for t in stats["touched"]),
                                               frozenset(t["file"] for t in stats["touched"]))
        # Reported even when `prefer` settles them, so a merge says what it decided.
        count = stats["conflicts"]
        if count:
            # the first keys in key order, as a preview lists them (merge/preview's one job)
            shown = (decided.filter(F.col("_bs_rule").isNotNull()).select(*[quote(k) for k in keys], "_bs_rule")
                     .orderBy(*[quote(k) for k in keys]).limit(_SHOWN_KEYS).collect())
            plan.conflicts = _key_conflicts(inputs, keys, shown, count)
        # Sized by the counts: a small merge writes one file of each kind, not one per shuffle partition.
        plan.new_rows = (decided.filter(written_here).select(f"{MERGED}.*")
                         .coalesce(_files_for(stats["kept"])))
        plan.doomed = (decided.filter(doomed_here).select(*[(segment if c == SEGMENT_COLUMN else current[c]).alias(c)
                                                            for c in row_columns])
                       .coalesce(_files_for(stats["doomed"])))
        return plan

    def _on_dest(self, segment_ids, segment, row_file):
        """The segment group a row lives in on dest (of `segment_ids`), which the merge's tombstone names (what
        `branch_changes` locates deletions by): the group it was read in, else the one it was first written
        to, else (dest compacted it) dest's latest segment that stores row identities."""
        infos = self.lookup.segment_infos(list(segment_ids))
        groups = sorted({segment_group(s) for s in infos})
        rewritten = sorted({segment_group(s) for s in infos if s.kind in STORED_IDENTITY_KINDS})
        origin = F.substring_index(row_file, "/", 1)
        return (F.when(segment.isin(groups), segment).when(origin.isin(groups), origin)
                .otherwise(F.lit(rewritten[-1]) if rewritten else segment))

    def _shareable(self, inputs: TableInputs) -> bool:
        """Whether src's changes can join dest as they are, once no key was changed by both sides.

        A key tombstone deletes the rows of its keys written before it, so src's tombstones delete on
        dest exactly the base rows they deleted on src, and dest's rows of other keys stay. Overwrites
        and compactions replace segments instead (their rows are not src's changes alone), and a new
        primary key changes what a tombstone's key means."""
        sides = (inputs.src_changes, inputs.dest_changes)
        if any(changes.segments_removed or changes.ops & {Op.COMPACTION, Op.ALTER_PRIMARY_KEY} for changes in sides):
            return False
        if not inputs.base.primary_key == inputs.src.primary_key == inputs.dest.primary_key:
            return False
        base = set(inputs.base.segments)
        for state in (inputs.src, inputs.dest):
            if self._base_only(inputs, state) or not set(inputs.base.tombstones) <= set(state.tombstones):
                return False  # a side's history is not the base plus additions: decide key by key
        return not any(s.kind in STORED_IDENTITY_KINDS for s in self.lookup.segment_infos(list(inputs.src.segments))
                       if s.id not in base)

    def _disjoint_keys(self, inputs: TableInputs) -> bool:
        """True when no key is among the rows both sides wrote or deleted since the base (one small job
        reading only the key columns of their new files)."""
        base_segments, base_tombstones = set(inputs.base.segments), set(inputs.base.tombstones)
        touched = []
        for state in (inputs.src, inputs.dest):
            segments = self.lookup.segment_infos([s for s in state.segments if s not in base_segments])
            tombstones = self.lookup.tombstone_infos([t for t in state.tombstones if t not in base_tombstones])
            touched.append(self.reader.read_keys(state.evolve(primary_key=inputs.primary_key), segments, tombstones,
                                                 inputs.schema))
        on = F.expr(" AND ".join(f"s.{quote(k)} <=> d.{quote(k)}" for k in inputs.primary_key))
        return touched[0].alias("s").join(touched[1].alias("d"), on, "left_semi").isEmpty()

    @staticmethod
    def _shared(inputs: TableInputs) -> DataPlan:
        """dest's version plus src's segments and tombstones since the base, shared as they are."""
        before = set(inputs.base.segments) | set(inputs.dest.segments)
        dead = set(inputs.base.tombstones) | set(inputs.dest.tombstones)
        return DataPlan(keep_segments=list(inputs.dest.segments),
                        add_segments=[s for s in inputs.src.segments if s not in before],
                        tombstones=list(inputs.dest.tombstones) + [t for t in inputs.src.tombstones if t not in dead])

    def src_rows_come_back(self, inputs: TableInputs) -> bool:
        """Whether a row src wrote since the base is, in the merged columns, one src deleted since the base:
        changed and changed back (a row src wrote and rewrote alike counts too: then the rows are merely
        decided key by key). One small job over src's changed rows only."""
        deleted = self._deleted_rows(inputs, inputs.src, inputs.src_changes)
        if deleted is None:
            return False
        columns = [quote(c.name) for c in inputs.schema.columns]
        written = self._new_rows(inputs, inputs.src, self._added_groups(inputs, inputs.src_changes))
        return not written.select(*columns).intersect(deleted.select(*columns)).isEmpty()

    @staticmethod
    def _base_only(inputs: TableInputs, state: TableState, changes: ObjectChanges | None = None) -> list[str]:
        """Base segments a side holds no longer and did not replace itself (overwrite or compaction): the
        side descends from the base through a merge that wrote the base's rows anew (a per-key merge the
        other way), so its history is not the base plus additions."""
        held = set(state.segments) | (changes.segments_removed | changes.segments_compacted if changes else set())
        return [s for s in inputs.base.segments if s not in held]

    def _base_only_rows(self, inputs: TableInputs) -> DataFrame | None:
        """The base's live rows in segments a side does not hold (`_base_only`), as base rows of their keys:
        that side's copies of them carry other identities and no tombstone of the originals."""
        ids = []
        for state, changes in ((inputs.src, inputs.src_changes), (inputs.dest, inputs.dest_changes)):
            # A side's own compaction is no such copy (its rows keep their identities, stored); a compaction
            # a merge brought it (of the other side's segments) leaves the base's segments unaccounted for.
            ids += [s for s in self._base_only(inputs, state, changes) if s not in ids]
        return self._read(inputs, inputs.base, ids) if ids else None

    def _marked_dead_in_base(self, inputs: TableInputs, state: TableState, gone: DataFrame):
        """(`gone`, a Column: the image's row was already deleted in the base). Only a base tombstone the side
        lacks can have deleted it (a side deletes rows live on it); a key tombstone deletes the rows of its
        keys written before it."""
        held = set(state.tombstones)
        base_only = self.lookup.tombstone_infos([t for t in inputs.base.tombstones if t not in held])
        if not base_only:
            return gone, F.lit(False)
        keys = list(inputs.primary_key)
        kills = (self.reader.read_tombstones(inputs.base.evolve(primary_key=inputs.primary_key), base_only,
                                             inputs.schema)
                 .groupBy(*[quote(k) for k in keys]).agg(F.max(TOMB_SEQ).alias("_bs_base_kill")))
        gone = gone.join(kills, keys, "left")
        return gone, F.coalesce(F.col(ROW_SEQ) < F.col("_bs_base_kill"), F.lit(False))

    def _side_changes(self, inputs: TableInputs, state: TableState, changes: ObjectChanges):
        """(rows the side wrote, still including those it deleted later; images of rows it deleted, with
        the deleting sequence in TOMB_SEQ) since the base. The per-key aggregate settles which rows are
        live (`_final_row`), so reading the side's rows needs no anti-join against its tombstones."""
        rows = self._new_rows(inputs, state.evolve(tombstones=()), self._added_groups(inputs, changes))
        deleted = self._deleted_rows(inputs, state, changes)
        removed = [s for s in changes.segments_removed if s in set(inputs.base.segments)]
        if removed:
            # An overwrite deleted the base rows it replaced, key by key, before anything it wrote.
            gone = self._read(inputs, inputs.base, removed).withColumn(TOMB_SEQ, F.col(ROW_SEQ) + 1)
            deleted = gone if deleted is None else deleted.select(*gone.columns).unionByName(gone)
        return rows, deleted


def _key_conflicts(inputs: TableInputs, keys: list[str], shown: list, count: int) -> list[Conflict]:
    """A keyed table's conflicts as a report lists them: per rule, the keys of it among the first shown (in key
    order), and how many conflicting keys are not listed."""
    conflicts = []
    for rule_name in sorted({r["_bs_rule"] for r in shown}):
        listed = [", ".join(f"{k}={r[k]}" for k in keys) for r in shown if r["_bs_rule"] == rule_name]
        more = f" (+{count - len(shown)} more keys)" if count > len(shown) else ""
        conflicts.append(Conflict("table", inputs.name, _ops(inputs.src_changes), _ops(inputs.dest_changes),
                                  rule_name, "; ".join(listed) + more))
    return conflicts


def _first_conflicting_keys(decided: DataFrame, keys: list[str], limit: int) -> tuple[int, list]:
    """(how many keys conflict, the first `limit` of them in key order with their rule): one Spark job that
    keeps the first ones in key order (a top-k per partition, no sort of them all); fewer than `limit` are all
    of them, else a second job counts them."""
    ordered = [quote(k) for k in keys]
    clashes = decided.filter(F.col("_bs_rule").isNotNull())
    shown = (clashes.selectExpr(f"struct({', '.join(ordered)}, _bs_rule) AS _bs_key_row", *ordered)
             .orderBy(*ordered).limit(limit).select("_bs_key_row").collect())
    count = len(shown) if len(shown) < limit else clashes.count()
    return count, [row["_bs_key_row"] for row in shown]


def _tagged(frame: DataFrame, keys: list[str], row_columns: list[str], side: str, kind: str, seq: str,
            base) -> DataFrame:
    # SQL text: one parse per expression instead of a JVM call per column reference (planning is most of
    # a small merge's cost).
    row = ", ".join(quote(c) for c in row_columns)
    return frame.select(*[F.expr(quote(k)) for k in keys],
                        F.expr(f"'{side}' AS _bs_side"), F.expr(f"'{kind}' AS _bs_kind"), F.expr(f"{quote(seq)} AS _bs_seq"),
                        base.alias("_bs_base"), F.expr(f"struct({row}) AS _bs_row"))


def _final_row(side: str) -> str:
    """SQL aggregate: the side's row for a key, i.e. its newest written row unless a tombstone at least as
    new deleted it (a key tombstone deletes rows written before it; an update's image has its sequence)."""
    written = f"CASE WHEN _bs_side = '{side}' AND _bs_kind = 'row' THEN _bs_seq END"
    deleted = f"CASE WHEN _bs_side = '{side}' AND _bs_kind = 'gone' THEN _bs_seq END"
    return f"CASE WHEN max({written}) >= coalesce(max({deleted}), -1) THEN max_by(_bs_row, {written}) END"


def _same_values(left: str, right: str, columns: list[str]) -> str:
    """SQL: structs `left` and `right` are both absent, or both present with the same `columns` values."""
    values = " AND ".join(f"{left}.{quote(c)} <=> {right}.{quote(c)}" for c in columns) or "true"
    return f"({left} IS NULL AND {right} IS NULL OR {left} IS NOT NULL AND {right} IS NOT NULL AND {values})"


def src_rows_may_come_back(src_changes: ObjectChanges, base_schema: Schema, src_schema: Schema,
                           merged_schema: Schema) -> bool:
    """Whether src's changes since the base may hold a row that, in the merged columns, src deleted and wrote
    back alike: changed in one commit and changed back in another, or changed only in a column the merge
    drops. Shared as they are, the merge commit would list it as deleted and inserted (SPEC 4: no change)."""
    return src_changes.row_commits > 1 or any(
        merged_schema.source_of(c) is None for c in base_schema.columns + src_schema.columns)


def _without_churn(doomed: DataFrame, src_new: DataFrame, columns: list[str], src_groups: set[str]) -> DataFrame:
    """`doomed` less the rows on dest it deletes that an identical row of src's the merge adds replaces (SPEC 4:
    a row that did not change is not a change): that dest row stays, and the src row is tombstoned with the
    merge instead, so the merge commit lists neither. Counts per distinct row stay as decided."""
    # Materialized (change-sized) first, so the join below plans over src's few new rows alone. (What kept
    # Spark from inferring the segment scan's deleted-row filter onto tombstone scans is the expression
    # declaring itself nondeterministic: storage/jvm/DeletedRowExpression.java.)
    kept = src_new.localCheckpoint().join(doomed.select(*IDENTITY), IDENTITY, "left_anti")
    from_src = F.substring_index(F.col(ROW_FILE), "/", 1).isin(sorted(src_groups)) if src_groups else F.lit(False)
    rows = (doomed.withColumn("_bs_tag", F.when(from_src, "src").otherwise("dest"))
            .unionByName(kept.withColumn("_bs_tag", F.lit("add"))))
    values = comparable_columns(rows.schema, columns)
    if values is None:
        return doomed
    tag = F.col("_bs_tag")
    per_row = Window.partitionBy(*values)
    pairs = F.least(F.sum((tag == "dest").cast("long")).over(per_row), F.sum((tag == "add").cast("long")).over(per_row))
    rows = rows.withColumn("_bs_paired", F.row_number().over(Window.partitionBy(*values, "_bs_tag")
                                                             .orderBy(*IDENTITY)) <= pairs)
    paired = F.col("_bs_paired")
    return rows.filter((tag == "src") | ((tag == "dest") & ~paired) | ((tag == "add") & paired)).drop("_bs_tag",
                                                                                                      "_bs_paired")


def _pair_off(doomed: DataFrame | None, revived: DataFrame, columns: list[str], src_groups: set[str]):
    """(doomed, revived) less each pair of a dest row the merge deletes and a revived row of the same values:
    that dest row stays and the revived one is not written, so the merge commit lists neither (SPEC 4)."""
    if doomed is None:
        return None, revived
    from_src = F.substring_index(F.col(ROW_FILE), "/", 1).isin(sorted(src_groups)) if src_groups else F.lit(False)
    rows = (doomed.withColumn("_bs_tag", F.when(from_src, "src").otherwise("dest"))
            .unionByName(revived.withColumn("_bs_tag", F.lit("revived"))))
    values = comparable_columns(rows.schema, columns)
    if values is None:
        return doomed, revived
    tag = F.col("_bs_tag")
    per_row = Window.partitionBy(*values)
    pairs = F.least(F.sum((tag == "dest").cast("long")).over(per_row),
                    F.sum((tag == "revived").cast("long")).over(per_row))
    rows = rows.withColumn("_bs_paired", F.row_number().over(Window.partitionBy(*values, "_bs_tag")
                                                             .orderBy(*IDENTITY)) <= pairs).localCheckpoint()
    kept = rows.filter(~F.col("_bs_paired") | (tag == "src"))
    return (kept.filter(tag != "revived").drop("_bs_tag", "_bs_paired"),
            kept.filter(tag == "revived").drop("_bs_tag", "_bs_paired"))


def _tombstone_columns(inputs: TableInputs) -> list[str]:
    return [c.name for c in inputs.schema.columns] + list(ROW_ID_COLUMNS)


def _ops(changes: ObjectChanges) -> str:
    dml = sorted(changes.ops & {Op.INSERT, Op.DELETE, Op.UPDATE, Op.OVERWRITE})
    return "+".join(dml) or "-"

