"""`branchspark merge SRC --into DEST`: a three-way merge, printed as tables.

Registered on the `cli` group in main.py. Conflicts print as a table (object,
the two operations, the rule, what is involved) followed by the one-line
error, and the command exits 1 having changed nothing.
"""
from __future__ import annotations

import sys

import click
from rich.table import Table

from .. import errors
from ..merge.merger import ON_CONFLICT, STRATEGIES
from .output import console


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
@click.argument("src")
@click.option("--into", "dest", default="main", show_default=True, help="The branch to merge into.")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="merge", show_default=True)
@click.option("--on-conflict", type=click.Choice(ON_CONFLICT), default="abort", show_default=True,
              help="abort: stop and change nothing; ours: keep dest's side; theirs: take src's side.")
@click.option("--dry-run", is_flag=True, help="Report what would merge and conflict; write nothing.")
@click.option("--message", "-m", default=None, help="The merge commit's message.")
@click.option("--author", default=None)
@click.pass_obj
def merge(obj, src, dest, strategy, on_conflict, dry_run, message, author):
    """Merge branch (or commit) SRC into branch DEST with one merge commit."""
    try:
        result = obj.lakehouse.merge(src, dest, strategy=strategy, on_conflict=on_conflict, dry_run=dry_run,
                                     message=message, author=author)
    except errors.MergeConflict as conflict:
        print_result(conflict.report)
        click.echo(f"error: {conflict}")
        sys.exit(1)
    print_result(result)
