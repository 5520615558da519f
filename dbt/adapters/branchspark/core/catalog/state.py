"""Plain, immutable views of catalog rows: a table or database version, its segments, a commit's root, a
branch, and what `describe` shows. Columns and schemas are in `schema.py`, tombstones in `tombstones.py`,
commits in `commits.py`.

Nothing here touches the database or Spark; `store.py` turns rows into these.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum


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
    file_sizes: tuple[int, ...] = ()  # their bytes, in order; () when not recorded (older catalogs)
    # per file, in order: (lowest, highest) value of column `key_column` (the first primary-key column at the
    # write), or None where unknown; () when not recorded (keyless tables, older catalogs). A key check reads
    # only the files whose range can hold one of its keys.
    key_ranges: tuple = ()
    key_column: int | None = None  # the column id of key_ranges' values
    # Files another system owns (an import; `external` below): gc never deletes them. False again once the user
    # hands them over (take_ownership): gc then deletes them where they lie when nothing reads them.
    borrowed: bool = False
    # per file, in order: the ETag the object store answered its upload with, or None; () when none was recorded
    # (a local warehouse, imports, older catalogs). A reader that knows it opens the file with no lookup (on S3
    # no HEAD: known_files.py).
    file_etags: tuple = ()

    @property
    def external(self) -> bool:
        """Whether its files lie outside the warehouse (an import's: borrowed, or handed over by take_ownership):
        `path` is then absolute, and the rows' `_bs_seg` is the segment's id."""
        return self.path.startswith("/") or "://" in self.path


@dataclass(frozen=True)
class DatabaseState:
    version_id: str | None  # None until committed
    id: str
    name: str
    properties: dict = field(default_factory=dict)

    def evolve(self, **changes) -> "DatabaseState":
        return replace(self, version_id=None, **changes)


# A view's output schema (Spark's JSON of its StructType), kept with the view's SQL as one of its properties
# (no catalog column of its own): what `branchspark serve` describes to Iceberg clients, which need a
# view's schema without running its query.
VIEW_SCHEMA_PROPERTY = "branchspark.view-schema"


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

    @property
    def view_schema_json(self) -> str | None:
        """A view's output schema as recorded when it was created or replaced (None: not recorded)."""
        return self.properties.get(VIEW_SCHEMA_PROPERTY) if self.kind == "view" else None


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
