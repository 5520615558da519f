"""`branchspark sql`: SQL on a branch, as a script (-e, -f, or piped in) or an interactive shell.

Every statement goes through the core's SQL session (`Lakehouse.sql_session`: core/sql/), the one dbt's
statements go through: Spark SQL over the branch's tables (a write is one commit), and the branch statements
(`MERGE BRANCH dev`, `SHOW LOG`, `USE BRANCH main`, ...). Rows print as tables (the first --max-rows of
them: the rest stays in Spark). A script is checked whole before its first statement runs and stops at the
first error; the shell prints the error's one line and goes on. The shell keeps a history
(~/.branchspark_sql_history, or $BRANCHSPARK_SQL_HISTORY) and reads a statement over several lines until `;`.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from pyspark.errors import PySparkException
from rich.table import Table

from ..core import errors
from ..core.catalog.url import redact_text
from ..core.sql.branch_statements import merge_frame
from ..core.sql.results import RoutedResult
from ..core.sql.session import SqlSession, statements
from ..core.spark_errors import first_line, storage_error
from ..core.sql_text import COMMENT, SPACE, tokens
from .output import console

HISTORY_ENV = "BRANCHSPARK_SQL_HISTORY"
EXIT_WORDS = {"exit", "quit", "\\q", "exit;", "quit;"}


@click.command("sql")
@click.option("--branch", "-b", default="main", show_default=True, help="The branch the session starts on.")
@click.option("--execute", "-e", "text", default=None, help="Run these statements, then exit.")
@click.option("--file", "-f", "path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Run the statements of this file, then exit.")
@click.option("--max-rows", default=100, show_default=True, help="Rows printed per result (the rest stay in Spark).")
@click.pass_obj
def sql(obj, branch, text, path, max_rows):
    """SQL on a branch: Spark SQL and the branch statements (MERGE BRANCH, SHOW LOG, USE BRANCH, ...)."""
    session = obj.lakehouse.sql_session(branch)
    printer = ResultPrinter(max_rows)
    if text is not None or path is not None:
        script = text if text is not None else Path(path).read_text()
        sys.exit(run_script(session, script, printer))
    if not sys.stdin.isatty():  # statements piped in: a script
        sys.exit(run_script(session, sys.stdin.read(), printer))
    Shell(session, printer).loop()


def run_script(session: SqlSession, script: str, printer: "ResultPrinter") -> int:
    """0 when every statement ran; 1 at the first error (its line printed), the statements after it not run."""
    try:
        checked = statements(script)  # a syntax error anywhere stops the script before it starts
    except errors.BranchsparkError as bad:
        click.echo(f"error: {bad}")
        return 1
    for statement in checked:
        if not run_statement(session, statement, printer):
            return 1
    return 0


def run_statement(session: SqlSession, statement: str, printer: "ResultPrinter") -> bool:
    """Run and print one statement; False (its error printed as one line) when it failed."""
    try:
        printer.print(session.execute(statement))
        return True
    except errors.MergeConflict as conflict:
        if conflict.report:
            printer.print(RoutedResult(df=merge_frame(session.lakehouse.spark, conflict.report),
                                       message=conflict.report.summary()))
        click.echo(f"error: {redact_text(str(conflict))}")
    except Exception as exc:  # Spark's, the core's or the router's: one line, never a traceback
        click.echo(f"error: {error_line(exc, session)}")
    return False


def error_line(exc: Exception, session: SqlSession) -> str:
    if isinstance(exc, errors.BranchsparkError):
        return redact_text(str(exc))
    damaged = storage_error(exc, session.lakehouse.store.table_name)
    if damaged is not None:
        return str(damaged)
    if isinstance(exc, PySparkException):
        return first_line(exc)
    return " ".join(str(exc).split()) or type(exc).__name__


class ResultPrinter:
    def __init__(self, max_rows: int):
        self.max_rows = max_rows

    def print(self, result: RoutedResult) -> None:
        if result.df is None:
            console.print(result.message, soft_wrap=True, markup=False)
            return
        frame = result.df
        rows = frame.limit(self.max_rows + 1).collect()  # never more than what is shown
        if result.message not in ("OK", ""):
            console.print(result.message, soft_wrap=True, markup=False)
        table = Table(*frame.columns)
        for row in rows[:self.max_rows]:
            table.add_row(*["NULL" if v is None else str(v) for v in row])
        if frame.columns:
            console.print(table)
        shown = min(len(rows), self.max_rows)
        more = f" (the first {self.max_rows}; --max-rows shows more)" if len(rows) > self.max_rows else ""
        console.print(f"({shown} row{'' if shown == 1 else 's'}{more})", markup=False)


class Shell:
    """The interactive loop: a prompt naming the branch, statements over several lines until `;`."""

    def __init__(self, session: SqlSession, printer: ResultPrinter):
        self.session, self.printer = session, printer

    def loop(self) -> None:
        history = self._history()
        click.echo(f"branchspark sql on branch {self.session.branch}: end statements with ';', "
                   f"exit with exit or Ctrl-D")
        buffer: list[str] = []
        while True:
            prompt = f"{self.session.branch}> " if not buffer else " " * len(self.session.branch) + "-> "
            try:
                line = input(prompt)
            except EOFError:
                click.echo()
                break
            except KeyboardInterrupt:  # Ctrl-C drops the statement being typed, as psql does
                click.echo()
                buffer = []
                continue
            if not buffer and line.strip().lower() in EXIT_WORDS:
                break
            buffer.append(line)
            text = "\n".join(buffer)
            if not is_complete(text):
                continue
            buffer = []
            self._run(text)
        if history:
            history()

    def _run(self, text: str) -> None:
        try:
            checked = statements(text)
        except errors.BranchsparkError as bad:
            click.echo(f"error: {bad}")
            return
        for statement in checked:
            if not run_statement(self.session, statement, self.printer):
                return

    @staticmethod
    def _history():
        """Load the history file into readline; returns what saves it (None without readline)."""
        try:
            import readline
        except ImportError:  # not on every platform
            return None
        path = Path(os.environ.get(HISTORY_ENV) or Path.home() / ".branchspark_sql_history")
        try:
            readline.read_history_file(path)
        except OSError:  # no history yet
            pass
        readline.set_history_length(1000)

        def save():
            try:
                readline.write_history_file(path)
            except OSError:  # a read-only home: the session still worked
                pass

        return save


def is_complete(text: str) -> bool:
    """Whether `text` ends with a `;` outside strings and comments (a statement typed over lines is done)."""
    last = [text[s:e] for kind, s, e in tokens(text) if kind not in (SPACE, COMMENT)]
    return bool(last) and last[-1] == ";"
