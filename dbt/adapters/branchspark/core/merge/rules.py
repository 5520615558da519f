"""The conflict matrices of SPEC sections 3.2 and 3.3, as data.

`TABLE_MATRIX[src_op][dest_op]` is "ok", "CONFLICT", or a rule (A1..A6) that
needs a closer look at the segments or the schema. Primary-key tables use
the DDL cells only: their DML is decided per key (section 3.4).
"""
from __future__ import annotations

DATABASE_OPS = ("drop", "modify name", "set properties", "unset properties")
TABLE_OPS = ("drop", "alter name", "alter properties", "alter column", "alter partition",
             "insert", "delete", "update", "overwrite", "compaction")
TABLE_DML = ("insert", "delete", "update", "overwrite", "compaction")


def _rows(header: tuple[str, ...], text: str) -> dict[str, dict[str, str]]:
    matrix = {}
    for line in text.strip().splitlines():
        cells = [c.strip() for c in line.split("|")]
        matrix[cells[0]] = dict(zip(header, cells[1:]))
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
    "CONFLICT": "the matrix forbids this pair",
    "props": "the same property changed differently on both sides",
    "partition": "the partitioning changed differently on both sides",
    "A1": "update on src and delete on dest touched the same segment",
    "A3": "updates on both sides touched the same segment",
    "A6.1": "column types changed incompatibly (a type may only widen)",
    "A6.2": "dest added a NOT NULL column without a default and src wrote rows without it",
    "A6": "column changed incompatibly on both sides",
    "3.1": "an object of this name with another id exists on dest",
    "view": "both sides changed the view's SQL differently",
    "3.4 insert": "both sides inserted this key with different values",
    "3.4 update/delete": "one side updated this key, the other deleted it",
    "3.4 cells": "both sides changed the same column of this key differently",
    "driver": "the table's merge driver reported a conflict",
    "marked": "marked as a conflict in the conflict relation (CONFLICT())",
}


def matrix_ops(ops: set[str]) -> set[str]:
    """The matrix's names for recorded operation kinds ('create' and view changes are not in it)."""
    named = set(ops) & set(TABLE_OPS) | set(ops) & set(DATABASE_OPS)
    if "alter primary key" in ops:
        named.add("alter properties")
    return named
