"""The core's entry point: a catalog of branches over Parquet tables written by Spark.

    lh = Lakehouse(spark, warehouse="/data/wh")          # SQLite catalog in the warehouse (made if both are empty)
    lh.create_branch("dev")                              # one row: no data, no per-table rows
    with lh.transaction("dev", message="load") as tx:   # one atomic commit
        tx.create_database("analytics")
        tx.create_table_as("analytics.orders", df)
    lh.read("analytics.orders", at="dev")               # a Spark DataFrame

Plain PySpark: nothing here imports dbt. See docs/core-api.md.
"""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from . import errors
from .catalog.binding import Opening, open_catalog
from .catalog.commits import CommitInfo
from .catalog.namespace import Namespace, check_branch_name
from .catalog.state import BranchInfo, DatabaseInfo, TableInfo, TableState
from .catalog.store import CATALOG_URL_ENV, MAIN, default_catalog_url, utcnow
from .commit_replay import is_hidden_branch, land_on_moved_head
from .diff.counts import count_dry_run, count_merged
from .imports.delta_log import delta_changes
from .imports.formats import read_source
from .imports.iceberg_table import iceberg_changes
from .imports.landing import land_import, land_refresh, recorded_source
from .imports.source import delete_external_file, normalized_location
from .merge import interactive
from .merge.strategies import merge_branch
from .operations import ObjectKind, Op
from .spark_errors import storage_error, translate_action_errors
from .spark_session import local_session
from .sql.session import SqlSession
from .storage.layout import SEGMENT_COLUMN, Warehouse, metadata_roots
from .storage.reader import TableReader
from .storage.writer import SegmentWriter
from .times import parse_time
from .transaction import Transaction
from .view_relations import register_relations

FAULT_ENV = "BRANCHSPARK_FAULT"


def fault_from_env() -> Callable[[str], None] | None:
    """Named fault-injection points: BRANCHSPARK_FAULT=<point> kills this process there (as SIGKILL would)."""
    wanted = os.environ.get(FAULT_ENV)
    if not wanted:
        return None

    def fault(point: str) -> None:
        if point == wanted:
            # A crash takes the whole machine's work with it: the local JVM, a child process, would
            # otherwise finish the writes other threads had started after this process is gone.
            for child in _descendants(os.getpid()):
                try:
                    os.kill(child, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            os.kill(os.getpid(), signal.SIGKILL)

    return fault


def _descendants(pid: int) -> list[int]:
    """The processes below `pid`, from /proc (Linux; none elsewhere)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*/stat") if Path("/proc").is_dir() else []:
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry.parent.name))
    found, waiting = [], [pid]
    while waiting:
        for child in parents.get(waiting.pop(), []):
            found.append(child)
            waiting.append(child)
    return found


@dataclass
class GcReport:
    # orphans deleted (or, in a dry run, to delete): below the warehouse, and handed-over import files by URI
    deleted_files: list[str] = field(default_factory=list)
    kept_files: int = 0  # referenced files plus young orphans
    young_orphans: list[str] = field(default_factory=list)  # unreferenced, but younger than the grace period
    referenced_files: int = 0
    referenced_segments: int = 0
    referenced_tombstones: int = 0
    dropped_branches: list[str] = field(default_factory=list)
    # Files of imported tables, where their source keeps them: never deleted, referenced or not (docs/import.md)
    borrowed_files: int = 0
    unreferenced_borrowed_files: int = 0  # of those, the ones no branch reads any more


class Snapshot:
    """One commit of the catalog, read-only."""

    def __init__(self, lakehouse: "Lakehouse", commit: CommitInfo, label: str):
        self.lakehouse = lakehouse
        self.commit = commit
        self.ns = Namespace(lakehouse.store, lakehouse.store.root(commit.id), label)

    @property
    def reader(self) -> TableReader:
        return TableReader(self.lakehouse.spark, self.lakehouse.warehouse, self.ns)

    @property
    def commit_id(self) -> str:
        return self.commit.id

    def databases(self) -> list[DatabaseInfo]:
        return sorted((self.ns.database_info(d) for d in self.ns.databases), key=lambda d: d.name)

    def has_database(self, name: str) -> bool:
        return self.ns.database_id(name, required=False) is not None

    def has_table(self, name: str) -> bool:
        return self.ns.table_id(name, required=False) is not None

    def state(self, name: str) -> TableState:
        return self.ns.table(self.ns.table_id(name))

    def table(self, name: str) -> TableInfo:
        return self.ns.table_info(self.state(name))

    def tables(self, database: str | None = None) -> list[TableInfo]:
        database_id = self.ns.database_id(database) if database else None
        infos = [self.ns.table_info(s) for s in self.ns.load_tables(self.ns.table_ids(database_id))]
        return sorted(infos, key=lambda t: (t.database, t.name))

    def read(self, name: str, with_row_ids: bool = False) -> DataFrame:
        state = self.state(name)
        if state.kind == ObjectKind.VIEW:
            self._register_relations(state.view_sql, {name.lower()})
            return self.lakehouse.spark.sql(state.view_sql)
        try:
            return self.reader.read(state, with_row_ids=with_row_ids)
        except PySparkException as exc:
            raise storage_error(exc, self.lakehouse.store.table_name) or exc from None

    def _register_relations(self, sql: str, seen: set[str]) -> None:
        """The relations a view's SQL names as session temp views of this commit, so the view reads in any
        session, also one dbt never set up."""
        register_relations(self.lakehouse.spark, sql, seen, self.has_table, self.state, self.reader.read)


class BranchOps:
    """`lh.branch("dev").insert(...)`: each operation of Transaction as its own commit."""

    def __init__(self, lakehouse: "Lakehouse", name: str):
        self._lakehouse, self._name = lakehouse, name

    def __getattr__(self, operation: str):
        if not hasattr(Transaction, operation) or operation.startswith("_"):
            raise AttributeError(operation)

        def run(*args, message: str = "", author: str | None = None, **kwargs):
            with self._lakehouse.transaction(self._name, message=message, author=author) as tx:
                # one operation: if the head moves before it lands, it runs again there (commit_replay.py)
                tx.replayable(lambda again: getattr(again, operation)(*args, **kwargs))
            return tx.result

        return run


class Lakehouse:
    """A catalog and its warehouse (catalog/binding.py checks that they belong together).

    `create=True` (the default) makes a new catalog when the URL holds none and the warehouse is empty;
    `create=False` only opens an existing pair. `Lakehouse.init` is the explicit create, `Lakehouse.upgrade`
    migrates a catalog written by an older version (`branchspark init` / `branchspark upgrade`).
    """

    def __init__(self, spark: SparkSession | Callable[[], SparkSession] | None, warehouse: str,
                 catalog_url: str | None = None, fault: Callable[[str], None] | None = None, create: bool = True,
                 _opening: Opening | None = None):
        # A session, or what makes one on first data access (None: spark_session.local_session), so metadata
        # commands need no JVM; the command line hands in its own (the warm local engine on request).
        self._spark = None if spark is None or callable(spark) else spark
        self._spark_factory = spark if callable(spark) else local_session
        self.warehouse = Warehouse(warehouse)  # relative paths are taken from the working directory
        self.catalog_url = (catalog_url or os.environ.get(CATALOG_URL_ENV)
                            or default_catalog_url(self.warehouse.root))
        opening = _opening or (Opening.CREATE_IF_EMPTY if create else Opening.EXISTING)
        self.store = open_catalog(self.catalog_url, self.warehouse, opening)
        self.fault = fault or fault_from_env()
        # an action on a DataFrame this Lakehouse handed out that fails on one of its files names the file's
        # table in one line (spark_errors.py); again once the session exists, which may have reset py4j's hook
        translate_action_errors(self.store)

    @classmethod
    def init(cls, spark: SparkSession | Callable[[], SparkSession] | None, warehouse: str,
             catalog_url: str | None = None) -> "Lakehouse":
        """Create a catalog and its warehouse (or open the pair if it exists): `branchspark init`."""
        return cls(spark, warehouse, catalog_url, _opening=Opening.INIT)

    @classmethod
    def upgrade(cls, spark: SparkSession | Callable[[], SparkSession] | None, warehouse: str,
                catalog_url: str | None = None) -> "Lakehouse":
        """Migrate a catalog written by an older branchspark, and bind it to its warehouse: `branchspark upgrade`."""
        return cls(spark, warehouse, catalog_url, _opening=Opening.UPGRADE)

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            self._spark = self._spark_factory()
            translate_action_errors()
        return self._spark

    @property
    def spark_started(self) -> bool:
        """Whether this Lakehouse has a Spark session yet (metadata commands never start one)."""
        return self._spark is not None

    @property
    def writer(self) -> SegmentWriter:
        return SegmentWriter(self.spark, self.warehouse)

    # ------------------------------------------------------------- versions
    def resolve(self, ref: str | datetime = MAIN, as_of=None) -> CommitInfo:
        """A commit from a branch name, a commit id (or unique prefix), `branch@time`, or a time on main."""
        if isinstance(ref, datetime):
            ref, as_of = MAIN, ref
        ref = str(ref)
        if "@" in ref and as_of is None:
            ref, as_of = ref.split("@", 1)
        branch = self.store.find_branch(ref)
        if branch is not None:
            commit = self.store.get_commit(branch.head)
        else:
            commit = self.commit_by_id(ref)
            if commit is None:
                try:
                    moment = parse_time(ref)
                except errors.InvalidArgument:
                    raise errors.CommitNotFound(ref) from None
                return self.resolve(MAIN, moment)
        if as_of is None:
            return commit
        moment = parse_time(as_of)
        for candidate in self.store.first_parents(commit.id):
            if candidate.ts <= moment:
                return candidate
        raise errors.CommitNotFound(f"{ref}@{as_of}")

    def commit_by_id(self, ref: str) -> CommitInfo | None:
        """The commit with this id or unique id prefix (at least 6 characters), or None."""
        if len(ref) == 32:
            try:
                return self.store.get_commit(ref.lower())
            except errors.CommitNotFound:
                return None
        return self.store.find_commit_by_prefix(ref)

    def snapshot(self, ref: str | datetime = MAIN, as_of=None) -> Snapshot:
        commit = self.resolve(ref, as_of)
        label = str(ref) if as_of is None else f"{ref}@{as_of}"
        return Snapshot(self, commit, label)

    def read(self, table: str, at: str | datetime = MAIN, as_of=None) -> DataFrame:
        return self.snapshot(at, as_of).read(table)

    # ------------------------------------------------------------- branches
    def create_branch(self, name: str, source: str | datetime = MAIN, as_of=None,
                      run_branch: bool = False) -> BranchInfo:
        """`run_branch=True`: a dbt invocation's own branch, which `gc(drop_run_branches_after=...)` may expire."""
        check_branch_name(name)
        commit = self.resolve(source, as_of)
        return self.store.create_branch(name, commit.id, created_from=str(source) if as_of is None
                                        else f"{source}@{as_of}", run_branch=run_branch)

    def drop_branch(self, name: str, force: bool = False) -> None:
        """Drop a branch. A protected one is refused; one with commits no other branch reaches needs
        `force=True` (git's `branch -d` / `-D`)."""
        if name == MAIN:
            raise errors.InvalidArgument("branch 'main' is the catalog's default branch and cannot be dropped")
        branch = self.store.get_branch(name)
        if branch.protected:
            raise errors.ProtectedBranch(name, action="dropped")
        if not force:
            others = [b.head for b in self.store.list_branches() if b.name != name]
            only_here = self.store.reachable_commits([branch.head]) - self.store.reachable_commits(others)
            if only_here:
                raise errors.InvalidArgument(
                    f"branch '{name}' has {len(only_here)} commit(s) no other branch reaches: merge it first, or "
                    f"drop it anyway with force (`branchspark branch drop --force {name}`; "
                    f"drop_branch('{name}', force=True) in Python; `--args '{{name: {name}, force: true}}'` in dbt)")
        self.store.drop_branch(name)

    def branch_exists(self, name: str) -> bool:
        return self.store.find_branch(name) is not None

    def list_branches(self) -> list[BranchInfo]:
        """The user's branches (not the hidden ones a retrying writer holds for a moment)."""
        return [b for b in self.store.list_branches() if not is_hidden_branch(b.name)]

    def get_branch(self, name: str) -> BranchInfo:
        return self.store.get_branch(name)

    def protect_branch(self, name: str, protected: bool = True) -> None:
        self.store.set_protected(name, protected)

    def log(self, ref: str = MAIN, limit: int | None = None) -> list[CommitInfo]:
        """Commits reachable from `ref`, newest first, each with its operations."""
        out = []
        for commit in self.store.ancestors(self.resolve(ref).id):
            if limit is not None and len(out) >= limit:
                break
            out.append(CommitInfo(commit.id, commit.seq, commit.ts, commit.parents, commit.message, commit.author,
                                  self.store.operations(commit.id), commit.sources))
        return out

    # ------------------------------------------------------------------ sql
    def sql(self, text: str, branch: str = MAIN, author: str | None = None) -> DataFrame:
        """Run SQL on `branch` (SPEC 9): Spark SQL over the branch's tables (a write is one commit on it) and
        the branch statements (`MERGE BRANCH dev`, `SHOW LOG`, ...). Several statements run in order; the
        last one's rows come back. See docs/sql.md."""
        return self.sql_session(branch, author).sql(text)

    def sql_session(self, branch: str = MAIN, author: str | None = None) -> SqlSession:
        """A SQL session on `branch` that keeps its branch across calls (USE BRANCH switches it)."""
        return SqlSession(self, branch, author)

    # --------------------------------------------------------------- writes
    def transaction(self, branch: str, message: str = "", author: str | None = None,
                    allow_protected: bool = False) -> Transaction:
        return Transaction(self, branch, message=message, author=author, allow_protected=allow_protected,
                           land_on_moved_head=land_on_moved_head)

    def merge(self, src: str | None, into: str = MAIN, *, strategy: str = "merge", on_conflict="abort",
              dry_run: bool = False, message: str | None = None, author: str | None = None, drivers=None,
              continue_: bool = False, views=(), count_rows: bool = False):
        """MERGE BRANCH src TO into (SPEC 3): one merge commit on `into`; see merge/strategies.py.
        Paused merges, drivers and rebase: docs/interactive-merge.md. Only databases and tables merge,
        unless `views` names views of src to carry in the same commit (merge/views.py; dbt does). A dry run
        counts the rows each table would gain and lose, as the web view's compare counts them (diff/counts.py);
        `count_rows` counts what a merge commit changed on `into` (after it landed: a Spark job over the
        changed rows where the catalog cannot say), as the reports of SQL, the command line and dbt show."""
        result = merge_branch(self, src, into, strategy=strategy, on_conflict=on_conflict, dry_run=dry_run,
                              message=message, author=author, drivers=drivers, continue_=continue_, views=views)
        if dry_run:
            return count_dry_run(self, result)
        return count_merged(self, result) if count_rows else result

    def merge_status(self, dest: str = MAIN) -> dict:
        return interactive.status(self, dest)

    def resolve_conflicts(self, dest: str = MAIN, table: str | None = None, *, take: str | None = None,
                          where: str | None = None, set: dict | None = None) -> dict:
        return interactive.resolve(self, dest, table, take=take, where=where, set=set)

    def conflict_views(self, dest: str = MAIN) -> dict[str, str]:
        return interactive.register_views(self, dest)

    def abort_merge(self, dest: str = MAIN) -> dict:
        return interactive.abort(self, dest)

    def branch(self, name: str) -> BranchOps:
        self.store.get_branch(name)
        return BranchOps(self, name)

    def restore_table(self, branch: str, table: str, to, as_of=None, message: str = "") -> CommitInfo | None:
        source = self.snapshot(to, as_of)
        state = source.state(table)
        database = source.ns.databases[state.database_id][1]
        with self.transaction(branch, message=message or f"restore {table} to {source.commit.short_id}") as tx:
            tx.restore_table(table, state, database)
        return tx.commit_info

    def restore_branch(self, branch: str, to, as_of=None, message: str = "") -> CommitInfo | None:
        """One new commit on `branch` whose catalog equals the one at `to`."""
        target = self.store.root(self.resolve(to, as_of).id)
        with self.transaction(branch, message=message or f"restore {branch} to {to}") as tx:
            current = tx.ns
            for database_id in set(current.databases) | set(target.databases):
                before, after = current.databases.get(database_id), target.databases.get(database_id)
                if before and not after:
                    tx.record(ObjectKind.DATABASE, database_id, before[1], Op.DROP)
                elif after and not before:
                    tx.record(ObjectKind.DATABASE, database_id, after[1], Op.CREATE, restored=True)
                elif before[0] != after[0]:
                    tx.record(ObjectKind.DATABASE, database_id, after[1], Op.SET_PROPERTIES, restored=True)
            for table_id in set(current.tables) | set(target.tables):
                before, after = current.tables.get(table_id), target.tables.get(table_id)
                if before and not after:
                    tx.record(ObjectKind.TABLE, table_id, current.full_name(table_id), Op.DROP)
                elif after and not before:
                    tx.record(ObjectKind.TABLE, table_id, after[2], Op.CREATE, restored=True)
                elif before[0] != after[0]:
                    old, new = self.store.tables([before[0], after[0]]).values()
                    if old.schema_id != new.schema_id:
                        tx.record(ObjectKind.TABLE, table_id, after[2], Op.ALTER_COLUMN, action="restore")
                    tx.record(ObjectKind.TABLE, table_id, after[2], Op.OVERWRITE, restored=True)
            current.databases = {k: list(v) for k, v in target.databases.items()}
            current.tables = {k: list(v) for k, v in target.tables.items()}
            current.staged_databases.clear()
            current.staged_tables.clear()
        return tx.commit_info

    # --------------------------------------------------------------- import
    def import_table(self, source: str, name: str, *, branch: str = MAIN, format: str | None = None,
                     version: int | str | None = None, primary_key: list[str] | None = None,
                     message: str = "", author: str | None = None) -> CommitInfo:
        """Make table `name` on `branch` of the table at `source` (a Parquet directory, Hive-partitioned or not; a
        Delta table at its current or a given version; an Iceberg table at its current or a given snapshot; or a
        table of Spark's catalogs by name, `spark_catalog.raw.t`, read where its catalog says it lies) in
        ONE commit that writes no data file: its files become borrowed segments, which gc never deletes, and
        rows its deletes hide become tombstones (docs/import.md). Bad input is one line, nothing committed."""
        table = read_source(source, format, version, spark=lambda: self.spark)
        at = f" at {table.format} version {table.version}" if table.version else ""
        with self.transaction(branch, message=message or f"import {name} from {table.location}{at}",
                              author=author) as tx:
            tx.replayable(lambda t: land_import(t, table, name, list(primary_key or [])))
        return tx.commit_info

    def refresh_import(self, name: str, *, branch: str = MAIN, source: str | None = None,
                       author: str | None = None) -> list[CommitInfo]:
        """Bring the later versions of the Delta or Iceberg table that `name` on `branch` was imported from, each as
        one commit of that version's own changes (its new files an insert, its removed files and new deletion vectors
        or position deletes a delete; both an update), so branch_changes and merges see them row by row
        (docs/import.md). Returns the
        commits made (none when the table is up to date). `source`, when given, must be where it was imported from."""
        table_id = self.snapshot(branch).state(name).id
        origin = recorded_source(self.log(branch), table_id)
        if origin is None:
            raise errors.InvalidArgument(f"table {name} on branch '{branch}' was not imported: nothing to refresh")
        location = origin.get("refreshed_from") or origin["imported_from"]
        if source is not None and normalized_location(source) != location:
            raise errors.InvalidArgument(f"table {name} on branch '{branch}' was imported from {location}, not "
                                         f"{normalized_location(source)}")
        source_format, since = origin["source_format"], int(origin["source_version"])
        if source_format not in ("delta", "iceberg"):
            raise errors.InvalidArgument(f"cannot refresh {name}: a {source_format} import has no versions to follow "
                                         f"(Delta and Iceberg imports do); import it again")
        changes = delta_changes(location, since) if source_format == "delta" else iceberg_changes(location, since)
        commits = []
        for change in changes:
            with self.transaction(branch, message=f"refresh {name} from {location} at {source_format} version "
                                                  f"{change.version}", author=author) as tx:
                tx.replayable(lambda t, c=change: land_refresh(t, name, c, location, source_format))
            if tx.commit_info is not None:
                commits.append(tx.commit_info)
        return commits

    def take_ownership(self, name: str, *, branch: str = MAIN, source: str | None = None) -> int:
        """Hand the borrowed files that table `name` on `branch` reads to branchspark, once their source is retired:
        from then on gc deletes them where they lie when no commit reachable from a branch reads them. Files the
        table no longer reads on that branch stay borrowed. Returns the number of files handed over."""
        state = self.snapshot(branch).state(name)
        segments = [s for s in self.store.segments(state.segments).values() if s.borrowed]
        if not segments:
            raise errors.InvalidArgument(f"table {name} on branch '{branch}' reads no borrowed file: nothing to take")
        if source is not None and not all(s.path.startswith(normalized_location(source)) for s in segments):
            raise errors.InvalidArgument(f"table {name} on branch '{branch}' reads files outside "
                                         f"{normalized_location(source)}: name the source it was imported from")
        self.store.take_ownership(s.id for s in segments)
        return sum(len(s.files) for s in segments)

    # ------------------------------------------------------------------- gc
    def gc(self, grace_seconds: float = 3600.0, dry_run: bool = False,
           drop_run_branches_after: float | None = None) -> GcReport:
        """Delete files that no commit reachable from a branch references.

        Files younger than `grace_seconds` are kept: a writer may be between writing them and committing.
        With `drop_run_branches_after` (seconds), kept dbt run branches whose head is older are dropped first.
        Hidden branches of retrying writers keep their files; one older than the grace period belongs to a
        writer that crashed, and is dropped.
        """
        branches = self.store.list_branches()
        report = GcReport()
        if drop_run_branches_after is not None:
            expiry = utcnow() - timedelta(seconds=drop_run_branches_after)
            runs = [b for b in branches if b.run_branch]  # recorded at creation, not guessed from the name
            run_heads = self.store.commits([b.head for b in runs])
            for branch in runs:
                if run_heads[branch.head].ts <= expiry:  # commit times are naive UTC
                    report.dropped_branches.append(branch.name)
                    if not dry_run:
                        self.store.drop_branch(branch.name)
            branches = [b for b in branches if b.name not in report.dropped_branches]
        if not dry_run:
            for stale in [b for b in branches if is_hidden_branch(b.name)
                          and (utcnow() - b.created_at).total_seconds() > grace_seconds]:
                self.store.drop_branch(stale.name)
                branches.remove(stale)
        heads = [b.head for b in branches] + self.store.pinned_commits()
        commits = self.store.reachable_commits(heads)
        version_ids = {entry[0] for cid in commits for entry in self.store.root(cid).tables.values()}
        tables = self.store.tables(version_ids).values()
        segment_ids = {s for t in tables for s in t.segments}
        tombstone_ids = {s for t in tables for s in t.tombstones}
        referenced = self.store.segments(segment_ids).values()
        keep_roots = {_segment_root(s.path) for s in referenced if not s.external}
        # Outside the warehouse (imports): borrowed files are counted, never deleted; files handed over
        # (take_ownership) are deleted where they lie once nothing reads them, as the warehouse's own orphans.
        external = self.store.external_segments()
        borrowed = [e for e in external if e.borrowed]
        report.borrowed_files = sum(len(s.files) for s in borrowed)
        report.unreferenced_borrowed_files = sum(len(s.files) for s in borrowed if s.id not in segment_ids)
        handed_over = [f"{e.path}/{name}" for e in external if not e.borrowed and e.id not in segment_ids
                       for name in e.files]
        keep_roots |= {t.path for t in self.store.tombstones(tombstone_ids).values()}
        keep_roots |= metadata_roots(tables)  # Iceberg metadata of `branchspark serve`, per table version
        report.referenced_segments, report.referenced_tombstones = len(segment_ids), len(tombstone_ids)
        cutoff = time.time() - grace_seconds
        # only the folders of tables this catalog knows: files elsewhere are no business of its gc
        table_dirs = sorted(self.warehouse.table_dir(t) for t in self.store.known_table_ids())
        for path, mtime in (entry for table_dir in table_dirs for entry in self.warehouse.list_files(table_dir)):
            if _under_any(path, keep_roots):
                report.referenced_files += 1
            elif mtime > cutoff:
                report.young_orphans.append(path)
            else:
                report.deleted_files.append(path)
                if not dry_run:
                    self.warehouse.delete_file(path)
                    if self.fault and len(report.deleted_files) == 1:
                        self.fault("gc.mid_delete")
        for uri in handed_over:
            if not dry_run:
                delete_external_file(uri)
            report.deleted_files.append(uri)
        report.kept_files = report.referenced_files + len(report.young_orphans)
        if not dry_run:
            self._remove_empty_dirs(keep_roots, table_dirs)
        return report

    def _remove_empty_dirs(self, keep_roots: set[str], table_dirs: list[str]) -> None:
        for table_dir in table_dirs:
            for kind in ("data", "tombstones"):
                for directory in self.warehouse.list_dirs(f"{table_dir}/{kind}"):
                    if directory not in keep_roots and not self.warehouse.list_files(directory):
                        self.warehouse.delete_dir(directory)


def _segment_root(path: str) -> str:
    """tables/<id>/data/_bs_seg=<name>[/p=1] -> tables/<id>/data/_bs_seg=<name>"""
    head, tail = path.split(f"{SEGMENT_COLUMN}=", 1)
    return f"{head}{SEGMENT_COLUMN}={tail.split('/', 1)[0]}"


def _under_any(path: str, roots: set[str]) -> bool:
    parts = path.split("/")
    return any("/".join(parts[:i]) in roots for i in range(1, len(parts)))
