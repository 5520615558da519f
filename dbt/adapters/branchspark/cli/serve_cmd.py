"""`branchspark serve`: the Iceberg REST catalog over the branches (SPEC section 6, docs/iceberg.md)."""
from __future__ import annotations

import ipaddress

import click
import uvicorn

from ..core import errors
from ..iceberg.routes import create_app
from ..iceberg.service import CatalogService
from .output import console

_LOOPBACK_NAMES = ("localhost",)


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8181, show_default=True, type=int, help="Port to listen on.")
@click.option("--token", envvar="BRANCHSPARK_SERVE_TOKEN", default=None,
              help="Bearer token every request must carry (required for a non-loopback --host).")
@click.option("--vend-credentials", is_flag=True, envvar="BRANCHSPARK_SERVE_VEND_CREDENTIALS", default=False,
              help="Hand clients the object store's credentials with its endpoint (s3.access-key-id, ...), in the "
                   "config and loadTable answers; without it they bring their own.")
@click.pass_obj
def serve(obj, host, port, token, vend_credentials):
    """Serve the branches read-only as an Apache Iceberg REST catalog at http://HOST:PORT/iceberg.

    A client's `warehouse` picks the branch: main, dev, dev@<commit id> or dev@<ISO time>. Namespaces are
    databases, with their tables and views."""
    if not _is_loopback(host) and not token:
        raise errors.InvalidArgument(f"--host {host} would let other machines read every branch: give --token "
                                     f"(or BRANCHSPARK_SERVE_TOKEN) so that each request must carry it, or serve on "
                                     f"127.0.0.1")
    app = create_app(CatalogService(obj.lakehouse, vend_credentials), token)
    console.print(f"serving the branches read-only as an Iceberg REST catalog at http://{host}:{port}/iceberg "
                  f"(warehouse = branch){' with a bearer token' if token else ''}")
    uvicorn.run(app, host=host, port=port, log_level="warning")
