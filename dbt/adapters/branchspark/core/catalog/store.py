"""The catalog store: branches, commits and immutable object versions in SQL.

Every change is one database transaction that ends by moving a branch head
with compare-and-swap (`UPDATE ... WHERE head = expected`), as Nessie and
pyiceberg's SQL catalog do. Rows that no commit names yet are harmless: a
crashed writer leaves at most unreferenced rows and files, never a half
commit. Versions, schemas, segments and tombstones are immutable, so they are
cached forever once read.
"""
from __future__ import annotations

import heapq
import os
import threading
import uuid
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import create_engine, delete, event, insert, inspect, select, text, update
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import QueuePool

from .. import errors
from . import models as m
from .url import CATALOG_PASSWORD_ENV, CATALOG_URL_ENV, redact_text, redact_url, with_env_password  # noqa: F401
from .state import BranchInfo, DatabaseState, Root, SegmentInfo, TableState
from .schema import Column, Schema
from .commits import CommitInfo, OpInfo
from .tombstones import TombstoneInfo

MAIN = "main"
_MIGRATIONS = Path(__file__).parent / "migrations"
# The catalog schema's revisions, oldest first: each migration file's name starts with its alembic revision
# (tests/core/test_catalog_revisions.py checks that alembic agrees). Known without alembic, which only
# creating or upgrading a catalog needs: every invocation opens a catalog, and importing alembic (with the
# SQL dialects it loads) would cost each about 0.1 s.
KNOWN_REVISIONS = tuple(sorted(p.name.split("_", 1)[0] for p in (_MIGRATIONS / "versions").glob("[0-9]*_*.py")))
CATALOG_REVISION = KNOWN_REVISIONS[-1]  # what this version of branchspark writes
_ONE_MICROSECOND = 1
# Phases of a bs_paused_merges row that hold nothing (merge/paused.py); any other phase is an open merge.
_SETTLED_PHASES = ("not started", "finished")


def new_id() -> str:
    return uuid.uuid4().hex


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _to_us(ts: datetime) -> int:
    return int((ts - datetime(1970, 1, 1)).total_seconds() * 1_000_000)


def _from_us(us: int) -> datetime:
    return datetime(1970, 1, 1) + timedelta(microseconds=us)


# Every SQLite engine of this process, so that a forked child can drop the connections it inherited.
_SQLITE_ENGINES: weakref.WeakSet[Engine] = weakref.WeakSet()


def _forget_inherited_connections() -> None:
    """In a forked child: its parent's open SQLite connections (and their locks) stay the parent's; each engine
    opens its own from here on, closing nothing the parent still uses."""
    for engine in list(_SQLITE_ENGINES):
        engine.dispose(close=False)


os.register_at_fork(after_in_child=_forget_inherited_connections)


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        # A few connections kept open, each lent to one thread at a time: opening one (and its pragmas) costs
        # about a millisecond, several times the query it runs, and a change feed or a commit runs ten such
        # queries. A fork gets a pool of its own (_forget_inherited_connections).
        pool = {"poolclass": QueuePool, "pool_size": 4}
        engine = create_engine(url, **pool, connect_args={"timeout": 120, "check_same_thread": False})
        _SQLITE_ENGINES.add(engine)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection, _record):
            # Let SQLAlchemy, not pysqlite, decide when transactions begin (see `_on_begin`).
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA busy_timeout=120000")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn):
            # A writer takes SQLite's write lock up front, so two writers queue instead of deadlocking.
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("bs_write") else "BEGIN")

        return engine
    return create_engine(url, pool_pre_ping=True, hide_parameters=True)


@dataclass(frozen=True)
class CatalogStatus:
    """What a catalog URL holds, found without changing anything."""

    kind: str  # "missing" (no database file yet), "empty", "foreign" (other tables), "catalog"
    revision: str | None = None  # the catalog's schema revision (alembic), for kind == "catalog"
    head: str | None = None  # the revision this version of branchspark writes

    @property
    def exists(self) -> bool:
        return self.kind == "catalog"


# A commit's record of the external tables its run read (CommitInfo.sources), kept beside the root's objects in
# its JSON: written once with the commit, read back with it, and never part of the catalog state a later commit
# starts from (Root.from_json reads only databases and tables), so no schema change and no older reader minds it.
SOURCES_KEY = "sources"


def _root_json(root: Root, sources: dict | None) -> dict:
    data = root.to_json()
    if sources:
        data[SOURCES_KEY] = sources
    return data


class CatalogStore:
    """The catalog's SQL. Opening one changes nothing: `create` and `upgrade` are the only calls that
    write its schema (catalog/binding.py decides when they may run)."""

    def __init__(self, url: str):
        url = with_env_password(url)
        self.url = url
        self._cache: dict[tuple[str, str], object] = {}
        self._cache_lock = threading.Lock()
        self.revision = CATALOG_REVISION  # what an opened catalog is at (binding.py)
        self.upgraded_from: str | None = None  # set when `branchspark upgrade` migrated it
        with self._reaching():
            self.engine = make_engine(url)

    @contextmanager
    def _reaching(self):
        """SQLAlchemy's errors as one CatalogUnavailable line (never with a password)."""
        try:
            yield
        except SQLAlchemyError as exc:
            # The driver's text names host, port, user and database, never the password; scrub it anyway.
            lines = str(getattr(exc, "orig", None) or exc).strip().splitlines() or [type(exc).__name__]
            raise errors.CatalogUnavailable(
                f"cannot open the catalog at {redact_url(self.url)}: {redact_text(lines[0], self.url)}: check the "
                f"catalog URL (profile `catalog:` or {CATALOG_URL_ENV}) and that the server is up") from None

    def __repr__(self) -> str:
        return f"CatalogStore({redact_url(self.url)})"

    # ------------------------------------------------------------------ setup
    def _write(self) -> Connection:
        return self.engine.connect().execution_options(bs_write=True)

    def _lock_catalog(self, conn: Connection) -> None:
        """Serialise commits: SQLite already holds its write lock; PostgreSQL takes an advisory lock."""
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7419283)")

    def _sqlite_file(self) -> str | None:
        url = make_url(self.url)
        return url.database if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:") \
            else None

    def status(self) -> CatalogStatus:
        """Whether the URL holds a branchspark catalog, and at which revision; reads only."""
        head = CATALOG_REVISION
        sqlite_file = self._sqlite_file()
        if sqlite_file and not os.path.exists(sqlite_file):  # connecting would create it
            return CatalogStatus("missing", head=head)
        with self._reaching(), self.engine.connect() as conn:
            tables = set(inspect(conn).get_table_names())
            if not tables:
                return CatalogStatus("empty", head=head)
            if "alembic_version" not in tables or m.Branch.__tablename__ not in tables:
                return CatalogStatus("foreign", head=head)
            revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
        return CatalogStatus("catalog", revision, head)

    @staticmethod
    def is_known_revision(revision: str | None) -> bool:
        return revision in KNOWN_REVISIONS

    def create(self) -> None:
        """Create the catalog's tables and its first commit (idempotent: a second creator finds it made)."""
        sqlite_file = self._sqlite_file()
        if sqlite_file:
            os.makedirs(os.path.dirname(os.path.abspath(sqlite_file)), exist_ok=True)
        self._migrate(bootstrap=True)

    def upgrade(self) -> None:
        """Bring an older catalog's schema to this version's (`branchspark upgrade`)."""
        self._migrate(bootstrap=False)

    def _migrate(self, bootstrap: bool) -> None:
        # Only here: see KNOWN_REVISIONS (tests/core/test_imports.py lists this import and why).
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(_MIGRATIONS))
        with self._reaching(), self._write() as conn, conn.begin():
            self._lock_catalog(conn)
            config.attributes["connection"] = conn
            command.upgrade(config, "head")
            if bootstrap and conn.execute(select(m.Counter).where(m.Counter.name == "seq")).first() is None:
                self._bootstrap(conn)

    def identity(self) -> tuple[str, str | None]:
        """(catalog id, the warehouse it was bound to, if recorded)."""
        with self._reaching(), self.engine.connect() as conn:
            row = conn.execute(select(m.CatalogIdentity)).first()
        return row.id, row.warehouse

    def record_warehouse(self, warehouse: str) -> None:
        with self._reaching(), self._write() as conn, conn.begin():
            conn.execute(update(m.CatalogIdentity).values(warehouse=warehouse))

    def _bootstrap(self, conn: Connection) -> None:
        now = utcnow()
        commit_id = new_id()
        conn.execute(insert(m.Counter), [{"name": "seq", "value": 1}, {"name": "ts_us", "value": _to_us(now)}])
        conn.execute(insert(m.Commit).values(id=commit_id, seq=1, ts=now, parent_id=None, merge_parent_id=None,
                                             message="initialize catalog", author=None,
                                             root=Root({}, {}).to_json()))
        conn.execute(insert(m.Branch).values(name=MAIN, head=commit_id, protected=False, created_at=now,
                                             created_from=None))

    def dispose(self) -> None:
        self.engine.dispose()

    # -------------------------------------------------------------- sequence
    def allocate_seq(self) -> int:
        """A number above every commit and data file so far: it orders files and tombstones."""
        with self._write() as conn, conn.begin():
            self._lock_catalog(conn)
            return self._next_seq(conn)

    def allocate_seqs(self, count: int) -> list[int]:
        """`count` consecutive numbers of the same sequence (column ids, for example)."""
        with self._write() as conn, conn.begin():
            self._lock_catalog(conn)
            last = self._next_seq(conn, count)
        return list(range(last - count + 1, last + 1))

    @staticmethod
    def _next_seq(conn: Connection, count: int = 1) -> int:
        conn.execute(update(m.Counter).where(m.Counter.name == "seq").values(value=m.Counter.value + count))
        return conn.execute(select(m.Counter.value).where(m.Counter.name == "seq")).scalar_one()

    # -------------------------------------------------------------- branches
    @staticmethod
    def _branch_info(row) -> BranchInfo:
        return BranchInfo(row.name, row.head, bool(row.protected), row.created_at, row.created_from,
                          bool(row.run_branch))

    def get_branch(self, name: str) -> BranchInfo:
        with self.engine.connect() as conn:
            row = conn.execute(select(m.Branch).where(m.Branch.name == name)).first()
        if row is None:
            raise errors.BranchNotFound(name)
        return self._branch_info(row)

    def find_branch(self, name: str) -> BranchInfo | None:
        try:
            return self.get_branch(name)
        except errors.BranchNotFound:
            return None

    def list_branches(self) -> list[BranchInfo]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(m.Branch).order_by(m.Branch.name)).all()
        return [self._branch_info(r) for r in rows]

    def create_branch(self, name: str, head: str, created_from: str | None, run_branch: bool = False) -> BranchInfo:
        with self._write() as conn, conn.begin():
            if conn.execute(select(m.Branch.name).where(m.Branch.name == name)).first() is not None:
                raise errors.AlreadyExists("branch", name)
            now = utcnow()
            conn.execute(insert(m.Branch).values(name=name, head=head, protected=False, created_at=now,
                                                 created_from=created_from, run_branch=run_branch))
        return BranchInfo(name, head, False, now, created_from, run_branch)

    def drop_branch(self, name: str) -> None:
        with self._write() as conn, conn.begin():
            if conn.execute(m.Branch.__table__.delete().where(m.Branch.name == name)).rowcount == 0:
                raise errors.BranchNotFound(name)

    def set_protected(self, name: str, protected: bool) -> None:
        with self._write() as conn, conn.begin():
            result = conn.execute(update(m.Branch).where(m.Branch.name == name).values(protected=protected))
            if result.rowcount == 0:
                raise errors.BranchNotFound(name)

    def move_branch(self, name: str, expected: str, new_head: str) -> None:
        """Point a branch at an existing commit (fast-forward, reset), by compare-and-swap."""
        with self._write() as conn, conn.begin():
            self._lock_catalog(conn)
            self.refuse_if_paused(name, conn=conn)
            self._swap_head(conn, name, expected, new_head)

    def _swap_head(self, conn: Connection, branch: str, expected: str, new_head: str) -> None:
        result = conn.execute(update(m.Branch).where(m.Branch.name == branch, m.Branch.head == expected)
                              .values(head=new_head))
        if result.rowcount != 1:
            current = conn.execute(select(m.Branch.head).where(m.Branch.name == branch)).scalar()
            if current is None:
                raise errors.BranchNotFound(branch)
            raise errors.StaleHead(branch, expected, current)

    # --------------------------------------------------------------- commits
    def _cached(self, kind: str, key: str):
        return self._cache.get((kind, key))

    def _remember(self, kind: str, key: str, value) -> None:
        with self._cache_lock:
            self._cache[(kind, key)] = value

    def get_commit(self, commit_id: str) -> CommitInfo:
        hit = self._cached("commit", commit_id)
        if hit is not None:
            return hit
        with self.engine.connect() as conn:
            row = conn.execute(select(m.Commit).where(m.Commit.id == commit_id)).first()
        if row is None:
            raise errors.CommitNotFound(commit_id)
        return self._commit_from_row(row)

    def _commit_from_row(self, row) -> CommitInfo:
        parents = tuple(p for p in (row.parent_id, row.merge_parent_id) if p)
        info = CommitInfo(row.id, row.seq, row.ts, parents, row.message, row.author,
                          sources=(row.root or {}).get(SOURCES_KEY))
        self._remember("commit", row.id, info)
        self._remember("root", row.id, Root.from_json(row.root))
        return info

    def find_commit_by_prefix(self, prefix: str) -> CommitInfo | None:
        if len(prefix) < 6 or any(ch not in "0123456789abcdef" for ch in prefix.lower()):
            return None
        with self.engine.connect() as conn:
            rows = conn.execute(select(m.Commit).where(m.Commit.id.like(prefix.lower() + "%")).limit(2)).all()
        if len(rows) != 1:
            return None
        return self._commit_from_row(rows[0])

    def root(self, commit_id: str) -> Root:
        hit = self._cached("root", commit_id)
        if hit is None:
            self.get_commit(commit_id)
            hit = self._cached("root", commit_id)
        return hit

    def operations(self, commit_id: str) -> tuple[OpInfo, ...]:
        hit = self._cached("ops", commit_id)
        if hit is not None:
            return hit
        with self.engine.connect() as conn:
            rows = conn.execute(select(m.CommitOperation).where(m.CommitOperation.commit_id == commit_id)
                                .order_by(m.CommitOperation.id)).all()
        ops = tuple(OpInfo(r.object_kind, r.object_id, r.object_name, r.op, r.detail or {}) for r in rows)
        self._remember("ops", commit_id, ops)
        return ops

    def commits(self, ids: Iterable[str]) -> dict[str, CommitInfo]:
        wanted = [i for i in set(ids) if self._cached("commit", i) is None]
        if wanted:
            with self.engine.connect() as conn:
                for chunk in _chunks(wanted, 500):
                    for row in conn.execute(select(m.Commit).where(m.Commit.id.in_(chunk))).all():
                        self._commit_from_row(row)
        return {i: self.get_commit(i) for i in ids}

    def ancestors(self, commit_id: str) -> Iterator[CommitInfo]:
        """Every commit reachable from `commit_id`, newest (highest seq) first."""
        seen = {commit_id}
        heap = [(-self.get_commit(commit_id).seq, commit_id)]
        while heap:
            _, cid = heapq.heappop(heap)
            info = self.get_commit(cid)
            yield info
            for parent in info.parents:
                if parent not in seen:
                    seen.add(parent)
                    heapq.heappush(heap, (-self.get_commit(parent).seq, parent))

    def first_parents(self, commit_id: str) -> Iterator[CommitInfo]:
        cid: str | None = commit_id
        while cid:
            info = self.get_commit(cid)
            yield info
            cid = info.parents[0] if info.parents else None

    def reachable_commits(self, heads: Iterable[str]) -> set[str]:
        """Every commit reachable from `heads`, from one scan of the commit graph."""
        with self.engine.connect() as conn:
            edges = {r.id: (r.parent_id, r.merge_parent_id)
                     for r in conn.execute(select(m.Commit.id, m.Commit.parent_id, m.Commit.merge_parent_id))}
        seen: set[str] = set()
        stack = [h for h in heads if h]
        while stack:
            cid = stack.pop()
            if cid in seen or cid not in edges:
                continue
            seen.add(cid)
            stack.extend(p for p in edges[cid] if p)
        return seen

    def refuse_if_paused(self, branch: str, finishing: str | None = None, conn: Connection | None = None) -> None:
        """Raise MergeInProgress when a merge or rebase into `branch` is paused, unless it is the one whose id
        is `finishing` (its own commit): any other commit would move the head that merge is built on."""
        query = (select(m.PausedMerge.id, m.PausedMerge.kind, m.PausedMerge.src, m.PausedMerge.phase)
                 .where(m.PausedMerge.dest == branch))
        if conn is None:
            with self.engine.connect() as reading:
                row = reading.execute(query).first()
        else:
            row = conn.execute(query).first()
        if row is not None and row.phase not in _SETTLED_PHASES and row.id != finishing:
            raise errors.MergeInProgress(branch, row.kind, row.src, row.phase)

    # ------------------------------------------------------------ paused merges (merge/paused.py)
    def paused_merge_row(self, dest: str):
        """The bs_paused_merges row of `dest`, or None."""
        with self.engine.connect() as conn:
            return conn.execute(select(m.PausedMerge).where(m.PausedMerge.dest == dest)).first()

    def paused_merge_dests(self) -> list[str]:
        with self.engine.connect() as conn:
            return list(conn.execute(select(m.PausedMerge.dest)).scalars())

    def save_paused_merge(self, dest: str, values: dict) -> None:
        """Insert or replace the row of `dest`, under the catalog's lock; a row of another paused merge that
        is still open is not replaced (InvalidArgument)."""
        with self._write() as conn, conn.begin():
            self._lock_catalog(conn)
            current = conn.execute(select(m.PausedMerge.id, m.PausedMerge.phase)
                                   .where(m.PausedMerge.dest == dest)).first()
            if current is None:
                conn.execute(insert(m.PausedMerge).values(dest=dest, created_at=utcnow(), **values))
            elif current.id != values["id"] and current.phase not in _SETTLED_PHASES:
                raise errors.InvalidArgument(f"another merge into '{dest}' is paused: continue or abort it first")
            else:
                conn.execute(update(m.PausedMerge).where(m.PausedMerge.dest == dest).values(**values))

    def remove_paused_merge(self, dest: str) -> None:
        with self._write() as conn, conn.begin():
            conn.execute(delete(m.PausedMerge).where(m.PausedMerge.dest == dest))

    def pinned_commits(self) -> list[str]:
        """Commits that hold files although no branch points at them: those a paused merge or rebase
        reads or has written (its src head, dest head, and a rebase's replayed commits)."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(m.PausedMerge.src_head, m.PausedMerge.dest_head, m.PausedMerge.state)).all()
        return [c for r in rows for c in (r.src_head, r.dest_head, *(r.state or {}).get("pinned", [])) if c]

    def commit(
        self,
        branch: str,
        expected_head: str,
        root: Root,
        *,
        databases: Iterable[DatabaseState] = (),
        tables: Iterable[TableState] = (),
        schemas: Iterable[Schema] = (),
        segments: Iterable[SegmentInfo] = (),
        tombstones: Iterable[TombstoneInfo] = (),
        operations: Iterable[OpInfo] = (),
        message: str = "",
        author: str | None = None,
        merge_parent: str | None = None,
        allow_protected: bool = False,
        finishing: str | None = None,
        fault=None,
        sources: dict | None = None,
    ) -> CommitInfo:
        """Write new versions and one commit, and move the branch head from `expected_head` to it.
        `finishing`: the id of the paused merge this commit finishes (the only commit a paused branch takes)."""
        commit_id = new_id()
        with self._write() as conn, conn.begin():
            self._lock_catalog(conn)
            branch_row = conn.execute(select(m.Branch).where(m.Branch.name == branch)).first()
            if branch_row is None:
                raise errors.BranchNotFound(branch)
            if branch_row.head != expected_head:
                raise errors.StaleHead(branch, expected_head, branch_row.head)
            if branch_row.protected and not allow_protected:
                raise errors.ProtectedBranch(branch)
            self.refuse_if_paused(branch, finishing, conn)
            seq = self._next_seq(conn)
            last_us = conn.execute(select(m.Counter.value).where(m.Counter.name == "ts_us")).scalar_one()
            ts_us = max(_to_us(utcnow()), last_us + _ONE_MICROSECOND)  # strictly increasing commit time
            conn.execute(update(m.Counter).where(m.Counter.name == "ts_us").values(value=ts_us))
            ts = _from_us(ts_us)
            self._insert_rows(conn, databases, tables, schemas, segments, tombstones)
            conn.execute(insert(m.Commit).values(id=commit_id, seq=seq, ts=ts, parent_id=expected_head,
                                                 merge_parent_id=merge_parent, message=message, author=author,
                                                 root=_root_json(root, sources)))
            op_rows = [{"commit_id": commit_id, "object_kind": o.object_kind, "object_id": o.object_id,
                        "object_name": o.object_name, "op": o.op, "detail": o.detail} for o in operations]
            if op_rows:
                conn.execute(insert(m.CommitOperation), op_rows)
            if fault:
                fault("commit.before_head_swap")
            self._swap_head(conn, branch, expected_head, commit_id)
        parents = (expected_head, merge_parent) if merge_parent else (expected_head,)
        info = CommitInfo(commit_id, seq, ts, parents, message, author, sources=sources or None)
        self._remember("commit", commit_id, info)
        self._remember("root", commit_id, root)
        return info

    def _insert_rows(self, conn, databases, tables, schemas, segments, tombstones) -> None:
        db_rows = [{"id": d.version_id, "database_id": d.id, "name": d.name, "properties": d.properties}
                   for d in databases]
        if db_rows:
            conn.execute(insert(m.DatabaseVersion), db_rows)
        table_rows = [{
            "id": t.version_id, "table_id": t.id, "database_id": t.database_id, "name": t.name, "kind": t.kind,
            "properties": t.properties, "partition_by": list(t.partition_by), "primary_key": list(t.primary_key),
            "schema_id": t.schema_id, "schema_history": list(t.schema_history), "segments": list(t.segments),
            "tombstones": list(t.tombstones), "view_sql": t.view_sql,
        } for t in tables]
        if table_rows:
            conn.execute(insert(m.TableVersion), table_rows)
        schema_rows = [{"id": s.id, "table_id": table_id, "columns": [c.to_row() for c in s.columns]}
                       for s, table_id in schemas]
        if schema_rows:
            conn.execute(insert(m.SchemaVersion), schema_rows)
        seg_rows = [{"id": s.id, "table_id": s.table_id, "path": s.path, "seq": s.seq, "schema_id": s.schema_id,
                     "kind": s.kind, "partition_by": list(s.partition_by), "partition_values": s.partition_values,
                     "files": list(s.files), "file_sizes": list(s.file_sizes) or None,
                     "key_ranges": _key_ranges_row(s), "borrowed": s.borrowed,
                     "file_etags": list(s.file_etags) or None}
                    for s in segments]
        if seg_rows:
            conn.execute(insert(m.Segment), seg_rows)
        tomb_rows = [{"id": t.id, "table_id": t.table_id, "path": t.path, "seq": t.seq, "schema_id": t.schema_id,
                      "row_count": t.row_count, "target_segments": list(t.target_segments),
                      "target_files": list(t.target_files), "files": list(t.files) or None,
                      "file_sizes": list(t.file_sizes) or None, "file_etags": list(t.file_etags) or None,
                      "written_over": None if t.over_segments is None else {
                          "segments": list(t.over_segments), "tombstones": list(t.over_tombstones or ())}}
                     for t in tombstones]
        if tomb_rows:
            conn.execute(insert(m.Tombstone), tomb_rows)

    # ---------------------------------------------------- immutable versions
    def _load(self, kind: str, model, ids: Iterable[str], convert) -> dict:
        ids = list(dict.fromkeys(ids))
        missing = [i for i in ids if self._cached(kind, i) is None]
        if missing:
            with self.engine.connect() as conn:
                for chunk in _chunks(missing, 500):
                    for row in conn.execute(select(model).where(model.id.in_(chunk))).all():
                        self._remember(kind, row.id, convert(row))
        return {i: self._cached(kind, i) for i in ids}

    def databases(self, version_ids: Iterable[str]) -> dict[str, DatabaseState]:
        return self._load("database", m.DatabaseVersion, version_ids,
                          lambda r: DatabaseState(r.id, r.database_id, r.name, dict(r.properties or {})))

    def tables(self, version_ids: Iterable[str]) -> dict[str, TableState]:
        return self._load("table", m.TableVersion, version_ids, lambda r: TableState(
            r.id, r.table_id, r.database_id, r.name, r.kind, dict(r.properties or {}), tuple(r.partition_by or ()),
            tuple(r.primary_key or ()), r.schema_id, tuple(r.schema_history or ()), tuple(r.segments or ()),
            tuple(r.tombstones or ()), r.view_sql))

    def schemas(self, ids: Iterable[str]) -> dict[str, Schema]:
        return self._load("schema", m.SchemaVersion, ids,
                          lambda r: Schema(r.id, tuple(Column.from_row(c) for c in r.columns)))

    def segments(self, ids: Iterable[str]) -> dict[str, SegmentInfo]:
        return self._load("segment", m.Segment, ids, lambda r: SegmentInfo(
            r.id, r.table_id, r.path, r.seq, r.schema_id, r.kind, tuple(r.partition_by or ()),
            dict(r.partition_values or {}), tuple(r.files or ()), tuple(r.file_sizes or ()),
            *_key_ranges_of(r.key_ranges), bool(r.borrowed), tuple(r.file_etags or ())))

    def tombstones(self, ids: Iterable[str]) -> dict[str, TombstoneInfo]:
        return self._load("tombstone", m.Tombstone, ids, lambda r: TombstoneInfo(
            r.id, r.table_id, r.path, r.seq, r.schema_id, r.row_count, tuple(r.target_segments or ()),
            tuple(r.target_files or ()), tuple(r.files or ()), tuple(r.file_sizes or ()), tuple(r.file_etags or ()),
            *_written_over(r.written_over)))

    def table_name(self, table_id: str) -> str | None:
        """`database.table` as some version of the table was named (for error messages), or None."""
        query = (select(m.TableVersion.name, m.DatabaseVersion.name.label("database"))
                 .join(m.DatabaseVersion, m.DatabaseVersion.database_id == m.TableVersion.database_id)
                 .where(m.TableVersion.table_id == table_id).limit(1))
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return f"{row.database}.{row.name}" if row else None

    def known_table_ids(self) -> set[str]:
        """Every table id any version, segment or tombstone of this catalog names: the only table
        folders of the warehouse whose files this catalog could reference."""
        with self.engine.connect() as conn:
            return {table_id for model in (m.TableVersion, m.Segment, m.Tombstone)
                    for table_id in conn.execute(select(model.table_id).distinct()).scalars()}

    def take_ownership(self, segment_ids: Iterable[str]) -> None:
        """Hand borrowed segments' files to this catalog (`import --take-ownership`): gc then deletes them, where they
        lie, once no commit reachable from a branch reads them. The one change a segment row ever takes."""
        ids = list(segment_ids)
        with self._write() as conn, conn.begin():
            for chunk in _chunks(ids, 500):
                conn.execute(update(m.Segment).where(m.Segment.id.in_(chunk)).values(borrowed=False))
        with self._cache_lock:
            for segment_id in ids:
                self._cache.pop(("segment", segment_id), None)

    def external_segments(self) -> list[SegmentInfo]:
        """Segments whose files lie outside the warehouse (imports): borrowed ones, and ones handed over."""
        with self.engine.connect() as conn:
            ids = list(conn.execute(select(m.Segment.id).where(
                m.Segment.path.like("/%") | m.Segment.path.like("%://%"))).scalars())
        return list(self.segments(ids).values())

    def all_table_version_ids(self) -> set[str]:
        with self.engine.connect() as conn:
            return set(conn.execute(select(m.TableVersion.id)).scalars())


def _chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def default_catalog_url(warehouse: str) -> str:
    """The embedded default: a SQLite file beside the warehouse's data (local warehouses only)."""
    path = warehouse[len("file://"):] if warehouse.startswith("file://") else warehouse
    if "://" in path:
        raise errors.InvalidArgument(
            f"warehouse '{warehouse}' is not a local path, so there is no default catalog: give a catalog URL")
    return f"sqlite:///{os.path.abspath(os.path.join(path, 'catalog.db'))}"


def _key_ranges_row(segment: SegmentInfo) -> dict | None:
    """A segment's key ranges as the catalog stores them (models.Segment.key_ranges)."""
    if not segment.key_ranges or segment.key_column is None:
        return None
    return {"column": segment.key_column, "files": [list(r) if r else None for r in segment.key_ranges]}


def _written_over(stored: dict | None) -> tuple[frozenset | None, frozenset | None]:
    """(TombstoneInfo.over_segments, over_tombstones) of a stored value."""
    if stored is None:
        return None, None
    return frozenset(stored["segments"]), frozenset(stored["tombstones"])


def _key_ranges_of(stored: dict | None) -> tuple[tuple, int | None]:
    """(SegmentInfo.key_ranges, SegmentInfo.key_column) of a stored value."""
    if not stored:
        return (), None
    return tuple(tuple(r) if r else None for r in stored["files"]), stored["column"]
