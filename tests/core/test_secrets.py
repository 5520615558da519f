"""No output, error or log shows a catalog password, whatever the URL looks like (issue 20 item 5)."""
import pytest
from click.testing import CliRunner
from sqlalchemy.engine import make_url

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.catalog.url import redact_url
from dbt.adapters.branchspark.cli.main import cli
from dbt.adapters.branchspark.adapter.credentials import BranchSparkCredentials
from dbt.adapters.branchspark.core.lakehouse import Lakehouse

PASSWORD = "Pw-77c1-never-printed"
ENV_PASSWORD = "Env-Pw-31d0-never-printed"

URLS = {
    "missing colon": f"postgresql+psycopg//lake:{PASSWORD}@127.0.0.1:55447/lake",
    "non-numeric port": f"postgresql+psycopg://lake:{PASSWORD}@127.0.0.1:5o432/lake",
    "no scheme": f"lake:{PASSWORD}@127.0.0.1/lake",
    "unreachable server": f"postgresql+psycopg://lake:{PASSWORD}@127.0.0.1:1/lake",
}


@pytest.mark.parametrize("shape", list(URLS))
def test_cli_error_is_one_line_without_the_password(tmp_path, shape):
    result = CliRunner().invoke(cli, ["--catalog", URLS[shape], "--warehouse", str(tmp_path / "wh"), "log"],
                                env={"BRANCHSPARK_CATALOG_PASSWORD": ENV_PASSWORD, "COLUMNS": "300"})
    assert result.exit_code == 1, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
    assert PASSWORD not in result.output and ENV_PASSWORD not in result.output
    assert "lake:***@" in result.output or "lake@" in result.output
    if shape == "non-numeric port":
        assert "the port '5o432', which is not a number" in result.output


@pytest.mark.parametrize("shape", list(URLS))
def test_python_api_and_dbt_debug_fields_hide_the_password(tmp_path, monkeypatch, shape):
    monkeypatch.setenv("BRANCHSPARK_CATALOG_PASSWORD", ENV_PASSWORD)
    with pytest.raises((errors.InvalidArgument, errors.CatalogUnavailable)) as caught:
        Lakehouse(None, str(tmp_path / "wh"), URLS[shape])
    assert PASSWORD not in str(caught.value) and ENV_PASSWORD not in str(caught.value)
    assert "\n" not in str(caught.value) and caught.value.__cause__ is None
    shown = dict(BranchSparkCredentials(schema="s", catalog=URLS[shape]).connection_info())["catalog"]
    assert PASSWORD not in shown and "***" in shown


def test_password_from_the_environment_never_shows(tmp_path, monkeypatch):
    """A URL with a user and no password takes BRANCHSPARK_CATALOG_PASSWORD; errors then never show it."""
    monkeypatch.setenv("BRANCHSPARK_CATALOG_PASSWORD", ENV_PASSWORD)
    url = "postgresql+psycopg://lake@127.0.0.1:1/lake"
    with pytest.raises(errors.CatalogUnavailable) as caught:
        Lakehouse(None, str(tmp_path / "wh"), url)
    assert ENV_PASSWORD not in str(caught.value) and "lake:***@127.0.0.1:1/lake" in str(caught.value)
    assert redact_url(make_url(url).set(password=ENV_PASSWORD).render_as_string(hide_password=False)) \
        == "postgresql+psycopg://lake:***@127.0.0.1:1/lake"
