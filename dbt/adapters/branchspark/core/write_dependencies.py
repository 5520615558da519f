"""What a transaction's result depends on, and whether the commits that landed since it began touched it.

A transaction records every object it looks up (a database or table by name, a
table's state, the list of a database's tables), every table whose rows it reads,
and the DataFrames it writes (which may read tables through their files). When its
branch head moved, `overlap` compares the catalog root it began on with the
new head's root: the objects whose entry differs are what landed meanwhile. If none
of them is something the transaction depended on, its result is the same on the new
head; an append of given rows to a keyless table depends on none of that table's rows
(a "blind append"), so other writes to that table do not change it either. Any other
overlap means it must run again or fail (commit_replay.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import DataFrame

from .catalog.commits import OpInfo
from .catalog.namespace import Namespace, split_name
from .catalog.state import Root, TableState
from .operations import ObjectKind, Op
from .storage.reader import TableReader

BLIND_OPS = {Op.INSERT}  # operations whose result does not depend on the table's rows


@dataclass
class Dependencies:
    table_ids: set[str] = field(default_factory=set)  # tables whose state it read or wrote
    row_reads: set[str] = field(default_factory=set)  # tables whose rows it read
    table_names: set[str] = field(default_factory=set)  # 'db.table', lower case, looked up (found or not)
    database_ids: set[str] = field(default_factory=set)
    database_names: set[str] = field(default_factory=set)
    listed_databases: set[str] = field(default_factory=set)  # databases whose table list it read
    listed_everything: bool = False
    inputs: list[DataFrame] = field(default_factory=list)  # DataFrames it wrote: they may read tables


class TrackingNamespace(Namespace):
    """A transaction's Namespace that records each object it looks up."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.depends = Dependencies()

    def database_id(self, name: str, required: bool = True) -> str | None:
        self.depends.database_names.add(name.replace("`", "").lower())
        found = super().database_id(name, required)
        if found is not None:
            self.depends.database_ids.add(found)
        return found

    def database(self, database_id: str):
        self.depends.database_ids.add(database_id)
        return super().database(database_id)

    def table_id(self, full_name: str, required: bool = True) -> str | None:
        database, table = split_name(full_name)
        self.depends.table_names.add(f"{database}.{table}".lower())
        found = super().table_id(full_name, required)
        if found is not None:
            self.depends.table_ids.add(found)
        return found

    def table(self, table_id: str) -> TableState:
        self.depends.table_ids.add(table_id)
        return super().table(table_id)

    def table_ids(self, database_id: str | None = None) -> list[str]:
        if database_id is None:
            self.depends.listed_everything = True
        else:
            self.depends.listed_databases.add(database_id)
        return super().table_ids(database_id)


class TrackingReader(TableReader):
    """A transaction's TableReader that records each table whose rows it reads."""

    def __init__(self, spark, warehouse, ns: TrackingNamespace):
        super().__init__(spark, warehouse, ns)
        self.depends = ns.depends

    def read(self, table: TableState, with_row_ids: bool = False, key_range: tuple | None = None) -> DataFrame:
        self.depends.row_reads.add(table.id)
        return super().read(table, with_row_ids, key_range)


def _names(root: Root) -> tuple[dict[str, str], dict[str, str]]:
    """database name -> id and 'db.table' -> id, lower case, at one root."""
    databases = {name.lower(): database_id for database_id, (_, name) in root.databases.items()}
    tables = {f"{root.databases[database_id][1]}.{name}".lower(): table_id
              for table_id, (_, database_id, name) in root.tables.items() if database_id in root.databases}
    return databases, tables


def tables_read_by(frames: list[DataFrame], table_ids: set[str]) -> set[str]:
    """Which of `table_ids` the DataFrames read (their input files lie under those tables' directories).
    A DataFrame whose inputs cannot be listed is taken to read them all."""
    if not table_ids or not frames:
        return set()
    read = set()
    for frame in frames:
        try:
            files = frame.inputFiles()
        except Exception:  # noqa: BLE001 - unknown inputs: assume the worst, never a lost update
            return set(table_ids)
        read |= {t for t in table_ids if any(f"/tables/{t}/" in path for path in files)}
    return read


def changed_tables(before: Root, after: Root) -> set[str]:
    """Tables added, dropped or given a new version between two roots."""
    return {t for t in before.tables.keys() | after.tables.keys() if before.tables.get(t) != after.tables.get(t)}


def overlap(depends: Dependencies, operations: list[OpInfo], before: Root, after: Root) -> list[str]:
    """What the transaction (begun at `before`) depended on that differs at `after`, named for a message;
    [] when nothing does. A table it only appended given rows to, and read no rows of, does not count."""
    changed = changed_tables(before, after)
    changed_databases = {d for d in before.databases.keys() | after.databases.keys()
                         if before.databases.get(d) != after.databases.get(d)}
    if not changed and not changed_databases:
        return []
    blind = {op.object_id for op in operations if op.object_kind == ObjectKind.TABLE and op.op in BLIND_OPS}
    blind -= {op.object_id for op in operations if op.op not in BLIND_OPS} | depends.row_reads
    written = {op.object_id for op in operations if op.object_kind != ObjectKind.DATABASE}
    touched = ((depends.table_ids | written) - blind) & changed
    touched |= tables_read_by(depends.inputs, changed - touched)
    clashes = [_label(before, after, t) for t in sorted(touched)]
    (databases_before, tables_before), (databases_after, tables_after) = _names(before), _names(after)
    clashes += sorted(n for n in depends.table_names if tables_before.get(n) != tables_after.get(n))
    clashes += sorted(n for n in depends.database_names if databases_before.get(n) != databases_after.get(n))
    databases = depends.database_ids | {op.object_id for op in operations if op.object_kind == ObjectKind.DATABASE}
    clashes += sorted(_database_label(before, after, d) for d in databases & changed_databases)
    regrouped = _regrouped(before, after, changed)
    clashes += sorted(f"the tables of {_database_label(before, after, d)}"
                      for d in depends.listed_databases & regrouped)
    if depends.listed_everything and (regrouped or changed_databases):
        clashes.append("the list of tables")
    return list(dict.fromkeys(clashes))


def _regrouped(before: Root, after: Root, changed: set[str]) -> set[str]:
    """Databases whose list of tables differs: a table added, dropped, renamed or moved in or out."""
    databases = set()
    for table_id in changed:
        old, new = before.tables.get(table_id), after.tables.get(table_id)
        if old is None or new is None or old[1:] != new[1:]:
            databases |= {entry[1] for entry in (old, new) if entry is not None}
    return databases


def _database_label(before: Root, after: Root, database_id: str) -> str:
    for root in (after, before):
        if database_id in root.databases:
            return root.databases[database_id][1]
    return database_id


def _label(before: Root, after: Root, table_id: str) -> str:
    """A table's name for a message: as the newer root has it."""
    for root in (after, before):
        entry = root.tables.get(table_id)
        if entry is not None and entry[1] in root.databases:
            return f"{root.databases[entry[1]][1]}.{entry[2]}"
    return table_id
