"""`branchspark ui`: the web view of branches, history, diffs, merge previews and paused merges (SPEC 10,
ui/app.py), on the same server as `branchspark serve` (its Iceberg REST catalog stays at /iceberg).

Bound to 127.0.0.1 by default, where pages are open and write actions need the token; another address needs
--token, and then every request does. Without --token a token is made for this run and printed once, in the
sign-in address, to the terminal (never on a page)."""
from __future__ import annotations

import click

from .serve_cmd import refuse_open_bind, serve_ui


@click.command("ui")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8182, show_default=True, type=int, help="Port to listen on.")
@click.option("--token", envvar="BRANCHSPARK_SERVE_TOKEN", default=None,
              help="Bearer token (required for a non-loopback --host; write actions always need one: without it, "
                   "one is made and printed).")
@click.pass_obj
def ui(obj, host, port, token):
    """Serve a web view of the branches: history graphs, compares with row-level diffs, merge previews and
    paused merges, tables at any ref."""
    refuse_open_bind(host, token)  # before the catalog is opened: a refused command touches nothing
    serve_ui(obj.lakehouse, host, port, token)
