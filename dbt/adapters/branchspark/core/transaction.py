"""A transaction on one branch: staged operations that land as one atomic commit.

Each operation validates its input before writing anything, writes its new
files (segments, tombstones), stages new object versions and records the
operation kinds of SPEC section 2. `commit()` moves the branch head by
compare-and-swap; if the head moved meanwhile, the change lands on the new
head only when what it read and wrote did not change, or runs again there
when it is one replayable operation, or fails with WriteConflict: writers
are serializable (commit_replay.py). Files of a transaction that never
commits are garbage for `gc`.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame

from . import errors
from .spark_errors import storage_error
from .catalog.commits import CommitInfo, OpInfo, default_message
from .catalog.schema import Column, Schema
from .catalog.state import TableInfo, TableState
from .context import WriteContext
from .operations import ObjectKind, Op
from .row_writes import RowWrites
from .schema_writes import SchemaWrites
from .storage.reader import TableReader
from .write_dependencies import TrackingNamespace, TrackingReader


class Transaction(SchemaWrites, RowWrites):
    """Staged operations on one branch (their methods: schema_writes.py, row_writes.py) and their commit."""

    def __init__(self, lakehouse: WriteContext, branch: str, message: str = "", author: str | None = None,
                 allow_protected: bool = False, finishing: str | None = None,
                 land_on_moved_head: Callable[["Transaction"], CommitInfo | None] | None = None):
        """`land_on_moved_head`: what lands this write when its head moved (commit_replay.py, handed in by
        Lakehouse.transaction); without it a moved head fails the commit with StaleHead."""
        self.lakehouse = lakehouse
        self.store = lakehouse.store
        self.branch = branch
        self.message = message
        self.author = author
        self.allow_protected = allow_protected
        self.finishing = finishing  # the paused merge this transaction finishes: the one change its branch takes
        info = self.store.get_branch(branch)
        if info.protected and not allow_protected:
            raise errors.ProtectedBranch(branch)
        self.store.refuse_if_paused(branch, finishing)  # early; the commit checks again under the catalog lock
        self.base_head = info.head
        self.ns = TrackingNamespace(self.store, self.store.root(info.head), branch)
        self.depends = self.ns.depends  # what the result depends on: checked when the head moved
        self.operations: list[OpInfo] = []
        self.commit_info: CommitInfo | None = None
        self.merge_parent: str | None = None  # set by a merge: the commit merged in, the second parent
        self.sources: dict | None = None  # the external tables a dbt run read, recorded on its landing commit
        self.auto_retry = True  # land on a moved head, run again or refuse (commit_replay.py)
        self.land_on_moved_head = land_on_moved_head
        self.rerun: Callable[["Transaction"], Any] | None = None  # see replayable()
        self.result: Any = None  # what the replayable operation returned, on the head it landed on
        self._rerun_operations: int | None = None
        self._finalized = None
        self._done = False

    # ------------------------------------------------------------ plumbing
    @property
    def spark(self):
        return self.lakehouse.spark

    @property
    def reader(self) -> TableReader:
        return TrackingReader(self.spark, self.lakehouse.warehouse, self.ns)

    def replayable(self, operate: Callable[["Transaction"], Any]) -> Any:
        """Run `operate(self)` and return its result. When it is all this transaction does, it is replayable:
        if the branch head moves before the commit and changes what it read, it runs again on the new head
        (a fresh transaction) instead of failing. `operate` must depend only on its transaction and on
        values fixed when it was made (names, predicate and expression text, input DataFrames)."""
        alone = not self.operations and self._rerun_operations is None
        self.result = operate(self)
        self.rerun = operate if alone else None
        self._rerun_operations = len(self.operations) if alone else -1
        return self.result

    @property
    def rerunnable(self) -> bool:
        return self.rerun is not None and self._rerun_operations == len(self.operations)

    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None and not self._done:
            self.commit()
        elif exc is not None and not isinstance(exc, errors.BranchsparkError):
            # a write failing on the storage (a missing bucket, denied, the endpoint down): one line; the
            # catalog did not move, so nothing was changed
            fault = storage_error(exc, self.lakehouse.store.table_name)
            if fault is not None:
                raise fault from None

    def commit(self) -> CommitInfo | None:
        if self._done:
            raise errors.InvalidArgument("this transaction has already been committed; start a new one")
        self._done = True
        if not self.operations and self.merge_parent is None:
            return None
        if self.lakehouse.fault:
            # Every file of the change (a write's or a merge's) is written; the catalog has not moved.
            self.lakehouse.fault("merge.before_commit" if self.merge_parent else "write.before_commit")
        self._finalized = self.ns.finalize()
        try:
            self.commit_info = self.commit_on(self.branch)
        except errors.StaleHead:
            if not self.auto_retry or self.merge_parent is not None or self.land_on_moved_head is None:
                raise
            self.commit_info = self.land_on_moved_head(self)
        return self.commit_info

    def commit_on(self, branch: str) -> CommitInfo:
        """Commit the finalized change on `branch` (its own, or a hidden one at base_head) by compare-and-swap."""
        root, databases, tables = self._finalized
        return self.store.commit(
            branch, self.base_head, root, databases=databases, tables=tables,
            schemas=self.ns.new_schemas.values(), segments=self.ns.new_segments.values(),
            tombstones=self.ns.new_tombstones.values(), operations=self.operations,
            message=self.message or default_message(self.operations), author=self.author,
            merge_parent=self.merge_parent, allow_protected=self.allow_protected, finishing=self.finishing,
            fault=self.lakehouse.fault, sources=self.sources)

    def record(self, kind: ObjectKind, object_id: str, name: str, op: Op, **detail) -> None:
        """Note one operation of this commit (what merges and changes read back, merge/sides.py): the write
        methods here note their own; a merge, a run landing and the Lakehouse's metadata calls note theirs."""
        self.operations.append(OpInfo(str(kind), object_id, name, str(Op(op)), detail))

    def _seq(self) -> int:
        return self.store.allocate_seq()

    def _writable_table(self, name: str) -> TableState:
        state = self.ns.table(self.ns.table_id(name))
        if state.kind != ObjectKind.TABLE:
            raise errors.InvalidArgument(f"'{name}' is a view on branch '{self.branch}': write to a table instead")
        return state

    def _schema(self, state: TableState) -> Schema:
        return self.ns.schema(state.schema_id)

    @staticmethod
    def _column(table: str, schema: Schema, column: str) -> Column:
        found = schema.column(column)
        if found is None:
            raise errors.ColumnNotFound(column, table)
        return found

    def _resolve_columns(self, table: str, schema: Schema, columns) -> list[str]:
        """Columns as the table spells them; an unknown one is an error."""
        return [self._column(table, schema, column).name for column in columns]

    # ------------------------------------------------------------- reading
    def has_database(self, name: str) -> bool:
        return self.ns.database_id(name, required=False) is not None

    def has_table(self, name: str) -> bool:
        return self.ns.table_id(name, required=False) is not None

    def table(self, name: str) -> TableInfo:
        return self.ns.table_info(self.ns.table(self.ns.table_id(name)))

    def tables(self, database: str | None = None) -> list[TableInfo]:
        database_id = self.ns.database_id(database) if database else None
        return [self.ns.table_info(s) for s in self.ns.load_tables(self.ns.table_ids(database_id))]

    def read(self, name: str) -> DataFrame:
        state = self.ns.table(self.ns.table_id(name))
        if state.kind == ObjectKind.VIEW:
            return self.spark.sql(state.view_sql)
        return self.reader.read(state)
