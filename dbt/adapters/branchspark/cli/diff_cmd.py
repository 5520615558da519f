"""`branchspark diff FROM TO [TABLE]`: per table the rows added, removed and modified, the schema changes,
the conflicts a merge of TO into FROM would hit, and the first rows (diff/report.py).

Registered on the `cli` group in main.py. Starts Spark (it reads data); only counts and `--limit` rows
per table come to the driver.
"""
from __future__ import annotations

import click

from ..core.diff import MODES, branch_diff
from ..core.diff.report import FORMATS, report


@click.command("diff")
@click.argument("from_version", metavar="FROM")
@click.argument("to_version", metavar="TO")
@click.argument("tables", nargs=-1, metavar="[TABLE]...")
@click.option("--mode", type=click.Choice(MODES), default=None,
              help="three_dot: what TO changed since its merge base with FROM (default between branches); "
                   "two_dot: the two versions as they are (default otherwise).")
@click.option("--limit", "-n", type=int, default=10, show_default=True, help="Rows shown per table.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="markdown: a pull-request comment; json: for scripts.")
@click.option("--no-preview", is_flag=True, help="Skip the merge preview (the conflicts a merge would hit).")
@click.pass_obj
def diff(obj, from_version, to_version, tables, mode, limit, fmt, no_preview):
    """Rows and schemas that differ from FROM to TO (branches, commit ids or branch@time)."""
    found = branch_diff(obj.lakehouse, from_version, to_version, tables=list(tables) or None, mode=mode,
                        preview=not no_preview)
    click.echo(report(found, limit).render(fmt))
