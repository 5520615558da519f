"""`branchspark import SOURCE --as db.t`: a Parquet directory, a Delta table or an Iceberg table as a branch table,
in one commit that writes no data file (docs/import.md). Registered on the `cli` group in main.py; needs no Spark
unless --primary-key asks for the key to be checked."""
from __future__ import annotations

import click

from .output import console


@click.command("import")
@click.argument("source")
@click.option("--as", "name", required=True, metavar="DB.TABLE", help="The table to create on the branch.")
@click.option("--branch", default="main", show_default=True)
@click.option("--format", "format_", default=None, metavar="parquet|hive|delta|iceberg",
              help="The source's format (default: found from the source).")
@click.option("--version", type=int, default=None, help="A Delta table's version (default: its current one).")
@click.option("--snapshot", type=int, default=None, help="An Iceberg table's snapshot id (default: its current one).")
@click.option("--primary-key", default=None, metavar="C1,C2", help="Columns that are the table's primary key.")
@click.option("--refresh", is_flag=True, help="Bring the source's versions since the import (or the last refresh) "
                                               "as commits of its own changes (Delta, Iceberg).")
@click.option("--take-ownership", is_flag=True, help="Hand the files DB.TABLE borrows from SOURCE to branchspark (the "
                                                      "source is retired): gc deletes them once nothing reads them.")
@click.option("--message", "-m", default="", help="The commit's message.")
@click.option("--author", default=None)
@click.pass_obj
def import_table(obj, source, name, branch, format_, version, snapshot, primary_key, refresh, take_ownership, message,
                 author):
    """Make table DB.TABLE of the table at SOURCE (a path or URI), borrowing its files; with --refresh, bring the
    source's later versions to it; with --take-ownership, hand the files it borrows to branchspark."""
    if version is not None and snapshot is not None:
        raise click.UsageError("give --version (Delta) or --snapshot (Iceberg), not both")
    key = [c.strip() for c in primary_key.split(",") if c.strip()] if primary_key else None
    lakehouse = obj.lakehouse
    if take_ownership:
        count = lakehouse.take_ownership(name, branch=branch, source=source)
        console.print(f"{count} files of {source} that [bold]{name}[/bold] reads on {branch} are branchspark's now: gc "
                      f"deletes them once no branch reads them", soft_wrap=True)
        return
    if refresh:
        commits = lakehouse.refresh_import(name, branch=branch, source=source, author=author)
        for info in commits:
            detail = lakehouse.store.operations(info.id)[-1].detail
            console.print(f"{info.short_id} {detail['source_format']} version {detail['source_version']}: "
                          f"{', '.join(op.op for op in lakehouse.store.operations(info.id))}", soft_wrap=True)
        console.print(f"[bold]{name}[/bold] on {branch} is up to date with {source}"
                      + (f" ({len(commits)} new commits)" if commits else ""), soft_wrap=True)
        return
    info = lakehouse.import_table(source, name, branch=branch, format=format_,
                                  version=snapshot if snapshot is not None else version, primary_key=key,
                                  message=message, author=author)
    insert = lakehouse.store.operations(info.id)[-1].detail
    segments = lakehouse.store.segments(insert["segments_added"]).values()
    hidden = sum(t.row_count for t in lakehouse.store.tombstones(insert["tombstones_added"]).values())
    at = f" at version {insert['source_version']}" if insert.get("source_version") else ""
    console.print(f"imported {insert['imported_from']} ({insert['source_format']}{at}) as [bold]{name}[/bold] on "
                  f"{branch} in commit {info.short_id}: {sum(len(s.files) for s in segments)} files borrowed, "
                  f"none copied" + (f"; {hidden} rows its deletes hide kept as tombstones" if hidden else ""),
                  soft_wrap=True)
