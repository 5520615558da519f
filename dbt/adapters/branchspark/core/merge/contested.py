"""Keyless rows in contested segments (SPEC 3.3 A1, A3), paired across the sides by base identity.

A1 and A3 call a conflict when both sides' updates or deletes touched the same
segment. To resolve one row by row, each base row in such a segment that either
side deleted or updated is paired with what each side holds for it now. A keyless
row has no key, but it has an identity for life (its data file and position), and
every update image stores the identity of the row it replaced (`_bs_prev_file`,
`_bs_prev_pos`: physical Parquet columns that reads never project). Following
those links from a side's live update images back to the base gives that side's
current image of the base row: `modified` (the live image), `removed` (none), or
untouched (the base row itself).

The paired frame has the keyed merge's per-key shape (merge/keyed.py), keyed by
the base row's identity (`row_segment`, `row_file`, `row_position`): `b`, `d`, `s`
(base, dest's and src's current rows, each a struct of the columns plus the row's
identity), `d_touched`, `s_touched`, `_bs_rule`, MERGED and KEEP. So the conflict
relation, its resolutions and merge drivers work on it as on keys. Every frame
here holds only rows the sides changed: the cost grows with the changes.
"""
from __future__ import annotations

from functools import reduce

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..connect import local_checkpoint
from ..storage.layout import SEGMENT_COLUMN
from ..storage.reader import PREV_FILE, PREV_POS, ROW_FILE, ROW_ID_COLUMNS, ROW_POS, TOMB_SEQ, quote
from .conflict_tables import KEEP, MERGED
from .drivers import driver_outputs
from .rules import Rule
from .sides import ObjectChanges
from ..operations import Op

# The conflict relation's row identity: the base row's segment (as conflict reports name it), the
# data file it was written to (below the table's data directory) and its position in that file.
ROW_SEGMENT, ROW_FILE_NAME, ROW_POSITION = "row_segment", "row_file", "row_position"
CONTESTED_KEYS = [ROW_SEGMENT, ROW_FILE_NAME, ROW_POSITION]
IDENTITY = [ROW_FILE, ROW_POS]
_ROOT_FILE, _ROOT_POS = "_bs_root_file", "_bs_root_pos"


def contested_segments(src: ObjectChanges, dest: ObjectChanges) -> dict[str, set[str]]:
    """{"A1": segments src updated and dest deleted in, "A3": segments both updated in}, empty ones left out."""
    src_updates = src.touched.get(Op.UPDATE, set())
    found = {Rule.A1: src_updates & dest.touched.get(Op.DELETE, set()),
             Rule.A3: src_updates & dest.touched.get(Op.UPDATE, set())}
    return {rule: segments for rule, segments in found.items() if segments}


def row_struct(columns: list[str]) -> SparkColumn:
    """A row as the paired frame holds it: every column, then its identity (for the tombstone that deletes it)."""
    return F.struct(*[F.col(quote(c)) for c in columns + list(ROW_ID_COLUMNS)])


def base_rows(deleted: dict[str, DataFrame], columns: list[str], contested: dict[str, set[str]],
              dead_at_base: DataFrame | None = None) -> DataFrame:
    """One row per base row in a contested segment that a side's tombstones deleted: its identity, its image
    (`b`) and which side deleted it. `deleted`: side ("s", "d") -> that side's tombstone rows since the base;
    `dead_at_base`: identities the base had already deleted (not base rows)."""
    segments = sorted(set().union(*contested.values()))
    tagged = reduce(DataFrame.unionByName, [
        rows.select(F.lit(side).alias("_bs_side"), row_struct(columns).alias("_bs_row"),
                    F.col(SEGMENT_COLUMN), F.col(ROW_FILE), F.col(ROW_POS), F.col(TOMB_SEQ))
        for side, rows in deleted.items()])
    # A row's segment is the one it was first written to (its file's first directory): compaction keeps it.
    first_written = F.substring_index(F.col(ROW_FILE), "/", 1)
    in_contest = tagged.filter(first_written.isin(segments)).select(*IDENTITY).distinct()
    if dead_at_base is not None:
        in_contest = in_contest.join(dead_at_base, IDENTITY, "left_anti")
    # The earliest deletion holds the base image (a later one may be of the row read after a schema change).
    return (tagged.join(in_contest, IDENTITY, "left_semi")
            .groupBy(*IDENTITY)
            .agg(F.min_by("_bs_row", TOMB_SEQ).alias("b"),
                 F.max(first_written).alias(ROW_SEGMENT),
                 F.max(F.col("_bs_side") == "s").alias("_bs_s_deleted"),
                 F.max(F.col("_bs_side") == "d").alias("_bs_d_deleted")))


def update_lineage(replaced: DataFrame, roots: DataFrame, max_depth: int) -> DataFrame:
    """(image identity, root identity) for every update image descending from a root.

    `replaced`: (image identity, PREV_FILE, PREV_POS) of a side's update images; `roots`: identities.
    Each round follows one more update of an update; it stops at the first round that finds none."""
    replaced = local_checkpoint(replaced)  # change-sized, read by every round
    level = local_checkpoint(replaced.join(roots.select(F.col(ROW_FILE).alias(PREV_FILE), F.col(ROW_POS).alias(PREV_POS)),
                                           [PREV_FILE, PREV_POS], "inner").select(
        *IDENTITY, F.col(PREV_FILE).alias(_ROOT_FILE), F.col(PREV_POS).alias(_ROOT_POS)))
    found = level
    for _ in range(max_depth - 1):
        level = local_checkpoint(replaced.join(level.select(F.col(ROW_FILE).alias(PREV_FILE), F.col(ROW_POS).alias(PREV_POS),
                                                            _ROOT_FILE, _ROOT_POS), [PREV_FILE, PREV_POS], "inner")
                                 .select(*IDENTITY, _ROOT_FILE, _ROOT_POS))
        if level.isEmpty():
            break
        found = found.unionByName(level)
    return found


def current_images(live: DataFrame, lineage: DataFrame, columns: list[str], side: str) -> DataFrame:
    """(root identity, `_bs_<side>_updated` true, the side's live image of it or null) for every root the side
    updated, from the side's live update rows and their lineage: a root whose images the side deleted since
    is still one it updated (SPEC 3.3 names the operation that touched a segment, not the row's end)."""
    updated = (lineage.select(F.col(_ROOT_FILE).alias(ROW_FILE), F.col(_ROOT_POS).alias(ROW_POS)).distinct()
               .withColumn(f"_bs_{side}_updated", F.lit(True)))
    images = (live.join(lineage, IDENTITY, "inner")
              .select(F.col(_ROOT_FILE).alias(ROW_FILE), F.col(_ROOT_POS).alias(ROW_POS),
                      row_struct(columns).alias(f"_bs_{side}_image"))
              .dropDuplicates(IDENTITY))
    return updated.join(images, IDENTITY, "left")


def pair(base: DataFrame, images: dict[str, DataFrame | None], removed_segments: dict[str, set[str]],
         columns: list[str]) -> DataFrame:
    """The paired frame without decisions: for each side, its current row (`s`, `d`; null where it removed the
    row, the base row where it left it alone), whether it touched the row (`s_touched`, `d_touched`) and
    whether an update of its touched it (`s_updated`, `d_updated`; its images may be deleted since)."""
    frame = base
    for side in ("s", "d"):
        image, updated = f"_bs_{side}_image", f"_bs_{side}_updated"
        if images.get(side) is not None:
            frame = (frame.join(images[side], IDENTITY, "left")
                     .withColumn(updated, F.coalesce(F.col(updated), F.lit(False))))
        else:
            frame = (frame.withColumn(image, F.lit(None).cast(base.schema["b"].dataType))
                     .withColumn(updated, F.lit(False)))
        # An overwrite removes whole segments without tombstones.
        overwritten = F.col(ROW_SEGMENT).isin(sorted(removed_segments.get(side, ()))) if removed_segments.get(side) \
            else F.lit(False)
        touched = F.col(f"_bs_{side}_deleted") | overwritten
        frame = (frame.withColumn(f"{side}_touched", touched)
                 .withColumn(side, F.when(touched, F.col(image)).otherwise(F.col("b"))))
    return frame.select(F.col(ROW_SEGMENT), F.col(ROW_FILE).alias(ROW_FILE_NAME), F.col(ROW_POS).alias(ROW_POSITION),
                        "b", "d", "s", "d_touched", "s_touched", F.col("_bs_s_updated").alias("s_updated"),
                        F.col("_bs_d_updated").alias("d_updated"))


def contested() -> SparkColumn:
    """Whether a paired row is contested (SPEC 3.6: what ours/theirs settle): a base row a src update and a dest
    update or delete both changed. A row one side alone changed, or src deleted and dest updated (the matrix's
    delete x update is ok), merges by the rules even in a contested segment."""
    return F.col("s_updated") & F.col("d_touched")


def decide(paired: DataFrame, columns: list[str], contested: dict[str, set[str]], prefer: str | None,
           driver=None) -> DataFrame:
    """Rule, merged row and whether it is kept, per contested row.

    Without a driver every row is a conflict of its segment's rule (SPEC 3.3 decides per segment), except a
    row both sides deleted (A2: deleted once) with no update on either side: a row src updated and then
    deleted the image of is src's update against dest's delete (A1), as a merge without on_conflict reports
    it. A driver makes the table merge its contested rows as keys merge (merge/keyed.py): a row one side touched takes that side's row; for a row both touched, the
    driver's columns, and the others cell by cell; it conflicts where the driver says so, or where both
    changed an undriven column differently or one deleted what the other updated (unless the driver returns
    every column). Proposed merged values of a conflict: a column only one side changed takes that side's
    value; where both changed it differently, null. `prefer` (ours, theirs) settles conflicts with that
    side's row."""
    b, s, d = F.col("b"), F.col("s"), F.col("d")
    s_in, d_in = s.isNotNull(), d.isNotNull()
    s_touched, d_touched = F.col("s_touched"), F.col("d_touched")
    both = s_touched & d_touched
    driven, driver_conflict = driver_outputs(driver, columns) if driver is not None else ({}, None)
    all_driven = bool(driven) and set(driven) == set(columns)
    rule = _row_rule(columns, contested, driver is not None, driven, driver_conflict, all_driven)
    open_conflict = F.col("_bs_rule").isNotNull()

    def merged_value(column: str) -> SparkColumn:
        value = F.when(s[column].eqNullSafe(b[column]), d[column]).when(d[column].eqNullSafe(b[column]), s[column])
        if column in driven:
            value = F.when(both, driven[column]).otherwise(value)
        if prefer is not None:
            value = F.when(open_conflict, (d if prefer == "ours" else s)[column]).otherwise(value)
        return value

    # A conflict's proposal: deleted where one side deleted and the other left the row alone, undecided where
    # one deleted and the other updated it, else kept. A settled row: as keys are (merge/keyed.py).
    proposal = (F.when(s_in & d_in, F.lit(True)).when(s_in | d_in, F.when(both, F.lit(None).cast("boolean"))
                                                         .otherwise(F.lit(False)))
                .otherwise(F.lit(False)))
    if prefer is not None:
        proposal = d_in if prefer == "ours" else s_in
    kept = F.when(~both, F.when(s_touched, s_in).otherwise(d_in)).otherwise((s_in | d_in) if all_driven
                                                                           else (s_in & d_in))
    schema = {f.name: f.dataType for f in paired.schema["b"].dataType.fields}
    return (paired.withColumn("_bs_rule", rule)
            .withColumn(MERGED, F.struct(*[merged_value(c).cast(schema[c]).alias(c) for c in columns]))
            .withColumn(KEEP, F.when(open_conflict, proposal).otherwise(kept)))


def _row_rule(columns: list[str], contested: dict[str, set[str]], driven_table: bool, driven: dict, driver_conflict,
              all_driven: bool) -> SparkColumn:
    """The rule a contested row breaks (`decide`), or null where it merges."""
    b, s, d = F.col("b"), F.col("s"), F.col("d")
    s_in, d_in = s.isNotNull(), d.isNotNull()
    d_touched = F.col("d_touched")
    both = F.col("s_touched") & d_touched
    # A row's rule is its segment's; a row dest deleted in a segment that is both is A1.
    segment = F.col(ROW_SEGMENT)
    a1, a3 = sorted(contested.get(Rule.A1, ())), sorted(contested.get(Rule.A3, ()))
    segment_rule = F.when(segment.isin(a3), F.lit(Rule.A3.value)).otherwise(F.lit(Rule.A1.value)) if a3 else F.lit(Rule.A1.value)
    if a1 and a3:
        segment_rule = F.when(d_touched & ~d_in & segment.isin(a1), F.lit(Rule.A1.value)).otherwise(segment_rule)
    settled = F.lit(None).cast("string")
    if not driven_table:
        deleted_twice = both & ~s_in & ~d_in & ~F.col("s_updated") & ~F.col("d_updated")
        return F.when(deleted_twice, settled).otherwise(segment_rule)

    def clashes(c: str) -> SparkColumn:
        return ~s[c].eqNullSafe(b[c]) & ~d[c].eqNullSafe(b[c]) & ~s[c].eqNullSafe(d[c])

    cell_clash = reduce(lambda x, y: x | y, [clashes(c) for c in columns if c not in driven], F.lit(False))
    rule = F.when(~both, settled)
    if driver_conflict is not None:
        rule = rule.when(F.coalesce(driver_conflict, F.lit(False)), F.lit(Rule.DRIVER.value))
    if all_driven:
        return rule.otherwise(settled)
    return (rule.when(~s_in & ~d_in, settled).when(s_in != d_in, segment_rule)
            .when(cell_clash, segment_rule).otherwise(settled))


def _same_row(row: SparkColumn, columns: list[str]) -> SparkColumn:
    """Whether `row` exists and holds the merged values."""
    same = reduce(lambda a, b: a & b, [F.col(MERGED)[c].eqNullSafe(row[c]) for c in columns], F.lit(True))
    return row.isNotNull() & same


def writes(decided: DataFrame, columns: list[str]) -> tuple[DataFrame, DataFrame, DataFrame]:
    """(rows the merge deletes on dest, replacement rows it writes, identities it decides) for settled rows.

    Where dest's current row or src's image already holds the merged values it stays as it is (keeping its
    identity, so later merges pair it); any other current row of dest and image of src is deleted, and the
    merged values are written as a new update image that records the row it replaces (src's, else dest's)."""
    keep = F.coalesce(F.col(KEEP), F.lit(False))
    s, d = F.col("s"), F.col("d")
    src_image = F.col("s_touched") & s.isNotNull()
    keep_dest = keep & _same_row(d, columns)
    keep_src = keep & ~keep_dest & src_image & _same_row(s, columns)
    row_columns = columns + list(ROW_ID_COLUMNS)
    doomed = (decided.filter(d.isNotNull() & ~keep_dest).select(*[d[c].alias(c) for c in row_columns])
              .unionByName(decided.filter(src_image & ~keep_src).select(*[s[c].alias(c) for c in row_columns])))
    replaced = F.when(s.isNotNull(), s).otherwise(d)
    replacements = decided.filter(keep & ~keep_dest & ~keep_src).select(
        f"{MERGED}.*", replaced[ROW_FILE].alias(PREV_FILE), replaced[ROW_POS].alias(PREV_POS))
    # Every identity whose fate the decisions settle: the base rows, and src's images of them.
    decided_ids = (decided.select(F.col(ROW_FILE_NAME).alias(ROW_FILE), F.col(ROW_POSITION).alias(ROW_POS))
                   .unionByName(decided.filter(src_image).select(s[ROW_FILE].alias(ROW_FILE),
                                                                 s[ROW_POS].alias(ROW_POS))))
    return doomed, replacements, decided_ids
