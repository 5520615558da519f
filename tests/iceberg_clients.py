"""Real Iceberg clients against a real `branchspark serve` process: shared by the serve tests and the bench.

DuckDB cannot download extensions here: they load from the files of the duckdb-extension-* packages.
"""
from __future__ import annotations

import importlib
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import duckdb
import requests

BRANCHSPARK = str(Path(sys.executable).with_name("branchspark"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(warehouse: str, *args: str, catalog: str | None = None):
    """A `branchspark serve` process on a free port; yields its base URL (…/iceberg)."""
    port = free_port()
    command = [BRANCHSPARK, "--warehouse", warehouse] + (["--catalog", catalog] if catalog else []) + \
        ["serve", "--port", str(port), *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/iceberg"
    try:
        deadline = time.time() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"branchspark serve did not start: {process.stdout.read()}")
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def duckdb_connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    for name in ("avro", "httpfs", "iceberg"):
        folder = os.path.dirname(importlib.import_module(f"duckdb_extension_{name}").__file__)
        con.execute(f"LOAD '{folder}/extensions/v{duckdb.__version__}/{name}.duckdb_extension'")
    return con


def duckdb_attach(con, url: str, warehouse: str, alias: str, token: str | None = None,
                  max_staleness: str | None = None) -> None:
    """`max_staleness` (an interval, '1 minute'): DuckDB keeps a loaded table that long instead of asking
    loadTable before every query."""
    if token:
        con.execute(f"CREATE OR REPLACE SECRET {alias}_secret (TYPE iceberg, TOKEN '{token}')")
        auth = f"SECRET {alias}_secret"
    else:
        auth = "AUTHORIZATION_TYPE 'none'"
    kept = f", MAX_TABLE_STALENESS '{max_staleness}'" if max_staleness else ""
    con.execute(f"ATTACH '{warehouse}' AS {alias} (TYPE iceberg, ENDPOINT '{url}', {auth}{kept})")


def get(url: str, path: str, token: str | None = None, method: str = "GET", **params) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.request(method, url + path, params=params, headers=headers, timeout=60)
