"""The catalog's own tables, as SQLAlchemy models.

Versions of databases and tables are immutable rows; a commit names the
version of every object through its `root` (object id -> version id and name),
so creating a branch is one row and a commit writes only what changed.
The Alembic migrations in `migrations/` create exactly these tables.
"""
from datetime import datetime

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, ForeignKey, Index, Integer, String, Text, false
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Counter(Base):
    """Global sequence: commit order and the order of data files (a tombstone deletes lower seqs only)."""

    __tablename__ = "bs_counters"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger, nullable=False)


class Branch(Base):
    __tablename__ = "bs_branches"
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    head: Mapped[str] = mapped_column(String(32), ForeignKey("bs_commits.id"), nullable=False)
    protected: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    created_from: Mapped[str | None] = mapped_column(String(64))
    # a dbt invocation's own branch (migration 0003): only these does gc's run-branch expiry drop
    run_branch: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)


class CatalogIdentity(Base):
    """One row: the catalog's id, which the warehouse's marker file repeats (catalog/binding.py)."""

    __tablename__ = "bs_catalog"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    warehouse: Mapped[str | None] = mapped_column(Text)  # where it was bound, for error messages


class Commit(Base):
    __tablename__ = "bs_commits"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, nullable=False, unique=True)
    ts: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    parent_id: Mapped[str | None] = mapped_column(String(32))
    merge_parent_id: Mapped[str | None] = mapped_column(String(32))
    message: Mapped[str] = mapped_column(Text, nullable=False, default="")
    author: Mapped[str | None] = mapped_column(String(200))
    # {"databases": {id: [version_id, name]}, "tables": {id: [version_id, database_id, name]}}
    root: Mapped[dict] = mapped_column(JSON, nullable=False)


class CommitOperation(Base):
    """What a commit did to one object: SPEC section 2's operation kinds."""

    __tablename__ = "bs_commit_ops"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    commit_id: Mapped[str] = mapped_column(String(32), ForeignKey("bs_commits.id"), nullable=False, index=True)
    object_kind: Mapped[str] = mapped_column(String(16), nullable=False)
    object_id: Mapped[str] = mapped_column(String(32), nullable=False)
    object_name: Mapped[str] = mapped_column(String(400), nullable=False)
    op: Mapped[str] = mapped_column(String(32), nullable=False)
    detail: Mapped[dict] = mapped_column(JSON, nullable=False, default=dict)


class DatabaseVersion(Base):
    __tablename__ = "bs_database_versions"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    database_id: Mapped[str] = mapped_column(String(32), nullable=False, index=True)
    name: Mapped[str] = mapped_column(String(128), nullable=False)
    properties: Mapped[dict] = mapped_column(JSON, nullable=False, default=dict)


class TableVersion(Base):
    __tablename__ = "bs_table_versions"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    table_id: Mapped[str] = mapped_column(String(32), nullable=False, index=True)
    database_id: Mapped[str] = mapped_column(String(32), nullable=False)
    name: Mapped[str] = mapped_column(String(128), nullable=False)
    kind: Mapped[str] = mapped_column(String(8), nullable=False)  # table | view
    properties: Mapped[dict] = mapped_column(JSON, nullable=False, default=dict)
    partition_by: Mapped[list] = mapped_column(JSON, nullable=False, default=list)
    primary_key: Mapped[list] = mapped_column(JSON, nullable=False, default=list)
    schema_id: Mapped[str | None] = mapped_column(String(32))
    # [{"schema_id", "seq", "ts", "visible"}]: visible entries are what time travel may show
    schema_history: Mapped[list] = mapped_column(JSON, nullable=False, default=list)
    segments: Mapped[list] = mapped_column(JSON, nullable=False, default=list)
    tombstones: Mapped[list] = mapped_column(JSON, nullable=False, default=list)
    view_sql: Mapped[str | None] = mapped_column(Text)


class SchemaVersion(Base):
    __tablename__ = "bs_schemas"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    table_id: Mapped[str] = mapped_column(String(32), nullable=False, index=True)
    # [{"id", "name", "type" (Spark JSON type), "nullable", "default"}]
    columns: Mapped[list] = mapped_column(JSON, nullable=False)


class Segment(Base):
    __tablename__ = "bs_segments"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    table_id: Mapped[str] = mapped_column(String(32), nullable=False, index=True)
    path: Mapped[str] = mapped_column(Text, nullable=False)  # relative to the warehouse (absolute when borrowed)
    seq: Mapped[int] = mapped_column(BigInteger, nullable=False)
    schema_id: Mapped[str] = mapped_column(String(32), nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)  # data | update | compaction
    partition_by: Mapped[list] = mapped_column(JSON, nullable=False, default=list)
    partition_values: Mapped[dict] = mapped_column(JSON, nullable=False, default=dict)
    files: Mapped[list] = mapped_column(JSON, nullable=False, default=list)  # data files, relative to `path`
    file_sizes: Mapped[list | None] = mapped_column(JSON, nullable=True)  # their bytes, in order (revision 0004)
    # {"column": column id, "files": [[low, high] or null per file]}: the files' key ranges (revision 0005)
    key_ranges: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    # files another system owns (an import, revision 0006): `path` is then an absolute URI, and gc never deletes them
    borrowed: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False, server_default=false())
    # their ETags, in order, null where the store gave none (revision 0007)
    file_etags: Mapped[list | None] = mapped_column(JSON, nullable=True)


class Tombstone(Base):
    __tablename__ = "bs_tombstones"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    table_id: Mapped[str] = mapped_column(String(32), nullable=False, index=True)
    path: Mapped[str] = mapped_column(Text, nullable=False)
    seq: Mapped[int] = mapped_column(BigInteger, nullable=False)
    schema_id: Mapped[str] = mapped_column(String(32), nullable=False)
    row_count: Mapped[int] = mapped_column(BigInteger, nullable=False)
    target_segments: Mapped[list] = mapped_column(JSON, nullable=False, default=list)
    target_files: Mapped[list] = mapped_column(JSON, nullable=False, default=list)  # row-id file names
    files: Mapped[list | None] = mapped_column(JSON, nullable=True)  # its own files, relative to `path` (0004)
    file_sizes: Mapped[list | None] = mapped_column(JSON, nullable=True)  # their bytes, in order
    file_etags: Mapped[list | None] = mapped_column(JSON, nullable=True)  # their ETags, in order (0007)
    # A keyed tombstone's rows are every live row of its keys in the version it was written over (0008):
    # {"segments": [ids], "tombstones": [ids]} of that version; null where not recorded.
    written_over: Mapped[dict | None] = mapped_column(JSON, nullable=True)


Index("ix_bs_commits_parent", Commit.parent_id)


class PausedMerge(Base):
    """A merge (or rebase) stopped before its commit, one per destination branch (SPEC 3.6).

    `state` holds the phase's data: the schema-conflict rows, where each table's conflict
    relation is stored, the choices made so far, and a rebase's progress.
    """

    __tablename__ = "bs_paused_merges"
    dest: Mapped[str] = mapped_column(String(200), primary_key=True)
    id: Mapped[str] = mapped_column(String(32), nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)  # merge | rebase
    src: Mapped[str] = mapped_column(String(200), nullable=False)
    src_head: Mapped[str] = mapped_column(String(32), nullable=False)
    dest_head: Mapped[str] = mapped_column(String(32), nullable=False)
    base: Mapped[str] = mapped_column(String(32), nullable=False)
    phase: Mapped[str] = mapped_column(String(32), nullable=False)
    state: Mapped[dict] = mapped_column(JSON, nullable=False, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
