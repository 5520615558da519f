"""`branch_diff(from, to)`: which tables differ between two versions of the catalog, and how.

    d = branch_diff(lh, "main", "dev")                 # three-dot: what dev changed since it left main
    d = branch_diff(lh, "main", "dev", mode="two_dot")  # the two heads as they are
    for t in d.tables: t.name, t.status, t.schema_changes, t.rows.added, t.rows.removed, t.rows.modified

Versions are anything `Lakehouse.resolve` takes: branch names, commit ids (or unique prefixes),
`branch@time`. `three_dot` compares `to` with its merge base with `from` (what a merge of `to` into `from`
would bring, like `git diff from...to`); `two_dot` compares `from` with `to` directly. Without a mode:
three-dot when both versions are branch names, else two-dot.

Tables are matched by id, so a rename is a rename, not a drop and an add. A table whose two versions
share every segment and tombstone is skipped without reading data (its rows are the same files); only
its schema changes, if any, are listed. For a three-dot diff whose `from` is a branch, `preview` holds
the conflicts a merge of `to` into `from` would stop at (diff/preview.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import DataFrame

from .. import errors
from ..catalog.commits import CommitInfo
from ..catalog.namespace import Namespace
from ..catalog.schema import Schema
from ..catalog.state import TableState
from ..context import WriteContext
from ..merge.base import merge_base
from ..operations import ObjectKind
from ..storage.reader import STORED_IDENTITY_KINDS
from .preview import MergePreview, preview_merge
from .rows import RowDifference, row_difference
from .schema import SchemaChange, schema_changes


TWO_DOT, THREE_DOT = "two_dot", "three_dot"
MODES = (TWO_DOT, THREE_DOT)
TABLE_ADDED, TABLE_DROPPED, TABLE_CHANGED = "added", "dropped", "changed"


@dataclass
class TableDiff:
    name: str  # the table's name at `to` (at `from` when dropped)
    status: str  # added | dropped | changed
    schema_changes: list[SchemaChange]
    rows: RowDifference | None  # None: both versions hold the same rows (same files), nothing read
    renamed_from: str | None = None
    primary_key_before: tuple[str, ...] | None = None  # set when the primary key changed
    before: TableState | None = None  # the two versions compared (None where the table is absent)
    after: TableState | None = None
    whole: bool = False  # every row compared, not only the unshared ones (core/diff/counted.py then says None)

    def relation(self) -> DataFrame | None:
        return None if self.rows is None else self.rows.relation()

    def counts(self) -> dict[str, int]:
        return self.rows.counts() if self.rows is not None else {"added": 0, "removed": 0, "modified": 0}


@dataclass
class Diff:
    from_ref: str
    to_ref: str
    mode: str
    from_commit: CommitInfo  # two-dot: `from`; three-dot: the merge base
    to_commit: CommitInfo
    requested_from: CommitInfo  # the commit `from` names
    tables: list[TableDiff] = field(default_factory=list)  # only tables that differ, by name
    unchanged: int = 0  # tables compared and found equal (most without reading anything)
    preview: MergePreview | None = None

    def table(self, name: str) -> TableDiff | None:
        return next((t for t in self.tables if t.name == name.lower()), None)


def branch_diff(lakehouse: WriteContext, from_, to, tables=None, mode: str | None = None,
                preview: bool = True) -> Diff:
    """The tables that differ from `from_` to `to` (see the module doc). `tables`: names to restrict to."""
    if mode is not None and mode not in MODES:
        raise errors.InvalidArgument(f"unknown diff mode '{mode}': use two_dot or three_dot")
    requested_from, to_commit = lakehouse.resolve(_ref(from_, "from")), lakehouse.resolve(_ref(to, "to"))
    store = lakehouse.store
    if mode is None:
        mode = THREE_DOT if all(store.find_branch(str(r)) for r in (from_, to)) else TWO_DOT
    from_commit = requested_from
    if mode == THREE_DOT:
        base = merge_base(store, requested_from.id, to_commit.id)
        if base is None:
            raise errors.InvalidArgument(f"'{from_}' and '{to}' share no commit, so there is no merge base: "
                                         f"compare them with mode two_dot")
        from_commit = store.get_commit(base)
    diff = Diff(str(from_), str(to), mode, from_commit, to_commit, requested_from)
    before = Namespace(store, store.root(from_commit.id), str(from_))
    after = Namespace(store, store.root(to_commit.id), str(to))
    wanted = _wanted_ids(before, after, tables)
    for table_id in sorted(set(before.tables) | set(after.tables)):
        if wanted is not None and table_id not in wanted:
            continue
        old = before.table(table_id) if table_id in before.tables else None
        new = after.table(table_id) if table_id in after.tables else None
        if any(s is not None and s.kind != ObjectKind.TABLE for s in (old, new)):
            continue  # views hold no rows of their own
        found = _table_diff(lakehouse, to_commit, before, after, old, new)
        if found is None:
            diff.unchanged += 1
        else:
            diff.tables.append(found)
    diff.tables.sort(key=lambda t: t.name)
    if preview and mode == THREE_DOT and store.find_branch(str(from_)) is not None:
        diff.preview = preview_merge(lakehouse, str(to), str(from_), wanted_names={t.name for t in diff.tables}
                                     if tables else None)
    return diff


def _ref(value, what: str) -> str:
    if value is None or str(value).strip() == "":
        raise errors.InvalidArgument(f"branch_diff needs a {what} version: a branch, a commit id or branch@time")
    return str(value).strip()


def _wanted_ids(before: Namespace, after: Namespace, tables) -> set[str] | None:
    if not tables:
        return None
    names = [tables] if isinstance(tables, str) else list(tables)
    ids = set()
    for name in names:
        found = [i for i in (ns.table_id(str(name), required=False) for ns in (after, before)) if i is not None]
        if not found:
            raise errors.InvalidArgument(f"table '{name}' is in neither version: name it as database.table")
        ids.add(found[0])
    return ids


def _table_diff(lakehouse: WriteContext, at: CommitInfo, before: Namespace, after: Namespace,
                old: TableState | None, new: TableState | None) -> TableDiff | None:
    store = lakehouse.store
    name = after.full_name(new.id) if new is not None else before.full_name(old.id)
    old_name = before.full_name(old.id) if old is not None else None
    if old is not None and new is not None and old.version_id == new.version_id and old_name == name:
        return None
    schemas = store.schemas([s.schema_id for s in (old, new) if s is not None])
    changes = schema_changes(schemas.get(old.schema_id) if old else None, schemas.get(new.schema_id) if new else None)
    same_files = (old is not None and new is not None and set(old.segments) == set(new.segments)
                  and set(old.tombstones) == set(new.tombstones))
    whole = old is not None and new is not None and _shared_rows_read_differently(
        store, old, new, schemas[old.schema_id], schemas[new.schema_id])
    same_rows = same_files and not whole
    key_changed = old is not None and new is not None and tuple(old.primary_key) != tuple(new.primary_key)
    renamed = old_name if old_name is not None and new is not None and old_name != name else None
    if same_rows and not changes and not renamed and not key_changed:
        return None  # another version of the same rows and columns (properties, partitioning)
    rows = None
    if not same_rows:
        primary_key = (new or old).primary_key if not key_changed else ()
        rows = row_difference(lakehouse.spark, lakehouse.warehouse, store, at, old, new, tuple(primary_key), whole)
    status = TABLE_ADDED if old is None else TABLE_DROPPED if new is None else TABLE_CHANGED
    return TableDiff(name.lower(), status, changes, rows, renamed.lower() if renamed else None,
                     tuple(old.primary_key) if key_changed else None, old, new, whole)


def _shared_rows_read_differently(store, old: TableState, new: TableState, old_schema: Schema,
                                  new_schema: Schema) -> bool:
    """Whether a row both versions hold can read differently in them: a column of `to` that `from` does not
    know (it dropped it) or gives another default, while a file holding such a row holds that column (or,
    for the default, lacks it). Then every row is compared, not only the unshared ones (metadata only).
    The rows both hold are those of shared files, and, when a compaction moved rows (either side), also those
    of the unshared files, whose rows pair with their moved copies by identity (changes/delta.py)."""
    unknown = [c for c in new_schema.columns if old_schema.source_of(c) is None]
    redefaulted = [c for c in new_schema.columns
                   if (source := old_schema.source_of(c)) is not None and source.default != c.default]
    if not unknown and not redefaulted:
        return False
    shared = set(old.segments) & set(new.segments)
    unshared = (set(old.segments) | set(new.segments)) - shared
    infos = store.segments(shared | unshared)
    moved = any(s.kind in STORED_IDENTITY_KINDS for sid, s in infos.items() if sid in unshared)
    held = infos.values() if moved else [infos[s] for s in shared if s in infos]
    written = store.schemas({s.schema_id for s in held})
    return any(w.source_of(c) is not None for w in written.values() for c in unknown) or \
        any(w.source_of(c) is None for w in written.values() for c in redefaulted)
