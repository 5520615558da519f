"""Three-way merge of one table's columns (SPEC 3.3 rule A6, and 3.5).

Columns are matched by id (or alias), never by position. A column both sides
added under one name is one column: it keeps dest's id and lists src's as an
alias, so segments written on either side read into it. Names never
conflict: src's rename is made at merge time. Types conflict only when
neither side's type widens to the other (A6.1); a NOT NULL column without a
default added on one side conflicts when the other side wrote rows (A6.2).
Drops on both sides that together leave no column conflict as a whole (A6.3):
a table needs a column, and a side may not drop its last one either.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..catalog.schema import Column, Schema
from ..catalog.schema import wider_of
from ..operations import Op
from .report import Conflict
from .rules import Rule


@dataclass
class SchemaMerge:
    columns: list[Column]
    conflicts: list[Conflict]
    settled: list[Conflict] = field(default_factory=list)  # conflicts `prefer` decided, still reported

    def differs_from(self, schema: Schema) -> bool:
        return tuple(self.columns) != schema.columns


def merge_schemas(table: str, base: Schema | None, src: Schema, dest: Schema, src_wrote_rows: bool,
                  dest_wrote_rows: bool, prefer: str | None = None) -> SchemaMerge:
    """`prefer` ("ours" keeps dest, "theirs" takes src) settles conflicts: they are listed as settled."""
    conflicts: list[Conflict] = []
    settled: list[Conflict] = []
    merged: list[Column] = []
    used_src_ids: set[int] = set()

    def conflict(column: str, rule: str, involved: str) -> bool:
        """Record a conflict, or a settled one when `prefer` decides it; True when dest's side wins."""
        (settled if prefer else conflicts).append(
            Conflict("column", f"{table}.{column}", Op.ALTER_COLUMN, Op.ALTER_COLUMN, rule, involved))
        return prefer is None or prefer == "ours"

    for mine in dest.columns:
        theirs = src.source_of(mine)
        original = base.source_of(mine) if base else None
        if theirs is None and original is not None:
            continue  # src dropped it
        if theirs is None:
            # Added on dest; src may have added the same name (then it is the same column).
            twin = src.column(mine.name)
            if twin is not None and (base is None or base.source_of(twin) is None):
                used_src_ids.add(twin.id)
                merged.append(_same_column_added_twice(mine, twin, conflict))
                continue
            if not mine.nullable and mine.default is None and src_wrote_rows \
                    and not conflict(mine.name, Rule.A6_NOT_NULL, f"NOT NULL {mine.name} without default"):
                continue
            merged.append(mine)
            continue
        used_src_ids.add(theirs.id)
        merged.append(_three_way_column(original, theirs, mine, conflict))

    for theirs in src.columns:
        if theirs.id in used_src_ids or (base and base.source_of(theirs)) or dest.source_of(theirs):
            continue
        if not theirs.nullable and theirs.default is None and dest_wrote_rows \
                and conflict(theirs.name, Rule.A6_NOT_NULL, f"NOT NULL {theirs.name} without default"):
            continue
        merged.append(theirs)

    if not merged:
        (settled if prefer else conflicts).append(Conflict(
            "table", table, Op.ALTER_COLUMN, Op.ALTER_COLUMN, Rule.A6_NO_COLUMNS,
            f"src kept {_names(src)}, dest kept {_names(dest)}"))
    names: dict[str, Column] = {}
    for column in merged:
        clash = names.get(column.name.lower())
        if clash is not None:
            conflicts.append(Conflict("column", f"{table}.{column.name}", Op.ALTER_COLUMN, Op.ALTER_COLUMN, Rule.A6,
                                      f"two different columns would be named {column.name}"))
        names[column.name.lower()] = column
    return SchemaMerge(merged, conflicts, settled)


def _names(schema: Schema) -> str:
    return ", ".join(c.name for c in schema.columns)


def _three_way_column(base: Column | None, src: Column, dest: Column, conflict) -> Column:
    def pick(attribute: str):
        ours, theirs = getattr(dest, attribute), getattr(src, attribute)
        if ours == theirs:
            return ours
        if base is None:
            return theirs
        original = getattr(base, attribute)
        if ours == original:
            return theirs
        return ours if theirs == original else theirs  # both changed: src's change is replayed last

    result = replace(dest, name=pick("name"), nullable=pick("nullable"), default=pick("default"),
                     aliases=tuple(sorted(set(dest.aliases) | set(src.aliases) | ({src.id} - {dest.id}))))
    if src.type_json != dest.type_json:
        original = base.type_json if base else None
        src_altered = base is None or src.type_json != original or any(
            getattr(src, a) != getattr(base, a) for a in ("name", "nullable", "default"))
        if dest.type_json == original:
            result = replace(result, type_json=src.type_json)
        elif src_altered:
            # Both altered the column and src's final schema becomes dest's (A6.1): src's type must be the
            # wider one, else the merge would narrow dest's column.
            wider = wider_of(src.data_type, dest.data_type)
            src_wider = wider is not None and wider.json() == src.type_json
            if src_wider or not conflict(dest.name, Rule.A6_TYPES, f"{src.type} on src, {dest.type} on dest"):
                result = replace(result, type_json=src.type_json)
    return result


def _same_column_added_twice(dest: Column, src: Column, conflict) -> Column:
    aliases = tuple(sorted(set(dest.aliases) | set(src.aliases) | {src.id}))
    result = replace(dest, aliases=aliases)
    if src.type_json != dest.type_json:
        result = _wider_type(result, src, dest, conflict, f"added as {src.type} on src, {dest.type} on dest")
    return result


def _wider_type(result: Column, src: Column, dest: Column, conflict, involved: str) -> Column:
    """Both sides typed the column: the type both widen to, else an A6.1 conflict (or the preferred side)."""
    wider = wider_of(src.data_type, dest.data_type)
    if wider is not None:
        return replace(result, type_json=wider.json())
    if not conflict(dest.name, Rule.A6_TYPES, involved):
        return replace(result, type_json=src.type_json)
    return result
