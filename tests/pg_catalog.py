"""PostgreSQL catalogs for tests: one fresh database per test on the server `tests/pg_server.sh` starts.

The server's URL comes from BRANCHSPARK_TEST_PG_URL (`.ci/run` exports it). Without it a PostgreSQL test
skips with the reason printed (a local run); in CI (CI=true) a missing or unreachable server fails instead.
"""
import os
import uuid
from contextlib import contextmanager

import pytest

from tests.missing import in_ci, missing

PG_URL_ENV = "BRANCHSPARK_TEST_PG_URL"
# The catalogs the catalog and merge tests run on (tests/core/conftest.py).
CATALOG_KINDS = ["sqlite", "postgresql"]


def pg_server_url() -> str:
    """The test server's URL, or skip (locally) / fail (in CI) with the reason."""
    url = os.environ.get(PG_URL_ENV)
    if not url:
        reason = f"{PG_URL_ENV} is not set: start PostgreSQL with `tests/pg_server.sh start` and export it"
        missing(reason)
    return url


def _admin_connect(url: str):
    import psycopg
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    try:
        return psycopg.connect(host=parsed.host, port=parsed.port, user=parsed.username, password=parsed.password,
                               dbname=parsed.database or "postgres", autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        message = f"PostgreSQL at {parsed.render_as_string(hide_password=True)} is unreachable: {exc}"
        if in_ci() or os.environ.get(PG_URL_ENV):
            pytest.fail(message)  # a server was promised: failing to reach it is a failure
        pytest.skip(message)


def create_database(server_url: str) -> str:
    """A new empty database on the server; its SQLAlchemy URL."""
    from sqlalchemy.engine import make_url

    name = f"bs_test_{uuid.uuid4().hex[:16]}"
    with _admin_connect(server_url) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_database(server_url: str, url: str) -> None:
    from sqlalchemy.engine import make_url

    name = make_url(url).database
    with _admin_connect(server_url) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def fresh_pg_catalog():
    """The URL of a new database on the test server, dropped afterwards."""
    server = pg_server_url()
    url = create_database(server)
    try:
        yield url
    finally:
        drop_database(server, url)


@contextmanager
def catalog_of_kind(kind: str):
    """A test catalog URL: None for "sqlite" (a SQLite file in the warehouse), else a fresh PostgreSQL database."""
    if kind == "sqlite":
        yield None
        return
    with fresh_pg_catalog() as url:
        yield url
