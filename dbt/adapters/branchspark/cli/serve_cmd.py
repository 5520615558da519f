"""`branchspark serve`: the Iceberg REST catalog over the branches (SPEC section 6, docs/iceberg.md)."""
from __future__ import annotations

import ipaddress
import os

import click
import pyarrow as pa
import uvicorn

try:
    from numpy._core.multiarray import _set_madvise_hugepage  # what numpy calls for NUMPY_MADVISE_HUGEPAGE
except ImportError:  # another numpy layout: huge pages as numpy decides
    _set_madvise_hugepage = None

from ..core import errors
from ..iceberg.routes import create_app
from ..iceberg.service import CatalogService
from ..ui.access import new_token
from ..ui.app import create_app as create_ui_app
from .output import console

_LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refuse_open_bind(host: str, token: str | None) -> None:
    if not is_loopback(host) and not token:
        raise errors.InvalidArgument(f"--host {host} would let other machines read every branch: give --token "
                                     f"(or BRANCHSPARK_SERVE_TOKEN) so that each request must carry it, or serve on "
                                     f"127.0.0.1")


def steady_memory() -> None:
    """Memory for a commit's large arrays that is not handed back to the system at once. Where a page
    touched again costs a fault of the machine's own (our VMs: freed pages are reclaimed), mimalloc, Arrow's
    default pool, purges what it frees within milliseconds, and numpy asks for huge pages (madvise) that the
    kernel compacts memory for on each fault: a copy-on-write commit at 10M rows read its files in 4.4 s
    instead of 0.6 s. Arrow's jemalloc pool (else the system's) and numpy without huge pages instead.
    ARROW_DEFAULT_MEMORY_POOL and NUMPY_MADVISE_HUGEPAGE, where set, are left alone."""
    if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        try:
            pa.set_memory_pool(pa.jemalloc_memory_pool())
        except NotImplementedError:  # a build without jemalloc
            pa.set_memory_pool(pa.system_memory_pool())
    if os.environ.get("NUMPY_MADVISE_HUGEPAGE") is None and _set_madvise_hugepage is not None:
        _set_madvise_hugepage(False)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8181, show_default=True, type=int, help="Port to listen on.")
@click.option("--token", envvar="BRANCHSPARK_SERVE_TOKEN", default=None,
              help="Bearer token every request must carry (required for a non-loopback --host).")
@click.option("--vend-credentials", is_flag=True, envvar="BRANCHSPARK_SERVE_VEND_CREDENTIALS", default=False,
              help="Hand clients the object store's credentials with its endpoint (s3.access-key-id, ...), in the "
                   "config and loadTable answers; without it they bring their own.")
@click.option("--ui", "with_ui", is_flag=True, help="Also serve the web view (`branchspark ui`) at /.")
@click.option("--row-cache-mb", default=1024, show_default=True, type=click.IntRange(min=0),
              envvar="BRANCHSPARK_SERVE_ROW_CACHE_MB",
              help="Memory for the rows of data files that writers' commits read (a copy-on-write's match, a "
                   "delete's row images), kept for the next commits; 0: none.")
@click.pass_obj
def serve(obj, host, port, token, vend_credentials, with_ui, row_cache_mb):
    """Serve the branches as an Apache Iceberg REST catalog at http://HOST:PORT/iceberg.

    A client's `warehouse` picks the branch: main, dev, dev@<commit id> or dev@<ISO time>. Namespaces are
    databases, with their tables and views. Writes land on branches (one commit each); fixed versions and
    protected branches refuse them."""
    refuse_open_bind(host, token)
    steady_memory()
    if with_ui:
        return serve_ui(obj.lakehouse, host, port, token)
    app = create_app(CatalogService(obj.lakehouse, vend_credentials, row_cache_mb), token)
    console.print(f"serving the branches as an Iceberg REST catalog at http://{host}:{port}/iceberg "
                  f"(warehouse = branch){' with a bearer token' if token else ''}")
    uvicorn.run(app, host=host, port=port, log_level="warning")


def serve_ui(lakehouse, host: str, port: int, token: str | None) -> None:
    """The web view and the Iceberg catalog on one app (ui/app.py); a token is made when none is given, for
    the write actions, and printed here once (no page shows it)."""
    refuse_open_bind(host, token)
    given = bool(token)
    token = token or new_token()
    app = create_ui_app(lakehouse, token, reads_need_token=given)
    shown = "http://127.0.0.1" if host in ("0.0.0.0", "::") else f"http://{host}"
    console.print(f"branchspark ui at {shown}:{port}/ (Iceberg REST catalog at /iceberg); write actions need the "
                  f"token{' given' if given else ''}: sign in at {shown}:{port}/login"
                  + ("" if given else f" or open {shown}:{port}/?token={token}"), soft_wrap=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
