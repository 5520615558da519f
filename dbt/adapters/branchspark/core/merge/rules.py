"""The conflict matrices of SPEC sections 3.2 and 3.3, as data.

`TABLE_MATRIX[src_op][dest_op]` is a `Rule`: OK, CONFLICT, or a rule (A1..A6)
that needs a closer look at the segments or the schema. Primary-key tables
use the DDL cells only: their DML is decided per key (section 3.4). Every rule
a conflict report can name is a `Rule`; its text is `RULE_TEXT`.
"""
from __future__ import annotations

from enum import StrEnum

from .sides import ObjectChanges
from ..operations import Op


class Rule(StrEnum):
    """A cell of the matrices, or the rule a conflict report names (the value is how reports print it)."""

    OK = "ok"
    CONFLICT = "CONFLICT"
    PROPS = "props"  # CONFLICT if the same property changed, else ok
    PARTITION = "partition"  # CONFLICT if the partitioning changed differently, else ok
    A1 = "A1"
    A2 = "A2"
    A3 = "A3"
    A4 = "A4"
    A5 = "A5"
    A6 = "A6"
    A6_TYPES = "A6.1"
    A6_NOT_NULL = "A6.2"
    A6_NO_COLUMNS = "A6.3"  # not in SPEC, which is silent: drops on both sides together leave no column
    SAME_NAME = "3.1"
    VIEW = "view"
    KEY_INSERT = "3.4 insert"
    KEY_UPDATE_DELETE = "3.4 update/delete"
    KEY_CELLS = "3.4 cells"
    DRIVER = "driver"
    MARKED = "marked"


# Rules decided row by row (a paused merge lists their rows in the conflict relation).
ROW_RULES = (Rule.KEY_INSERT, Rule.KEY_UPDATE_DELETE, Rule.KEY_CELLS, Rule.A1, Rule.A3, Rule.DRIVER, Rule.MARKED)

DATABASE_OPS = (Op.DROP, Op.MODIFY_NAME, Op.SET_PROPERTIES, Op.UNSET_PROPERTIES)
TABLE_OPS = (Op.DROP, Op.ALTER_NAME, Op.ALTER_PROPERTIES, Op.ALTER_COLUMN, Op.ALTER_PARTITION,
             Op.INSERT, Op.DELETE, Op.UPDATE, Op.OVERWRITE, Op.COMPACTION)
TABLE_DML = (Op.INSERT, Op.DELETE, Op.UPDATE, Op.OVERWRITE, Op.COMPACTION)


def _rows(header: tuple[str, ...], text: str) -> dict[str, dict[str, Rule]]:
    matrix = {}
    for line in text.strip().splitlines():
        cells = [c.strip() for c in line.split("|")]
        matrix[cells[0]] = {op: Rule(cell) for op, cell in zip(header, cells[1:])}
    return matrix


# src op (row) against dest op (column); "props" is "CONFLICT if the same property, else ok".
DATABASE_MATRIX = _rows(DATABASE_OPS, """
drop             | ok       | ok | ok | ok
modify name      | CONFLICT | ok | ok | ok
set properties   | CONFLICT | ok | ok | ok
unset properties | CONFLICT | ok | ok | props
""")

# "props" and "partition" fill the cells the source leaves blank (see SPEC 3.3).
TABLE_MATRIX = _rows(TABLE_OPS, """
drop             | ok       | ok | ok    | ok | ok        | ok       | ok | ok | ok | ok
alter name       | CONFLICT | ok | ok    | ok | ok        | ok       | ok | ok | ok | ok
alter properties | CONFLICT | ok | props | ok | ok        | ok       | ok | ok | ok | ok
alter column     | CONFLICT | ok | ok    | A6 | ok        | ok       | ok | ok | ok | ok
alter partition  | CONFLICT | ok | ok    | ok | partition | ok       | ok | ok | ok | ok
insert           | CONFLICT | ok | ok    | ok | ok        | ok       | ok | ok | ok | ok
delete           | CONFLICT | ok | ok    | ok | ok        | CONFLICT | A2 | ok | A5 | ok
update           | CONFLICT | ok | ok    | ok | ok        | CONFLICT | A1 | A3 | A4 | ok
overwrite        | CONFLICT | ok | ok    | ok | ok        | ok       | ok | ok | ok | ok
compaction       | CONFLICT | ok | ok    | ok | ok        | ok       | ok | ok | ok | ok
""")

RULE_TEXT = {
    Rule.CONFLICT: "the matrix forbids this pair",
    Rule.PROPS: "the same property changed differently on both sides",
    Rule.PARTITION: "the partitioning changed differently on both sides",
    Rule.A1: "update on src and delete on dest touched the same segment",
    Rule.A3: "updates on both sides touched the same segment",
    Rule.A6_TYPES: "column types changed incompatibly (a type may only widen)",
    Rule.A6_NOT_NULL: "dest added a NOT NULL column without a default and src wrote rows without it",
    Rule.A6: "column changed incompatibly on both sides",
    Rule.A6_NO_COLUMNS: "the columns dropped on both sides together leave the table none",
    Rule.SAME_NAME: "an object of this name with another id exists on dest",
    Rule.VIEW: "both sides changed the view's SQL differently",
    Rule.KEY_INSERT: "both sides inserted this key with different values",
    Rule.KEY_UPDATE_DELETE: "one side updated this key, the other deleted it",
    Rule.KEY_CELLS: "both sides changed the same column of this key differently",
    Rule.DRIVER: "the table's merge driver reported a conflict",
    Rule.MARKED: "marked as a conflict in the conflict relation (CONFLICT())",
}


def matrix_ops(ops: set[str]) -> set[str]:
    """The matrix's names for recorded operation kinds ('create' and view changes are not in it)."""
    named = set(ops) & set(TABLE_OPS) | set(ops) & set(DATABASE_OPS)
    if Op.ALTER_PRIMARY_KEY in ops:
        named.add(Op.ALTER_PROPERTIES)
    return named


def database_cell(src_op: str, dest_op: str, base, src, dest) -> tuple[Rule | None, str]:
    """(the rule that stands, what it involves) for one pair of database operations; (None, "") when ok."""
    cell = DATABASE_MATRIX[src_op][dest_op]
    if cell == Rule.CONFLICT:
        return Rule.CONFLICT, ""
    if cell == Rule.PROPS and src is not None and dest is not None:
        # Both unset a property: the same one on both sides conflicts.
        both = (set(base.properties) - set(src.properties)) & (set(base.properties) - set(dest.properties))
        return (Rule.PROPS, ", ".join(sorted(both))) if both else (None, "")
    return None, ""


def table_cell(src_op: str, dest_op: str, base, src, dest, src_changes: ObjectChanges,
               dest_changes: ObjectChanges) -> tuple[Rule | None, str]:
    """(the rule that stands, what it involves) for one pair of table operations; (None, "") when ok. A2, A4
    and A5 never conflict (the row merge applies them: merge/keyless.py); A6 is the schema merge's (schema.py)."""
    cell = TABLE_MATRIX[src_op][dest_op]
    if cell == Rule.CONFLICT:
        return Rule.CONFLICT, ""
    if cell == Rule.PROPS:
        keys = _changed_differently(base.properties, src.properties, dest.properties)
        if base.primary_key != src.primary_key != dest.primary_key != base.primary_key:
            keys.append("primary key")
        return (Rule.PROPS, ", ".join(keys)) if keys else (None, "")
    if cell == Rule.PARTITION:
        differs = src.partition_by != dest.partition_by
        return (Rule.PARTITION, f"{list(src.partition_by)} vs {list(dest.partition_by)}") if differs else (None, "")
    if cell in (Rule.A1, Rule.A3):
        dest_kind = Op.DELETE if cell == Rule.A1 else Op.UPDATE
        shared = src_changes.touched.get(Op.UPDATE, set()) & dest_changes.touched.get(dest_kind, set())
        return (cell, "segments " + ", ".join(sorted(shared))) if shared else (None, "")
    return None, ""


def _changed_differently(base: dict, src: dict, dest: dict) -> list[str]:
    return sorted(k for k in set(src) | set(dest) | set(base)
                  if src.get(k) != base.get(k) and dest.get(k) != base.get(k) and src.get(k) != dest.get(k))
