"""The relations a paused merge exposes (SPEC 3.6), readable and updatable with Spark SQL.

Data: one relation per table the merge plans row by row, with a row for every
key src changed (primary-key tables) or for every base row either side deleted
or updated in a segment A1/A3 contest (keyless tables, merge/contested.py):
the key columns (keyless: the base row's identity, `row_segment`, `row_file`,
`row_position`); for each other column `c`,
`base_c`, `our_c` (dest's current value), `their_c` (src's) and `merged_c`
(what the merge will write); `our_diff_type` / `their_diff_type` (added,
modified, removed; null where that side left the key alone);
`our_row_exists` / `their_row_exists`; `merged_deleted` (the merge deletes
the key); `conflict` (true: must be resolved before the merge can finish)
and `rule` (why the rules or a driver called it a conflict). It is stored as
Parquet under `merges/<merge id>/` in the warehouse (never under `tables/`, so
`gc` leaves it alone) and shown as the temp view `bs_conflicts_<dest>_<db>_<table>`.

Schema: `bs_schema_conflicts_<dest>` holds, per table both sides changed,
`table_name`, `base_schema`, `our_schema`, `their_schema`, `merged_schema`
(DDL column lists), `conflict` and `rule`. Setting `merged_schema` to
`our_schema` or `their_schema` settles that table's columns.

Updates go through `resolve(where, set)`: a Spark SQL predicate and SQL
expressions per column, applied in Spark, written as the relation's next
version. Setting any `merged_*` column resolves the rows it touches; the value
CONFLICT() (or `conflict = true`) marks rows as conflicts, even ones the rules
would have merged.
"""
from __future__ import annotations

import re

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import errors
from ..catalog.schema import Schema
from .rules import Rule

MERGED = "_bs_merged"  # the row the merge would write for a key (a struct of every column)
KEEP = "_bs_keep"  # whether that row is written (false: the key is deleted; null: undecided)
CONFLICT_MARK = "CONFLICT()"
SCHEMA_TABLE = "schema"  # the name `resolve` takes for the schema-conflicts relation
_DIFF_SIDES = {"our": "d", "their": "s"}


# ----------------------------------------------------------------- names
def safe_name(text: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", text).strip("_").lower()


def view_name(dest: str, table: str) -> str:
    """`bs_conflicts_<dest>_<db>_<table>`: the temp view of one table's conflict relation."""
    return f"bs_conflicts_{safe_name(dest)}_{safe_name(table)}"


def schema_view_name(dest: str) -> str:
    return f"bs_schema_conflicts_{safe_name(dest)}"


# ------------------------------------------------------- building (plan)
def relation_from_decided(decided: DataFrame, keys: list[str], values: list[str]) -> DataFrame:
    """The conflict relation of one table, from the keyed merge's per-key frame (merge/keyed.py)."""
    b_in, d_in, s_in = (F.col(p).isNotNull() for p in "bds")
    touched = {"d": F.col("d_touched"), "s": F.col("s_touched")}

    def diff(prefix: str) -> SparkColumn:
        side_in = F.col(prefix).isNotNull()
        return (F.when(~touched[prefix], F.lit(None)).when(~side_in, F.lit("removed"))
                .when(~b_in, F.lit("added")).otherwise(F.lit("modified")))

    columns = [F.col(f"`{k}`") for k in keys]
    for c in values:
        columns += [F.col("b")[c].alias(f"base_{c}"),
                    F.when(touched["d"], F.col("d")[c]).otherwise(F.col("b")[c]).alias(f"our_{c}"),
                    F.col("s")[c].alias(f"their_{c}"),
                    F.col(MERGED)[c].alias(f"merged_{c}")]
    is_conflict = F.col("_bs_rule").isNotNull()
    columns += [diff("d").alias("our_diff_type"), diff("s").alias("their_diff_type"),
                F.when(touched["d"], d_in).otherwise(b_in).alias("our_row_exists"), s_in.alias("their_row_exists"),
                # An open conflict shows the deletion the plan proposes, if any (keyless rows one side deleted).
                F.when(is_conflict & F.col(KEEP).isNull(), F.lit(None).cast("boolean"))
                .otherwise(~F.col(KEEP)).alias("merged_deleted"),
                is_conflict.alias("conflict"), F.col("_bs_rule").alias("rule")]
    return decided.select(*columns)


def apply_resolutions(decided: DataFrame, relation: DataFrame, keys: list[str], values: list[str]) -> DataFrame:
    """The per-key frame with a conflict relation's decisions in place of the rules' for every key it lists."""
    chosen = relation.select(*[F.col(f"`{k}`") for k in keys], F.lit(True).alias("_bs_res"),
                             F.coalesce(F.col("conflict"), F.lit(False)).alias("_bs_res_conflict"),
                             F.coalesce(F.col("merged_deleted"), F.lit(False)).alias("_bs_res_deleted"),
                             *[F.col(f"`merged_{c}`").alias(f"_bs_res_{i}") for i, c in enumerate(values)])
    joined = decided.join(chosen, keys, "left")
    listed = F.col("_bs_res").isNotNull()
    marked = listed & F.col("_bs_res_conflict")
    merged_fields = decided.schema[MERGED].dataType.fieldNames()
    merged = F.struct(*[
        (F.when(listed, F.col(f"_bs_res_{values.index(f)}")).otherwise(F.col(MERGED)[f]) if f in values
         else F.col(MERGED)[f]).alias(f) for f in merged_fields])
    return (joined
            .withColumn("_bs_rule", F.when(marked, F.coalesce(F.col("_bs_rule"), F.lit(Rule.MARKED.value)))
                        .when(listed, F.lit(None)).otherwise(F.col("_bs_rule")))
            .withColumn(MERGED, merged)
            .withColumn(KEEP, F.when(marked, F.lit(None).cast("boolean"))
                        .when(listed, ~F.col("_bs_res_deleted")).otherwise(F.col(KEEP)))
            .drop("_bs_res", "_bs_res_conflict", "_bs_res_deleted", *[f"_bs_res_{i}" for i in range(len(values))]))


def _ddl(columns) -> str:
    return ", ".join(f"{c.name} {c.type}" for c in columns)


def schema_row(table: str, base: Schema, ours: Schema, theirs: Schema, merged_columns, conflicts) -> dict:
    """One row of the schema-conflicts relation (conflicts: those the plan found on this table)."""
    merged = None if conflicts else _ddl(merged_columns)
    return {"table_name": table, "base_schema": _ddl(base.columns), "our_schema": _ddl(ours.columns),
            "their_schema": _ddl(theirs.columns), "merged_schema": merged, "conflict": bool(conflicts),
            "rule": ", ".join(sorted({c.rule for c in conflicts})) or None}


SCHEMA_COLUMNS = ("table_name string, base_schema string, our_schema string, their_schema string, "
                  "merged_schema string, conflict boolean, rule string")


# ------------------------------------------------------------ updates
def assignments(frame: DataFrame, where: str | None, updates: dict) -> DataFrame:
    """`UPDATE relation SET column = expr, ... WHERE where`, in Spark (CONFLICT() marks a conflict)."""
    if not updates:
        raise errors.InvalidArgument("resolve needs at least one assignment, e.g. set: {merged_amount: their_amount}")
    names = {c.lower(): c for c in frame.columns}
    condition = F.coalesce(F.expr(where), F.lit(False)) if where and str(where).strip() else F.lit(True)
    marks, settings = [], {}
    for column, expression in updates.items():
        actual = names.get(str(column).lower())
        settable = actual is not None and (actual.startswith("merged_") or actual == "conflict")
        if not settable:
            raise errors.InvalidArgument(f"cannot set '{column}' in a conflict relation: set merged_<column>, "
                                         f"merged_deleted, merged_schema or conflict")
        text = str(expression).strip()
        if text.upper() == CONFLICT_MARK:
            marks.append(actual)
        else:
            settings[actual] = F.expr(text)
    # Rows given merged values are resolved unless the same update says otherwise.
    conflict_value = (F.lit(True) if marks else settings.pop("conflict", None))
    if conflict_value is None and settings:
        conflict_value = F.lit(False)
    # Evaluate every right-hand side against the row before the update, as SQL does.
    staged = frame
    for i, (column, value) in enumerate(settings.items()):
        staged = staged.withColumn(f"_bs_set_{i}", F.when(condition, value).otherwise(F.col(f"`{column}`")))
    for i, column in enumerate(settings):
        staged = staged.withColumn(column, F.col(f"_bs_set_{i}").cast(frame.schema[column].dataType))
    staged = staged.drop(*[f"_bs_set_{i}" for i in range(len(settings))])
    if conflict_value is not None:
        staged = staged.withColumn("conflict", F.when(condition, conflict_value).otherwise(F.col("conflict")))
    if marks:
        staged = staged.withColumn("rule", F.when(condition, F.coalesce(F.col("rule"), F.lit(Rule.MARKED.value)))
                                   .otherwise(F.col("rule")))
    return staged.select(*frame.columns)
