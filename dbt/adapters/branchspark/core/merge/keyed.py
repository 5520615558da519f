"""Row-level merge of a table with a primary key (SPEC 3.4): per key, from one shuffle.

A key only one side changed takes that side's row; keys both sides changed are decided here (same row,
cell by cell, or conflict). The merge writes one tombstone for every key it changes on dest and one segment
with those keys' new rows, both at the merge's sequence, so they replace whatever dest held for those keys.
When no key was changed by both sides (one small job compares the keys of the two sides' new files), src's
segments and tombstones join dest as they are, with nothing written: a key tombstone deletes the rows of its
keys written before it, so on dest it deletes exactly the base rows it deleted on src. Everything is read
through the table's `TableReads` (merge/reads.py).
"""
from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..catalog.schema import Schema
from ..catalog.state import TableState
from ..catalog.tombstones import TombstoneSummary
from ..storage.layout import SEGMENT_COLUMN
from ..storage.reader import ROW_FILE, ROW_SEQ, STORED_IDENTITY_KINDS, TOMB_SEQ, quote
from .conflict_tables import KEEP, MERGED, apply_resolutions
from .drivers import driver_outputs
from .keyed_rules import KeyRules, same_values
from .reads import DataPlan, TableInputs, TableReads, files_for, ops_text, origin
from .report import Conflict
from .sides import ObjectChanges
from ..operations import Op

_SHOWN_KEYS = 20  # conflicting keys listed in a report; the count covers all of them


def merge_keyed(reads: TableReads, prefer: str | None, driver=None, resolutions: DataFrame | None = None,
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
    inputs = reads.inputs
    if share and not report_only and driver is None and resolutions is None and _src_files_shareable(reads):
        return _shared(inputs)
    keys = list(inputs.primary_key)
    values = [c for c in inputs.columns if c not in keys]
    grouped = _per_key(reads, keys)
    driven, driver_conflict = driver_outputs(driver, values) if driver is not None else ({}, None)
    rules = KeyRules(keys, values, prefer, driven, driver_conflict)
    decided = (grouped.withColumn("_bs_rule", rules.rule())
               .withColumn(MERGED, F.struct(*[rules.merged(c.name).cast(c.data_type).alias(c.name)
                                              for c in inputs.schema.columns]))
               .withColumn(KEEP, rules.keep()))
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
    _plan_writes(reads, plan, decided, keys)
    return plan


def _src_files_shareable(reads: TableReads) -> bool:
    """Whether src's files join dest as they are: they can (`_shareable`), no row src wrote is one it
    deleted (in the merged columns), and no key is changed by both sides."""
    inputs = reads.inputs
    if not _shareable(reads):
        return False
    if src_rows_may_come_back(inputs.src_changes, reads.schema(inputs.base.schema_id),
                              reads.schema(inputs.src.schema_id), inputs.schema) and src_rows_come_back(reads):
        return False
    return _disjoint_keys(reads)


def _per_key(reads: TableReads, keys: list[str]) -> DataFrame:
    """Per key src changed: b (the base row), s and d (each side's row now, the base row where it wrote
    nothing for the key; absent where deleted), d_touched (dest changed it). What a side changed is decided
    by values (SPEC 3.4): its row for the key now against the base row, absence included."""
    inputs = reads.inputs
    events = _key_events(reads, keys)
    same_as_base = {side: same_values(side, "b", inputs.columns) for side in "sd"}
    return (events.groupBy(*[quote(k) for k in keys]).agg(
        F.expr(_final_row("s")).alias("s"),
        F.expr(_final_row("d")).alias("d"),
        F.expr("first(CASE WHEN _bs_base THEN _bs_row END, true)").alias("b"),
        F.expr("max(_bs_side = 's')").alias("s_wrote"),
        F.expr("max(_bs_side = 'd')").alias("d_wrote"))
        .selectExpr(*[quote(k) for k in keys], "b",
                    "CASE WHEN s_wrote THEN s ELSE b END AS s", "CASE WHEN d_wrote THEN d ELSE b END AS d")
        .selectExpr("*", f"NOT ({same_as_base['s']}) AS s_touched", f"NOT ({same_as_base['d']}) AS d_touched")
        .filter("s_touched"))  # keys only dest changed stay as dest has them


def _key_events(reads: TableReads, keys: list[str]) -> DataFrame:
    """Every row each side wrote and every image it deleted since the base, and the base rows a side's
    history lacks, tagged by side and kind, each with its key and sequence."""
    inputs = reads.inputs
    row_columns = inputs.tombstone_columns
    written = reads.added_groups(inputs.src_changes) | reads.added_groups(inputs.dest_changes)
    parts = []
    for side, state, changes in inputs.sides():
        live, gone = _side_changes(reads, state, changes)
        parts.append(_tagged(live, keys, row_columns, side, "row", ROW_SEQ, F.lit(False)))
        if gone is not None:
            # A deleted image of a row older than both sides' writes is the base row of its key, unless
            # the base itself deleted that row in a tombstone this side lacks (_marked_dead_in_base).
            older = ~origin().isin(sorted(written)) if written else F.lit(True)
            gone, dead_in_base = _marked_dead_in_base(reads, state, gone)
            parts.append(_tagged(gone, keys, row_columns, side, "gone", TOMB_SEQ, older & ~dead_in_base))
    base_only = reads.base_only_rows()
    if base_only is not None:
        parts.append(_tagged(base_only, keys, row_columns, "b", "base", ROW_SEQ, F.lit(True)))
    return reduce(DataFrame.unionByName, parts)


def _plan_writes(reads: TableReads, plan: DataPlan, decided: DataFrame, keys: list[str]) -> None:
    """The plan's rows to write and tombstone, sized and summarized by one counting job, and its conflicts."""
    inputs = reads.inputs
    # Doomed on dest: the row dest holds for every key the merge rewrites, unless it already holds the
    # merged row (the same change on both sides): then the key is no change at all.
    d_in = F.col("d").isNotNull()
    unchanged = F.coalesce(F.col(KEEP), F.lit(False)) & d_in & F.expr(same_values(MERGED, "d", inputs.columns))
    doomed_here = d_in & ~unchanged
    written_here = F.coalesce(F.col(KEEP), F.lit(False)) & ~unchanged
    current = F.col("d")
    # Where dest holds that row (on_dest): a base row's image comes from src, which may hold it in its own
    # compaction; a row keeps its identity, whose file names the segment it was first written to. The
    # tombstone then names a segment of dest (what `branch_changes` locates deletions by). A base row
    # in neither is in a segment dest rewrote it into (its compaction): dest did not change the key,
    # so the row is live there, and the latest such segment stands for where.
    segment = reads.on_dest(inputs.dest.segments, current[SEGMENT_COLUMN], current[ROW_FILE])
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
                     .coalesce(files_for(stats["kept"])))
    plan.doomed = (decided.filter(doomed_here).select(*[(segment if c == SEGMENT_COLUMN else current[c]).alias(c)
                                                        for c in inputs.tombstone_columns])
                   .coalesce(files_for(stats["doomed"])))


def _shareable(reads: TableReads) -> bool:
    """Whether src's changes can join dest as they are, once no key was changed by both sides.

    A key tombstone deletes the rows of its keys written before it, so src's tombstones delete on
    dest exactly the base rows they deleted on src, and dest's rows of other keys stay. Overwrites
    and compactions replace segments instead (their rows are not src's changes alone), and a new
    primary key changes what a tombstone's key means."""
    inputs = reads.inputs
    sides = (inputs.src_changes, inputs.dest_changes)
    if any(changes.segments_removed or changes.ops & {Op.COMPACTION, Op.ALTER_PRIMARY_KEY} for changes in sides):
        return False
    if not inputs.base.primary_key == inputs.src.primary_key == inputs.dest.primary_key:
        return False
    base = set(inputs.base.segments)
    for state in (inputs.src, inputs.dest):
        if reads.base_only(state) or not set(inputs.base.tombstones) <= set(state.tombstones):
            return False  # a side's history is not the base plus additions: decide key by key
    return not any(s.kind in STORED_IDENTITY_KINDS for s in reads.segments(inputs.src.segments) if s.id not in base)


def _disjoint_keys(reads: TableReads) -> bool:
    """True when no key is among the rows both sides wrote or deleted since the base (one small job
    reading only the key columns of their new files)."""
    inputs = reads.inputs
    touched = [reads.keys_touched(state) for state in (inputs.src, inputs.dest)]
    on = F.expr(" AND ".join(f"s.{quote(k)} <=> d.{quote(k)}" for k in inputs.primary_key))
    return touched[0].alias("s").join(touched[1].alias("d"), on, "left_semi").isEmpty()


def _shared(inputs: TableInputs) -> DataPlan:
    """dest's version plus src's segments and tombstones since the base, shared as they are."""
    before = set(inputs.base.segments) | set(inputs.dest.segments)
    dead = set(inputs.base.tombstones) | set(inputs.dest.tombstones)
    return DataPlan(keep_segments=list(inputs.dest.segments),
                    add_segments=[s for s in inputs.src.segments if s not in before],
                    tombstones=list(inputs.dest.tombstones) + [t for t in inputs.src.tombstones if t not in dead])


def src_rows_come_back(reads: TableReads) -> bool:
    """Whether a row src wrote since the base is, in the merged columns, one src deleted since the base:
    changed and changed back (a row src wrote and rewrote alike counts too: then the rows are merely
    decided key by key). One small job over src's changed rows only."""
    inputs = reads.inputs
    deleted = reads.deleted_rows(inputs.src, inputs.src_changes)
    if deleted is None:
        return False
    columns = [quote(c) for c in inputs.columns]
    written = reads.new_rows(inputs.src, reads.added_groups(inputs.src_changes))
    return not written.select(*columns).intersect(deleted.select(*columns)).isEmpty()


def src_rows_may_come_back(src_changes: ObjectChanges, base_schema: Schema, src_schema: Schema,
                           merged_schema: Schema) -> bool:
    """Whether src's changes since the base may hold a row that, in the merged columns, src deleted and wrote
    back alike: changed in one commit and changed back in another, or changed only in a column the merge
    drops. Shared as they are, the merge commit would list it as deleted and inserted (SPEC 4: no change)."""
    return src_changes.row_commits > 1 or any(
        merged_schema.source_of(c) is None for c in base_schema.columns + src_schema.columns)


def _marked_dead_in_base(reads: TableReads, state: TableState, gone: DataFrame):
    """(`gone`, a Column: the image's row was already deleted in the base). Only a base tombstone the side
    lacks can have deleted it (a side deletes rows live on it); a key tombstone deletes the rows of its
    keys written before it."""
    inputs = reads.inputs
    held = set(state.tombstones)
    base_only = reads.tombstones([t for t in inputs.base.tombstones if t not in held])
    if not base_only:
        return gone, F.lit(False)
    keys = list(inputs.primary_key)
    kills = (reads.tombstone_rows(inputs.base.evolve(primary_key=inputs.primary_key), base_only)
             .groupBy(*[quote(k) for k in keys]).agg(F.max(TOMB_SEQ).alias("_bs_base_kill")))
    gone = gone.join(kills, keys, "left")
    return gone, F.coalesce(F.col(ROW_SEQ) < F.col("_bs_base_kill"), F.lit(False))


def _side_changes(reads: TableReads, state: TableState, changes: ObjectChanges):
    """(rows the side wrote, still including those it deleted later; images of rows it deleted, with
    the deleting sequence in TOMB_SEQ) since the base. The per-key aggregate settles which rows are
    live (`_final_row`), so reading the side's rows needs no anti-join against its tombstones."""
    inputs = reads.inputs
    rows = reads.new_rows(state.evolve(tombstones=()), reads.added_groups(changes))
    deleted = reads.deleted_rows(state, changes)
    removed = [s for s in changes.segments_removed if s in set(inputs.base.segments)]
    if removed:
        # An overwrite deleted the base rows it replaced, key by key, before anything it wrote.
        gone = reads.read(inputs.base, removed).withColumn(TOMB_SEQ, F.col(ROW_SEQ) + 1)
        deleted = gone if deleted is None else deleted.select(*gone.columns).unionByName(gone)
    return rows, deleted


def _key_conflicts(inputs: TableInputs, keys: list[str], shown: list, count: int) -> list[Conflict]:
    """A keyed table's conflicts as a report lists them: per rule, the keys of it among the first shown (in key
    order), and how many conflicting keys are not listed."""
    conflicts = []
    for rule_name in sorted({r["_bs_rule"] for r in shown}):
        listed = [", ".join(f"{k}={r[k]}" for k in keys) for r in shown if r["_bs_rule"] == rule_name]
        more = f" (+{count - len(shown)} more keys)" if count > len(shown) else ""
        conflicts.append(Conflict("table", inputs.name, ops_text(inputs.src_changes), ops_text(inputs.dest_changes),
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
