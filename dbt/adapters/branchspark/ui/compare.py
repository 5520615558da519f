"""What the compare pages show, through the core's row-level diff (core/diff): per table the counts and
schema changes, then one table's rows a page at a time. Counting and paging run in Spark over the diff, whose cost grows with the changes: only the
counts and one page of rows come to the driver; the CSV streams the diff a partition at a time."""
from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass, field

from pyspark.sql import functions as F

from ..core import errors
from ..core.diff import THREE_DOT, TWO_DOT, branch_diff
from ..core.diff.report import DiffReport, report
from ..core.diff.rows import ADDED, MODIFIED, NEW, OLD, REMOVED, CHANGED, RowDifference
from ..core.lakehouse import Lakehouse
from .cells import cell_text

PAGE_SIZE = 50


def parse_spec(spec: str) -> tuple[str, str, str]:
    """`from...to` (three-dot: what `to` changed since its merge base with `from`) or `from..to` (two-dot)."""
    for dots, mode in (("...", THREE_DOT), ("..", TWO_DOT)):
        if dots in spec:
            left, _, right = spec.partition(dots)
            if left and right:
                return left, right, mode
    raise errors.InvalidArgument(f"'{spec}' is not a comparison: write FROM...TO (what TO changed since it left "
                                 f"FROM) or FROM..TO (the two versions as they are)")


def summary(lakehouse: Lakehouse, from_ref: str, to_ref: str, mode: str) -> DiffReport:
    """Per table the counts and schema changes, in one Spark job; no rows. The conflicts a merge would hit are
    the merge preview's page (it plans the merge, which costs more than the counts)."""
    return report(branch_diff(lakehouse, from_ref, to_ref, mode=mode, preview=False), limit=0)


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
    rows: list[tuple[str, list[Cell]]] = field(default_factory=list)  # (diff type, cells)
    page: int = 0
    size: int = PAGE_SIZE

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.size))


def table_page(lakehouse: Lakehouse, from_ref: str, to_ref: str, mode: str, table: str, page: int = 0,
               size: int = PAGE_SIZE) -> TablePage:
    """One page of `table`'s diff rows, ordered by key (keyless: by value), sorted and cut in Spark."""
    rows = _rows(lakehouse, from_ref, to_ref, mode, table)
    if rows is None:
        return TablePage(table.lower(), [], (), {ADDED: 0, REMOVED: 0, MODIFIED: 0})
    page = max(0, int(page))
    found = TablePage(table.lower(), rows.columns, rows.primary_key, rows.counts(), page=page, size=size)
    if rows.primary_key:
        frame = rows.differing.select(*[F.col(f"`{k}`") for k in rows.primary_key], OLD, NEW, CHANGED)
        for row in frame.orderBy(*[F.col(f"`{k}`") for k in rows.primary_key]).offset(page * size).limit(size) \
                .collect():
            found.rows.append(_keyed_cells(row, rows.columns))
    else:
        relation = rows.relation()
        order = [F.col(f"`{c}`") for c in rows.columns] + [F.col(rows.type_column)]
        for row in relation.orderBy(*order).offset(page * size).limit(size).collect():
            found.rows.append((row[rows.type_column], [Cell(cell_text(row[c])) for c in rows.columns]))
    return found


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
    diff = branch_diff(lakehouse, from_ref, to_ref, tables=[table], mode=mode, preview=False)
    return diff.tables[0].rows if diff.tables else None


def _keyed_cells(row, columns: list[str]) -> tuple[str, list[Cell]]:
    old, new, changed = row[OLD], row[NEW], set(row[CHANGED] or ())
    if new is None:
        return REMOVED, [Cell(cell_text(old[c])) for c in columns]
    if old is None:
        return ADDED, [Cell(cell_text(new[c])) for c in columns]
    return MODIFIED, [Cell(cell_text(new[c]), True, cell_text(old[c])) if c in changed else Cell(cell_text(new[c]))
                      for c in columns]
