"""The branchspark dbt adapter: dbt-spark's SQL dialect, with relations and writes on a catalog branch.

Metadata (relations, columns, schemas, the docs catalog) comes from the core's
snapshot of the target branch. The `@available` methods are what the
materializations and dispatched macros of `dbt/include/branchspark` call: each
runs core operations in the model build's transaction on the target branch.
"""

from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple

import agate
from dbt.adapters.base import available
from dbt.adapters.base.relation import InformationSchema
from dbt.adapters.contracts.relation import RelationType
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.column import SparkColumn
from dbt.adapters.spark.impl import SparkAdapter
from dbt_common.clients.agate_helper import DEFAULT_TYPE_TESTER
from dbt_common.exceptions import DbtRuntimeError
from typing_extensions import TypeAlias

from dbt.adapters.branchspark.adapter import model_writes, run_landing, text_tables
from dbt.adapters.branchspark.core.sql.temp_views import VIEW
from dbt.adapters.branchspark.adapter.commit_messages import model_message
from dbt.adapters.branchspark.adapter.connections import BranchSparkConnectionManager, BranchSparkHandle, error_line
from dbt.adapters.branchspark.core.frames import normalize_type
from dbt.adapters.branchspark.adapter.relation import BranchSparkRelation
from dbt.adapters.branchspark.core.sql_text import core_table_name
from dbt.adapters.branchspark.adapter.seeds import seed_dataframe
from dbt.adapters.branchspark.adapter.target_branch import _author
from dbt.adapters.branchspark.adapter import connections
from dbt.adapters.branchspark.adapter.merge_operations import paused_operation, project_drivers, run_merge
from dbt.adapters.branchspark.core.errors import DatabaseNotFound
from dbt.adapters.branchspark.core.sql.statements import is_branch_statement
from dbt.adapters.branchspark.core.sql import sources
from dbt.adapters.branchspark.core.catalog.commits import sources_summary

logger = AdapterLogger("branchspark")
sources.notify = logger.warning  # a branch relation that hides a table of Spark's catalog: in dbt's log


# The changes and diff operations load the changes and diff cores (about 0.15 s of imports): imported on
# first use, so only the invocations that use them pay for it, not every `dbt run`.
def _changes():
    from dbt.adapters.branchspark.adapter import branch_changes

    return branch_changes


def _diffs():
    from dbt.adapters.branchspark.adapter import diff_operations

    return diff_operations


def _as_list(value) -> List[str]:
    """A config that is a name or a list of names, as a list without blanks or repeats."""
    if value is None:
        return []
    values = [value] if isinstance(value, str) else list(value)
    return list(dict.fromkeys(v for v in values if v and str(v).strip()))


class BranchSparkAdapter(SparkAdapter):
    Relation: TypeAlias = BranchSparkRelation  # type: ignore[assignment]
    ConnectionManager: TypeAlias = BranchSparkConnectionManager  # type: ignore[assignment]
    Column: TypeAlias = SparkColumn

    def __init__(self, config, *args, **kwargs) -> None:
        super().__init__(config, *args, **kwargs)
        run_landing.adapter_created(getattr(config, "project_root", None), getattr(config, "target_path", None))
        # a new invocation: nothing of Spark's catalogs read yet, and the versions its reads are pinned to
        as_of = (getattr(config, "cli_vars", None) or {}).get("sources_as_of") \
            or getattr(getattr(config, "credentials", None), "sources_as_of", None)
        sources.ledger.begin(as_of)
        connections.project_merge_settings = self._project_merge_settings

    def _project_merge_settings(self, dest: str) -> dict:
        """MERGE BRANCH in the project's SQL merges as run-operation merge_branch does: with the project's views
        and its merge-driver macros (rendered for `dest`); none when no manifest is loaded (`dbt debug`)."""
        if self.get_macro_resolver() is None:
            return {}
        views = self.execute_macro("branchspark_project_views")
        drivers = self.execute_macro("branchspark_merge_drivers", kwargs={"dest": dest})
        return {"views": _as_list(views), "drivers": project_drivers(drivers)}

    def cleanup_connections(self) -> None:
        """dbt calls this when a task ends (after the on-run-end hooks): land or keep the run branch."""
        try:
            run_landing.finish_invocation()
        finally:
            super().cleanup_connections()

    # -- plumbing -------------------------------------------------------------------------
    def _handle(self) -> BranchSparkHandle:
        return self.connections.get_thread_connection().handle

    def _catalog_view(self):
        """What metadata reads see: the open model build's transaction, else the branch head."""
        handle = self._handle()
        tx = handle.model_transaction
        return tx.tx if tx is not None and not tx.finished else handle.branch_session.snapshot()

    def _query(self, sql: str):
        return self._handle().router.query(sql)

    def _core_name(self, relation) -> str:
        if not relation.schema or not relation.identifier:
            raise DbtRuntimeError(f"{relation} is not a branch relation (it needs a schema and a name)")
        return core_table_name(relation.schema, relation.identifier)

    def _run(self, what: str, fn):
        """Run a core operation; its one-line error becomes the dbt error, unchanged."""
        try:
            return fn()
        except DbtRuntimeError:
            raise
        except Exception as exc:
            logger.debug(f"{what} failed: {exc!r}")
            raise DbtRuntimeError(error_line(exc)) from exc

    def _write(self, what: str):
        return self._handle().write(what)

    # -- metadata from the branch ---------------------------------------------------------
    def list_relations_without_caching(self, schema_relation: BranchSparkRelation) -> List[BranchSparkRelation]:
        schema = schema_relation.schema
        if not schema:
            return []
        view = self._catalog_view()
        try:
            tables = view.tables(database=schema.lower())
        except DatabaseNotFound:
            return []
        return [
            self.Relation.create(
                schema=info.database,
                identifier=info.name,
                type=RelationType.View if info.kind == VIEW else RelationType.Table,
            )
            for info in tables
        ]

    def get_columns_in_relation(self, relation: BranchSparkRelation) -> List[SparkColumn]:
        name = relation.core_name if isinstance(relation, BranchSparkRelation) else None
        info = None
        if name:
            view = self._catalog_view()
            if view.has_table(name):
                info = view.table(name)
        if info is not None and info.kind != VIEW and info.columns:
            columns = [(c.name, normalize_type(c.type)) for c in info.columns]
        else:
            # views and session temp relations: Spark's analysis of the temp view (no data read)
            spark = self._handle().branch_session.spark
            try:
                if name:
                    self._handle().branch_session.views.ensure([name])
                # a branch relation's temp view, else the table of Spark's catalog the name resolves to
                fields = spark.sql(self._handle().router.qualify(f"select * from {relation.render()}")).schema.fields
            except Exception:
                return []
            columns = [(f.name, f.dataType.simpleString()) for f in fields]
        return [
            SparkColumn(
                table_database=None,
                table_schema=relation.schema,
                table_name=relation.identifier,
                table_type=relation.type,
                column=column,
                column_index=index,
                dtype=dtype,
            )
            for index, (column, dtype) in enumerate(columns)
        ]

    def list_schemas(self, database: str) -> List[str]:
        return [d.name for d in self._catalog_view().databases()]

    def check_schema_exists(self, database: str, schema: str) -> bool:
        return schema.lower() in {d.name.lower() for d in self._catalog_view().databases()}

    def expand_target_column_types(self, from_relation, to_relation) -> None:
        # Spark strings have no length: there is nothing to widen.
        return None

    def _get_one_catalog(
        self,
        information_schema: InformationSchema,
        schemas: Set[str],
        used_schemas: FrozenSet[Tuple[str, str]],
    ):
        rows: List[Dict[str, Any]] = []
        for schema in schemas:
            for relation in self.list_relations_without_caching(self.Relation.create(schema=schema)):
                table_type = "view" if relation.type == RelationType.View else "table"
                for column in self.get_columns_in_relation(relation):
                    rows.append(
                        {
                            "table_database": None,
                            "table_schema": relation.schema,
                            "table_name": relation.identifier,
                            "table_type": table_type,
                            "table_comment": None,
                            "table_owner": None,
                            "column_name": column.column,
                            "column_index": column.column_index,
                            "column_type": column.dtype,
                            "column_comment": None,
                        }
                    )
        return agate.Table.from_object(rows, column_types=DEFAULT_TYPE_TESTER)

    # -- the model build's transaction ----------------------------------------------------
    @available.parse_none
    def begin_model_build(self, model: Any) -> None:
        unique_id = model.get("unique_id") if hasattr(model, "get") else getattr(model, "unique_id", str(model))
        batch = model.get("batch") if hasattr(model, "get") else None
        batch_id = getattr(batch, "id", None) or (batch.get("id") if isinstance(batch, dict) else None)
        self._run("begin", lambda: self._handle().begin_model(model_message(unique_id, batch_id)))

    @available.parse_none
    def commit_model_build(self) -> None:
        self._run("commit", lambda: self._handle().commit_model())

    @available.parse_none
    def abort_model_build(self) -> None:
        self._handle().abort_model()

    # -- materializations -----------------------------------------------------------------
    @available.parse_none
    def build_table(self, relation, sql: str, partition_by=None, unique_key=None) -> str:
        name = self._core_name(relation)

        def run():
            df = self._query(sql)
            with self._write(f"table {name}") as w:
                model_writes.build_table(
                    w, name, df, partition_by=_as_list(partition_by) or None,
                    primary_key=model_writes.primary_key_of(df, _as_list(unique_key)),
                )

        self._run(f"build {name}", run)
        return "OK"

    @available.parse_none
    def build_view(self, relation, sql: str) -> str:
        name = self._core_name(relation)
        router = self._handle().router

        def run():
            view_sql = router.pinned(sql)  # its reads of Spark's tables recorded, pinned under sources_as_of
            schema = router.analysed(view_sql).schema  # an invalid query fails here, with Spark's message
            with self._write(f"view {name}") as w:
                w.tx.create_view(name, view_sql, replace=True, schema=schema)
                w.changed(name)

        self._run(f"build {name}", run)
        return "OK"

    @available.parse_none
    def write_incremental(
        self,
        strategy: str,
        relation,
        source_relation,
        unique_key=None,
        partition_by=None,
        update_columns=None,
        predicates=None,
        event_time=None,
        batch_start=None,
        batch_end=None,
    ) -> str:
        """Apply the new rows (a temp view) to an existing incremental model with `strategy`."""
        name = self._core_name(relation)
        source_view = source_relation.render()
        keys = _as_list(unique_key)

        def run():
            source = self._query(f"select * from {source_view}")
            with self._write(f"{strategy} {name}") as w:
                if strategy == "append":
                    model_writes.append_rows(w, name, source)
                elif strategy == "merge":
                    if not keys:
                        model_writes.append_rows(w, name, source)
                    else:
                        columns = None if update_columns is None else _as_list(update_columns)
                        model_writes.merge_rows(w, name, source, keys, columns)
                elif strategy == "delete+insert":
                    model_writes.delete_insert_rows(w, name, source_view, source, keys, _as_list(predicates))
                elif strategy == "insert_overwrite":
                    model_writes.overwrite_rows(w, name, source, _as_list(partition_by) or None)
                elif strategy == "microbatch":
                    model_writes.replace_time_window(w, name, source, event_time, batch_start, batch_end)
                else:
                    raise DbtRuntimeError(
                        f"incremental_strategy '{strategy}' is not supported by branchspark: use append, merge, "
                        f"delete+insert, insert_overwrite or microbatch"
                    )

        self._run(f"{strategy} {name}", run)
        return "OK"

    @available.parse_none
    def load_seed(self, relation, agate_table, column_types=None) -> str:
        name = self._core_name(relation)
        spark = self._handle().branch_session.spark

        def run():
            inferred = [self.convert_type(agate_table, i) for i in range(len(agate_table.column_names))]
            df = seed_dataframe(spark, agate_table, inferred, column_types or {})
            with self._write(f"seed {name}") as w:
                model_writes.build_table(w, name, df)

        self._run(f"seed {name}", run)
        return f"INSERT {len(agate_table.rows)}"

    @available.parse_none
    def apply_snapshot(self, relation, staging_relation, column_names: Dict[str, str], valid_to_current=None) -> str:
        name = self._core_name(relation)

        def run():
            staging = self._query(f"select * from {staging_relation.render()}")
            with self._write(f"snapshot {name}") as w:
                model_writes.apply_snapshot(w, name, staging, dict(column_names), valid_to_current)

        self._run(f"snapshot {name}", run)
        return "OK"

    # -- DDL used by dispatched macros ----------------------------------------------------
    @available.parse_none
    def alter_columns(self, relation, add_columns=None, remove_columns=None) -> None:
        name = self._core_name(relation)

        def run():
            with self._write(f"alter {name}") as w:
                for column in add_columns or []:
                    w.tx.add_column(name, column.name, normalize_type(column.data_type), nullable=True)
                for column in remove_columns or []:
                    w.tx.drop_column(name, column.name)
                w.changed(name)

        self._run(f"alter {name}", run)

    @available.parse_none
    def change_column_type(self, relation, column_name: str, new_type: str) -> None:
        name = self._core_name(relation)

        def run():
            with self._write(f"alter {name}") as w:
                w.tx.alter_column_type(name, column_name, normalize_type(new_type))
                w.changed(name)

        self._run(f"alter {name}", run)

    @available.parse_none
    def drop_branch_relation(self, relation) -> None:
        if not relation.schema or not relation.include_policy.schema:
            # a session temp view (model__dbt_tmp): not in the catalog
            self._handle().branch_session.spark.catalog.dropTempView(relation.identifier)
            return
        name = self._core_name(relation)

        def run():
            with self._write(f"drop {name}") as w:
                w.tx.drop_table(name, if_exists=True)
                w.changed(name)

        self._run(f"drop {name}", run)

    @available.parse_none
    def rename_branch_relation(self, from_relation, to_relation) -> None:
        old, new = self._core_name(from_relation), self._core_name(to_relation)

        def run():
            with self._write(f"rename {old}") as w:
                w.tx.rename_table(old, new)
                w.changed(old, new)

        self._run(f"rename {old}", run)

    @available.parse_none
    def create_branch_schema(self, relation) -> None:
        database = relation.schema.lower()

        def run():
            with self._write(f"create schema {database}") as w:
                w.tx.create_database(database, if_not_exists=True)

        self._run(f"create schema {database}", run)

    @available.parse_none
    def drop_branch_schema(self, relation) -> None:
        database = relation.schema.lower()

        def run():
            with self._write(f"drop schema {database}") as w:
                try:
                    names = [t.full_name for t in w.tx.tables(database=database)]
                except DatabaseNotFound:  # nothing to drop
                    return
                w.tx.drop_database(database, cascade=True, if_exists=True)
                w.changed(*names)

        self._run(f"drop schema {database}", run)

    # -- branch operations (run-operation macros) -----------------------------------------
    @available
    def table_text(self, table, max_column_width: int = 80) -> str:
        """An agate table as the Markdown-like text dbt prints (for run-operation output)."""
        return text_tables.table_text(table, max_column_width)

    @available
    def is_branch_statement(self, sql: str) -> bool:
        """Whether `sql` is a branch statement (`SHOW LOG`, `MERGE BRANCH dev`): `dbt show` adds no LIMIT to it."""
        return is_branch_statement(sql)

    @available
    def current_branch(self) -> str:
        return self.config.credentials.branch

    @available
    def create_branch(self, name: str, source: Optional[str] = None):
        lakehouse = self._handle().branch_session.lakehouse
        source = source or self.config.credentials.branch
        self._run("create_branch", lambda: lakehouse.create_branch(name, source=source))
        return self.list_branches()

    @available
    def drop_branch(self, name: str, force: bool = False):
        lakehouse = self._handle().branch_session.lakehouse
        self._run("drop_branch", lambda: lakehouse.drop_branch(name, force=bool(force)))
        return self.list_branches()

    @available
    def import_table(self, source: str, name: str, branch: Optional[str] = None, format: Optional[str] = None,
                     version=None, primary_key=None, message: Optional[str] = None, refresh: bool = False) -> str:
        """Make table `name` of the table at `source` in one commit that writes no data file, or with `refresh`
        bring its source's later versions (macro `import_table`, docs/import.md); returns the line dbt prints."""
        session = self._handle().branch_session
        branch = branch or self.config.credentials.branch
        if refresh:
            commits = self._run("import_table", lambda: session.lakehouse.refresh_import(
                str(name), branch=str(branch), source=str(source), author=_author()))
            if branch == session.branch:
                session.expose_branch()
            return f"refreshed {name} on {branch} from {source}: {len(commits)} new commits"
        key = [c.strip() for c in primary_key.split(",")] if isinstance(primary_key, str) else _as_list(primary_key)
        info = self._run("import_table", lambda: session.lakehouse.import_table(
            str(source), str(name), branch=str(branch), format=format, version=version, primary_key=key or None,
            message=message or "", author=_author()))
        if branch == session.branch:
            session.expose_branch()  # this run now reads the imported table
        return f"imported {source} as {name} on {branch} in commit {str(info.id)[:12]} (no data file copied)"

    @available
    def list_branches(self):
        lakehouse = self._handle().branch_session.lakehouse
        branches = self._run("list_branches", lakehouse.list_branches)
        rows = [
            [b.name, str(b.head)[:12] if b.head else "", "yes" if b.protected else "", text_tables.time_text(b.created_at)]
            for b in branches
        ]
        return text_tables.text_table(["branch", "head", "protected", "created_at"], rows)

    @available
    def branch_log(self, branch: Optional[str] = None, limit: Optional[int] = None):
        lakehouse = self._handle().branch_session.lakehouse
        branch = branch or self.config.credentials.branch
        commits = self._run("branch_log", lambda: lakehouse.log(branch, limit=int(limit) if limit else None))
        rows = []
        for commit in commits:
            operations = ", ".join(f"{op.op} {op.object_name}" for op in (commit.operations or []))
            rows.append([str(commit.id)[:12], text_tables.time_text(commit.ts), commit.message or "", operations])
        return text_tables.text_table(["commit", "time", "message", "operations"], rows)

    @available
    def branch_log_sources(self, branch: Optional[str] = None, limit: Optional[int] = None) -> str:
        """Under branch_log's table, one line per commit that recorded the versions of Spark's tables its run
        read (too long for a column): `7f38898f04ac read lake.raw.orders (iceberg snapshot ...), ...`."""
        lakehouse = self._handle().branch_session.lakehouse
        branch = branch or self.config.credentials.branch
        commits = self._run("branch_log", lambda: lakehouse.log(branch, limit=int(limit) if limit else None))
        return "\n".join(f"{str(c.id)[:12]} read {sources_summary(c.sources)}" for c in commits if c.sources)

    @available
    def merge_branch(self, src: str, dest: Optional[str] = None, strategy: str = "merge", on_conflict="abort",
                     dry_run: bool = False, message: Optional[str] = None, drivers=None,
                     continue_: bool = False, views=None) -> str:
        """MERGE BRANCH src TO dest (default: the target's branch); returns the report dbt prints.
        `views`: the project's view models (schema.alias), published with the tables (merge/views.py)."""
        session = self._handle().branch_session
        dest = dest or self.config.credentials.branch
        if not src and not continue_:
            raise DbtRuntimeError("merge_branch needs src: --args '{src: dev, dest: main}'")
        text = self._run("merge_branch", lambda: run_merge(
            session.lakehouse, str(src) if src else None, str(dest), str(strategy), on_conflict, dry_run, message,
            _author(), drivers, continue_, views=_as_list(views)))
        if dest == session.branch:
            session.expose_branch()  # this run now reads the merged branch
        return text

    @available
    def paused_merge(self, operation: str, dest: Optional[str] = None, table: Optional[str] = None,
                     take: Optional[str] = None, where: Optional[str] = None, assignments=None):
        """run-operations merge_status, resolve_conflicts, abort_merge, merge_driver_sides (merge_operation.py)."""
        session = self._handle().branch_session
        dest = dest or self.config.credentials.branch
        return self._run(operation, lambda: paused_operation(session.lakehouse, operation, str(dest), table, take,
                                                             where, assignments))

    # ---- changes (CDC) ------------------------------------------------------------------
    def _changes_table(self, table) -> str:
        """The catalog name of a relation (ref, source, this) or of a 'schema.table' string."""
        if hasattr(table, "identifier") and hasattr(table, "schema"):
            return self._core_name(table)
        text = str(table or "").replace("`", "").strip()
        if not text:
            raise DbtRuntimeError("branch_changes needs a table: a relation (ref('x')) or 'schema.table'")
        if "." not in text:  # a bare name is in the target's schema, as models are
            text = f"{self.config.credentials.schema}.{text}"
        return text.lower()

    def _changes_request(self, table, from_version, to, branch, net):
        lakehouse = self._handle().branch_session.lakehouse
        return _changes().make_request(lakehouse, self._changes_table(table), from_version, to, branch, net,
                                       self._handle().branch_session.branch)

    @available.parse_none
    def branch_changes_relation(self, table, from_version=None, to=None, branch=None, net=False):
        """A session relation over `table`'s changes from `from_version` to `to` (macro `branch_changes`)."""
        session = self._handle().branch_session

        def run():
            request = self._changes_request(table, from_version, to, branch, net)
            name = _changes().register_view(session.spark, session.lakehouse, request,
                                            limit=getattr(table, "limit", None))
            return self.Relation.create(identifier=name, type=RelationType.View)

        return self._run("branch_changes", run)

    @available.parse_none
    def branch_last_change_commit(self, relation) -> Optional[str]:
        """The commit that last changed `relation` on the target branch (an incremental model's last build)."""
        lakehouse = self._handle().branch_session.lakehouse
        name = self._changes_table(relation)
        branch = self._handle().branch_session.branch  # the run branch during a run: its own builds count
        return self._run("branch_changes", lambda: _changes().last_change_commit(lakehouse, branch, name))

    @available.parse_none
    def branch_changes_summary(self, table, from_version=None, to=None, branch=None, net=False, limit=10) -> str:
        """What run-operation branch_changes prints: a title, counts per commit, the first changes."""
        lakehouse = self._handle().branch_session.lakehouse

        def run():
            request = self._changes_request(table, from_version, to, branch, net)
            return _changes().summarize(lakehouse, request, int(limit))

        return self._run("branch_changes", run).text()

    # ---- diff and restore (adapter/diff_operations.py) ---------
    @available.parse_none
    def branch_diff_summary(self, from_version, to, tables=None, mode=None, limit=10) -> str:
        lakehouse = self._handle().branch_session.lakehouse
        return self._run("branch_diff", lambda: _diffs().summary(lakehouse, from_version, to, tables, mode, limit))

    @available.parse_none
    def branch_diff_relation(self, table, from_version, to, mode=None):
        """A session relation over `table`'s diff rows from `from_version` to `to` (macro `branch_diff`)."""
        session = self._handle().branch_session

        def run():
            name = _diffs().register_view(session.spark, session.lakehouse, self._changes_table(table),
                                          from_version, to, mode, limit=getattr(table, "limit", None))
            return self.Relation.create(identifier=name, type=RelationType.View)

        return self._run("branch_diff", run)

    @available.parse_none
    def restore_table(self, table, to) -> str:
        """Restore `table` on the target's branch to version `to`, as one new commit (macro `restore`)."""
        session = self._handle().branch_session
        text = self._run("restore", lambda: _diffs().restore(session.lakehouse, session.branch,
                                                             self._changes_table(table), to))
        session.expose_branch()  # this run now reads the restored table
        return text

