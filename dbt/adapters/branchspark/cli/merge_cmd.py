"""`branchspark merge SRC --into DEST`: a three-way merge, printed as tables.

Registered on the `cli` group in main.py. Conflicts print as a table (object,
the two operations, the rule, what is involved) followed by the one-line
error, and the command exits 1 having changed nothing.
"""
from __future__ import annotations

import sys

import click
from rich.table import Table

from ..core import errors
from ..core.merge.merger import ON_CONFLICT, STRATEGIES
from .output import console
from ..core.merge.interactive import open_rows, status, status_rows, status_title


def rows_table(title: str, rows: list[dict]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in rows[0]:
        table.add_column(column)
    for row in rows:
        table.add_row(*[str(value) for value in row.values()])
    return table


def print_result(result) -> None:
    console.print(result.summary())
    if result.outcomes:
        console.print(rows_table("merged objects", result.outcome_rows()))
    if result.resolved:
        console.print(rows_table("conflicts settled by on_conflict", [c.as_row() for c in result.resolved]))
    if result.conflicts:
        console.print(rows_table("conflicts", result.conflict_rows()))


@click.command("merge")
@click.argument("src", required=False)
@click.option("--into", "dest", default="main", show_default=True, help="The branch to merge into.")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="merge", show_default=True,
              help="interactive: pause before schemas and data; rebase: replay SRC's commits on DEST.")
@click.option("--on-conflict", type=click.Choice(ON_CONFLICT + ("skip", "replace")), default="abort",
              show_default=True, help="abort: stop and change nothing; ours: keep dest's side; theirs: take src's "
                                      "side; pause: stop resumably with conflict relations; skip/replace: rebase "
                                      "handlers.")
@click.option("--continue", "continue_", is_flag=True, help="Finish a paused merge or resume a stopped rebase.")
@click.option("--dry-run", is_flag=True, help="Report what would merge and conflict; write nothing.")
@click.option("--message", "-m", default=None, help="The merge commit's message.")
@click.option("--author", default=None)
@click.pass_obj
def merge(obj, src, dest, strategy, on_conflict, continue_, dry_run, message, author):
    """Merge branch (or commit) SRC into branch DEST with one merge commit."""
    if not src and not continue_:
        raise click.UsageError("give SRC, or --continue to finish a paused merge")
    try:
        result = obj.lakehouse.merge(src, dest, strategy=strategy, on_conflict=on_conflict, dry_run=dry_run,
                                     message=message, author=author, continue_=continue_, count_rows=True)
    except errors.MergeConflict as conflict:
        print_result(conflict.report)
        click.echo(f"error: {conflict}")
        sys.exit(1)
    print_result(result)
    if result.status == "paused":
        print_status(obj.lakehouse, dest)


def print_status(lakehouse, dest: str, limit: int = 20) -> None:
    state = status(lakehouse, dest)
    console.print(status_title(state))
    if state["tables"]:
        console.print(rows_table("conflicts per table", status_rows(state)))
    if state["phase"] not in ("not started", "finished", "rebasing") and limit:
        for table, shown in open_rows(lakehouse, dest, limit).items():
            console.print(rows_table(f"open conflicts: {table}", shown))


@click.command("merge-status")
@click.argument("dest", default="main")
@click.option("--rows", "limit", default=20, show_default=True, help="Open conflict rows shown per table.")
@click.pass_obj
def merge_status(obj, dest, limit):
    """The state of the merge into DEST: phase and open conflicts per table."""
    print_status(obj.lakehouse, dest, limit)


@click.command("resolve")
@click.argument("dest")
@click.argument("table", required=False)
@click.option("--take", type=click.Choice(("ours", "theirs")), default=None, help="Resolve in bulk with one side.")
@click.option("--where", default=None, help="A Spark SQL predicate on the conflict relation's columns.")
@click.option("--set", "assignments", multiple=True, metavar="COLUMN=SQL",
              help="merged_<column>=<SQL expression> (or conflict=true, or CONFLICT() to mark); repeatable.")
@click.pass_obj
def resolve(obj, dest, table, take, where, assignments):
    """Resolve conflicts of the merge paused on DEST, in TABLE (or 'schema'), with SQL or --take."""
    updates = {}
    for item in assignments:
        column, sep, expression = item.partition("=")
        if not sep:
            raise click.UsageError(f"--set '{item}' is not COLUMN=SQL")
        updates[column.strip()] = expression.strip()
    obj.lakehouse.resolve_conflicts(dest, table, take=take, where=where, set=updates or None)
    print_status(obj.lakehouse, dest)


@click.command("abort")
@click.argument("dest")
@click.pass_obj
def abort(obj, dest):
    """End the merge or rebase paused on DEST, leaving DEST exactly as it was."""
    obj.lakehouse.abort_merge(dest)
    console.print(f"aborted the merge into {dest}: {dest} is as it was")
