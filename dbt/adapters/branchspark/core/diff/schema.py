"""Schema differences of one table between two versions, matched by column id (renames keep their id).

Metadata only: no data is read. Each change is one line a reviewer can read: a column added, dropped,
renamed, or with another type (widened), nullability or default.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..catalog.schema import Column, Schema

ADDED, DROPPED, RENAMED, TYPE, NULLABILITY, DEFAULT = ("added", "dropped", "renamed", "type", "nullability",
                                                       "default")


@dataclass(frozen=True)
class SchemaChange:
    kind: str  # added | dropped | renamed | type | nullability | default
    column: str  # the column's name at `to` (at `from` when dropped)
    before: str | None = None  # old name, type, nullability or default
    after: str | None = None

    def text(self) -> str:
        if self.kind == ADDED:
            return f"added {self.column} {self.after}"
        if self.kind == DROPPED:
            return f"dropped {self.column} {self.before}"
        if self.kind == RENAMED:
            return f"renamed {self.before} to {self.column}"
        return f"{self.column}: {self.kind} {self.before} -> {self.after}"

    def as_dict(self) -> dict:
        return {"kind": self.kind, "column": self.column, "before": self.before, "after": self.after}


def schema_changes(before: Schema | None, after: Schema | None) -> list[SchemaChange]:
    """What changed from `before` to `after` (either None: the table did not exist), in `after`'s column order,
    dropped columns last."""
    if before is None or after is None:
        return []
    changes: list[SchemaChange] = []
    matched: set[int] = set()
    for column in after.columns:
        source = before.source_of(column)
        if source is None:
            changes.append(SchemaChange(ADDED, column.name, after=_described(column)))
            continue
        matched.add(source.id)
        if source.name != column.name:
            changes.append(SchemaChange(RENAMED, column.name, source.name, column.name))
        if source.type_json != column.type_json:
            changes.append(SchemaChange(TYPE, column.name, source.type, column.type))
        if source.nullable != column.nullable:
            changes.append(SchemaChange(NULLABILITY, column.name, _nullability(source), _nullability(column)))
        if source.default != column.default:
            changes.append(SchemaChange(DEFAULT, column.name, source.default, column.default))
    changes += [SchemaChange(DROPPED, c.name, before=_described(c)) for c in before.columns if c.id not in matched]
    return changes


def _nullability(column: Column) -> str:
    return "null" if column.nullable else "not null"


def _described(column: Column) -> str:
    text = column.type + ("" if column.nullable else " not null")
    return text + (f" default {column.default}" if column.default is not None else "")
