"""A transaction's operations on databases, tables, columns and views (SPEC 2): the catalog's side of a
write, each checked before it stages a new version and recorded as its operation. Rows are row_writes.py's;
the transaction itself (staging, commit, replay) is transaction.py's."""
from __future__ import annotations

import uuid
from dataclasses import replace

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from . import errors, spark_errors
from .catalog.namespace import check_name, split_name
from .catalog.schema import Column, Schema, check_widening, history_entry, parse_type
from .catalog.state import VIEW_SCHEMA_PROPERTY, DatabaseState, TableState
from .operations import ObjectKind, Op
from .storage.reader import TableReader, quote
from .view_relations import register_relations


class SchemaWrites:
    """Part of `Transaction` (transaction.py): it uses the transaction's namespace, record and helpers."""

    # ----------------------------------------------------------- databases
    def create_database(self, name: str, properties: dict | None = None, if_not_exists: bool = False) -> None:
        check_name("database", name)
        if self.ns.database_id(name, required=False) is not None:
            if if_not_exists:
                return
            raise errors.AlreadyExists("database", name, self.branch)
        state = DatabaseState(None, uuid.uuid4().hex, name, dict(properties or {}))
        self.ns.put_database(state)
        self.record(ObjectKind.DATABASE, state.id, name, Op.CREATE)

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
        self.record(ObjectKind.DATABASE, database_id, name, Op.DROP)

    def rename_database(self, old: str, new: str) -> None:
        check_name("database", new)
        database_id = self.ns.database_id(old)
        if self.ns.database_id(new, required=False) not in (None, database_id):
            raise errors.AlreadyExists("database", new, self.branch)
        state = self.ns.database(database_id)
        self.ns.put_database(state.evolve(name=new))
        self.record(ObjectKind.DATABASE, database_id, new, Op.MODIFY_NAME, old_name=state.name)

    def set_database_properties(self, name: str, properties: dict) -> None:
        state = self.ns.database(self.ns.database_id(name))
        self.ns.put_database(state.evolve(properties={**state.properties, **{str(k): str(v) for k, v in
                                                                             properties.items()}}))
        self.record(ObjectKind.DATABASE, state.id, state.name, Op.SET_PROPERTIES, properties=dict(properties))

    def unset_database_properties(self, name: str, keys: list[str]) -> None:
        state = self.ns.database(self.ns.database_id(name))
        missing = [k for k in keys if k not in state.properties]
        if missing:
            raise errors.InvalidArgument(f"database '{name}' has no properties {missing} on branch "
                                         f"'{self.branch}': see its properties with `branchspark show`")
        self.ns.put_database(state.evolve(properties={k: v for k, v in state.properties.items() if k not in keys}))
        self.record(ObjectKind.DATABASE, state.id, state.name, Op.UNSET_PROPERTIES, keys=list(keys))

    # -------------------------------------------------------------- tables
    def create_table(self, name: str, schema: T.StructType, partition_by=None, primary_key=None,
                     properties: dict | None = None, if_not_exists: bool = False,
                     source_ids: dict[str, tuple] | None = None) -> None:
        """source_ids: an imported table's columns' field ids in its source, by column name (Column.source_ids)."""
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
            columns.append(Column(column_id, field.name, field.dataType.json(), field.nullable and not in_key,
                                  source_ids=(source_ids or {}).get(field.name, ())))
        for kind, chosen in (("partition", partition_by), ("primary key", primary_key)):
            unknown = [c for c in chosen if c.lower() not in seen]
            if unknown:
                raise errors.InvalidArgument(f"{kind} column(s) {unknown} of '{name}' are not in its schema")
        schema_version = Schema(uuid.uuid4().hex, tuple(columns))
        names = {c.name.lower(): c.name for c in columns}
        table_id = uuid.uuid4().hex
        seq = self._seq()
        state = TableState(None, table_id, database_id, table_name, ObjectKind.TABLE, dict(properties or {}),
                           tuple(names[c.lower()] for c in partition_by), tuple(names[c.lower()] for c in primary_key),
                           schema_version.id, (history_entry(schema_version.id, seq),))
        self.ns.add_schema(schema_version, table_id)
        self.ns.put_table(state)
        self.record(ObjectKind.TABLE, table_id, name, Op.CREATE, columns=[c.name for c in columns],
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
        if table_id is not None and self.ns.table(table_id).kind == ObjectKind.VIEW:
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
        self.record(state.kind, table_id, name, Op.DROP)

    def rename_table(self, old: str, new: str) -> None:
        table_id = self.ns.table_id(old)
        db_name, table_name = split_name(new)
        check_name("table", table_name)
        database_id = self.ns.database_id(db_name)
        if self.ns.table_id(new, required=False) not in (None, table_id):
            raise errors.AlreadyExists("table", new, self.branch)
        state = self.ns.table(table_id)
        self.ns.put_table(state.evolve(name=table_name, database_id=database_id))
        self.record(state.kind, table_id, new, Op.ALTER_NAME, old_name=old)

    def set_table_properties(self, name: str, properties: dict) -> None:
        state = self.ns.table(self.ns.table_id(name))
        props = {str(k): str(v) for k, v in properties.items()}
        self.ns.put_table(state.evolve(properties={**state.properties, **props}))
        self.record(state.kind, state.id, name, Op.ALTER_PROPERTIES, set=props)

    def unset_table_properties(self, name: str, keys: list[str]) -> None:
        state = self.ns.table(self.ns.table_id(name))
        missing = [k for k in keys if k not in state.properties]
        if missing:
            raise errors.InvalidArgument(f"table '{name}' has no properties {missing} on branch '{self.branch}'")
        self.ns.put_table(state.evolve(properties={k: v for k, v in state.properties.items() if k not in keys}))
        self.record(state.kind, state.id, name, Op.ALTER_PROPERTIES, unset=list(keys))

    def set_partitioning(self, name: str, columns: list[str]) -> None:
        state = self._writable_table(name)
        schema = self._schema(state)
        resolved = self._resolve_columns(name, schema, columns)
        self.ns.put_table(state.evolve(partition_by=tuple(resolved)))
        self.record(ObjectKind.TABLE, state.id, name, Op.ALTER_PARTITION, partition_by=resolved,
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
        self.record(ObjectKind.TABLE, state.id, name, Op.ALTER_PROPERTIES, primary_key=resolved)

    # ------------------------------------------------------------- columns
    def _new_schema(self, name: str, state: TableState, columns: list[Column], **detail) -> None:
        schema = Schema(uuid.uuid4().hex, tuple(columns))
        self.ns.add_schema(schema, state.id)
        entry = history_entry(schema.id, self._seq())
        self.ns.put_table(state.evolve(schema_id=schema.id, schema_history=state.schema_history + (entry,)))
        self.record(ObjectKind.TABLE, state.id, name, Op.ALTER_COLUMN, **detail)

    def add_column(self, name: str, column: str, type_, nullable: bool = True, default: str | None = None,
                   source_ids: tuple = (), origin: dict | None = None) -> None:
        """source_ids: an imported column's field ids in its source (Column.source_ids); origin: the source version
        a refresh brings the column from, recorded with the change (the next refresh starts after it)."""
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
        new = Column(self._seq(), column, data_type.json(), nullable, default, source_ids=tuple(source_ids))
        self._new_schema(name, state, list(schema.columns) + [new], action="add",
                         column=column, column_id=new.id, type=data_type.simpleString(), nullable=nullable,
                         default=default, **(origin or {}))

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
                                         f"expression: {spark_errors.first_line(exc)}") from None

    # --------------------------------------------------------------- views
    def create_view(self, name: str, sql: str, replace: bool = True, schema: T.StructType | None = None) -> None:
        """`schema`: the query's output schema when the caller has analysed it already (dbt has); else the
        query is analysed here. An invalid query is refused, with Spark's message."""
        db_name, view_name = split_name(name)
        check_name("view", view_name)
        database_id = self.ns.database_id(db_name)
        table_id = self.ns.table_id(name, required=False)
        existing = self.ns.table(table_id) if table_id is not None else None
        if existing is not None and (existing.kind != ObjectKind.VIEW or not replace):
            raise errors.AlreadyExists(existing.kind, name, self.branch)
        schema = schema if schema is not None else self._view_schema(name, sql)
        properties = {**(existing.properties if existing else {}), VIEW_SCHEMA_PROPERTY: schema.json()}
        if existing is not None:
            self.ns.put_table(existing.evolve(view_sql=sql, properties=properties))
            self.record(ObjectKind.VIEW, table_id, name, Op.ALTER_VIEW)
            return
        state = TableState(None, uuid.uuid4().hex, database_id, view_name, ObjectKind.VIEW, properties,
                           view_sql=sql)
        self.ns.put_table(state)
        self.record(ObjectKind.VIEW, state.id, name, Op.CREATE)

    def _view_schema(self, name: str, sql: str) -> T.StructType:
        """The output schema of a view's query, analysed (not run) over this transaction's relations."""
        plain = TableReader(self.spark, self.lakehouse.warehouse, self.ns)  # names looked up, no rows read
        register_relations(self.spark, sql, {name.lower()}, self.has_table,
                           lambda n: self.ns.table(self.ns.table_id(n)), plain.read)
        try:
            return self.spark.sql(sql).schema
        except PySparkException as exc:
            raise errors.InvalidArgument(f"view '{name}' has an invalid query: {spark_errors.first_line(exc)}; "
                                         f"fix its SQL (it names relations as `database.table`)") from None

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
            self.record(restored.kind, restored.id, name, Op.CREATE, restored=True)
        elif current.schema_id != restored.schema_id:
            self.record(ObjectKind.TABLE, restored.id, name, Op.ALTER_COLUMN, action="restore")
        if restored.kind == ObjectKind.TABLE:
            self.record(ObjectKind.TABLE, restored.id, name, Op.OVERWRITE, restored=True,
                         segments_added=[s for s in restored.segments if not current or s not in current.segments],
                         segments_removed=[s for s in (current.segments if current else ())
                                           if s not in restored.segments])
