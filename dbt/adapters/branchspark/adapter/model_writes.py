"""The core operations behind each materialization (SPEC section 2).

Every function takes the model build's BranchTransaction and DataFrames that
Spark computes; nothing here collects table data to the driver. Source
DataFrames are resolved before the first write of an operation, so a model
that reads `{{ this }}` sees the table as it was when the build started.
"""

from typing import Dict, List, Optional, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core.connect import local_checkpoint
from dbt.adapters.branchspark.core.frames import conform_by_name, quote_column

MATCHED = "__branchspark_matched"


def _columns_by_name(df: DataFrame) -> Dict[str, str]:
    return {c.lower(): c for c in df.columns}


def _resolve_columns(df: DataFrame, names: Sequence[str], what: str) -> List[str]:
    """`names` as spelled in `df` (case-insensitive); a clear error for a missing one."""
    by_name = _columns_by_name(df)
    resolved = []
    for name in names:
        bare = name.strip().strip("`")
        if bare.lower() not in by_name:
            raise ValueError(f"{what} column '{bare}' is not a column of the model (columns: {', '.join(df.columns)})")
        resolved.append(by_name[bare.lower()])
    return resolved


def primary_key_of(df: DataFrame, unique_key: Sequence[str]) -> List[str]:
    """The primary key a unique_key declares for a (re)built table; [] for none.

    dbt applies unique_key only from the second build on, and lets it hold
    NULLs or repeats, which a primary key cannot: the key is declared when every
    key column exists and the data has no NULL or repeated key (one aggregation).
    """
    by_name = _columns_by_name(df)
    keys = [by_name.get(k.strip().strip("`").lower()) for k in unique_key]
    if not keys or not all(keys):
        return []
    quoted = [quote_column(k) for k in keys]
    bad = " OR ".join([f"{k} IS NULL" for k in quoted] + ["`__rows` > 1"])
    # This check runs the model's query: keep its result for the write that follows (build_table
    # unpersists it), so that the query runs once.
    df.persist()
    offending = df.groupBy(*quoted).agg(F.count(F.lit(1)).alias("__rows")).where(bad).limit(1).count()
    return [] if offending else keys


def build_table(w, name: str, df: DataFrame, partition_by=None, primary_key=None) -> None:
    """Table rebuild: `overwrite` (plus `alter column` where the schema changed), or create."""
    try:
        # A primary key here comes from primary_key_of, which checked it on the same rows.
        w.tx.replace_table(name, df, partition_by=partition_by, primary_key=primary_key,
                           key_checked=bool(primary_key))
    finally:
        df.unpersist()  # kept by primary_key_of, if it checked a key
    w.changed(name)


def append_rows(w, name: str, source: DataFrame) -> None:
    """Incremental append: `insert`."""
    target = w.tx.read(name)
    w.tx.insert(name, conform_by_name(source, target.schema))
    w.changed(name)


def merge_rows(
    w,
    name: str,
    source: DataFrame,
    unique_key: Sequence[str],
    update_columns: Optional[Sequence[str]] = None,
) -> None:
    """Incremental merge on unique_key: `upsert` (update + insert).

    With merge_update_columns / merge_exclude_columns, a matched row keeps its
    current value in the columns that are not updated.
    """
    current = w.tx.read(name)
    keys = _resolve_columns(current, unique_key, "unique_key")
    rows = conform_by_name(source, current.schema)
    if update_columns is not None:
        updated = {c.lower() for c in _resolve_columns(current, update_columns, "merge update")}
        kept = [c for c in current.columns if c.lower() not in updated and c not in keys]
        if kept:
            given = _columns_by_name(rows)
            existing = current.select(*[F.col(quote_column(c)) for c in keys + kept], F.lit(True).alias(MATCHED))
            joined = rows.alias("s").join(existing.alias("t"), on=keys, how="left")

            def new_value(column: str):
                if column.lower() in given:
                    return F.col(f"s.{quote_column(given[column.lower()])}")
                return F.lit(None)

            rows = joined.select(
                *[
                    (
                        F.col(quote_column(c)) if c in keys
                        else F.when(F.col(f"t.{MATCHED}"), F.col(f"t.{quote_column(c)}")).otherwise(new_value(c))
                        if c in kept
                        else new_value(c)
                    ).cast(current.schema[c].dataType).alias(c)
                    for c in current.columns
                ]
            )
    w.tx.upsert(name, rows, key=list(keys))
    w.changed(name)


def delete_insert_rows(
    w,
    name: str,
    source_view: str,
    source: DataFrame,
    unique_key: Sequence[str],
    predicates: Optional[Sequence[str]] = None,
) -> None:
    """Incremental delete+insert: `delete` the target rows whose key the new rows have, then `insert`."""
    current = w.tx.read(name)
    rows = conform_by_name(source, current.schema)
    conditions = list(predicates or [])
    if unique_key:
        keys = _resolve_columns(current, unique_key, "unique_key")
        key_list = ", ".join(quote_column(k) for k in keys)
        conditions.append(f"({key_list}) IN (SELECT {key_list} FROM {source_view})")
    if conditions:
        w.tx.delete(name, " AND ".join(f"({c})" for c in conditions))
    w.tx.insert(name, rows)
    w.changed(name)


def overwrite_rows(w, name: str, source: DataFrame, partition_by=None) -> None:
    """insert_overwrite: `overwrite` the partitions the new rows fall in (whole table without partition_by)."""
    current = w.tx.read(name)
    rows = conform_by_name(source, current.schema)
    w.tx.overwrite(name, rows, partitions="dynamic" if partition_by else None)
    w.changed(name)


def replace_time_window(w, name: str, source: DataFrame, event_time: str, start, end) -> None:
    """microbatch: the batch's event-time window is replaced (`delete` of the window + `insert`)."""
    current = w.tx.read(name)
    (column,) = _resolve_columns(current, [event_time], "event_time")
    rows = conform_by_name(source, current.schema)
    bounds = []
    if start is not None:
        bounds.append(f"{quote_column(column)} >= TIMESTAMP '{_timestamp_text(start)}'")
    if end is not None:
        bounds.append(f"{quote_column(column)} < TIMESTAMP '{_timestamp_text(end)}'")
    if bounds:
        w.tx.delete(name, " AND ".join(bounds))
    else:  # no window: the batch is the whole table
        w.tx.delete(name, "true")
    w.tx.insert(name, rows)
    w.changed(name)


def _timestamp_text(value) -> str:
    text = value.isoformat(sep=" ") if hasattr(value, "isoformat") else str(value)
    return text.replace("+00:00", "")


def apply_snapshot(w, name: str, staging: DataFrame, columns: Dict[str, str], valid_to_current: Optional[str] = None) -> None:
    """Snapshot merge, as dbt's snapshot_merge_sql: close changed rows (dbt_valid_to) and add new versions.

    Both go to the core as one `upsert` on dbt_scd_id: matched rows are the
    current versions getting their dbt_valid_to, the others are inserts.
    The staging rows are computed once (checkpointed in Spark), so that the
    closing time and the new versions come from the same evaluation.
    """
    current = w.tx.read(name)
    scd_id, valid_to = columns["dbt_scd_id"], columns["dbt_valid_to"]
    staging = local_checkpoint(staging)
    change_type = F.col("s.dbt_change_type")

    is_current = F.col(f"t.{quote_column(valid_to)}").isNull()
    if valid_to_current:
        is_current = is_current | (F.col(f"t.{quote_column(valid_to)}") == F.expr(valid_to_current))
    closed = (
        current.alias("t")
        .join(staging.alias("s"), F.col(f"t.{quote_column(scd_id)}") == F.col(f"s.{quote_column(scd_id)}"))
        .where(is_current & change_type.isin("update", "delete"))
        .select(
            *[
                (F.col(f"s.{quote_column(valid_to)}") if c.lower() == valid_to.lower() else F.col(f"t.{quote_column(c)}")).alias(c)
                for c in current.columns
            ]
        )
    )
    existing_ids = current.select(F.col(quote_column(scd_id)).alias("__existing_scd_id"))
    inserts = (
        staging.where(F.col("dbt_change_type") == "insert")
        .join(existing_ids, F.col(quote_column(scd_id)) == F.col("__existing_scd_id"), "left_anti")
    )
    rows = closed.unionByName(conform_by_name(inserts, current.schema))
    w.tx.upsert(name, rows, key=[_resolve_columns(current, [scd_id], "snapshot")[0]])
    w.changed(name)
