"""Spark's errors as the one line a user should read.

Spark reports a missing or damaged data file as a page of JVM trace, and an
unresolved column with a hint that lists the reader's internal columns
(`_bs_pos`, `_bs_file`, ...). Here they become one line naming the file (and its
table, when the catalog is at hand) or the user's own columns.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from . import errors
from .storage import object_store

# tables/<table id>/data/_bs_seg=.../part-*.parquet, or a tombstone's file, inside any Spark path text
_DATA_FILE = re.compile(r"tables/([0-9a-f]{32})/(?:data|tombstones)/[^\s'\"`]*?\.parquet")
_MISSING = ("PATH_NOT_FOUND", "FILE_NOT_EXIST", "FileNotFoundException", "does not exist")
# `_bs_...` names in a "Did you mean one of the following? [...]" list
_INTERNAL_NAME = re.compile(r"(?:,\s*)?`?_bs_[A-Za-z0-9_]*`?(?:,\s*)?")
_SUGGESTIONS = re.compile(r"\[([^\[\]]*`_bs_[^\[\]]*)\]")


def first_line(exc: BaseException) -> str:
    """The first meaningful line of a Spark (or py4j) error, without internal column names."""
    lines = [line.strip(" :") for line in str(exc).strip().splitlines() if line.strip(" :")]
    if lines and lines[0].startswith("An error occurred while calling") and len(lines) > 1:
        lines = lines[1:]  # py4j's own line says nothing about the cause
    line = lines[0] if lines else type(exc).__name__
    line = re.sub(r"^(org\.apache\.spark\.|java\.lang\.)\S*?Exception:\s*", "", line)
    return _SUGGESTIONS.sub(lambda m: "[" + _without_internal(m.group(1)) + "]", line)


def _without_internal(names: str) -> str:
    kept = [n.strip() for n in names.split(",") if not n.strip().strip("`").startswith("_bs_")]
    return ", ".join(kept)


def unreadable_file(exc: BaseException, table_name: Callable[[str], str | None] | None = None
                    ) -> errors.DataFileUnreadable | None:
    """DataFileUnreadable when `exc` is Spark failing on a warehouse data file, else None."""
    text = str(exc)
    found = _DATA_FILE.search(text)
    if found is None:
        return None
    name = table_name(found.group(1)) if table_name else None
    table = f" of table {name}" if name else ""
    state = "is missing" if any(marker in text for marker in _MISSING) else "is damaged (not a readable Parquet file)"
    return errors.DataFileUnreadable(
        f"data file {found.group(0)}{table} {state}: nothing was changed; restore that file from a backup, or "
        f"restore the table to a commit that does not use it (`branchspark log`, restore_table)")


def storage_error(exc: BaseException, table_name: Callable[[str], str | None] | None = None
                  ) -> errors.BranchsparkError | None:
    """The one-line error of Spark failing on the warehouse's storage: a data file missing or damaged
    (DataFileUnreadable), or the store itself (StorageUnavailable); None when `exc` is neither."""
    return unreadable_file(exc, table_name) or object_store.storage_fault(str(exc))
