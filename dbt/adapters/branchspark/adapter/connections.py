"""Connections: one SparkSession and one Lakehouse per process, a handle per dbt thread.

The handle replaces dbt-spark's session wrapper: it keeps the session built
once, binds parameters as SQL literals that survive NULLs and quotes, has
`fetchmany` (dbt show), and sends every statement through the router, so that
writes to branch relations become core transactions on the target branch.
"""

import datetime as dt
import decimal
from contextlib import contextmanager
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

from dbt.adapters.contracts.connection import AdapterResponse, Connection, ConnectionState
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.exceptions import FailedToConnectError
from dbt.adapters.spark.connections import SparkConnectionManager
from dbt_common.exceptions import DbtDatabaseError, DbtRuntimeError
from dbt.flags import get_flags

from dbt.adapters.branchspark.adapter.target_branch import _author, open_lakehouse
from dbt.adapters.branchspark.core.sql.branch_session import BranchSession, BranchTransaction, statement_transaction
from dbt.adapters.branchspark.core.catalog.url import redact_text
from dbt.adapters.branchspark.adapter.credentials import LOCAL_METHOD, BranchSparkCredentials
from dbt.adapters.branchspark.engine import client as engine_client
from dbt.adapters.branchspark.adapter.run_landing import session_branch
from dbt.adapters.branchspark.core.spark_errors import storage_error
from dbt.adapters.branchspark.core.spark_session import spark_session
from dbt.adapters.branchspark.core.sql.results import RoutedResult
from dbt.adapters.branchspark.core.sql import sources
from dbt.adapters.branchspark.core.sql.router import StatementRouter
from dbt.adapters.branchspark.core.sql_text import split_statements
from dbt.adapters.branchspark.core.errors import BranchNotFound, BranchsparkError, MergeConflict
from dbt.adapters.branchspark.core.merge.report import MergeResult
from dbt.adapters.branchspark.adapter.merge_operations import report_text
from dbt.adapters.branchspark.adapter.commit_messages import statement_message

logger = AdapterLogger("branchspark")

# What dbt needs of its Spark beyond the core's defaults: dbt-spark's macros assume the pre-Spark-4
# (non-ANSI) casting rules. The profile's spark_config comes after, so it may say otherwise.
DBT_SPARK_CONFIG = {"spark.sql.ansi.enabled": "false"}


def sql_literal(value: Any) -> str:
    """A Spark SQL literal for a bound parameter."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if value == value and value not in (float("inf"), float("-inf")) else f"double('{value}')"
    if isinstance(value, decimal.Decimal):
        return f"{value}BD" if value == value else "double('NaN')"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def bind(sql: str, bindings: Optional[Sequence[Any]]) -> str:
    """Substitute `%s` placeholders (dbt-spark's binding char) with literals."""
    if not bindings:
        return sql
    return sql % tuple(sql_literal(v) for v in bindings)


# What MERGE BRANCH in the project's SQL passes to the merge besides its statement, as run-operation
# merge_branch does: the project's views and merge drivers (dest -> Lakehouse.merge arguments). Set by the
# adapter (impl.py), the one that can render the project's macros; connections open without it.
project_merge_settings: Optional[Callable[[str], dict]] = None


def _project_merge_settings(dest: str) -> dict:
    return project_merge_settings(dest) if project_merge_settings is not None else {}


class BranchSparkCursor:
    """A DB-API-like cursor over the router: results stay lazy DataFrames until fetched."""

    def __init__(self, handle: "BranchSparkHandle"):
        self.handle = handle
        self._result: Optional[RoutedResult] = None
        self._rows: Optional[List[Any]] = None
        self._position = 0

    def execute(self, sql: str, bindings: Optional[Sequence[Any]] = None) -> None:
        self._result, self._rows, self._position = None, None, 0
        for statement in split_statements(bind(sql, bindings)):
            self._result = self.handle.router.execute(statement)

    @property
    def message(self) -> str:
        return self._result.message if self._result else "OK"

    @property
    def description(self) -> List[Tuple[str, str, None, None, None, None, bool]]:
        df = self._result.df if self._result else None
        if df is None:
            return []
        return [(f.name, f.dataType.simpleString(), None, None, None, None, f.nullable) for f in df.schema.fields]

    def _all_rows(self) -> List[Any]:
        if self._rows is None:
            df = self._result.df if self._result else None
            self._rows = [] if df is None else df.collect()
        return self._rows

    def fetchall(self) -> List[Any]:
        rows = self._all_rows()[self._position :]
        self._position += len(rows)
        return rows

    def fetchone(self) -> Optional[Any]:
        if self._rows is None and self._result is not None and self._result.df is not None:
            self._rows = self._result.df.take(1)  # only what is asked for
        rows = self._rows or []
        if self._position >= len(rows):
            return None
        self._position += 1
        return rows[self._position - 1]

    def fetchmany(self, size: int) -> List[Any]:
        if self._rows is None and self._result is not None and self._result.df is not None:
            # `dbt show --limit n`: run the query for n rows only
            self._rows = self._result.df.limit(self._position + size).collect()
        rows = (self._rows or [])[self._position : self._position + size]
        self._position += len(rows)
        return rows

    def close(self) -> None:
        self._result, self._rows = None, None


class BranchSparkHandle:
    """The connection handle of one dbt thread: the branch session plus the model build's transaction."""

    def __init__(self, branch_session: BranchSession, target_branch: Optional[str] = None):
        self.branch_session = branch_session
        self.model_transaction: Optional[BranchTransaction] = None
        # A branch statement without TO / ON means the target's branch (not the invocation's run branch);
        # USE BRANCH is refused: the target names the branch.
        home = target_branch or branch_session.branch
        self.router = StatementRouter(branch_session.spark, branch_session, self.write, home=lambda: home,
                                      merge_settings=_project_merge_settings)

    @contextmanager
    def write(self, what: str) -> Iterator[BranchTransaction]:
        """The transaction a write goes to: the open model build's, or its own commit."""
        with statement_transaction(self.branch_session, self.model_transaction, statement_message(what)) as tx:
            yield tx

    def begin_model(self, message: str) -> BranchTransaction:
        self.abort_model()
        self.model_transaction = self.branch_session.begin(message)
        sources.ledger.begin_model()
        return self.model_transaction

    def commit_model(self):
        tx, self.model_transaction = self.model_transaction, None
        if tx is None:
            return None
        # the versions of Spark's tables the model read, on its own commit (under `landing: per_model` the run's
        # only record of them; a run branch's landing records the whole run's too)
        tx.tx.sources = sources.ledger.model_reads()
        return tx.commit()

    def abort_model(self) -> None:
        tx, self.model_transaction = self.model_transaction, None
        if tx is not None:
            tx.abort()

    # DB-API surface dbt uses
    def cursor(self) -> BranchSparkCursor:
        return BranchSparkCursor(self)

    def cancel(self) -> None:
        try:  # works in-process and over Spark Connect (no SparkContext needed)
            self.branch_session.spark.interruptAll()
        except Exception:  # a stopped session has nothing left to cancel
            pass

    def rollback(self, *args: Any, **kwargs: Any) -> None:
        self.abort_model()

    def close(self) -> None:
        # a model build that failed half-way leaves its transaction open: discard it
        self.abort_model()


class BranchSparkConnectionManager(SparkConnectionManager):
    TYPE = "branchspark"

    @contextmanager
    def exception_handler(self, sql: str) -> Iterator[None]:
        try:
            yield
        except (DbtRuntimeError, DbtDatabaseError):
            raise
        except Exception as exc:
            logger.debug(f"Error while running:\n{sql}")
            logger.debug(exc)
            raise DbtRuntimeError(engine_client.failure_line(exc) or error_line(exc)) from exc

    @classmethod
    def get_response(cls, cursor: Any) -> AdapterResponse:
        message = getattr(cursor, "message", "OK")
        return AdapterResponse(_message=message, code=message.split(" ")[0])

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        if connection.state == ConnectionState.OPEN:
            return connection
        creds: BranchSparkCredentials = connection.credentials
        try:
            config = {**DBT_SPARK_CONFIG, **creds.server_side_parameters, **creds.spark_config}
            if creds.method == LOCAL_METHOD:
                spark = spark_session(config, remote=engine_client.attach(f"dbt {_dbt_command() or ''}".strip()))
                engine_client.own_session(spark)
            else:
                spark = spark_session(config, remote=creds.connect_url or None)
            lakehouse = open_lakehouse(spark, creds.resolved_warehouse(), creds.catalog)
            ensure_branch(lakehouse, creds.branch, creds.create_branch_from)
            for name in creds.protected_branches:
                if lakehouse.branch_exists(name) and not lakehouse.get_branch(name).protected:
                    lakehouse.protect_branch(name)
            refuse_protected_builds(lakehouse, creds.branch)
            refuse_builds_on_paused(lakehouse, creds.branch)
            # a writing invocation works on its run branch, merged into the target at its end
            branch_session = BranchSession(spark, lakehouse, session_branch(lakehouse, creds), author=_author())
            branch_session.expose_branch()
        except Exception as exc:
            raise FailedToConnectError(error_line(exc)) from exc
        connection.handle = BranchSparkHandle(branch_session, target_branch=creds.branch)
        connection.state = ConnectionState.OPEN
        return connection


def ensure_branch(lakehouse, branch: str, create_from: Optional[str]) -> None:
    """The target branch must exist; with `create_branch_from` a missing one is created from
    that branch (CI preview environments)."""
    if lakehouse.branch_exists(branch):
        return
    if not create_from:
        raise BranchNotFound(branch)
    try:
        lakehouse.create_branch(branch, source=create_from)
    except Exception:
        if not lakehouse.branch_exists(branch):  # else another process created it meanwhile: fine
            raise


# dbt commands that build relations; on a protected branch they fail before building anything.
BUILDING_COMMANDS = {"run", "build", "seed", "snapshot", "clone", "retry"}


def _dbt_command() -> Optional[str]:
    try:
        return getattr(get_flags(), "WHICH", None)
    except Exception:  # no dbt invocation (the adapter used as a library)
        return None


def refuse_protected_builds(lakehouse, branch: str) -> None:
    command = _dbt_command()
    if command in BUILDING_COMMANDS and lakehouse.get_branch(branch).protected:
        raise BranchsparkError(
            f"branch '{branch}' is protected and only changes by merge, so `dbt {command}` against it would "
            f"build nothing: target a feature branch, then `dbt run-operation merge_branch --args "
            f"'{{src: <feature>, dest: {branch}}}'`")


def refuse_builds_on_paused(lakehouse, branch: str) -> None:
    """A branch with a paused merge takes no change but that merge's: building against it would land nothing."""
    if _dbt_command() in BUILDING_COMMANDS:
        lakehouse.store.refuse_if_paused(branch)


def error_line(exc: BaseException) -> str:
    """The message a user should read: the core's one line as is; Spark's without the JVM trace."""
    if isinstance(exc, MergeConflict) and isinstance(exc.report, MergeResult):  # MERGE BRANCH in SQL
        return f"{report_text(exc.report)}\n{redact_text(str(exc))}"
    if isinstance(exc, BranchsparkError):
        return redact_text(str(exc))
    damaged = storage_error(exc)
    if damaged is not None:
        return str(damaged)
    text = str(exc)
    for marker in ("\n\nJVM stacktrace:", "\nJVM stacktrace:"):
        text = text.split(marker)[0]
    return text.strip()
