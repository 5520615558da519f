"""What a commit records (SPEC 2): the kind of each object it changed and the operation, by the names the
catalog stores and the merge matrices (merge/rules.py) are indexed by.

Both are StrEnums: a member equals, hashes and prints as its text, so an operation read back from the
catalog (plain text) compares equal to its member.
"""
from __future__ import annotations

from enum import StrEnum


class ObjectKind(StrEnum):
    DATABASE = "database"
    TABLE = "table"
    VIEW = "view"


class Op(StrEnum):
    """An operation of SPEC 2 (databases: create, drop, modify name, set/unset properties; tables and views:
    the rest)."""

    CREATE = "create"
    DROP = "drop"
    MODIFY_NAME = "modify name"  # a database renamed
    SET_PROPERTIES = "set properties"
    UNSET_PROPERTIES = "unset properties"
    ALTER_NAME = "alter name"  # a table or view renamed
    ALTER_PROPERTIES = "alter properties"
    ALTER_COLUMN = "alter column"
    ALTER_PARTITION = "alter partition"
    ALTER_VIEW = "alter view"
    INSERT = "insert"
    DELETE = "delete"
    UPDATE = "update"
    OVERWRITE = "overwrite"
    COMPACTION = "compaction"
    # Not recorded: what merge/sides.py notes for an `alter properties` that changed the primary key.
    ALTER_PRIMARY_KEY = "alter primary key"


# The DML that changes a table's rows (compaction rewrites them, keeping every row).
ROW_OPS = frozenset({Op.INSERT, Op.DELETE, Op.UPDATE, Op.OVERWRITE})
