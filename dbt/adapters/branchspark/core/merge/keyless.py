"""Row-level merge of a table without a primary key (SPEC 3.3): by row identity, which every row keeps for life.

src's new segments join dest as they are (zero copy), and one merge tombstone carries src's deletions, less
the rows dest already deleted (A2) or overwrote (A5), plus src's update images of rows dest overwrote (A4).
Where an overwrite touched the table, rows have no identity across it, and each distinct row's count merges
three-way instead (merge/counts.py). A paused merge or a merge driver decides the rows of segments A1/A3
contest one by one instead (merge/contested.py): their decisions replace the rules' for those rows.
Everything is read through the table's `TableReads` (merge/reads.py).
"""
from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..catalog.state import SegmentKind
from ..connect import local_checkpoint
from ..storage.difference import comparable_columns
from ..storage.layout import SEGMENT_COLUMN
from ..storage.reader import PREV_FILE, PREV_POS, ROW_FILE, ROW_POS, STORED_IDENTITY_KINDS, quote
from . import contested as contested_rows
from .conflict_tables import apply_resolutions
from .counts import count_merge
from .reads import IDENTITY, DataPlan, TableReads, ops_text, origin
from .report import Conflict
from .rules import Rule
from .sides import rows_merge_by_count
from ..operations import Op

# The operation pair a contested keyless row's rule stands for, as conflict reports name it.
_CONTESTED_OPS = {Rule.A1: (Op.UPDATE, Op.DELETE), Rule.A3: (Op.UPDATE, Op.UPDATE)}


def merge_keyless(reads: TableReads, contested: dict[str, set[str]] | None = None, prefer: str | None = None,
                  driver=None, resolutions: DataFrame | None = None) -> DataPlan:
    """`contested`: the A1/A3 segments (merge/contested.py) to decide row by row, with the table's merge
    `driver`, `prefer` and a paused merge's `resolutions`; None or empty: the merge as SPEC 3.3 plans it."""
    inputs = reads.inputs
    src, dest = inputs.src_changes, inputs.dest_changes
    if src.whole_overwrite:
        # Replaying src's overwrite on dest leaves src's rows, whatever dest did.
        return DataPlan(keep_segments=list(inputs.src.segments), tombstones=list(inputs.src.tombstones))
    src_added = reads.added_groups(src)
    plan, shared, carried_groups = _share_src_segments(reads, src_added)
    gone = reads.groups(dest.segments_removed) | reads.groups(src.segments_removed)
    doomed = _src_deletions(reads, gone | carried_groups)
    stale = dropped_updates = None
    if (shared or carried_groups) and (dest.segments_removed or dest.overwrite_tombstones):
        stale, dropped_updates = _drop_stale_updates(reads, plan, shared, carried_groups)
        in_shared = stale.filter(origin().isin(sorted(reads.groups(shared)))) \
            if stale is not None and shared else None
        if in_shared is not None:
            doomed = in_shared if doomed is None else doomed.unionByName(in_shared)
    revived = reads.revived_rows(inputs.src, src, inputs.dest)
    if rows_merge_by_count(src, dest):
        doomed, revived, unwritten = count_merge(reads, src_added, doomed, stale, carried_groups, revived,
                                                 dropped_updates, carrying=plan.new_rows is not None)
        if plan.new_rows is not None:  # carried rows the count merge does not add are not written
            plan.new_rows = plan.new_rows.join(unwritten, IDENTITY, "left_anti")
    if revived is not None:
        doomed, revived = _pair_off(doomed, revived, inputs.columns, src_added)
        plan.revived_rows = revived.select(*[quote(c) for c in inputs.columns])
    if doomed is not None:
        located = reads.on_dest(plan.keep_segments + plan.add_segments, F.col(SEGMENT_COLUMN), F.col(ROW_FILE))
        doomed = doomed.withColumn(SEGMENT_COLUMN, located)
    plan.doomed = doomed
    if contested:
        _decide_contested(reads, plan, contested, prefer, driver, resolutions)
    return plan


def _share_src_segments(reads: TableReads, src_added: set[str]):
    """(the plan: dest's version with src's new segments shared as they are, rows src compacted with older
    ones carried over and dest's segments of partitions src overwrote dropped; the segments shared; the
    groups carried)."""
    inputs = reads.inputs
    src = inputs.src_changes
    base_ids = set(inputs.base.segments)
    dest_ids = set(inputs.dest.segments)
    src_infos = reads.segments(inputs.src.segments)
    shared = [s.id for s in src_infos if s.id not in base_ids and s.id not in dest_ids
              and s.kind not in STORED_IDENTITY_KINDS and reads.group(s) in src_added]
    plan = DataPlan(keep_segments=list(inputs.dest.segments), add_segments=shared,
                    tombstones=list(inputs.dest.tombstones))
    # Rows src compacted together with older rows: carry src's own rows over, identities kept.
    carried_groups = src_added - reads.groups(shared)
    if any(s.kind in STORED_IDENTITY_KINDS and s.id not in base_ids for s in src_infos) and carried_groups:
        carried = reads.new_rows(inputs.src, carried_groups).drop(SEGMENT_COLUMN)
        plan.new_rows, plan.new_rows_kind = carried, SegmentKind.MERGE
    # Partitions src overwrote: dest's segments there go, as replaying the overwrite would drop them.
    if src.segments_removed:
        removed = set(src.segments_removed)
        dest_new = [s for s in reads.segments(inputs.dest.segments) if s.id not in base_ids]
        for spec in src.overwritten_partitions:
            wanted = {tuple(v) for v in spec["partitions"]}
            columns = spec["columns"]
            removed |= {s.id for s in dest_new
                        if tuple(s.partition_values.get(c) for c in columns) in wanted}
        plan.keep_segments = [s for s in plan.keep_segments if s not in removed]
    return plan, shared, carried_groups


def _src_deletions(reads: TableReads, gone: set[str]) -> DataFrame | None:
    """The rows src deleted that the merge deletes on dest: not of segment groups `gone` (removed by an
    overwrite, or carried over), nor deleted by dest already (A2: deleted once)."""
    inputs = reads.inputs
    doomed = reads.deleted_rows(inputs.src, inputs.src_changes)
    if doomed is None:
        return None
    doomed = doomed.filter(~origin().isin(sorted(gone)) if gone else F.lit(True))
    already = reads.deleted_rows(inputs.dest, inputs.dest_changes)
    if already is not None:
        doomed = doomed.join(already.select(*IDENTITY), IDENTITY, "left_anti")  # A2: deleted once
    return doomed.dropDuplicates(IDENTITY).select(*inputs.tombstone_columns)


def _drop_stale_updates(reads: TableReads, plan: DataPlan, shared: list[str], carried_groups: set[str]):
    """A4 where dest overwrote: (src's update images of rows dest overwrote, which the merge drops, not
    writing those it carries; the base rows those updates replaced), as `_stale_update_images`."""
    inputs = reads.inputs
    src, dest = inputs.src_changes, inputs.dest_changes
    # src's update segments, shared as they are or compacted since (their rows then carried over)
    updates = shared + [s.id for s in reads.segments(dict.fromkeys(src.segments_added))
                        if reads.group(s) in carried_groups]
    stale, dropped_updates = _stale_update_images(reads, updates, reads.groups(dest.segments_removed),
                                                  reads.overwritten_rows(dest))
    if stale is not None:
        stale = stale.select(*inputs.tombstone_columns)
        if plan.new_rows is not None:  # A4 drops a carried image: it is not written
            plan.new_rows = plan.new_rows.join(stale.select(*IDENTITY), IDENTITY, "left_anti")
    return stale, dropped_updates


def _stale_update_images(reads: TableReads, segments: list[str], overwritten: set[str],
                         overwritten_rows: DataFrame | None = None):
    """A4: (src's update images, of the update segments among `segments` (live or compacted since), of rows
    that dest overwrote (in `overwritten` segment groups, or among `overwritten_rows` identities), following
    chains of updates; the identities of those base rows, whose update A4 drops as a whole); (None, None)
    when src updated nothing."""
    updates = [s for s in reads.segments(segments) if s.kind == SegmentKind.UPDATE]
    if not updates:
        return None, None
    # Every image ever written (live or replaced since), with the row it replaced.
    replaced = reads.prev_identity(updates)
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
    live = reads.new_rows(reads.inputs.src, {reads.group(s) for s in updates})
    return live.join(stale.distinct(), IDENTITY, "left_semi"), updated_base_rows


def _decide_contested(reads: TableReads, plan: DataPlan, contested: dict[str, set[str]],
                      prefer: str | None, driver, resolutions: DataFrame | None) -> None:
    """Rows of contested segments, decided one by one; their decisions replace the rules' for them."""
    inputs = reads.inputs
    columns = inputs.columns
    decided = _decided_rows(reads, contested, prefer, driver)
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
        _report_decided(inputs, plan, decided)
    doomed, replacements, decided_ids = contested_rows.writes(decided, columns)
    if plan.doomed is not None:
        plan.doomed = plan.doomed.join(decided_ids, IDENTITY, "left_anti").unionByName(doomed)
    else:
        plan.doomed = doomed
    plan.replacement_rows = replacements


def _decided_rows(reads: TableReads, contested: dict[str, set[str]], prefer: str | None, driver) -> DataFrame:
    """The base rows of contested segments, each with both sides' image of it, decided (merge/contested.py)."""
    inputs = reads.inputs
    columns = inputs.columns
    sides = {side: (state, changes) for side, state, changes in inputs.sides()}
    deleted = {side: reads.deleted_rows(state, changes) for side, (state, changes) in sides.items()}
    base = contested_rows.base_rows({k: v for k, v in deleted.items() if v is not None}, columns, contested,
                                    reads.dead_at_base(set().union(*contested.values())))
    base = local_checkpoint(base)  # change-sized, read by each step below
    images = {side: _current_images(reads, state, changes, base, columns, side)
              for side, (state, changes) in sides.items()}
    removed = {side: reads.groups(changes.segments_removed) for side, (_, changes) in sides.items()}
    paired = contested_rows.pair(base, images, removed, columns)
    return contested_rows.decide(paired, columns, contested, prefer, driver)


def _report_decided(inputs, plan: DataPlan, decided: DataFrame) -> None:
    """The conflicts of rows decided one by one (a paused merge, a driver): counts per rule and segment only,
    as a report lists segments, not rows."""
    found = (decided.filter(F.col("_bs_rule").isNotNull()).groupBy("_bs_rule", contested_rows.ROW_SEGMENT)
             .count().collect())
    for rule in sorted({r["_bs_rule"] for r in found}):
        segments = sorted(r[contested_rows.ROW_SEGMENT] for r in found if r["_bs_rule"] == rule)
        count = sum(r["count"] for r in found if r["_bs_rule"] == rule)
        src_op, dest_op = _CONTESTED_OPS.get(rule, (ops_text(inputs.src_changes), ops_text(inputs.dest_changes)))
        plan.conflicts.append(Conflict("table", inputs.name, src_op, dest_op, rule,
                                       f"segments {', '.join(segments)} ({count} rows)"))


def _current_images(reads: TableReads, state, changes, base: DataFrame, columns: list[str],
                    side: str) -> DataFrame | None:
    """(base identity, the side's live update image of that base row), following updates of updates."""
    updates = [s for s in reads.segments(dict.fromkeys(changes.segments_added)) if s.kind == SegmentKind.UPDATE]
    if not updates:
        return None
    lineage = contested_rows.update_lineage(reads.prev_identity(updates), base.select(*IDENTITY), len(updates))
    live = reads.new_rows(state, {reads.group(s) for s in updates})
    return contested_rows.current_images(live, lineage, columns, side)


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
    rows = local_checkpoint(rows.withColumn("_bs_paired", F.row_number().over(Window.partitionBy(*values, "_bs_tag")
                                                                              .orderBy(*IDENTITY)) <= pairs))
    kept = rows.filter(~F.col("_bs_paired") | (tag == "src"))
    return (kept.filter(tag != "revived").drop("_bs_tag", "_bs_paired"),
            kept.filter(tag == "revived").drop("_bs_tag", "_bs_paired"))
