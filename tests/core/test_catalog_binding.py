"""A catalog and its warehouse belong together (SPEC 1, issue 20 items 1 and 3).

Each test builds a real pair (a SQLite file or a PostgreSQL database, and Parquet files written by
Spark), then does what a user got wrong: a forgotten catalog URL, a deleted catalog, a mistyped
warehouse, a database that is no catalog, an older or newer catalog, a relative path. Every refusal is
one line, exit code 1, and leaves every file and every catalog row as it was.
"""
import os
import sqlite3
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from click.testing import CliRunner
from sqlalchemy import create_engine, inspect, text

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.catalog import binding
from dbt.adapters.branchspark.core.catalog.store import _MIGRATIONS, CATALOG_REVISION
from dbt.adapters.branchspark.core.catalog.url import redact_url
from dbt.adapters.branchspark.cli.main import cli
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.core.storage.layout import Warehouse
from sorted_rows import rows
from tests.pg_catalog import fresh_pg_catalog


def run(*args, catalog=None):
    """The CLI as a user runs it; `catalog` None leaves --catalog out."""
    options = ["--catalog", catalog] if catalog else []
    result = CliRunner().invoke(cli, [*options, *args], env={"COLUMNS": "300", "BRANCHSPARK_CATALOG": None,
                                                             "BRANCHSPARK_WAREHOUSE": None})
    return result.exit_code, result.output


def one_line_error(code, out, *phrases):
    assert code == 1, out
    assert out.startswith("error: ") and out.count("\n") == 1 and "Traceback" not in out, out
    for phrase in phrases:
        assert phrase in out, out


def files(warehouse) -> dict[str, int]:
    return {str(p.relative_to(warehouse)): p.stat().st_size for p in Path(warehouse).rglob("*") if p.is_file()}


def table_names(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return set(inspect(conn).get_table_names())
    finally:
        engine.dispose()


@pytest.fixture
def other_catalog(catalog_url, tmp_path):
    """A catalog URL that is not the warehouse's default SQLite file: where a team's catalog lives."""
    if catalog_url is None:
        yield f"sqlite:///{tmp_path}/catalogs/lake.db"
    else:
        yield catalog_url


@pytest.fixture
def filled(spark, warehouse, other_catalog):
    """A warehouse with data whose catalog is at `other_catalog`; two segments, one orphan-free."""
    lakehouse = Lakehouse(spark, warehouse, other_catalog)
    with lakehouse.transaction("main", message="setup") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.orders", spark.createDataFrame([(1, 1.0), (2, 2.0)], "id bigint, amount double"))
    lakehouse.branch("main").delete("shop.orders", "id = 1")
    yield lakehouse
    lakehouse.store.dispose()


def test_forgotten_catalog_url_is_refused_and_gc_deletes_nothing(filled, warehouse, other_catalog):
    """Issue 20: `--catalog` forgotten, `gc --dry-run --grace 0` said "would delete 480 files" and left a
    new catalog.db."""
    before = files(warehouse)
    for args in (["gc", "--dry-run", "--grace", "0"], ["gc", "--grace", "0"], ["log"], ["branch", "list"]):
        code, out = run("--warehouse", warehouse, *args)
        one_line_error(code, out, f"warehouse {warehouse} belongs to catalog", "give that catalog's URL")
    assert files(warehouse) == before  # no catalog.db, nothing deleted
    with pytest.raises(errors.CatalogMismatch, match="belongs to catalog"):
        Lakehouse(None, warehouse)
    assert files(warehouse) == before
    code, out = run("--warehouse", warehouse, "gc", "--dry-run", "--grace", "0", catalog=other_catalog)
    assert code == 0 and "would delete 0 files" in out, out


def test_deleted_catalog_is_refused_not_recreated(spark, warehouse, catalog_url):
    """Issue 20: catalog.db deleted, `log` printed "initialize catalog" and `gc` deleted every data file. On
    PostgreSQL: the URL now names an empty database."""
    lakehouse = Lakehouse(spark, warehouse, catalog_url)
    lakehouse.branch("main").create_database("shop")
    lakehouse.branch("main").create_table_as("shop.t", spark.createDataFrame([(1,)], "id bigint"))
    lakehouse.store.dispose()
    with fresh_pg_catalog() if catalog_url else _deleted_sqlite_catalog(warehouse) as empty_url:
        before = files(warehouse)
        for args in (["log"], ["gc", "--grace", "0"], ["init"]):
            code, out = run("--warehouse", warehouse, *args, catalog=empty_url if catalog_url else None)
            one_line_error(code, out, "belongs to catalog", "there is no catalog at")
        assert files(warehouse) == before
        with pytest.raises(errors.CatalogMismatch):
            Lakehouse(spark, warehouse, empty_url)
        if catalog_url:
            assert table_names(empty_url) == set()
        # an older warehouse without its marker: the data alone is enough to refuse
        os.remove(Path(warehouse) / binding.MARKER)
        code, out = run("--warehouse", warehouse, "gc", "--grace", "0", catalog=empty_url if catalog_url else None)
        one_line_error(code, out, "holds table data but there is no catalog at")
        assert files(warehouse) == {k: v for k, v in before.items() if k != binding.MARKER}


class _deleted_sqlite_catalog:
    def __init__(self, warehouse):
        self.warehouse = warehouse

    def __enter__(self):
        for name in os.listdir(self.warehouse):
            if name.startswith("catalog.db"):
                os.remove(os.path.join(self.warehouse, name))
        return f"sqlite:///{self.warehouse}/catalog.db"

    def __exit__(self, *exc):
        return False


def test_mistyped_warehouse_is_refused_and_not_created(filled, tmp_path, other_catalog, catalog_url):
    typo = str(tmp_path / "warehuose")
    for args in (["log"], ["branch", "create", "dev"], ["gc", "--grace", "0"]):
        code, out = run("--warehouse", typo, *args, catalog=other_catalog)
        one_line_error(code, out, f"warehouse {typo} is not the warehouse of the catalog", "check --warehouse")
        code, out = run("--warehouse", typo, *args)  # the default catalog: nothing there either
        one_line_error(code, out, "there is no branchspark catalog", "branchspark init")
    assert not os.path.exists(typo)
    assert not filled.branch_exists("dev")


def test_database_that_is_not_a_catalog_is_refused_untouched(tmp_path, catalog_url, warehouse):
    if catalog_url is None:
        path = tmp_path / "other.db"
        with sqlite3.connect(path) as conn:
            conn.execute("create table invoices (id integer)")
        url = f"sqlite:///{path}"
    else:
        url = catalog_url
        engine = create_engine(url)
        with engine.begin() as conn:
            conn.execute(text("create table invoices (id integer)"))
        engine.dispose()
    for args in (["init"], ["log"]):
        code, out = run("--warehouse", warehouse, *args, catalog=url)
        one_line_error(code, out, "holds other tables and no branchspark catalog")
    with pytest.raises(errors.CatalogMismatch, match="holds other tables"):
        Lakehouse(None, warehouse, url)
    assert table_names(url) == {"invoices"}
    assert not os.path.exists(warehouse)


def test_init_creates_the_pair_and_an_empty_warehouse_creates_one_implicitly(warehouse, other_catalog, tmp_path):
    code, out = run("--warehouse", warehouse, "init", catalog=other_catalog)
    assert code == 0 and "branches: main" in out, out
    marker = binding.read_marker(Lakehouse(None, warehouse, other_catalog).warehouse)
    assert marker["catalog_id"] == Lakehouse(None, warehouse, other_catalog).store.identity()[0]
    assert marker["catalog_url"] == redact_url(other_catalog)
    assert run("--warehouse", warehouse, "init", catalog=other_catalog)[0] == 0  # again: the same pair
    # the Python API's first use on an empty warehouse and an empty catalog creates both, as README shows
    fresh = str(tmp_path / "fresh")
    lakehouse = Lakehouse(None, fresh)
    assert [b.name for b in lakehouse.list_branches()] == ["main"]
    assert (Path(fresh) / binding.MARKER).exists()


def _downgrade_to(url: str, revision: str) -> None:
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)
    engine.dispose()


def _revision(url: str) -> str:
    engine = create_engine(url)
    with engine.connect() as conn:
        revision = conn.execute(text("select version_num from alembic_version")).scalar_one()
    engine.dispose()
    return revision


def test_older_catalog_is_upgraded_only_by_upgrade(filled, spark, warehouse, other_catalog):
    """Issue 20: a read-only command silently upgraded an older catalog. Here: a catalog and warehouse as
    the previous version left them (revision 0002, no marker)."""
    expected = rows(filled.read("shop.orders"))
    filled.store.dispose()
    _downgrade_to(other_catalog, "0002")
    os.remove(Path(warehouse) / binding.MARKER)
    for args in (["log"], ["branch", "list"], ["init"]):
        code, out = run("--warehouse", warehouse, *args, catalog=other_catalog)
        one_line_error(code, out, "written by an older branchspark (catalog revision 0002", "branchspark upgrade")
    assert _revision(other_catalog) == "0002"
    code, out = run("--warehouse", warehouse, "upgrade", catalog=other_catalog)
    assert code == 0 and f"from revision 0002 to {CATALOG_REVISION}" in out, out
    assert (Path(warehouse) / binding.MARKER).exists()
    assert rows(Lakehouse(spark, warehouse, other_catalog, create=False).read("shop.orders")) == expected
    code, out = run("--warehouse", warehouse, "upgrade", catalog=other_catalog)
    assert code == 0 and f"already at revision {CATALOG_REVISION}" in out, out


def test_newer_catalog_is_refused_in_one_line(filled, warehouse, other_catalog):
    filled.store.dispose()
    engine = create_engine(other_catalog)
    with engine.begin() as conn:
        conn.execute(text("update alembic_version set version_num = '0099'"))
    engine.dispose()
    for args in (["log"], ["upgrade"], ["gc", "--grace", "0"]):
        code, out = run("--warehouse", warehouse, *args, catalog=other_catalog)
        one_line_error(code, out, "written by a newer branchspark (catalog revision 0099", "upgrade branchspark")
        assert "Can't locate revision" not in out
    assert _revision(other_catalog) == "0099"


def test_gc_deletes_only_files_of_tables_its_catalog_knows(filled, spark, warehouse, other_catalog):
    """Files in the warehouse that this catalog never wrote (another tool's, a stray folder) are no
    business of its gc; its own orphans are named one by one in a dry run."""
    stray = Path(warehouse) / "tables" / "not-a-table-of-this-catalog" / "part-0.parquet"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"PAR1")
    outside = Path(warehouse) / "notes.txt"
    outside.write_text("keep me")
    table_id = filled.snapshot().state("shop.orders").id
    orphan = Path(warehouse) / "tables" / table_id / "data" / "_bs_seg=s0000000000000999-orphan" / "part-0.parquet"
    orphan.parent.mkdir(parents=True)
    orphan.write_bytes(b"PAR1")
    orphan_name = str(orphan.relative_to(warehouse))

    code, out = run("--warehouse", warehouse, "gc", "--dry-run", "--grace", "3600", catalog=other_catalog)
    assert code == 0 and f"kept (unreferenced, younger than --grace 3600s) {orphan_name}" in out, out
    assert "would delete 0 files" in out and "1 unreferenced files younger than the grace period" in out
    code, out = run("--warehouse", warehouse, "gc", "--dry-run", "--grace", "0", catalog=other_catalog)
    assert code == 0 and f"would delete {orphan_name}\n" in out and "would delete 1 files;" in out, out
    assert orphan.exists()
    code, out = run("--warehouse", warehouse, "gc", "--grace", "0", catalog=other_catalog)
    assert code == 0 and f"deleted {orphan_name}" in out, out
    assert not orphan.exists() and stray.exists() and outside.exists()
    assert rows(filled.read("shop.orders")) == [(2, 2.0)]


def test_relative_warehouse_works_for_cli_and_python(spark, tmp_path, monkeypatch, catalog_url):
    """Issue 20 item 3: `cd sample_project && branchspark gc --dry-run` failed with ArrowInvalid
    "file://./warehouse"; `Lakehouse(spark, "warehouse")` failed at its first write, leaving orphans."""
    monkeypatch.chdir(tmp_path)
    lakehouse = Lakehouse(spark, "warehouse", catalog_url)
    assert lakehouse.warehouse.root == str(tmp_path / "warehouse")
    lakehouse.branch("main").create_database("shop")
    lakehouse.branch("main").create_table_as("shop.t", spark.createDataFrame([(1,), (2,)], "id bigint"))
    assert rows(lakehouse.read("shop.t")) == [(1,), (2,)]
    code, out = run("gc", "--dry-run", "--grace", "0", catalog=catalog_url)  # --warehouse defaults to ./warehouse
    assert code == 0 and "would delete 0 files" in out, out
    code, out = run("--warehouse", "./warehouse", "log", catalog=catalog_url)
    assert code == 0 and "create shop.t" in out, out


def test_relative_locations_resolve_against_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert Warehouse("warehouse").root == str(tmp_path / "warehouse")
    assert Warehouse("file://./warehouse").root == f"file://{tmp_path}/warehouse"  # was "file://./warehouse"
    assert Warehouse("file:///data/wh/").root == "file:///data/wh"
    assert Warehouse("s3a://bucket/wh/").root == "s3a://bucket/wh"
