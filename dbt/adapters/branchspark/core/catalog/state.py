"""Plain, immutable views of catalog rows: what the rest of the core works with.

Nothing here touches the database or Spark; `store.py` turns rows into these.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum

from pyspark.sql import types as T


@dataclass(frozen=True)
class Column:
    id: int
    name: str
    type_json: str  # Spark's JSON form of the type: parsed without a JVM
    nullable: bool = True
    default: str | None = None  # a Spark SQL literal expression, e.g. "0" or "'n/a'"
    # Ids are unique in the whole catalog, so columns added on two branches never collide. A merge that
    # finds the same name added on both sides keeps one id and lists the other here.
    aliases: tuple[int, ...] = ()

    def known_as(self, column_id: int) -> bool:
        return column_id == self.id or column_id in self.aliases

    @property
    def data_type(self) -> T.DataType:
        return _parse_type_json(self.type_json)

    @property
    def type(self) -> str:
        return self.data_type.simpleString()

    def to_row(self) -> dict:
        row = {"id": self.id, "name": self.name, "type": self.type_json, "nullable": self.nullable,
               "default": self.default}
        if self.aliases:
            row["aliases"] = list(self.aliases)
        return row

    @staticmethod
    def from_row(row: dict) -> "Column":
        return Column(row["id"], row["name"], row["type"], row.get("nullable", True), row.get("default"),
                      tuple(row.get("aliases", ())))


def _parse_type_json(type_json: str) -> T.DataType:
    return T._parse_datatype_json_value(json.loads(type_json))


@dataclass(frozen=True)
class Schema:
    id: str
    columns: tuple[Column, ...]

    def column(self, name: str) -> Column | None:
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)

    def by_id(self, column_id: int) -> Column | None:
        return next((c for c in self.columns if c.id == column_id), None)

    def source_of(self, column: Column) -> Column | None:
        """The column of this (older) schema that holds `column`'s data, by id or alias."""
        return next((c for c in self.columns if column.known_as(c.id) or c.known_as(column.id)), None)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def struct(self) -> T.StructType:
        return T.StructType([T.StructField(c.name, c.data_type, True) for c in self.columns])


class SegmentKind(StrEnum):
    """What wrote a segment's rows: new rows, the new images of updated rows, a compaction (rows kept, with
    their identities stored), or a merge that carried rows from another version (identities stored too)."""

    DATA = "data"
    UPDATE = "update"
    COMPACTION = "compaction"
    MERGE = "merge"


@dataclass(frozen=True)
class SegmentInfo:
    id: str
    table_id: str
    path: str
    seq: int
    schema_id: str
    kind: SegmentKind
    partition_by: tuple[str, ...] = ()
    partition_values: dict = field(default_factory=dict)
    files: tuple[str, ...] = ()  # data file names below `path`


@dataclass(frozen=True)
class TombstoneInfo:
    id: str
    table_id: str
    path: str
    seq: int
    schema_id: str
    row_count: int
    target_segments: tuple[str, ...] = ()
    target_files: tuple[str, ...] = ()  # row-id file names (below the segment root) it deletes rows of


@dataclass(frozen=True)
class DatabaseState:
    version_id: str | None  # None until committed
    id: str
    name: str
    properties: dict = field(default_factory=dict)

    def evolve(self, **changes) -> "DatabaseState":
        return replace(self, version_id=None, **changes)


@dataclass(frozen=True)
class TableState:
    version_id: str | None  # None until committed
    id: str
    database_id: str
    name: str
    kind: str  # table | view
    properties: dict = field(default_factory=dict)
    partition_by: tuple[str, ...] = ()
    primary_key: tuple[str, ...] = ()
    schema_id: str | None = None
    schema_history: tuple[dict, ...] = ()
    segments: tuple[str, ...] = ()
    tombstones: tuple[str, ...] = ()
    view_sql: str | None = None

    def evolve(self, **changes) -> "TableState":
        return replace(self, version_id=None, **changes)


@dataclass(frozen=True)
class Root:
    """The whole catalog at one commit: object id -> (version id, names)."""

    databases: dict  # id -> [version_id, name]
    tables: dict  # id -> [version_id, database_id, name]

    def to_json(self) -> dict:
        return {"databases": self.databases, "tables": self.tables}

    @staticmethod
    def from_json(data: dict) -> "Root":
        return Root(dict(data.get("databases", {})), dict(data.get("tables", {})))


@dataclass(frozen=True)
class OpInfo:
    object_kind: str
    object_id: str
    object_name: str
    op: str
    detail: dict = field(default_factory=dict)


@dataclass(frozen=True)
class CommitInfo:
    id: str
    seq: int
    ts: datetime
    parents: tuple[str, ...]
    message: str
    author: str | None
    operations: tuple[OpInfo, ...] = ()

    @property
    def short_id(self) -> str:
        return self.id[:12]


@dataclass(frozen=True)
class BranchInfo:
    name: str
    head: str
    protected: bool
    created_at: datetime
    created_from: str | None = None
    run_branch: bool = False  # created by a dbt invocation for itself (docs/runs.md); gc may expire it


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: str
    nullable: bool
    default: str | None


@dataclass(frozen=True)
class DatabaseInfo:
    id: str
    name: str
    properties: dict


@dataclass(frozen=True)
class TableInfo:
    id: str
    database: str
    name: str
    kind: str
    properties: dict
    partition_by: tuple[str, ...]
    primary_key: tuple[str, ...]
    columns: tuple[ColumnInfo, ...]
    view_sql: str | None

    @property
    def full_name(self) -> str:
        return f"{self.database}.{self.name}"
