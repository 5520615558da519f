"""What the compare pages show, through the core's row-level diff (core/diff): per table the counts and
schema changes and each table's first rows, then one table's rows a page at a time.

Counts come from the catalog where it knows them exactly (core/diff/counted.py: appended files, added
tombstones, a table added or dropped; no Spark job), else from one Spark job over the diff of the tables that
need it, whose cost grows with the changes. A page of rows is sorted and cut in Spark: only the counts and one
page come to the driver; the CSV streams the diff a partition at a time."""
from __future__ import annotations

import csv
import io
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..core import errors
from ..core.diff import THREE_DOT, TWO_DOT, branch_diff
from ..core.diff.counted import table_diff_counts
from ..core.diff.counts import FROM_FILES, FROM_SPARK, table_counts
from ..core.diff.plan import TableDiff
from ..core.diff.rows import (ADDED, DIFF_TYPES, KEYED_DIFF_TYPE, MODIFIED, NEW, OLD, REMOVED, CHANGED,
                               RowDifference)
from ..core.lakehouse import Lakehouse
from .cells import cell_text

PAGE_SIZE = 50
INLINE_ROWS, INLINE_TABLES = 5, 10  # the compare page shows the first rows of its first tables


def parse_spec(spec: str) -> tuple[str, str, str]:
    """`from...to` (three-dot: what `to` changed since its merge base with `from`) or `from..to` (two-dot)."""
    for dots, mode in (("...", THREE_DOT), ("..", TWO_DOT)):
        if dots in spec:
            left, _, right = spec.partition(dots)
            if left and right:
                return left, right, mode
    raise errors.InvalidArgument(f"'{spec}' is not a comparison: write FROM...TO (what TO changed since it left "
                                 f"FROM) or FROM..TO (the two versions as they are)")


@dataclass
class TableCounts:
    table: str
    status: str  # added | dropped | changed
    added: int
    removed: int
    modified: int
    schema_changes: list[str]
    renamed_from: str | None
    counted_by: str  # FROM_FILES or FROM_SPARK




def summary(lakehouse: Lakehouse, from_ref: str, to_ref: str, mode: str,
            memo: MutableMapping[str, int] | None = None) -> Summary:
    """Per table the counts and schema changes, from the catalog where exact, and the first INLINE_ROWS rows
    of the first INLINE_TABLES tables (cut in Spark). The conflicts a merge would hit are the merge preview's
    page (it plans the merge, which costs more)."""
    diff = branch_diff(lakehouse, from_ref, to_ref, mode=mode, preview=False)
    # a code host's first changes of each file: the first tables' first rows, one Spark job each, which also
    # counts the table's rows where the catalog cannot; the other tables' counts in one job for all of them
    with_rows = [t for t in diff.tables if t.rows is not None]
    pages = {t.name: _page_of(lakehouse, t, 0, INLINE_ROWS, memo, None) for t in with_rows[:INLINE_TABLES]}
    counts = table_counts(lakehouse, [t for t in diff.tables if t.name not in pages], memo)
    counts.update((name, (page.counts, page.counted_by)) for name, page in pages.items())
    found = Summary(diff.from_commit.id, diff.to_commit.id, [], diff.unchanged)
    for t in diff.tables:
        n, counted_by = counts[t.name]
        if not any(n.values()) and not t.schema_changes and not t.renamed_from and t.status == "changed":
            found.unchanged += 1  # other files, the same rows (a compaction, a rebuild that reproduced every row)
            continue
        found.tables.append(TableCounts(t.name, t.status, n[ADDED], n[REMOVED], n[MODIFIED],
                                        [c.text() for c in t.schema_changes], t.renamed_from, counted_by))
        if any(n.values()):
            if t.name in pages:
                found.first_rows[t.name] = pages[t.name]
            else:
                found.without_rows += 1
    return found


@dataclass
class Cell:
    text: str
    changed: bool = False
    old: str | None = None  # a modified cell's value before


@dataclass
class TablePage:
    table: str
    columns: list[str]
    primary_key: tuple[str, ...]
    counts: dict[str, int]
    counted_by: str = FROM_FILES
    rows: list[tuple[str, list[Cell]]] = field(default_factory=list)  # (diff type, cells)
    page: int = 0
    size: int = PAGE_SIZE

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.size))


@dataclass
class Summary:
    from_commit: str  # the merge base, for three-dot
    to_commit: str
    tables: list[TableCounts]
    unchanged: int
    first_rows: dict[str, TablePage] = field(default_factory=dict)  # the first INLINE_ROWS of INLINE_TABLES tables
    without_rows: int = 0  # tables with changed rows past INLINE_TABLES


def table_page(lakehouse: Lakehouse, from_ref: str, to_ref: str, mode: str, table: str, page: int = 0,
               size: int = PAGE_SIZE, memo: MutableMapping[str, int] | None = None,
               known: TableCounts | None = None) -> TablePage:
    """One page of `table`'s diff rows, ordered by key (keyless: by value), sorted and cut in Spark; the counts
    from `known` (the compare page's, for the same commits), else from the catalog where exact, else in the
    same Spark job as the page."""
    found = _table(lakehouse, from_ref, to_ref, mode, table)
    if found is None or found.rows is None:
        return TablePage(table.lower(), [], (), {ADDED: 0, REMOVED: 0, MODIFIED: 0})
    return _page_of(lakehouse, found, page, size, memo, known)


def _page_of(lakehouse: Lakehouse, found: TableDiff, page: int, size: int,
             memo: MutableMapping[str, int] | None, known: TableCounts | None) -> TablePage:
    rows, table = found.rows, found.name
    page = max(0, int(page))
    if known is not None:
        counts, counted_by = {ADDED: known.added, REMOVED: known.removed, MODIFIED: known.modified}, known.counted_by
    else:
        counts = table_diff_counts(lakehouse.store, lakehouse.warehouse, found, memo)
        counted_by = FROM_FILES if counts is not None else FROM_SPARK
    result = TablePage(table.lower(), rows.columns, rows.primary_key, counts or {}, counted_by, page=page,
                       size=size)
    if rows.primary_key:
        keys = [F.col(f"`{k}`") for k in rows.primary_key]
        frame, order, kind = rows.differing, keys, KEYED_DIFF_TYPE
        shown = [*keys, OLD, NEW, CHANGED]
    else:
        frame, kind = rows.relation(), f"`{rows.type_column}`"
        order = [*[F.col(f"`{c}`") for c in rows.columns], F.col(rows.type_column)]
        shown = [F.col(f"`{c}`") for c in frame.columns]
    if counts is None:
        page_rows, result.counts = _page_and_counts(rows, frame, kind, shown, order, page * size, size)
    else:
        page_rows = frame.select(*shown).orderBy(*order).offset(page * size).limit(size).collect()
    for row in page_rows:
        result.rows.append(_keyed_cells(row, rows.columns) if rows.primary_key else
                           (row[rows.type_column], [Cell(cell_text(row[c])) for c in rows.columns]))
    return result


def _page_and_counts(rows: RowDifference, frame: DataFrame, kind: str, shown: list, order: list, offset: int,
                     size: int) -> tuple[list, dict[str, int]]:
    """The page's rows and the counts per diff type in one Spark job over one aggregation of the changes: the
    counts ride on every differing row (sums over all of them, change-sized), then Spark sorts and cuts the
    page. A page past the last row carries no counts: they are counted then (a second job)."""
    totals = [f"sum(CAST({kind} = '{k}' AS BIGINT)) OVER () AS _bs_n_{k}" for k in DIFF_TYPES]
    found = (frame.selectExpr("*", *totals).select(*shown, *[f"_bs_n_{k}" for k in DIFF_TYPES])
             .orderBy(*order).offset(offset).limit(size).collect())
    if not found:
        return [], rows.counts()
    return found, {k: found[0][f"_bs_n_{k}"] for k in DIFF_TYPES}


def csv_lines(lakehouse: Lakehouse, from_ref: str, to_ref: str, mode: str, table: str) -> Iterator[str]:
    """The table's whole diff as CSV (the diff type, the columns, the changed columns), streamed from Spark a
    partition at a time."""
    rows = _rows(lakehouse, from_ref, to_ref, mode, table)
    if rows is None:
        return iter(())
    relation = rows.relation()
    columns = relation.columns

    def lines() -> Iterator[str]:
        buffer = io.StringIO()
        out = csv.writer(buffer)
        out.writerow(columns)
        for row in relation.toLocalIterator():
            out.writerow(["" if row[c] is None else cell_text(row[c]) for c in columns])
            if buffer.tell() > 65536:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
        yield buffer.getvalue()

    return lines()


def _rows(lakehouse: Lakehouse, from_ref: str, to_ref: str, mode: str, table: str) -> RowDifference | None:
    found = _table(lakehouse, from_ref, to_ref, mode, table)
    return found.rows if found is not None else None


def _table(lakehouse: Lakehouse, from_ref: str, to_ref: str, mode: str, table: str) -> TableDiff | None:
    diff = branch_diff(lakehouse, from_ref, to_ref, tables=[table], mode=mode, preview=False)
    return diff.tables[0] if diff.tables else None


def _keyed_cells(row, columns: list[str]) -> tuple[str, list[Cell]]:
    old, new, changed = row[OLD], row[NEW], set(row[CHANGED] or ())
    if new is None:
        return REMOVED, [Cell(cell_text(old[c])) for c in columns]
    if old is None:
        return ADDED, [Cell(cell_text(new[c])) for c in columns]
    return MODIFIED, [Cell(cell_text(new[c]), True, cell_text(old[c])) if c in changed else Cell(cell_text(new[c]))
                      for c in columns]
