"""Spark's errors as the one line a user should read.

Spark reports a missing or damaged data file as a page of JVM trace, and an
unresolved column with a hint that lists the reader's internal columns
(`_bs_pos`, `_bs_file`, ...). Here they become one line naming the file (and its
table, when the catalog is at hand) or the user's own columns. That holds also
for the actions a caller runs on a DataFrame the core handed out
(`lh.read(...).count()`): `translate_action_errors`.
"""
from __future__ import annotations

import re
import weakref
from collections.abc import Callable

import py4j.java_gateway
from py4j.protocol import Py4JJavaError

from . import errors
from .storage import object_store

# tables/<table id>/data/_bs_seg=.../part-*.parquet, or a tombstone's file, inside any Spark path text
_DATA_FILE = re.compile(r"tables/([0-9a-f]{32})/(?:data|tombstones)/[^\s'\"`]*?\.parquet")
_MISSING = ("PATH_NOT_FOUND", "FILE_NOT_EXIST", "FileNotFoundException", "does not exist")
# what Spark says of a file that is there but is no Parquet file it can read (its footer or pages); a file it
# read but whose columns do not fit the schema (FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH) is not damaged
_DAMAGED = ("FAILED_READ_FILE.NO_HINT", "is not a Parquet file", "magic number", "CORRUPT", "ParquetDecodingException",
            "Can not read value", "could not read footer", "Could not read footer")
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
    if isinstance(exc, errors.DataFileUnreadable):  # already the one line (an action translated it)
        return exc
    text = str(exc)
    found = _DATA_FILE.search(text)
    if found is None:
        return None
    if any(marker in text for marker in _MISSING):
        state = "is missing"
    elif any(marker in text for marker in _DAMAGED):
        state = "is damaged (not a readable Parquet file)"
    else:  # Spark failed on the file for another reason (its schema, say): not the file's fault
        return None
    name = table_name(found.group(1)) if table_name else None
    table = f" of table {name}" if name else ""
    return errors.DataFileUnreadable(
        f"data file {found.group(0)}{table} {state}: nothing was changed; restore that file from a backup, or "
        f"restore the table to a commit that does not use it (`branchspark log`, restore_table)")


def storage_error(exc: BaseException, table_name: Callable[[str], str | None] | None = None
                  ) -> errors.BranchsparkError | None:
    """The one-line error of Spark failing on the warehouse's storage: a data file missing or damaged
    (DataFileUnreadable), or the store itself (StorageUnavailable); None when `exc` is neither."""
    if isinstance(exc, errors.StorageUnavailable):
        return exc
    return unreadable_file(exc, table_name) or object_store.storage_fault(str(exc))


# The catalogs whose table names an action's error may name (Lakehouse registers its store): weakly held.
_CATALOGS: weakref.WeakSet = weakref.WeakSet()


def _table_name(table_id: str) -> str | None:
    for catalog in list(_CATALOGS):
        try:
            name = catalog.table_name(table_id)
        except Exception:  # a closed or unreachable catalog: the line names the file without its table
            continue
        if name:
            return name
    return None


def translate_action_errors(catalog=None) -> None:
    """From now on, an action of this process's in-process sessions (count, collect, write, ...) that fails on a
    warehouse data file raises DataFileUnreadable, one line naming the file and its table (of `catalog` or of
    another registered one), instead of a Py4J error holding the JVM's stack. Idempotent.

    pyspark converts the JVM's errors on the same hook: every Java call's result passes py4j's
    `get_return_value`, which pyspark wraps (converting analysis and runtime errors; a failed job stays a raw
    Py4J error). This wraps pyspark's wrapper, once; a new SparkSession puts pyspark's back, so the session
    factory and Lakehouse call this again (spark_session.py, lakehouse.py)."""
    if catalog is not None:
        _CATALOGS.add(catalog)
    current = py4j.java_gateway.get_return_value
    if getattr(current, "_branchspark", False):
        return

    def get_return_value(*args, **kwargs):
        try:
            return current(*args, **kwargs)
        except Py4JJavaError as exc:
            unreadable = unreadable_file(exc, _table_name)
            if unreadable is None:
                raise
            raise unreadable from None

    get_return_value._branchspark = True
    py4j.java_gateway.get_return_value = get_return_value
