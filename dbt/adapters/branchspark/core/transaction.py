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

import itertools
import uuid
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from . import errors, spark_errors
from .catalog.namespace import check_name, split_name
from .catalog.schema_rules import check_widening, parse_type
from .catalog.state import Column, CommitInfo, DatabaseState, OpInfo, Schema, TableInfo, TableState
from .context import WriteContext
from .storage.difference import NEW, OLD, SIDE, counted_changes, difference, differs
from .storage.layout import SEGMENT_COLUMN
from .storage.reader import PREV_FILE, PREV_POS, ROW_FILE, ROW_POS, TableReader, quote
from .storage.writer import first_written_in, side_by_side
from .write_dependencies import TrackingNamespace, TrackingReader


class Transaction:
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
            message=self.message or _summary(self.operations), author=self.author,
            merge_parent=self.merge_parent, allow_protected=self.allow_protected, finishing=self.finishing,
            fault=self.lakehouse.fault)

    def record(self, kind: str, object_id: str, name: str, op: str, **detail) -> None:
        """Note one operation of this commit (what merges and changes read back, merge/sides.py): the write
        methods here note their own; a merge, a run landing and the Lakehouse's metadata calls note theirs."""
        self.operations.append(OpInfo(kind, object_id, name, op, detail))

    def _seq(self) -> int:
        return self.store.allocate_seq()

    def _writable_table(self, name: str) -> TableState:
        state = self.ns.table(self.ns.table_id(name))
        if state.kind != "table":
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
        if state.kind == "view":
            return self.spark.sql(state.view_sql)
        return self.reader.read(state)

    # ----------------------------------------------------------- databases
    def create_database(self, name: str, properties: dict | None = None, if_not_exists: bool = False) -> None:
        check_name("database", name)
        if self.ns.database_id(name, required=False) is not None:
            if if_not_exists:
                return
            raise errors.AlreadyExists("database", name, self.branch)
        state = DatabaseState(None, uuid.uuid4().hex, name, dict(properties or {}))
        self.ns.put_database(state)
        self.record("database", state.id, name, "create")

    def drop_database(self, name: str, cascade: bool = False, if_exists: bool = False) -> None:
        database_id = self.ns.database_id(name, required=not if_exists)
        if database_id is None:
            return
        contained = self.ns.table_ids(database_id)
        if contained and not cascade:
            raise errors.InvalidArgument(f"database '{name}' on branch '{self.branch}' still has {len(contained)} "
                                         f"tables or views: drop them first or use cascade")
        for table_id in contained:
            self._drop_table_id(table_id)
        self.ns.remove_database(database_id)
        self.record("database", database_id, name, "drop")

    def rename_database(self, old: str, new: str) -> None:
        check_name("database", new)
        database_id = self.ns.database_id(old)
        if self.ns.database_id(new, required=False) not in (None, database_id):
            raise errors.AlreadyExists("database", new, self.branch)
        state = self.ns.database(database_id)
        self.ns.put_database(state.evolve(name=new))
        self.record("database", database_id, new, "modify name", old_name=state.name)

    def set_database_properties(self, name: str, properties: dict) -> None:
        state = self.ns.database(self.ns.database_id(name))
        self.ns.put_database(state.evolve(properties={**state.properties, **{str(k): str(v) for k, v in
                                                                             properties.items()}}))
        self.record("database", state.id, state.name, "set properties", properties=dict(properties))

    def unset_database_properties(self, name: str, keys: list[str]) -> None:
        state = self.ns.database(self.ns.database_id(name))
        missing = [k for k in keys if k not in state.properties]
        if missing:
            raise errors.InvalidArgument(f"database '{name}' has no properties {missing} on branch "
                                         f"'{self.branch}': see its properties with `branchspark show`")
        self.ns.put_database(state.evolve(properties={k: v for k, v in state.properties.items() if k not in keys}))
        self.record("database", state.id, state.name, "unset properties", keys=list(keys))

    # -------------------------------------------------------------- tables
    def create_table(self, name: str, schema: T.StructType, partition_by=None, primary_key=None,
                     properties: dict | None = None, if_not_exists: bool = False) -> None:
        db_name, table_name = split_name(name)
        check_name("table", table_name)
        database_id = self.ns.database_id(db_name)
        if self.ns.table_id(name, required=False) is not None:
            if if_not_exists:
                return
            raise errors.AlreadyExists("table", name, self.branch)
        partition_by, primary_key = list(partition_by or []), list(primary_key or [])
        columns, seen = [], set()
        column_ids = self.store.allocate_seqs(len(schema.fields)) if schema.fields else []
        for column_id, field in zip(column_ids, schema.fields):
            check_name("column", field.name)
            if field.name.lower() in seen:
                raise errors.InvalidArgument(f"column '{field.name}' appears twice in the schema of '{name}'")
            seen.add(field.name.lower())
            in_key = field.name.lower() in {k.lower() for k in primary_key}
            columns.append(Column(column_id, field.name, field.dataType.json(), field.nullable and not in_key))
        for kind, chosen in (("partition", partition_by), ("primary key", primary_key)):
            unknown = [c for c in chosen if c.lower() not in seen]
            if unknown:
                raise errors.InvalidArgument(f"{kind} column(s) {unknown} of '{name}' are not in its schema")
        schema_version = Schema(uuid.uuid4().hex, tuple(columns))
        names = {c.name.lower(): c.name for c in columns}
        table_id = uuid.uuid4().hex
        seq = self._seq()
        state = TableState(None, table_id, database_id, table_name, "table", dict(properties or {}),
                           tuple(names[c.lower()] for c in partition_by), tuple(names[c.lower()] for c in primary_key),
                           schema_version.id, ({"schema_id": schema_version.id, "seq": seq, "visible": True},))
        self.ns.add_schema(schema_version, table_id)
        self.ns.put_table(state)
        self.record("table", table_id, name, "create", columns=[c.name for c in columns],
                     partition_by=list(state.partition_by), primary_key=list(state.primary_key))

    def create_table_as(self, name: str, df: DataFrame, partition_by=None, primary_key=None,
                        properties: dict | None = None, key_checked: bool = False) -> None:
        """Create the table with `df`'s rows. key_checked: the caller has already checked that `df` has
        no NULL and no repeat in `primary_key` (so the write does not check it again)."""
        # As in Spark's CTAS, columns of a query result are nullable (the key aside).
        nullable = T.StructType([T.StructField(f.name, f.dataType, True) for f in df.schema.fields])
        self.create_table(name, nullable, partition_by, primary_key, properties)
        self.insert(name, df, key_checked=key_checked)

    def replace_table(self, name: str, df: DataFrame, partition_by=None, primary_key=None,
                      properties: dict | None = None, key_checked: bool = False) -> None:
        """Create the table, or overwrite it with `df`, first altering columns to `df`'s schema.
        key_checked: as in create_table_as."""
        table_id = self.ns.table_id(name, required=False)
        if table_id is not None and self.ns.table(table_id).kind == "view":
            self.drop_table(name)
            table_id = None
        if table_id is None:
            self.create_table_as(name, df, partition_by, primary_key, properties, key_checked=key_checked)
            return
        self.sync_columns(name, df.schema, drop_missing=True)
        state = self.ns.table(table_id)
        if partition_by is not None and list(partition_by) != list(state.partition_by):
            self.set_partitioning(name, partition_by)
        if primary_key is not None and [k.lower() for k in primary_key] != [k.lower() for k in state.primary_key]:
            self.set_primary_key(name, primary_key)
        if properties:
            self.set_table_properties(name, properties)
        self.overwrite(name, df, key_checked=key_checked and primary_key is not None)

    def sync_columns(self, name: str, target: T.StructType, drop_missing: bool) -> None:
        """Alter the table's columns towards `target`: add new ones, widen or replace changed types."""
        schema = self._schema(self._writable_table(name))
        wanted = {f.name.lower(): f for f in target.fields}
        for column in schema.columns:
            field = wanted.get(column.name.lower())
            if field is None:
                if drop_missing:
                    self.drop_column(name, column.name)
            elif field.dataType.json() != column.type_json:
                try:
                    self.alter_column_type(name, column.name, field.dataType)
                except errors.InvalidSchemaChange:
                    if not drop_missing:
                        raise
                    # A rebuild replaces every row, so an incompatible type becomes a new column.
                    self.drop_column(name, column.name)
                    self.add_column(name, field.name, field.dataType)
        current = {c.name.lower() for c in self._schema(self._writable_table(name)).columns}
        for field in target.fields:
            if field.name.lower() not in current:
                self.add_column(name, field.name, field.dataType)

    def drop_table(self, name: str, if_exists: bool = False) -> None:
        table_id = self.ns.table_id(name, required=not if_exists)
        if table_id is not None:
            self._drop_table_id(table_id)

    def _drop_table_id(self, table_id: str) -> None:
        state = self.ns.table(table_id)
        name = self.ns.full_name(table_id)
        self.ns.remove_table(table_id)
        self.record(state.kind, table_id, name, "drop")

    def rename_table(self, old: str, new: str) -> None:
        table_id = self.ns.table_id(old)
        db_name, table_name = split_name(new)
        check_name("table", table_name)
        database_id = self.ns.database_id(db_name)
        if self.ns.table_id(new, required=False) not in (None, table_id):
            raise errors.AlreadyExists("table", new, self.branch)
        state = self.ns.table(table_id)
        self.ns.put_table(state.evolve(name=table_name, database_id=database_id))
        self.record(state.kind, table_id, new, "alter name", old_name=old)

    def set_table_properties(self, name: str, properties: dict) -> None:
        state = self.ns.table(self.ns.table_id(name))
        props = {str(k): str(v) for k, v in properties.items()}
        self.ns.put_table(state.evolve(properties={**state.properties, **props}))
        self.record(state.kind, state.id, name, "alter properties", set=props)

    def unset_table_properties(self, name: str, keys: list[str]) -> None:
        state = self.ns.table(self.ns.table_id(name))
        missing = [k for k in keys if k not in state.properties]
        if missing:
            raise errors.InvalidArgument(f"table '{name}' has no properties {missing} on branch '{self.branch}'")
        self.ns.put_table(state.evolve(properties={k: v for k, v in state.properties.items() if k not in keys}))
        self.record(state.kind, state.id, name, "alter properties", unset=list(keys))

    def set_partitioning(self, name: str, columns: list[str]) -> None:
        state = self._writable_table(name)
        schema = self._schema(state)
        resolved = self._resolve_columns(name, schema, columns)
        self.ns.put_table(state.evolve(partition_by=tuple(resolved)))
        self.record("table", state.id, name, "alter partition", partition_by=resolved,
                     old_partition_by=list(state.partition_by))

    def set_primary_key(self, name: str, columns: list[str]) -> None:
        state = self._writable_table(name)
        schema = self._schema(state)
        resolved = self._resolve_columns(name, schema, columns)
        if state.segments and resolved:
            duplicates = (self.reader.read(state).groupBy(*[quote(c) for c in resolved]).count()
                          .filter("count > 1").limit(1).count())
            if duplicates:
                raise errors.InvalidSchemaChange(f"cannot make {resolved} the primary key of '{name}': some keys "
                                                 f"appear more than once; remove the duplicates first")
        self.ns.put_table(state.evolve(primary_key=tuple(resolved)))
        self.record("table", state.id, name, "alter properties", primary_key=resolved)

    # ------------------------------------------------------------- columns
    def _new_schema(self, name: str, state: TableState, columns: list[Column], **detail) -> None:
        schema = Schema(uuid.uuid4().hex, tuple(columns))
        self.ns.add_schema(schema, state.id)
        entry = {"schema_id": schema.id, "seq": self._seq(), "visible": True}
        self.ns.put_table(state.evolve(schema_id=schema.id, schema_history=state.schema_history + (entry,)))
        self.record("table", state.id, name, "alter column", **detail)

    def add_column(self, name: str, column: str, type_, nullable: bool = True, default: str | None = None) -> None:
        state = self._writable_table(name)
        schema = self._schema(state)
        check_name("column", column)
        if schema.column(column) is not None:
            raise errors.AlreadyExists("column", f"{name}.{column}", self.branch)
        data_type = parse_type(type_, self.spark)
        if not nullable and default is None and state.segments and not self.reader.read(state).isEmpty():
            raise errors.InvalidSchemaChange(f"cannot add NOT NULL column '{column}' without a default to '{name}', "
                                             f"which has rows: give a default or make it nullable")
        if default is not None:
            self._check_default(default, data_type, column)
        new = Column(self._seq(), column, data_type.json(), nullable, default)
        self._new_schema(name, state, list(schema.columns) + [new], action="add",
                         column=column, column_id=new.id, type=data_type.simpleString(), nullable=nullable,
                         default=default)

    def drop_column(self, name: str, column: str) -> None:
        state = self._writable_table(name)
        schema = self._schema(state)
        found = self._column(name, schema, column)
        if found.name in state.partition_by or found.name in state.primary_key:
            raise errors.InvalidSchemaChange(f"cannot drop column '{column}' of '{name}': it is part of the "
                                             f"partitioning or the primary key; change those first")
        if len(schema.columns) == 1:
            raise errors.InvalidSchemaChange(f"cannot drop '{column}', the last column of '{name}': drop the table")
        self._new_schema(name, state, [c for c in schema.columns if c.id != found.id], action="drop",
                         column=found.name, column_id=found.id)

    def rename_column(self, name: str, old: str, new: str) -> None:
        state = self._writable_table(name)
        schema = self._schema(state)
        found = self._column(name, schema, old)
        check_name("column", new)
        if schema.column(new) is not None and schema.column(new).id != found.id:
            raise errors.AlreadyExists("column", f"{name}.{new}", self.branch)
        columns = [replace(c, name=new) if c.id == found.id else c
                   for c in schema.columns]
        self._new_schema(name, state, columns, action="rename", column=new, old_name=found.name, column_id=found.id)
        rename = {found.name: new}
        current = self.ns.table(state.id)
        self.ns.put_table(current.evolve(partition_by=tuple(rename.get(c, c) for c in current.partition_by),
                                         primary_key=tuple(rename.get(c, c) for c in current.primary_key)))

    def alter_column_type(self, name: str, column: str, type_) -> None:
        state = self._writable_table(name)
        schema = self._schema(state)
        found = self._column(name, schema, column)
        new_type = parse_type(type_, self.spark)
        if new_type.json() == found.type_json:
            return
        check_widening(name, found.name, found.data_type, new_type)
        columns = [replace(c, type_json=new_type.json()) if c.id == found.id else c
                   for c in schema.columns]
        self._new_schema(name, state, columns, action="type", column=found.name, column_id=found.id,
                         old_type=found.type, type=new_type.simpleString())

    def set_nullable(self, name: str, column: str, nullable: bool) -> None:
        state = self._writable_table(name)
        schema = self._schema(state)
        found = self._column(name, schema, column)
        if found.nullable == nullable:
            return
        if not nullable and state.segments:
            nulls = self.reader.read(state).filter(F.col(quote(found.name)).isNull()).limit(1).count()
            if nulls:
                raise errors.InvalidSchemaChange(f"cannot make '{found.name}' of '{name}' NOT NULL: it holds NULLs; "
                                                 f"update them first")
        columns = [replace(c, nullable=nullable) if c.id == found.id else c
                   for c in schema.columns]
        self._new_schema(name, state, columns, action="nullability", column=found.name, column_id=found.id,
                         nullable=nullable)

    def set_default(self, name: str, column: str, default: str | None) -> None:
        state = self._writable_table(name)
        schema = self._schema(state)
        found = self._column(name, schema, column)
        if default is not None:
            self._check_default(default, found.data_type, found.name)
        columns = [replace(c, default=default) if c.id == found.id else c
                   for c in schema.columns]
        self._new_schema(name, state, columns, action="default", column=found.name, column_id=found.id,
                         default=default)

    def _check_default(self, default: str, data_type: T.DataType, column: str) -> None:
        try:
            self.spark.range(1).select(F.expr(default).cast(data_type)).schema  # analysed, not run
        except PySparkException as exc:
            raise errors.InvalidArgument(f"default '{default}' of column '{column}' is not a valid Spark SQL "
                                         f"expression: {_first_line(exc)}") from None

    # ----------------------------------------------------------------- DML
    def conform(self, name: str, state: TableState, df: DataFrame) -> DataFrame:
        """`df` as rows of the table: columns matched by name, cast to the table's types, missing ones
        filled with their default or NULL."""
        self.depends.inputs.append(df)  # it may read tables: checked if the head moves (commit_replay.py)
        schema = self._schema(state)
        incoming = {f.name.lower(): f for f in df.schema.fields}
        unknown = [f.name for f in df.schema.fields if schema.column(f.name) is None]
        if unknown:
            raise errors.InvalidArgument(f"the data has column(s) {unknown} that table '{name}' lacks on branch "
                                         f"'{self.branch}': add them with add_column, or leave them out")
        columns = []
        for column in schema.columns:
            field = incoming.get(column.name.lower())
            if field is None:
                value = F.expr(column.default) if column.default is not None else F.lit(None)
                columns.append(value.cast(column.data_type).alias(column.name))
            elif field.dataType.json() == column.type_json and field.name == column.name:
                columns.append(F.col(quote(field.name)))
            else:
                columns.append(F.col(quote(field.name)).cast(column.data_type).alias(column.name))
        return df.select(*columns)

    def _write_checked(self, name: str, state: TableState, rows: DataFrame, seq: int, kind: str,
                       key: list[str] | tuple = (), key_word: str = "primary key",
                       against_table: bool = False, key_checked: bool = False) -> tuple[list, DataFrame]:
        """Write `rows` (conformed) as new segments, then check them by reading the written files back:
        NOT NULL columns, no repeated `key` (unless key_checked: the caller did), and (against_table)
        no key the table already holds.

        The query behind `rows` runs once, for the write; the checks and whatever the caller derives
        from the new rows (returned as a scan of the new files) read the small new segment instead.
        If a check fails, the new files are deleted and nothing is staged."""
        schema = self._schema(state)
        writer = self.lakehouse.writer
        segments = writer.write_segments(state, schema, rows, seq, kind, fault=self.lakehouse.fault)
        try:
            written = self.reader.read_segments(state, schema, segments)
            self._check_rows(name, state, schema, written, list(key), key_word, against_table, key_checked)
        except BaseException:
            writer.discard_segments(segments)
            raise
        return segments, written

    def _check_rows(self, name: str, state: TableState, schema: Schema, rows: DataFrame, key: list[str],
                    key_word: str, against_table: bool, key_checked: bool = False) -> None:
        checked = {k.lower() for k in key} if key_checked else set()
        required = [quote(c.name) for c in schema.columns if not c.nullable and c.name.lower() not in checked]
        null_flag = F.expr(" OR ".join(f"{c} IS NULL" for c in required)) if required else None
        if key and not key_checked:
            # One aggregation answers both questions: the worst offending key, NULLs first (deterministic
            # whichever row offends). A top-1 needs no second shuffle.
            per_key = rows.groupBy(*[quote(k) for k in key]).agg(
                F.count(F.lit(1)).alias("_bs_n"),
                (F.max(null_flag.cast("int")) if required else F.lit(0)).alias("_bs_nulls"))
            worst = (per_key.filter((F.col("_bs_n") > 1) | (F.col("_bs_nulls") == 1))
                     .orderBy(F.desc("_bs_nulls")).limit(1).collect())
            has_nulls = bool(worst) and worst[0]["_bs_nulls"] == 1
            repeats = bool(worst) and not has_nulls
        else:
            has_nulls = bool(required) and rows.filter(null_flag).limit(1).count() > 0
            repeats = False
        if has_nulls:
            raise errors.InvalidArgument(f"the data has NULL in NOT NULL column(s) "
                                         f"{[c.name for c in schema.columns if not c.nullable]} of '{name}': "
                                         f"nothing was written")
        if repeats:
            raise errors.InvalidArgument(f"the data repeats {key_word} {key} values of '{name}': each key may "
                                         f"appear once; nothing was written")
        if against_table and key and state.segments:
            keys = [quote(k) for k in key]
            existing = self.reader.read(state).select(*keys)
            if rows.select(*keys).join(existing, list(key), "left_semi").limit(1).count():
                raise errors.InvalidArgument(f"the data has primary keys that '{name}' already holds on branch "
                                             f"'{self.branch}': use upsert (merge on the key) or delete them first")

    def insert(self, name: str, df: DataFrame, key_checked: bool = False) -> None:
        """Append `df`'s rows. key_checked: as in create_table_as."""
        state = self._writable_table(name)
        rows = self.conform(name, state, df)
        seq = self._seq()
        segments, _ = self._write_checked(name, state, rows, seq, "data", key=state.primary_key, against_table=True,
                                          key_checked=key_checked)
        self.ns.add_segments(segments)
        self.ns.put_table(state.evolve(segments=state.segments + tuple(s.id for s in segments)))
        self.record("table", state.id, name, "insert", seq=seq, segments_added=[s.id for s in segments])

    def _filtered(self, name: str, state: TableState, predicate: str | None) -> DataFrame:
        rows = self.reader.read(state, with_row_ids=True)
        if predicate is None:
            return rows
        try:
            return rows.filter(F.expr(predicate))
        except PySparkException as exc:
            raise errors.InvalidArgument(f"predicate '{predicate}' is not valid on '{name}': "
                                         f"{_first_line(exc)}") from None

    def _tombstone(self, name: str, state: TableState, doomed: DataFrame, seq: int):
        tombstone = self.lakehouse.writer.write_tombstone(state, self._schema(state), doomed, seq,
                                                          fault=self.lakehouse.fault)
        if tombstone is not None:
            self.ns.add_tombstone(tombstone)
        return tombstone

    def delete(self, name: str, predicate: str) -> int:
        """Delete the rows matching a Spark SQL predicate; returns how many."""
        state = self._writable_table(name)
        doomed = self._filtered(name, state, predicate)
        seq = self._seq()
        tombstone = self._tombstone(name, state, doomed, seq)
        if tombstone is None:
            return 0
        self.ns.put_table(state.evolve(tombstones=state.tombstones + (tombstone.id,)))
        self.record("table", state.id, name, "delete", seq=seq, predicate=predicate,
                     tombstones_added=[tombstone.id], segments_touched=first_written_in(tombstone),
                     rows=tombstone.row_count)
        return tombstone.row_count

    def update(self, name: str, predicate: str | None, assignments: dict[str, str]) -> int:
        """Set columns to Spark SQL expressions on the rows matching `predicate`; returns how many."""
        state = self._writable_table(name)
        schema = self._schema(state)
        resolved = {self._column(name, schema, column).name: expression for column, expression in assignments.items()}
        images = [(F.expr(resolved[c.name]) if c.name in resolved else F.col(quote(c.name)))
                  .cast(c.data_type).alias(c.name) for c in schema.columns]
        try:
            # A row the update leaves as it was is not changed: no tombstone, no new image (SPEC 4).
            matched = self._filtered(name, state, predicate).filter(
                differs([(F.expr(resolved[c.name]).cast(c.data_type), F.col(quote(c.name)), c.data_type)
                          for c in schema.columns if c.name in resolved]))
            new_rows = matched.select(*images, F.col(ROW_FILE).alias(PREV_FILE), F.col(ROW_POS).alias(PREV_POS))
        except PySparkException as exc:
            raise errors.InvalidArgument(f"update of '{name}' is not valid: {_first_line(exc)}") from None
        seq = self._seq()
        tombstone = self._tombstone(name, state, matched, seq)
        if tombstone is None:
            return 0
        segments = self.lakehouse.writer.write_segments(state, schema, new_rows, seq, "update",
                                                        fault=self.lakehouse.fault)
        self.ns.add_segments(segments)
        self.ns.put_table(state.evolve(segments=state.segments + tuple(s.id for s in segments),
                                       tombstones=state.tombstones + (tombstone.id,)))
        self.record("table", state.id, name, "update", seq=seq, predicate=predicate, set=dict(resolved),
                     tombstones_added=[tombstone.id], segments_added=[s.id for s in segments],
                     segments_touched=first_written_in(tombstone), rows=tombstone.row_count)
        return tombstone.row_count

    def upsert(self, name: str, df: DataFrame, key: list[str] | None = None) -> None:
        """Merge `df` on `key` (default: the primary key): matching rows are replaced, the rest inserted."""
        state = self._writable_table(name)
        schema = self._schema(state)
        key = list(key or state.primary_key)
        if not key:
            raise errors.InvalidArgument(f"upsert into '{name}' needs a key: give key=[...] or declare a primary key")
        resolved = self._resolve_columns(name, schema, key)
        rows = self.conform(name, state, df)
        seq = self._seq()
        # The new rows first: the key checks and the comparison then read the written segment, not the query.
        staged, written = self._write_checked(name, state, rows, seq, "data", key=resolved, key_word="key")
        if not state.segments:
            segments, tombstone = staged, None
        else:
            # Only the keys it writes: their current rows, compared by value with the new ones.
            matched = (self.reader.read(state, with_row_ids=True)
                       .join(written.select(*[quote(k) for k in resolved]), resolved, "left_semi"))
            changed = self._write_difference(state, matched, written, staged, seq)
            if changed is None:  # values that cannot be compared: every matched row is replaced
                changed = staged, self._discarding(staged, lambda: self._tombstone(name, state, matched, seq))
            segments, tombstone = changed
        self.ns.add_segments(segments)
        tombstones = state.tombstones + ((tombstone.id,) if tombstone else ())
        self.ns.put_table(state.evolve(segments=state.segments + tuple(s.id for s in segments),
                                       tombstones=tombstones))
        if tombstone is not None:
            self.record("table", state.id, name, "update", seq=seq, key=resolved, tombstones_added=[tombstone.id],
                         segments_touched=first_written_in(tombstone), rows=tombstone.row_count)
        if segments:
            self.record("table", state.id, name, "insert", seq=seq, segments_added=[s.id for s in segments])

    def _discarding(self, staged: list, action):
        """Run `action`; if it fails, delete the files of `staged` (segments no commit will reference)."""
        try:
            return action()
        except BaseException:
            self.lakehouse.writer.discard_segments(staged)
            raise

    def _write_difference(self, state: TableState, old: DataFrame, written: DataFrame, staged: list, seq: int):
        """Stage only what replacing `old` (rows with ids) by `written` (the rows of the `staged` segments)
        changes: a tombstone of the old rows without an identical new row, a segment of the new rows without
        an identical old row (the staged segments themselves when every new row is one). Rows both hold stay
        as they are: no tombstone, no new row, no change in the feed. Returns (segments, tombstone or None),
        or None, with nothing staged, when the rows cannot be compared by value."""
        schema = self._schema(state)
        writer, fault = self.lakehouse.writer, self.lakehouse.fault

        def stage():
            changed = difference(old, written, [c.name for c in schema.columns])
            if changed is None:
                return None
            changed = changed.cache()  # change-sized, read by both writes; filled by the job that counts it
            try:
                summary, added = counted_changes(changed)
                keep_staged = added and added == writer.row_count(staged)  # every new row is added
                writes = {}
                if summary.rows:
                    writes["tombstone"] = partial(writer.write_tombstone, state, schema,
                                                  changed.filter(F.col(SIDE) == OLD), seq, fault=fault, summary=summary)
                if added and not keep_staged:
                    new_rows = changed.filter(F.col(SIDE) == NEW).select(*[quote(c.name) for c in schema.columns])
                    writes["segments"] = partial(writer.write_segments, state, schema, new_rows, seq, "data", fault=fault)
                done = side_by_side(writes)
                tombstone = done.get("tombstone")
                if tombstone is not None:
                    self.ns.add_tombstone(tombstone)
                if keep_staged:
                    return staged, tombstone
                writer.discard_segments(staged)
                return done.get("segments", []), tombstone
            finally:
                changed.unpersist()

        return self._discarding(staged, stage)

    def overwrite(self, name: str, df: DataFrame, partitions=None, key_checked: bool = False) -> None:
        """Replace the whole table, or only some partitions (a {column: [values]} mapping, or "dynamic":
        the partitions present in `df`). key_checked: as in create_table_as."""
        state = self._writable_table(name)
        rows = self.conform(name, state, df)
        if partitions is None:
            self._overwrite_whole(name, state, rows, key_checked)
        else:
            self._overwrite_partitions(name, state, rows, partitions, key_checked)

    def _overwrite_whole(self, name: str, state: TableState, rows: DataFrame, key_checked: bool) -> None:
        """Replace every row, recorded as what the overwrite changed (SPEC 3.3, 4): a tombstone of the rows it
        removed and a segment of the rows it added, as multisets against the table it replaced. A rebuild that
        reproduces most rows changes only the others."""
        seq = self._seq()
        staged, written = self._write_checked(name, state, rows, seq, "data", key=state.primary_key,
                                              key_checked=key_checked)
        if state.segments:
            changed = self._write_difference(state, self.reader.read(state, with_row_ids=True), written, staged, seq)
        else:  # an empty table: every new row is added
            changed = staged, None
        if changed is None:  # values that cannot be compared: the new rows replace the table's segments
            self.ns.add_segments(staged)
            self.ns.put_table(state.evolve(segments=tuple(s.id for s in staged), tombstones=()))
            self.record("table", state.id, name, "overwrite", seq=seq, segments_added=[s.id for s in staged],
                         segments_removed=list(state.segments), tombstones_removed=list(state.tombstones))
            return
        self._commit_overwrite(name, state, seq, *changed)

    def _commit_overwrite(self, name: str, state: TableState, seq: int, segments: list, tombstone, **detail) -> None:
        """Add an overwrite's difference (new segments, a tombstone of removed rows) to the table; nothing
        when it changed no row."""
        if not segments and tombstone is None:
            return  # the same rows: nothing changed
        self.ns.add_segments(segments)
        self.ns.put_table(state.evolve(segments=state.segments + tuple(s.id for s in segments),
                                       tombstones=state.tombstones + ((tombstone.id,) if tombstone else ())))
        self.record("table", state.id, name, "overwrite", seq=seq, difference=True, **detail,
                     segments_added=[s.id for s in segments],
                     tombstones_added=[tombstone.id] if tombstone else [],
                     segments_touched=first_written_in(tombstone) if tombstone else [],
                     rows=tombstone.row_count if tombstone else 0)

    def _replace_rows(self, name: str, state: TableState, rows: DataFrame, kind: str, op: str,
                      check: bool = False, key_checked: bool = False) -> None:
        """Make `rows` the table's only segments (no tombstones): overwrite and compaction."""
        seq = self._seq()
        if check:
            segments, _ = self._write_checked(name, state, rows, seq, kind, key=state.primary_key,
                                              key_checked=key_checked)
        else:
            segments = self.lakehouse.writer.write_segments(state, self._schema(state), rows, seq, kind,
                                                            fault=self.lakehouse.fault)
        self.ns.add_segments(segments)
        self.ns.put_table(state.evolve(segments=tuple(s.id for s in segments), tombstones=()))
        self.record("table", state.id, name, op, seq=seq, segments_added=[s.id for s in segments],
                     segments_removed=list(state.segments), tombstones_removed=list(state.tombstones))

    def _overwrite_partitions(self, name: str, state: TableState, rows: DataFrame, partitions,
                              key_checked: bool) -> None:
        """Replace the rows of some partitions, recorded as what that changed (SPEC 2, 3.3, 4), as a whole
        overwrite is: only the rows of those partitions are compared, so the cost follows the partitions."""
        seq = self._seq()
        staged, written = self._write_checked(name, state, rows, seq, "data", key=state.primary_key,
                                              key_checked=key_checked)
        # The staged segments (one per partition directory) name the partitions the rows fall in: metadata.
        columns, wanted = self._discarding(staged, lambda: self._wanted_partitions(name, state, staged, partitions))
        if not wanted:
            self.lakehouse.writer.discard_segments(staged)
            return  # no partition named and no row: nothing changed
        segments = self.ns.segment_infos(state.segments)
        wanted_set = set(wanted)
        inside = [s for s in segments if tuple(s.partition_by[:len(columns)]) == tuple(columns)
                  and tuple(s.partition_values.get(c) for c in columns) in wanted_set]
        inside_ids = {s.id for s in inside}
        # Segments written before the table was partitioned this way hold rows of any partition.
        mixed = [s for s in segments if s.id not in inside_ids and tuple(s.partition_by) != tuple(state.partition_by)]
        old = self.reader.read(state.evolve(segments=tuple(s.id for s in inside)), with_row_ids=True)
        if mixed:
            old = old.unionByName(self.reader.read(state.evolve(segments=tuple(s.id for s in mixed)),
                                                   with_row_ids=True).filter(_in_partitions(columns, wanted)))
        changed = self._write_difference(state, old, written, staged, seq) if inside or mixed else (staged, None)
        if changed is None:  # values that cannot be compared: the old rows are deleted, the new ones added
            changed = staged, self._discarding(staged, lambda: self._tombstone(name, state, old, seq))
        self._commit_overwrite(name, state, seq, *changed, partitions=[list(w) for w in wanted],
                               partition_columns=columns)

    @staticmethod
    def _wanted_partitions(name: str, state: TableState, staged: list, partitions):
        """(partition columns, the partitions to replace as tuples of their values as strings): those the
        `staged` rows fall in ("dynamic"), or those named, which must hold every staged row."""
        if not state.partition_by:
            raise errors.InvalidArgument(f"table '{name}' is not partitioned: overwrite it whole, or set its "
                                         f"partitioning first")
        columns = list(state.partition_by)
        if partitions == "dynamic":
            return columns, sorted({_partition_value(s.partition_values, columns) for s in staged},
                                   key=lambda value: [(v is None, v or "") for v in value])
        unknown = [c for c in partitions if c not in columns]
        if unknown or len(partitions) != 1 and set(partitions) != set(columns):
            raise errors.InvalidArgument(f"partitions {partitions} do not match the partitioning {columns} "
                                         f"of '{name}'")
        keys = [c for c in columns if c in partitions]
        wanted = [tuple(str(v) if v is not None else None for v in combo)
                  for combo in itertools.product(*[partitions[c] for c in keys])]
        if any(_partition_value(s.partition_values, keys) not in set(wanted) for s in staged):
            raise errors.InvalidArgument(f"the data has rows outside partitions {partitions} of '{name}': "
                                         f"nothing was written")
        return keys, wanted

    def compact(self, name: str) -> None:
        """Rewrite live rows into fresh segments and fold tombstones in; reads return the same rows."""
        state = self._writable_table(name)
        if not state.segments:
            return
        rows = self.reader.read(state, with_row_ids=True).drop(SEGMENT_COLUMN)
        self._replace_rows(name, state, rows, "compaction", "compaction")

    # --------------------------------------------------------------- views
    def create_view(self, name: str, sql: str, replace: bool = True) -> None:
        db_name, view_name = split_name(name)
        check_name("view", view_name)
        database_id = self.ns.database_id(db_name)
        table_id = self.ns.table_id(name, required=False)
        if table_id is not None:
            existing = self.ns.table(table_id)
            if existing.kind != "view" or not replace:
                raise errors.AlreadyExists(existing.kind, name, self.branch)
            self.ns.put_table(existing.evolve(view_sql=sql))
            self.record("view", table_id, name, "alter view")
            return
        state = TableState(None, uuid.uuid4().hex, database_id, view_name, "view", view_sql=sql)
        self.ns.put_table(state)
        self.record("view", state.id, name, "create")

    # ------------------------------------------------------------- restore
    def restore_table(self, name: str, source_state: TableState, source_database: str) -> None:
        """Make table `name` what `source_state` was (same id): one overwrite (and alter column)."""
        table_id = self.ns.table_id(name, required=False)
        current = self.ns.table(table_id) if table_id else None
        if current is not None and current.id != source_state.id:
            raise errors.AlreadyExists("table", name, self.branch)
        if self.ns.database_id(source_database, required=False) is None:
            raise errors.DatabaseNotFound(source_database, self.branch)
        restored = source_state.evolve(database_id=self.ns.database_id(source_database))
        self.ns.put_table(restored)
        if current is None:
            self.record(restored.kind, restored.id, name, "create", restored=True)
        elif current.schema_id != restored.schema_id:
            self.record("table", restored.id, name, "alter column", action="restore")
        if restored.kind == "table":
            self.record("table", restored.id, name, "overwrite", restored=True,
                         segments_added=[s for s in restored.segments if not current or s not in current.segments],
                         segments_removed=[s for s in (current.segments if current else ())
                                           if s not in restored.segments])


def _partition_value(values: dict, columns: list[str]) -> tuple:
    return tuple(values.get(c) for c in columns)


def _in_partitions(columns: list[str], wanted: list[tuple]):
    """Rows whose partition columns, as strings, are one of `wanted`."""
    condition = F.lit(False)
    for value in wanted:
        match = F.lit(True)
        for column, v in zip(columns, value):
            cell = F.col(quote(column))
            match = match & (cell.isNull() if v is None else cell.cast("string") == F.lit(v))
        condition = condition | match
    return condition


def _first_line(exc: Exception) -> str:
    return spark_errors.first_line(exc)  # without the reader's internal column names


def _summary(operations: list[OpInfo]) -> str:
    parts = [f"{o.op} {o.object_name}" for o in operations[:5]]
    more = f" (+{len(operations) - 5} more)" if len(operations) > 5 else ""
    return "; ".join(parts) + more
