"""`Lakehouse.sql`'s session: SQL on one branch, outside dbt.

    session = lh.sql_session("dev")
    session.sql("INSERT INTO shop.orders VALUES (6, 60.0)")     # one commit on dev
    session.sql("MERGE BRANCH dev TO main").show()              # the merge report, as rows
    session.sql("USE BRANCH main")                              # later statements run on main

Every statement goes through the router dbt's statements go through (router.py): reads see the session's
branch, a write is one commit on it, branch statements run their Lakehouse operation. The shell
(`branchspark sql`) is such a session.
"""
from __future__ import annotations

import getpass

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from ..sql_text import statement_spans
from .branch_session import BranchSession, statement_transaction
from .results import RoutedResult
from .router import StatementRouter
from .statements import SqlSyntaxError, parse_branch_statement
from .version_reads import find_relations


def default_author() -> str:
    try:
        return f"sql ({getpass.getuser()})"
    except (KeyError, OSError):  # no user name in the environment or the password database
        return "sql"


class SqlSession:
    def __init__(self, lakehouse, branch: str, author: str | None = None):
        lakehouse.get_branch(branch)  # BranchNotFound now, not at the first statement
        self.lakehouse = lakehouse
        self.branch_session = BranchSession(lakehouse.spark, lakehouse, branch, author=author or default_author())
        self.router = StatementRouter(self.branch_session.spark, self.branch_session, self._write,
                                      switch=self._use)

    @property
    def branch(self) -> str:
        return self.branch_session.branch

    def _write(self, what: str):
        return statement_transaction(self.branch_session, None, f"sql {what}")

    def _use(self, branch: str) -> None:
        self.branch_session.branch = branch
        self.branch_session.expose_branch()

    def execute(self, statement: str) -> RoutedResult:
        """Run one statement (no `;` inside, but at its end)."""
        self.branch_session.expose_branch()  # another writer may have moved the branch since the last one
        return self.router.execute(statement)

    def sql(self, text: str) -> DataFrame:
        """Run the statements of `text` in order; the last one's rows (no columns, no rows for a statement
        that returns none, as Spark's `spark.sql` does). A syntax error in the branch statements or
        version reads of any of them stops them all before the first runs."""
        result = RoutedResult()
        for statement in statements(text):
            result = self.execute(statement)
        if result.df is not None:
            return result.df
        return self.lakehouse.spark.createDataFrame([], StructType([]))


def statements(text: str) -> list[str]:
    """The statements of a script, checked: a branch statement or version read that does not parse raises
    SqlSyntaxError, placed in the script (line and column), before any statement runs."""
    found = []
    for start, end in statement_spans(text):
        statement = text[start:end]
        try:
            parse_branch_statement(statement)
            find_relations(statement)
        except SqlSyntaxError as bad:
            raise bad.within(text, start) from None
        found.append(statement)
    return found
