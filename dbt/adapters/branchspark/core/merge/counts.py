"""The count rule across overwrites (SPEC 3.3): on a keyless table an overwrite touched, each distinct row's
count merges three-way, rows having no identity across an overwrite.

Per distinct row, src's net change ds (its live new rows less the base rows it deleted) and dest's dd: dest
gains ds, except where dd == ds (the same change, taken once). The keyless merge's identity plan
(merge/keyless.py) is corrected to that: fewer of src's new rows, more or fewer deletions. Every frame here
holds only rows the sides wrote or deleted since the base, read through the table's `TableReads`.
"""
from __future__ import annotations

from functools import partial, reduce

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..connect import local_checkpoint
from ..storage.difference import comparable_columns
from ..storage.reader import ROW_FILE
from .reads import IDENTITY, TableReads, origin


def count_merge(reads: TableReads, src_added: set[str], doomed: DataFrame | None, stale: DataFrame | None,
                carried: set[str], revived: DataFrame | None, dropped_updates: DataFrame | None = None,
                carrying: bool = False):
    """The keyless plan's `doomed` (src's deletions of rows still live on dest) and `revived` corrected to
    the count rule. Rows a side holds again that the base had deleted (`revived`, src's; dest's read here)
    count as its new rows; src's the merge does not add are dropped from `revived`. An update A4 drops
    (`dropped_updates`: the base rows it replaced; `stale`: its images) is no change of src's: neither its
    image nor its deletion of the base row counts. src's rows the merge carries over (`carrying`: src
    compacted them, in `carried` groups) are src's new rows too, written anew rather than shared. Returns
    (doomed, revived, the identities of carried rows not to write)."""
    inputs = reads.inputs
    columns = inputs.columns
    dest_added = reads.added_groups(inputs.dest_changes)
    src_new = reads.new_rows(inputs.src, src_added - carried)
    if stale is not None:
        src_new = src_new.join(stale.select(*IDENTITY), IDENTITY, "left_anti")  # A4: dropped already
    events = _count_events(reads, src_new, dest_added, src_added, stale, carried, revived, dropped_updates, carrying)
    nothing = reads.spark.createDataFrame([], "`{}` string, `{}` long".format(*IDENTITY))
    values = comparable_columns(events.schema, columns)
    if values is None:
        return doomed, revived, nothing  # values that cannot be compared: the identity merge stands
    decided = local_checkpoint(_decide_counts(events, values))
    more = decided.filter(~F.col("_bs_tag").isin("sd", "sd_dead") & ~F.col("_bs_written")) \
        .select(*inputs.tombstone_columns)
    shortfall = decided.filter(F.col("_bs_tag") == "sd_dead")
    if not shortfall.isEmpty():
        held = _dest_base_copies(reads, dest_added, shortfall, columns, doomed)
        more = more.unionByName(held)
    unwritten = decided.filter(F.col("_bs_written")).select(*IDENTITY)  # a row written anew, not added: not written
    if revived is not None:
        revived = revived.join(unwritten, IDENTITY, "left_anti")
    spared = decided.filter(F.col("_bs_tag") == "sd").select(*IDENTITY)
    if doomed is not None:
        doomed = doomed.join(spared, IDENTITY, "left_anti").unionByName(more)
    else:
        doomed = more
    return _without_churn(doomed.dropDuplicates(IDENTITY), src_new.select(*inputs.tombstone_columns), columns,
                          src_added), revived, unwritten


def _count_events(reads: TableReads, src_new: DataFrame, dest_added: set[str], src_added: set[str],
                  stale: DataFrame | None, carried: set[str], revived: DataFrame | None,
                  dropped_updates: DataFrame | None, carrying: bool) -> DataFrame:
    """Every row the sides added or deleted since the base, tagged: sa/da (src's/dest's new rows), sd (a base
    row src deleted), sd_dead (one dest deleted too), dd (one dest deleted); `_bs_written`: a row of src's
    the merge writes anew (revived or carried) rather than shares."""
    inputs = reads.inputs
    row = inputs.tombstone_columns
    parts = [src_new.select(*row, F.lit("sa").alias("_bs_tag")),
             reads.new_rows(inputs.dest, dest_added).select(*row, F.lit("da").alias("_bs_tag"))]
    dest_revived = reads.revived_rows(inputs.dest, inputs.dest_changes, inputs.src)
    if dest_revived is not None:
        parts.append(dest_revived.withColumn("_bs_tag", F.lit("da")))
    written_anew = [revived] if revived is not None else []
    if carrying:
        carried_rows = reads.new_rows(inputs.src, carried)
        if stale is not None:
            carried_rows = carried_rows.join(stale.select(*IDENTITY), IDENTITY, "left_anti")
        written_anew.append(carried_rows.select(*row))
    for rows in written_anew:
        parts.append(rows.withColumn("_bs_tag", F.lit("sa")).withColumn("_bs_written", F.lit(True)))
    parts += _deletion_events(reads, src_added, dest_added, dropped_updates)
    if written_anew:
        return reduce(partial(DataFrame.unionByName, allowMissingColumns=True), parts).fillna(False, ["_bs_written"])
    return reduce(DataFrame.unionByName, parts).withColumn("_bs_written", F.lit(False))


def _deletion_events(reads: TableReads, src_added: set[str], dest_added: set[str],
                     dropped_updates: DataFrame | None) -> list[DataFrame]:
    """The base rows each side deleted, tagged sd, sd_dead (src's deletion of a row dest deleted too) or dd."""
    inputs = reads.inputs
    deleted = {}
    for tag, state, changes, own in (("sd", inputs.src, inputs.src_changes, src_added),
                                     ("dd", inputs.dest, inputs.dest_changes, dest_added)):
        rows = reads.deleted_rows(state, changes)
        if rows is not None:
            # Base rows only: a row the side wrote and deleted again is no change of it.
            rows = (rows.filter(~origin().isin(sorted(own))) if own else rows).dropDuplicates(IDENTITY)
            if tag == "sd" and dropped_updates is not None:
                rows = rows.join(dropped_updates, IDENTITY, "left_anti")
            deleted[tag] = rows.select(*inputs.tombstone_columns)
    parts = []
    if "sd" in deleted:
        dead = deleted["dd"].select(*IDENTITY, F.lit(True).alias("_bs_dead")) if "dd" in deleted else None
        src_deleted = deleted["sd"]
        src_deleted = (src_deleted.join(dead, IDENTITY, "left").fillna(False, ["_bs_dead"]) if dead is not None
                       else src_deleted.withColumn("_bs_dead", F.lit(False)))
        parts.append(src_deleted.withColumn("_bs_tag", F.when(F.col("_bs_dead"), "sd_dead").otherwise("sd"))
                     .drop("_bs_dead"))
    if "dd" in deleted:
        parts.append(deleted["dd"].withColumn("_bs_tag", F.lit("dd")))
    return parts


def _decide_counts(events: DataFrame, values: list) -> DataFrame:
    """The events that correct the identity merge, per distinct row of `values`: src's new rows to take back
    and dest's own new copies to delete (too many), base rows src deleted to keep (too few), and one marker
    row per value where src deleted copies dest deleted too (sd_dead: more of dest's base copies to delete)."""
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
    return decided.filter(unadd | extra | kept | short)


def _dest_base_copies(reads: TableReads, dest_added: set[str], shortfall: DataFrame, columns: list[str],
                      doomed: DataFrame | None) -> DataFrame:
    """Rows dest holds from the base that a count merge deletes beyond the changed rows: per value of
    `shortfall` (excess less the new copies taken back), that many live base copies on dest, not among
    `doomed` already. Only when such a shortfall exists (rare: both sides removed copies of one value) does
    it scan dest's rows, keeping those of the few values by a broadcast join."""
    dest = reads.inputs.dest
    live = reads.read(dest, list(dest.segments))
    if dest_added:
        live = live.filter(~origin().isin(sorted(dest_added)))
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
            .filter(F.col("_bs_pick") <= F.col("_bs_short")).select(*reads.inputs.tombstone_columns))


def _without_churn(doomed: DataFrame, src_new: DataFrame, columns: list[str], src_groups: set[str]) -> DataFrame:
    """`doomed` less the rows on dest it deletes that an identical row of src's the merge adds replaces (SPEC 4:
    a row that did not change is not a change): that dest row stays, and the src row is tombstoned with the
    merge instead, so the merge commit lists neither. Counts per distinct row stay as decided."""
    # Materialized (change-sized) first, so the join below plans over src's few new rows alone. (What kept
    # Spark from inferring the segment scan's deleted-row filter onto tombstone scans is the expression
    # declaring itself nondeterministic: storage/jvm/DeletedRowExpression.java.)
    kept = local_checkpoint(src_new).join(doomed.select(*IDENTITY), IDENTITY, "left_anti")
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
