"""`branchspark changes TABLE --from --to`: how many rows each change type holds, and the first rows.

Registered on the `cli` group in main.py. Starts Spark (it reads data); prints only a count
per change type and `--limit` rows, so nothing of the range is collected beyond those.
"""
from __future__ import annotations

import click
from rich.table import Table

from ..core.changes import CHANGE_TYPE, DELETE, INSERT, table_changes
from .output import console


@click.command("changes")
@click.argument("table_name")
@click.option("--from", "from_", default=None,
              help="Commit id, branch, branch@time or time; empty or 0: the rows of --to (snapshot).")
@click.option("--to", default=None, help="Commit id, branch, branch@time or time [default: head of --branch].")
@click.option("--branch", default=None, help="Branch whose history times refer to [default: --to if a branch, "
                                             "else main].")
@click.option("--net", is_flag=True, help="Fold each primary key's (keyless: each row image's) changes into their net effect.")
@click.option("--limit", "-n", type=int, default=20, show_default=True, help="How many change rows to show.")
@click.pass_obj
def changes(obj, table_name, from_, to, branch, net, limit):
    """Rows inserted and deleted in TABLE_NAME between two versions (CDC)."""
    frame = table_changes(obj.lakehouse, table_name, from_, to, branch=branch, net=net)
    counts = {row[CHANGE_TYPE]: row["count"] for row in frame.groupBy(CHANGE_TYPE).count().collect()}
    span = f"from {from_}" if from_ not in (None, "", "0") else "snapshot"
    console.print(f"[bold]{table_name}[/bold] changes {span} to {to or branch or 'main'}"
                  f"{' (net)' if net else ''}: {counts.get(DELETE, 0)} deleted, {counts.get(INSERT, 0)} inserted")
    summary = Table("change type", "rows")
    for kind in (DELETE, INSERT):
        summary.add_row(kind, str(counts.get(kind, 0)))
    console.print(summary)
    if limit <= 0:
        return
    shown = frame.limit(limit).collect()
    rows = Table(*frame.columns)
    for row in shown:
        rows.add_row(*["" if value is None else str(value) for value in row])
    console.print(rows)
    total = sum(counts.values())
    if total > len(shown):
        console.print(f"[dim]first {len(shown)} of {total} changes; raise --limit to see more[/dim]")
