"""Merge drivers (SPEC 3.6): a per-table function that merges the rows both sides changed.

A driver receives three mappings, column name -> Spark Column, for the base,
ours (dest) and theirs (src) rows of a key, and returns a mapping of the
columns it decides -> merged Column; the key `CONFLICT` may map to a boolean
Column that, where true, makes the key a conflict ("driver"). Columns it does
not return go through the default rules. It runs in Spark, inside the merge's
plan, on every merge of the table, before the default rules.

Primary-key tables call it for every key both sides changed (merge/keyed.py).
Keyless tables call it for every row of a contested segment (A1/A3) that both
sides changed, paired by base identity (merge/contested.py), with every column
in the mappings (a side that deleted the row shows nulls): a keyless table
with a driver merges the rows of its contested segments as keys merge.

A dbt macro is a driver too: it is rendered once with the column expressions
as SQL text (`base['amount']` is "b.`amount`") and returns SQL text per column,
which `sql_driver` turns into Columns with F.expr.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F

from .. import errors

CONFLICT = "_conflict"
Driver = Callable[[Mapping[str, Column], Mapping[str, Column], Mapping[str, Column]], Mapping]

# The sides as the keyed merge names them: base, ours (dest), theirs (src).
SIDES = {"base": "b", "ours": "d", "theirs": "s"}


def side_sql(side: str, columns: list[str]) -> dict[str, str]:
    """SQL text of each column of one side, for a driver written in SQL (a dbt macro)."""
    prefix = SIDES[side]
    return {c: f"{prefix}.`{c}`" for c in columns}


def driver_outputs(driver: Driver, columns: list[str]) -> tuple[dict[str, Column], Column | None]:
    """(merged Column per column the driver decides, its conflict marker or None)."""
    sides = [{c: F.col(prefix)[c] for c in columns} for prefix in ("b", "d", "s")]
    out = dict(driver(*sides) or {})
    conflict = out.pop(CONFLICT, None)
    unknown = sorted(set(out) - set(columns))
    if unknown:
        raise errors.InvalidArgument(f"merge driver returned columns {unknown} that are not value columns of the "
                                     f"table ({', '.join(columns)}): return only those, or '{CONFLICT}'")
    return {c: _column(v) for c, v in out.items()}, None if conflict is None else _column(conflict)


def sql_driver(expressions: Mapping[str, str]) -> Driver:
    """A driver from SQL text per column (and optionally CONFLICT), referring to b., d. and s. columns."""
    expressions = {str(k): str(v) for k, v in (expressions or {}).items() if v is not None and str(v).strip()}

    def driver(base, ours, theirs):
        return {c: F.expr(sql) for c, sql in expressions.items()}

    return driver


def _column(value) -> Column:
    return value if isinstance(value, Column) else F.expr(str(value))


def drivers_for(mapping: Mapping[str, Driver] | None, table: str) -> Driver | None:
    """The driver named for `table` ('db.table', case-insensitive) in a mapping, or None."""
    if not mapping:
        return None
    lowered = {str(k).lower(): v for k, v in mapping.items()}
    return lowered.get(table.lower())
