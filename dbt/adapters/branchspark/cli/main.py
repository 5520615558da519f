"""`branchspark`: the command line over the core (Click for commands, Rich for output).

The catalog URL and the warehouse come from --catalog/--warehouse or
BRANCHSPARK_CATALOG/BRANCHSPARK_WAREHOUSE. Metadata commands never start
Spark; `show` does, to count rows.
"""
from __future__ import annotations

import sys

import click
from rich.table import Table

from ..core import errors
from ..core.catalog.url import redact_text, redact_url
from ..core.lakehouse import Lakehouse
from ..core.operations import ObjectKind
from ..core.spark_errors import storage_error
from .changes_cmd import changes
from .diff_cmd import diff
from .engine_cmd import engine
from .import_cmd import import_table
from .log_cmd import log
from .merge_cmd import abort, merge, merge_status, resolve
from .output import console
from .serve_cmd import serve
from .session import command_session
from .sql_cmd import sql
from .ui_cmd import ui


class Context:
    def __init__(self, catalog: str | None, warehouse: str, spark_config: dict | None = None):
        self.catalog, self.warehouse = catalog, warehouse
        self.spark_config = dict(spark_config or {})
        self._lakehouse = None

    def session(self):
        """This command's Spark, with the `--conf` settings."""
        return command_session(self.spark_config)

    @property
    def lakehouse(self) -> Lakehouse:
        """The catalog and warehouse named, which must exist and belong together: only `init` creates them."""
        if self._lakehouse is None:
            self._lakehouse = Lakehouse(self.session, self.warehouse, self.catalog, create=False)
        return self._lakehouse


class BranchsparkGroup(click.Group):
    """Print the core's one-line errors as they are, without a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except errors.BranchsparkError as exc:
            click.echo(f"error: {redact_text(str(exc))}")  # plain: one line, never wrapped
            sys.exit(1)
        except Exception as exc:  # Spark failing on a data file or the store (show counts rows): one line too
            lakehouse = getattr(ctx.obj, "_lakehouse", None)
            damaged = storage_error(exc, lakehouse.store.table_name if lakehouse else None)
            if damaged is None:
                raise
            click.echo(f"error: {damaged}")
            sys.exit(1)


@click.group(cls=BranchsparkGroup)
@click.option("--catalog", envvar="BRANCHSPARK_CATALOG", default=None,
              help="SQLAlchemy URL of the catalog (default: a SQLite file in the warehouse).")
@click.option("--warehouse", envvar="BRANCHSPARK_WAREHOUSE", default="./warehouse", show_default=True,
              help="Path or URI of the warehouse.")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE",
              help="A Spark setting, e.g. a catalog your tables are in (spark.sql.catalog.lake=...); repeatable.")
@click.pass_context
def cli(ctx, catalog, warehouse, confs):
    """Git-like branches for a Spark lakehouse."""
    settings = {}
    for conf in confs:
        key, sep, value = conf.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{conf!r}: expected KEY=VALUE", param_hint="--conf")
        settings[key.strip()] = value.strip()
    ctx.obj = Context(catalog, warehouse, settings)


@cli.command()
@click.pass_obj
def init(obj: Context):
    """Create the catalog and its warehouse (a new catalog has branch main); an existing pair is left as it is."""
    lakehouse = obj._lakehouse = Lakehouse.init(obj.session, obj.warehouse, obj.catalog)
    _print_ready(lakehouse)


@cli.command()
@click.pass_obj
def upgrade(obj: Context):
    """Upgrade a catalog written by an older branchspark in place, and bind it to its warehouse."""
    lakehouse = obj._lakehouse = Lakehouse.upgrade(obj.session, obj.warehouse, obj.catalog)
    store = lakehouse.store
    click.echo(f"upgraded the catalog from revision {store.upgraded_from} to {store.revision}" if store.upgraded_from
               else f"the catalog is already at revision {store.revision}")
    _print_ready(lakehouse)


def _print_ready(lakehouse: Lakehouse) -> None:
    console.print(f"catalog ready at {redact_url(lakehouse.catalog_url)} for warehouse {lakehouse.warehouse.root}; "
                  f"branches: {', '.join(b.name for b in lakehouse.list_branches())}", soft_wrap=True)


@cli.group()
def branch():
    """Create, drop, list and protect branches."""


@branch.command("create")
@click.argument("name")
@click.option("--from", "source", default="main", show_default=True, help="Branch, commit id or time.")
@click.option("--at", "as_of", default=None, help="A time on the source branch (ISO 8601).")
@click.pass_obj
def branch_create(obj: Context, name, source, as_of):
    info = obj.lakehouse.create_branch(name, source, as_of)
    console.print(f"created branch [bold]{name}[/bold] at {info.head[:12]} (from {info.created_from})")


@branch.command("drop")
@click.argument("name")
@click.option("--force", "-D", is_flag=True, help="Also drop a branch whose commits no other branch reaches.")
@click.pass_obj
def branch_drop(obj: Context, name, force):
    """Drop a branch (refused while it is protected, or holds commits no other branch has unless --force)."""
    obj.lakehouse.drop_branch(name, force=force)
    console.print(f"dropped branch [bold]{name}[/bold]")


@branch.command("list")
@click.pass_obj
def branch_list(obj: Context):
    table = Table("branch", "head", "head time", "message", "protected", "created from")
    for info in obj.lakehouse.list_branches():
        head = obj.lakehouse.store.get_commit(info.head)
        table.add_row(info.name, info.head[:12], f"{head.ts:%Y-%m-%d %H:%M:%S}", head.message[:50],
                      "yes" if info.protected else "", info.created_from or "")
    console.print(table)


@branch.command("protect")
@click.argument("name")
@click.option("--off", is_flag=True, help="Make the branch writable again.")
@click.pass_obj
def branch_protect(obj: Context, name, off):
    obj.lakehouse.protect_branch(name, not off)
    console.print(f"branch [bold]{name}[/bold] is {'writable' if off else 'protected: only merges change it'}")


@cli.command()
@click.argument("table_name")
@click.option("--branch", "ref", default="main", show_default=True, help="Branch, commit id or branch@time.")
@click.pass_obj
def show(obj: Context, table_name, ref):
    """Schema, segments and row count of a table."""
    snapshot = obj.lakehouse.snapshot(ref)
    state = snapshot.state(table_name)
    info = snapshot.ns.table_info(state)
    console.print(f"[bold]{info.full_name}[/bold] ({info.kind}) on {ref} at {snapshot.commit.short_id}")
    if info.kind == ObjectKind.VIEW:
        console.print(info.view_sql)
        return
    schema = Table("column", "type", "nullable", "default")
    for column in info.columns:
        schema.add_row(column.name, column.type, "yes" if column.nullable else "no", column.default or "")
    console.print(schema)
    if info.partition_by:
        console.print(f"partitioned by: {', '.join(info.partition_by)}")
    if info.primary_key:
        console.print(f"primary key: {', '.join(info.primary_key)}")
    segments = Table("segment", "kind", "seq", "partition", "path")
    for segment in snapshot.ns.segment_infos(state.segments):
        partition = ", ".join(f"{k}={v}" for k, v in segment.partition_values.items())
        segments.add_row(segment.id[:12], segment.kind, str(segment.seq), partition, segment.path)
    console.print(segments)
    tombstones = snapshot.ns.tombstone_infos(state.tombstones)
    console.print(f"tombstones: {len(tombstones)} ({sum(t.row_count for t in tombstones)} rows deleted)")
    console.print(f"rows: {snapshot.read(table_name).count()}")


@cli.command()
@click.option("--grace", type=float, default=3600.0, show_default=True,
              help="Keep unreferenced files younger than this many seconds (writers in flight).")
@click.option("--drop-run-branches-after", type=float, default=None,
              help="First drop kept dbt run branches (recorded as such by dbt) whose head is older than this "
                   "many seconds.")
@click.option("--dry-run", is_flag=True, help="Name every file gc would delete, and delete nothing.")
@click.pass_obj
def gc(obj: Context, grace, drop_run_branches_after, dry_run):
    """Delete files that no commit of any branch references (only in folders of tables this catalog knows)."""
    report = obj.lakehouse.gc(grace_seconds=grace, dry_run=dry_run, drop_run_branches_after=drop_run_branches_after)
    verb = "would delete" if dry_run else "deleted"
    for name in report.dropped_branches:
        click.echo(f"{'would drop' if dry_run else 'dropped'} run branch {name}")
    for path in report.deleted_files:
        click.echo(f"{verb} {path}")
    for path in report.young_orphans:
        click.echo(f"kept (unreferenced, younger than --grace {grace:g}s) {path}")
    click.echo(f"{verb} {len(report.deleted_files)} files; kept {report.referenced_files} referenced files "
               f"({report.referenced_segments} segments, {report.referenced_tombstones} tombstones) and "
               f"{len(report.young_orphans)} unreferenced files younger than the grace period")
    if report.borrowed_files:
        click.echo(f"kept {report.borrowed_files} borrowed files of imported tables where their source keeps them "
                   f"({report.unreferenced_borrowed_files} no longer read by any branch): gc never deletes them")


cli.add_command(changes)
cli.add_command(diff)
cli.add_command(import_table)
cli.add_command(log)
cli.add_command(merge)
cli.add_command(merge_status)
cli.add_command(resolve)
cli.add_command(abort)
cli.add_command(serve)
cli.add_command(engine)
cli.add_command(sql)
cli.add_command(ui)


if __name__ == "__main__":
    cli()
