"""A diff as people read it: per table the counts (added, removed, modified), the schema changes, the
conflicts a merge would hit, and the first rows; as text, Markdown (a pull-request comment) or JSON.

Only counts (one Spark job for all tables) and `limit` rows per table come to the driver.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from decimal import Decimal
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import errors
from .plan import Diff
from .rows import DIFF_TYPE, DIFF_TYPES
from .schema import SchemaChange

FORMATS = ("text", "markdown", "json")
_TABLE_COLUMN = "_bs_diff_table"


@dataclass
class TableReport:
    table: str
    status: str  # added | dropped | changed
    added: int
    removed: int
    modified: int
    schema_changes: list[str]
    renamed_from: str | None
    conflicts: list[dict]  # Conflict.as_row() of the merge preview
    columns: list[str] = field(default_factory=list)  # of `rows`: DIFF_TYPE, the table's columns, CHANGED
    rows: list[list] = field(default_factory=list)  # the first `limit` rows of the diff relation


@dataclass
class DiffReport:
    from_ref: str
    to_ref: str
    mode: str
    from_commit: str  # the merge base, for three-dot
    to_commit: str
    tables: list[TableReport]
    unchanged: int
    merge: str | None  # the preview's status, None without one
    limit: int

    def title(self) -> str:
        dots = "..." if self.mode == "three_dot" else ".."
        return (f"diff {self.from_ref}{dots}{self.to_ref} ({self.mode}: {self.from_commit[:12]} to "
                f"{self.to_commit[:12]}): {len([t for t in self.tables if t.status != 'unchanged'])} table(s) "
                f"differ, {self.unchanged} unchanged")

    def summary_rows(self) -> list[list[str]]:
        return [[t.table, t.status, str(t.added), str(t.removed), str(t.modified),
                 "; ".join(([f"renamed from {t.renamed_from}"] if t.renamed_from else []) + t.schema_changes),
                 str(len(t.conflicts))] for t in self.tables]

    def render(self, fmt: str = "text") -> str:
        if fmt not in FORMATS:
            raise errors.InvalidArgument(f"unknown format '{fmt}': use text, markdown or json")
        if fmt == "json":
            return json.dumps(asdict(self), default=_json_value, indent=2)
        markdown = fmt == "markdown"
        lines = [f"### {self.title()}" if markdown else self.title()]
        if self.merge is not None:
            lines.append(f"merge of {self.to_ref} into {self.from_ref}: {self.merge}")
        if not self.tables:
            return "\n".join(lines)
        lines += ["", _grid(["table", "status", "added", "removed", "modified", "schema changes", "conflicts"],
                            self.summary_rows(), markdown)]
        for t in self.tables:
            if not t.rows and not t.conflicts:
                continue
            lines += ["", f"#### {t.table}" if markdown else f"{t.table}:"]
            for c in t.conflicts:
                lines.append(f"- conflict {c['rule']} ({c['src']} vs {c['dest']}): {c['involved'] or c['reason']}"
                             if markdown else f"  conflict {c['rule']} ({c['src']} vs {c['dest']}): "
                                              f"{c['involved'] or c['reason']}")
            if t.rows:
                shown = t.added + t.removed + t.modified
                lines.append(f"first {len(t.rows)} of {shown} row(s):")
                lines.append(_grid(t.columns, [[_cell(v) for v in row] for row in t.rows], markdown))
        return "\n".join(lines)


def report(diff: Diff, limit: int = 10) -> DiffReport:
    """Counts for every table in one Spark job, then the first `limit` rows of each table that has any."""
    limit = max(int(limit), 0)
    with_rows = [t for t in diff.tables if t.rows is not None]
    counts: dict[str, dict[str, int]] = {t.name: dict.fromkeys(DIFF_TYPES, 0) for t in diff.tables}
    if with_rows:
        parts = [t.relation().select(F.lit(t.name).alias(_TABLE_COLUMN), F.col(t.rows.type_column).alias(DIFF_TYPE))
                 for t in with_rows]
        for row in reduce(DataFrame.unionByName, parts).groupBy(_TABLE_COLUMN, DIFF_TYPE).count().collect():
            counts[row[_TABLE_COLUMN]][row[DIFF_TYPE]] = row["count"]
    preview = diff.preview
    tables = []
    for t in diff.tables:
        conflicts = [c.as_row() for c in preview.for_table(t.name)] if preview else []
        n = counts[t.name]
        if not any(n.values()) and not t.schema_changes and not t.renamed_from and not conflicts \
                and t.status == "changed":
            continue  # other files, the same rows (a compaction, a rebuild that reproduced every row)
        entry = TableReport(t.name, t.status, n["added"], n["removed"], n["modified"],
                            [c.text() for c in t.schema_changes], t.renamed_from, conflicts)
        if limit and any(n.values()):
            relation = t.relation()
            key = list(t.rows.primary_key) or t.rows.columns
            first = relation.orderBy(*[F.col(f"`{c}`") for c in key], t.rows.type_column).limit(limit).collect()
            entry.columns = relation.columns
            entry.rows = [list(r) for r in first]
        tables.append(entry)
    # conflicts of tables that do not differ on `to`'s side (dest changed them) still stop the merge
    listed = {t.table for t in tables}
    for name in sorted({c.object_name.lower() for c in preview.conflicts} - listed) if preview else []:
        tables.append(TableReport(name, "unchanged", 0, 0, 0, [], None,
                                  [c.as_row() for c in preview.for_table(name)]))
    return DiffReport(diff.from_ref, diff.to_ref, diff.mode, diff.from_commit.id, diff.to_commit.id, tables,
                      diff.unchanged + len(diff.tables) - len([t for t in tables if t.status != "unchanged"]),
                      preview.status if preview else None, limit)


def _grid(columns: list[str], rows: list[list[str]], markdown: bool) -> str:
    """A pipe table: GitHub Markdown, or the same aligned for a terminal."""
    cells = [[str(c) for c in columns]] + [[str(v).replace("|", "\\|") if markdown else str(v) for v in row]
                                           for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = ["| " + " | ".join(v.ljust(w) for v, w in zip(row, widths)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _cell(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return str(value)


def _json_value(value):
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, SchemaChange):
        return value.as_dict()
    return str(value)
