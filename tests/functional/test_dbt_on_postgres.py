"""dbt on a PostgreSQL catalog: the branch targets and the merge into protected main, as on SQLite; and the
catalog password never shows in `dbt debug` or an error."""
from __future__ import annotations

import pytest
import yaml
from pyspark.sql import SparkSession
from sqlalchemy.engine import make_url

import tests.functional.test_dbt_branches as branch_tests
import tests.functional.test_merge_dbt as merge_tests
from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.catalog.store import CATALOG_URL_ENV
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from tests.functional.test_merge_dbt import sample  # noqa: F401  (the fixture: a copy of sample_project)
from tests.pg_catalog import create_database, drop_database, fresh_pg_catalog, pg_server_url

PASSWORD = "Pw-9f3e1c-never-printed"


@pytest.fixture(scope="class")
def pg_catalog_url():
    server = pg_server_url()
    url = create_database(server)
    yield url
    drop_database(server, url)


class TestTwoBranchTargetsOnPostgres(branch_tests.TestTwoBranchTargets):
    """Every test of test_dbt_branches.py, with each target's catalog on PostgreSQL."""

    @pytest.fixture(scope="class")
    def profiles_config_update(self, unique_schema, warehouse_dir, dbt_profile_target, pg_catalog_url):
        profile = branch_tests._profile(unique_schema, warehouse_dir + "-pg", dbt_profile_target["spark_config"])
        for output in profile["test"]["outputs"].values():
            output["catalog"] = pg_catalog_url
        return profile

    @pytest.fixture(scope="class")
    def lakehouse(self, project, warehouse_dir, pg_catalog_url):
        return Lakehouse(SparkSession.getActiveSession(), warehouse=warehouse_dir + "-pg", catalog_url=pg_catalog_url)


def test_merge_into_protected_main_on_a_postgres_catalog_from_the_environment(sample, spark, tmp_path, capsys,
                                                                             monkeypatch):
    """test_merge_dbt.py's flow; the profiles name no catalog, so BRANCHSPARK_CATALOG_URL picks PostgreSQL."""
    with fresh_pg_catalog() as url:
        monkeypatch.setenv(CATALOG_URL_ENV, url)
        merge_tests.test_sample_project_built_on_dev_merges_into_protected_main(sample, spark, tmp_path, capsys)
        assert Lakehouse(None, str(tmp_path / "warehouse")).store.url == url
        assert not (tmp_path / "warehouse" / "catalog.db").exists()


def _with_password(url: str) -> str:
    return make_url(url).set(password=PASSWORD).render_as_string(hide_password=False)


def _debug_project(tmp_path, catalog: str):
    project = tmp_path / "proj"
    project.mkdir(parents=True)
    (project / "dbt_project.yml").write_text("name: pw\nversion: '1.0'\nconfig-version: 2\nprofile: pw\n")
    (project / "profiles.yml").write_text(yaml.safe_dump({"pw": {"target": "t", "outputs": {"t": {
        "type": "branchspark", "method": "session", "branch": "main", "schema": "s", "threads": 1,
        "warehouse": str(tmp_path / "wh"), "catalog": catalog,
        "spark_config": {"spark.master": "local[1]"}}}}}))
    return project


def _dbt_debug(project, capsys):
    from dbt.cli.main import dbtRunner

    capsys.readouterr()
    result = dbtRunner().invoke(["debug", "--project-dir", str(project), "--profiles-dir", str(project)])
    captured = capsys.readouterr()
    logs = "".join(p.read_text() for p in (project / "logs").glob("*.log")) if (project / "logs").exists() else ""
    return result, captured.out + captured.err + logs


def test_catalog_password_is_never_printed(spark, tmp_path, capsys):
    with fresh_pg_catalog() as url:
        secret_url = _with_password(url)  # the test server trusts 127.0.0.1, so any password connects
        result, printed = _dbt_debug(_debug_project(tmp_path, secret_url), capsys)
        assert result.success, printed[-3000:]
        assert "All checks passed" in printed
        assert PASSWORD not in printed
        assert "catalog: postgresql+psycopg://postgres:***@127.0.0.1" in printed

        # A server that is not there: one clear line, no password (core and dbt).
        down = make_url(secret_url).set(port=1).render_as_string(hide_password=False)
        with pytest.raises(errors.CatalogUnavailable) as caught:
            Lakehouse(None, str(tmp_path / "wh2"), down)
        message = str(caught.value)
        assert PASSWORD not in message and "\n" not in message
        assert message.startswith("cannot open the catalog at postgresql+psycopg://postgres:***@127.0.0.1:1/")
        result, printed = _dbt_debug(_debug_project(tmp_path / "down", down), capsys)
        assert not result.success
        assert "cannot open the catalog at" in printed and PASSWORD not in printed


def test_catalog_password_can_come_from_the_environment(tmp_path, monkeypatch):
    with fresh_pg_catalog() as url:
        monkeypatch.setenv("BRANCHSPARK_CATALOG_PASSWORD", PASSWORD)
        lakehouse = Lakehouse(None, str(tmp_path / "wh"), url)
        assert make_url(lakehouse.store.url).password == PASSWORD
        assert PASSWORD not in repr(lakehouse.store)
        assert [b.name for b in lakehouse.list_branches()] == ["main"]
        lakehouse.store.dispose()


@pytest.mark.parametrize("shape", ["missing colon", "non-numeric port"])
def test_malformed_catalog_url_never_shows_its_password(spark, tmp_path, capsys, monkeypatch, shape):
    """Issue 20 item 5: `postgresql+psycopg//lake:PASSWORD@...` (a missing colon) was printed with its password
    by `dbt debug` and written to logs/dbt.log. BRANCHSPARK_CATALOG_PASSWORD never shows either."""
    monkeypatch.setenv("BRANCHSPARK_CATALOG_PASSWORD", PASSWORD + "-env")
    url = (f"postgresql+psycopg//lake:{PASSWORD}@127.0.0.1:55447/lake" if shape == "missing colon"
           else f"postgresql+psycopg://lake:{PASSWORD}@127.0.0.1:5x432/lake")
    result, printed = _dbt_debug(_debug_project(tmp_path, url), capsys)
    assert not result.success
    assert "logs" in str(list((tmp_path / "proj").iterdir()))  # logs/dbt.log was written and is checked
    assert PASSWORD not in printed  # also not the environment's password, which starts the same
    assert "lake:***@127.0.0.1" in printed
    assert ("is not a SQLAlchemy URL" if shape == "missing colon" else "is not a number") in printed
