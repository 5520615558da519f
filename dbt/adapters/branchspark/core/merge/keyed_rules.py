"""SPEC 3.4's per-key rules as Spark expressions over the keyed merge's per-key frame (merge/keyed.py).

Each key src changed has b (its base row), s and d (each side's row now) and d_touched (dest changed it
too). A key only src changed takes src's row; for keys both changed: the same row is fine, updates of
different columns merge cell by cell, and the rest conflict, unless a merge driver or `prefer` (ours or
theirs) decides them. The per-column rules are SQL text: one call into the JVM per expression, not per
column and side (planning is most of a small merge's cost).
"""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from ..storage.reader import quote
from .rules import Rule


def same_values(left: str, right: str, columns: list[str]) -> str:
    """SQL: structs `left` and `right` are both absent, or both present with the same `columns` values."""
    values = " AND ".join(f"{left}.{quote(c)} <=> {right}.{quote(c)}" for c in columns) or "true"
    return f"({left} IS NULL AND {right} IS NULL OR {left} IS NOT NULL AND {right} IS NOT NULL AND {values})"


def _cell(side: str, column: str) -> str:
    return f"{side}.{quote(column)}"


def _clashes(c: str) -> str:
    """SQL: both sides changed column `c` of the row, to different values."""
    return (f"(NOT {_cell('s', c)} <=> {_cell('b', c)} AND NOT {_cell('d', c)} <=> {_cell('b', c)} "
            f"AND NOT {_cell('s', c)} <=> {_cell('d', c)})")


class KeyRules:
    """The rule, merged row and keep flag of each key. `driven`: column -> the merge driver's value (a
    Column), `driver_conflict`: where the driver declared a conflict (merge/drivers.py)."""

    def __init__(self, keys: list[str], values: list[str], prefer: str | None, driven: dict, driver_conflict):
        self.keys, self.prefer = keys, prefer
        self.driven, self.driver_conflict = driven, driver_conflict
        # A merge driver decides first, for keys both sides changed; the default rules cover the rest.
        self.undriven = [c for c in values if c not in driven]
        self.all_driven = bool(driven) and not self.undriven
        self.s_in, self.d_in, self.b_in = (F.col(p).isNotNull() for p in "sdb")
        self.both = F.col("d_touched")
        self.clash = F.col("_bs_rule").isNotNull()
        self.preferred = "d" if prefer == "ours" else "s"

    def rule(self) -> Column:
        """The rule a key breaks (`_bs_rule`), or null where it merges."""
        s_in, d_in = self.s_in, self.d_in
        same = F.expr(" AND ".join(f"{_cell('s', c)} <=> {_cell('d', c)}" for c in self.undriven) or "true")
        cell_clash = F.expr(" OR ".join(_clashes(c) for c in self.undriven) or "false")
        rule = F.when(~self.both, F.lit(None))
        if self.driver_conflict is not None:
            rule = rule.when(F.coalesce(self.driver_conflict, F.lit(False)), F.lit(Rule.DRIVER.value))
        if self.all_driven:
            rule = rule.when(s_in | d_in, F.lit(None))
        return (rule.when(~s_in & ~d_in, F.lit(None))
                .when(s_in & d_in & same, F.lit(None))
                .when(s_in != d_in, F.lit(Rule.KEY_UPDATE_DELETE.value))
                .when(~self.b_in, F.lit(Rule.KEY_INSERT.value))
                .when(cell_clash, F.lit(Rule.KEY_CELLS.value)))

    def keep(self) -> Column:
        """Whether the key has a row after the merge (null: an open conflict)."""
        winner_in = self.d_in if self.prefer == "ours" else self.s_in
        kept_when_merged = (self.s_in | self.d_in) if self.all_driven else (self.s_in & self.d_in)
        return ((~self.both & self.s_in) | (self.both & ~self.clash & kept_when_merged)
                | (self.both & self.clash & (winner_in if self.prefer else F.lit(None))))

    def merged(self, column: str) -> Column:
        """The key's merged value of `column`."""
        if column in self.keys:
            return F.col(quote(column))
        if column in self.driven:
            return self._driven(column)
        merged = self._merged_sql(column)
        if self.prefer is None:  # an open conflict: cells both sides changed differently stay undecided
            settled = f"CASE WHEN {_clashes(column)} THEN NULL ELSE {merged} END"
        else:  # SPEC 3.4: a cell clash settles those cells only (`merged` prefers a side there), the
            # other cells merge; a row-level clash (update/delete, insert) takes the preferred side's row
            settled = (f"CASE WHEN _bs_rule = '{Rule.KEY_CELLS.value}' THEN {merged} "
                       f"ELSE {_cell(self.preferred, column)} END")
        return F.expr(f"CASE WHEN NOT d_touched THEN {_cell('s', column)} WHEN _bs_rule IS NOT NULL THEN {settled} "
                      f"ELSE {merged} END")

    def _driven(self, column: str) -> Column:
        """The driver's value is a Column: the same rules, composed as Columns."""
        merged = self.driven[column]
        if self.prefer is None:
            settled = F.when(F.expr(_clashes(column)), F.lit(None)).otherwise(merged)
        else:  # a cell clash settles those cells only; a row-level clash takes the preferred row
            settled = (F.when(F.col("_bs_rule") == Rule.KEY_CELLS.value, merged)
                       .otherwise(F.expr(_cell(self.preferred, column))))
        return F.when(~self.both, F.expr(_cell("s", column))).when(self.clash, settled).otherwise(merged)

    def _merged_sql(self, column: str) -> str:
        """A column only one side changed takes that side's value; else the preferred side's."""
        s, d, b = _cell("s", column), _cell("d", column), _cell("b", column)
        return (f"CASE WHEN b IS NOT NULL AND {s} <=> {b} THEN {d} "
                f"WHEN b IS NOT NULL AND {d} <=> {b} THEN {s} "
                f"ELSE {_cell(self.preferred, column)} END")
