"""Names to objects at one commit, plus a transaction's staged changes on top.

A snapshot uses it read-only; a transaction stages new versions in it and
turns it into the next commit's root. Names compare case-insensitively, as
in Spark.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import replace

from .. import errors
from .state import (VIEW_SCHEMA_PROPERTY, ColumnInfo, DatabaseInfo, DatabaseState, Root, SegmentInfo, TableInfo,
                    TableState)
from .schema import Schema
from .tombstones import TombstoneInfo
from .store import CatalogStore

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BRANCH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")


def check_name(kind: str, name: str) -> str:
    if not name or len(name) > 128 or not _NAME.match(name):
        raise errors.InvalidName(kind, name, "use letters, digits and underscores, starting with a letter or "
                                             "underscore (at most 128 characters)")
    if name.lower().startswith("_bs_"):
        raise errors.InvalidName(kind, name, "names starting with _bs_ are reserved for branchspark")
    return name


def check_branch_name(name: str) -> str:
    if not name or len(name) > 200 or not _BRANCH.match(name) or ".." in name or name.endswith(("/", ".")) \
            or "@" in name:
        raise errors.InvalidName("branch", name, "use letters, digits and . _ / - (no '..', no '@', "
                                                 "not ending in / or .), at most 200 characters")
    return name


def split_name(full_name: str) -> tuple[str, str]:
    """'db.table' (optionally backquoted) -> ('db', 'table')."""
    cleaned = full_name.replace("`", "").strip()
    if "." not in cleaned:
        raise errors.InvalidArgument(f"table name '{full_name}' has no database: write it as database.table")
    database, table = cleaned.split(".", 1)
    return database, table


class Namespace:
    def __init__(self, store: CatalogStore, root: Root, label: str):
        self.store = store
        self.label = label  # the branch or commit, for error messages
        self.databases: dict[str, list] = {k: list(v) for k, v in root.databases.items()}
        self.tables: dict[str, list] = {k: list(v) for k, v in root.tables.items()}
        self.staged_databases: dict[str, DatabaseState] = {}
        self.staged_tables: dict[str, TableState] = {}
        self.new_schemas: dict[str, tuple[Schema, str]] = {}
        self.new_segments: dict[str, SegmentInfo] = {}
        self.new_tombstones: dict[str, TombstoneInfo] = {}

    # ---------------------------------------------------------- databases
    def database_id(self, name: str, required: bool = True) -> str | None:
        lowered = name.replace("`", "").lower()
        for database_id, (_, db_name) in self.databases.items():
            if db_name.lower() == lowered:
                return database_id
        if required:
            raise errors.DatabaseNotFound(name, self.label)
        return None

    def database(self, database_id: str) -> DatabaseState:
        if database_id in self.staged_databases:
            return self.staged_databases[database_id]
        version_id = self.databases[database_id][0]
        return self.store.databases([version_id])[version_id]

    def database_names(self) -> list[str]:
        return sorted(name for _, name in self.databases.values())

    # ------------------------------------------------------------- tables
    def table_id(self, full_name: str, required: bool = True) -> str | None:
        db_name, table_name = split_name(full_name)
        database_id = self.database_id(db_name, required=required)
        if database_id is not None:
            lowered = table_name.lower()
            for table_id, (_, db_id, name) in self.tables.items():
                if db_id == database_id and name.lower() == lowered:
                    return table_id
        if required:
            raise errors.TableNotFound(full_name, self.label)
        return None

    def table(self, table_id: str) -> TableState:
        if table_id in self.staged_tables:
            return self.staged_tables[table_id]
        version_id = self.tables[table_id][0]
        return self.store.tables([version_id])[version_id]

    def table_ids(self, database_id: str | None = None) -> list[str]:
        return [tid for tid, (_, db_id, _) in self.tables.items() if database_id is None or db_id == database_id]

    def full_name(self, table_id: str) -> str:
        _, database_id, name = self.tables[table_id]
        return f"{self.databases[database_id][1]}.{name}"

    def load_tables(self, table_ids: list[str]) -> list[TableState]:
        """Many table states with one catalog query (listing a catalog of many tables)."""
        committed = [self.tables[t][0] for t in table_ids if t not in self.staged_tables]
        loaded = self.store.tables(committed)
        return [self.staged_tables[t] if t in self.staged_tables else loaded[self.tables[t][0]] for t in table_ids]

    # -------------------------------------------------- versions (lookups)
    def schema(self, schema_id: str) -> Schema:
        if schema_id in self.new_schemas:
            return self.new_schemas[schema_id][0]
        return self.store.schemas([schema_id])[schema_id]

    def segment_infos(self, ids) -> list[SegmentInfo]:
        committed = self.store.segments([i for i in ids if i not in self.new_segments])
        return [self.new_segments.get(i) or committed[i] for i in ids]

    def tombstone_infos(self, ids) -> list[TombstoneInfo]:
        committed = self.store.tombstones([i for i in ids if i not in self.new_tombstones])
        return [self.new_tombstones.get(i) or committed[i] for i in ids]

    # ------------------------------------------------------------ staging
    def put_database(self, state: DatabaseState) -> None:
        self.staged_databases[state.id] = state
        self.databases[state.id] = [None, state.name]

    def remove_database(self, database_id: str) -> None:
        self.staged_databases.pop(database_id, None)
        del self.databases[database_id]

    def put_table(self, state: TableState) -> None:
        self.staged_tables[state.id] = state
        self.tables[state.id] = [None, state.database_id, state.name]

    def adopt_database(self, state: DatabaseState) -> None:
        """Take a committed version as it is (a merge bringing an object over): no new row."""
        self.staged_databases.pop(state.id, None)
        self.databases[state.id] = [state.version_id, state.name]

    def adopt_table(self, state: TableState) -> None:
        self.staged_tables.pop(state.id, None)
        self.tables[state.id] = [state.version_id, state.database_id, state.name]

    def remove_table(self, table_id: str) -> None:
        self.staged_tables.pop(table_id, None)
        del self.tables[table_id]

    def add_schema(self, schema: Schema, table_id: str) -> None:
        self.new_schemas[schema.id] = (schema, table_id)

    def add_segments(self, segments: list[SegmentInfo]) -> None:
        self.new_segments.update({s.id: s for s in segments})

    def add_tombstone(self, tombstone: TombstoneInfo) -> None:
        self.new_tombstones[tombstone.id] = tombstone

    def finalize(self) -> tuple[Root, list[DatabaseState], list[TableState]]:
        """Give staged objects version ids and build the root of the next commit."""
        new_databases = [_with_version(s) for s in self.staged_databases.values()]
        new_tables = [_with_version(s) for s in self.staged_tables.values()]
        for state in new_databases:
            self.databases[state.id] = [state.version_id, state.name]
        for state in new_tables:
            self.tables[state.id] = [state.version_id, state.database_id, state.name]
        root = Root({k: list(v) for k, v in self.databases.items()}, {k: list(v) for k, v in self.tables.items()})
        return root, new_databases, new_tables

    # -------------------------------------------------------------- infos
    def database_info(self, database_id: str) -> DatabaseInfo:
        state = self.database(database_id)
        return DatabaseInfo(state.id, state.name, dict(state.properties))

    def table_info(self, state: TableState) -> TableInfo:
        columns = ()
        if state.schema_id:
            columns = tuple(ColumnInfo(c.name, c.type, c.nullable, c.default)
                            for c in self.schema(state.schema_id).columns)
        database = self.databases[state.database_id][1]
        properties = {k: v for k, v in state.properties.items() if k != VIEW_SCHEMA_PROPERTY}
        return TableInfo(state.id, database, state.name, state.kind, properties, state.partition_by,
                         state.primary_key, columns, state.view_sql)


def _with_version(state):
    return replace(state, version_id=uuid.uuid4().hex)
