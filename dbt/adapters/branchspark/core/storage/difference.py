"""The multiset difference between rows a write replaces and the rows it brings (SPEC 3.3, 4).

A write that replaces rows (an overwrite, an upsert) changes only the rows whose values differ: an
old row with an identical new row is paired with it and stays as it is (its identity too); the other
old rows are removed and the other new rows added. Identical rows pair one to one, so duplicates
count (on keyless tables a row's count is what changes). On a keyed table rows are unique per key,
so this is the per-key comparison of values.

One shuffle on the rows' values (or on a key), in Spark, or none when what they are read from is small
(one task compares them); the result holds only the changed rows.
"""
from __future__ import annotations

from py4j.protocol import Py4JError
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..catalog.tombstones import TombstoneSummary
from ..connect import is_connect
from .layout import SEGMENT_COLUMN
from .projection import select_sql
from .reader import ROW_FILE, ROW_ID_COLUMNS, ROW_POS, quote

SIDE = "_bs_side"  # 0: an old row the write removes; 1: a new row it adds
OLD, NEW = 0, 1
KEY_NEW_ROWS = "_bs_key_new_n"  # with a key: how many new rows have the row's key (1 unless the key repeats)
_RANK, _OLD_COUNT, _NEW_COUNT = "_bs_rank", "_bs_old_n", "_bs_new_n"


def _orderable(data_type: T.DataType) -> bool:
    if isinstance(data_type, T.MapType):
        return False
    if isinstance(data_type, T.ArrayType):
        return _orderable(data_type.elementType)
    if isinstance(data_type, T.StructType):
        return all(_orderable(f.dataType) for f in data_type.fields)
    return True


def comparable_value(value: Column, data_type: T.DataType) -> Column | None:
    """`value` in a form Spark can group and compare (a map as its sorted entries); None when it cannot."""
    if isinstance(data_type, T.MapType):
        if _orderable(data_type.keyType) and _orderable(data_type.valueType):
            return F.array_sort(F.map_entries(value))
        return None
    return value if _orderable(data_type) else None


def comparable(name: str, data_type: T.DataType) -> Column | None:
    return comparable_value(F.col(quote(name)), data_type)


def differs(pairs) -> Column:
    """Whether any (new value, old value, type) differs, NULLs equal; a value that cannot be compared counts
    as changed."""
    condition = F.lit(False)
    for new, old, data_type in pairs:
        new, old = comparable_value(new, data_type), comparable_value(old, data_type)
        if new is None:
            return F.lit(True)
        condition = condition | ~new.eqNullSafe(old)
    return condition


def comparable_columns(schema: T.StructType, names: list[str]) -> list[Column] | None:
    """The comparable forms of `names`, or None when one of them cannot be compared."""
    columns = [comparable(n, schema[n].dataType) for n in names]
    return None if any(c is None for c in columns) else columns


def comparable_sql(name: str, data_type: T.DataType) -> str | None:
    """`comparable` as SQL text (a plan built from text takes one JVM call per expression)."""
    return comparable_expression(quote(name), data_type)


def comparable_expression(sql: str, data_type: T.DataType) -> str | None:
    """`comparable_value` of the SQL expression `sql`, as SQL text."""
    if isinstance(data_type, T.MapType):
        if _orderable(data_type.keyType) and _orderable(data_type.valueType):
            return f"array_sort(map_entries({sql}))"
        return None
    return sql if _orderable(data_type) else None


def difference(old: DataFrame, new: DataFrame, columns: list[str], key: list[str] | None = None,
               one_task: bool | None = None) -> DataFrame | None:
    """Rows of `old` (with row ids) and of `new` that the other lacks, as multisets of `columns`' values.

    Returns `columns`, the row-id columns (NULL on new rows) and SIDE; None when a column's type cannot
    be compared (a map nested in another type), so the caller replaces every row instead. With `key` (a
    key `old` holds once at most), the rows are compared clustered by key, which the comparison by value
    needs no second shuffle for, and each row also carries KEY_NEW_ROWS: a key that repeats in `new`
    shows on at least one returned row, since one old row pairs with one new row at most. `one_task`: what
    `fits_one_task` of the rows' inputs answered, when the caller asked it already (None: asked here)."""
    schema = old.schema
    values = [comparable_sql(c, schema[c].dataType) for c in columns]
    if any(v is None for v in values):
        return None
    names = [quote(c) for c in columns]
    missing = [f"CAST(NULL AS {schema[c].dataType.simpleString()}) AS {c}" for c in ROW_ID_COLUMNS]
    return _unpaired(old, new, values, [SEGMENT_COLUMN, ROW_FILE, ROW_POS], [quote(k) for k in key or ()],
                     old_columns=[*names, *ROW_ID_COLUMNS], new_columns=[*names, *missing], one_plan=True,
                     one_task=one_task)


def unpaired(old: DataFrame, new: DataFrame, columns: list[str], order: list[str]) -> DataFrame | None:
    """Rows of `old` and of `new` (frames of the same columns) that no identical row of the other pairs
    with, as multisets of `columns`' values, with SIDE; identical rows pair in the order of `order`. None
    when a column's type cannot be compared."""
    values = [comparable_sql(c, old.schema[c].dataType) for c in columns]
    return None if any(v is None for v in values) else _unpaired(old, new, values, order)


def _unpaired(old: DataFrame, new: DataFrame, values: list[str], order: list[str], key: list[str] = (),
              old_columns: list[str] = ("*",), new_columns: list[str] = ("*",), one_plan: bool = False,
              one_task: bool | None = None) -> DataFrame:
    # Each side projected once, its label with its columns: every projection is a plan Spark analyzes.
    rows = select_sql(old, [*old_columns, f"{OLD} AS {SIDE}"]).unionByName(
        select_sql(new, [*new_columns, f"{NEW} AS {SIDE}"]))
    if fits_one_task(rows) if one_task is None else one_task:
        rows = rows.coalesce(1)  # one partition is clustered by anything: no shuffle follows
        if one_plan:
            rows = _planned_at_once(rows)
    elif key:  # rows clustered by key are clustered by value too (the key is part of the value)
        rows = rows.repartition(*[F.expr(k) for k in key])
    per_key = [f"sum({SIDE}) OVER (PARTITION BY {', '.join(key)}) AS {KEY_NEW_ROWS}"] if key else []
    # Old rows rank first within each distinct row; the first new_n old rows and the first old_n new rows
    # pair up, the rest are the difference.
    each_row = f"PARTITION BY {', '.join(values)}"
    ranked = rows.selectExpr(
        "*", f"row_number() OVER ({each_row} ORDER BY {SIDE}, {', '.join(order)}) AS {_RANK}",
        f"sum(1 - {SIDE}) OVER ({each_row}) AS {_OLD_COUNT}", f"sum({SIDE}) OVER ({each_row}) AS {_NEW_COUNT}",
        *per_key)
    return (ranked.where(f"({SIDE} = {OLD} AND {_RANK} > {_NEW_COUNT}) OR ({SIDE} = {NEW} AND {_RANK} > 2 * {_OLD_COUNT})")
            .drop(_RANK, _OLD_COUNT, _NEW_COUNT))


def fits_one_task(*frames: DataFrame) -> bool:
    """Whether what a comparison of `frames` reads is small: every relation behind them (a frame read twice
    counted twice), by Spark's estimate (file sizes for scans), adds up to no more than its broadcast threshold
    (`spark.sql.autoBroadcastJoinThreshold`). Then one task compares them, in the stage that computes them,
    where a shuffle would add a stage and a job of fixed cost (docs/performance.md). The inputs are summed, not
    the plan's own estimate of its output, which for a join is the product of its sides. A Spark Connect
    client has no estimate, so it shuffles."""
    spark = frames[0].sparkSession
    if is_connect(spark):
        return False
    threshold = spark._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold()
    if threshold <= 0:  # broadcasts turned off: so is this
        return False
    total = 0
    for frame in frames:
        leaves = frame._jdf.queryExecution().analyzed().collectLeaves()
        for i in range(leaves.size()):
            leaf = leaves.apply(i)
            if leaf.nodeName() == "CTERelationRef":  # a WITH query's name: its definition's relations are leaves too
                continue
            total += int(str(leaf.stats().sizeInBytes()))  # a Scala BigInt
            if total > threshold:
                return False
    return True


def _planned_at_once(rows: DataFrame) -> DataFrame:
    """`rows` planned in a copy of their session (every setting, function and view the same) with adaptive
    execution off: a small comparison in one task, which a write runs once, then plans in one go. Adaptive
    execution would run the cached new rows and the broadcast of their keys as query stages of their own,
    re-planning the rest after each: about 0.1 s of a 0.6 s upsert at 100k rows (docs/performance.md), for a plan
    it cannot improve. A copy per write (7 ms), so no other query of the session, in this thread or another, sees
    the setting. The Python frame keeps the caller's session: a new pyspark session would put back pyspark's own
    error hook in place of branchspark's (spark_errors.py). Unchanged on a Spark Connect client, in a session whose
    adaptive execution is off already, and on a Spark without these classes (the plan then stays adaptive)."""
    spark = rows.sparkSession
    if is_connect(spark):
        return rows
    try:
        if not spark._jsparkSession.sessionState().conf().adaptiveExecutionEnabled():
            return rows
        copy = spark._jsparkSession.cloneSession()
        copy.conf().set("spark.sql.adaptive.enabled", "false")
        planned = spark._jvm.org.apache.spark.sql.classic.Dataset.ofRows(copy, rows._jdf.queryExecution().analyzed())
    except Py4JError:  # a Spark of other internals: only this saving is lost
        return rows
    return DataFrame(planned, spark)


def change_counts() -> list[Column]:
    """Metrics of a difference to observe while it is computed: the rows it removes, with the segments and
    data files they live in (what a tombstone's summary needs), and the rows it adds."""
    old = f"{SIDE} = {OLD}"
    return [F.expr(f"count(CASE WHEN {old} THEN 1 END) AS removed"),
            F.expr(f"count(CASE WHEN NOT ({old}) THEN 1 END) AS added"),
            F.expr(f"collect_set(CASE WHEN {old} THEN {SEGMENT_COLUMN} END) AS segments"),
            F.expr(f"collect_set(CASE WHEN {old} THEN {ROW_FILE} END) AS files")]


def observed_changes(observed) -> tuple[TombstoneSummary, int]:
    """(the removed rows' tombstone summary, the number of added rows) from an Observation of
    `change_counts()` on a difference, once an action (the write of the difference, or of its tombstone)
    has computed it. Spark Connect returns observed metrics of a write, not of a checkpoint: the metrics
    ride on a write."""
    metrics = observed.get
    summary = TombstoneSummary(int(metrics.get("removed") or 0), frozenset(metrics.get("segments") or ()),
                               frozenset(metrics.get("files") or ()))
    return summary, int(metrics.get("added") or 0)
