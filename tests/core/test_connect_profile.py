"""Profile fields for Spark Connect: `method: connect` with `host: sc://HOST:PORT`."""
import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.branchspark.adapter.credentials import BranchSparkCredentials


def credentials(**fields):
    return BranchSparkCredentials(schema="analytics", **fields)


def test_connect_method_takes_the_url_from_host():
    creds = credentials(method="connect", host="sc://spark.example.com:15002")
    assert creds.is_remote and creds.connect_url == "sc://spark.example.com:15002"
    assert "host" in creds._connection_keys()


def test_session_method_has_no_connect_url():
    creds = credentials()
    assert creds.method == "session" and not creds.is_remote and creds.connect_url == ""


def test_a_url_given_as_the_method_still_works():
    creds = credentials(method="sc://127.0.0.1:15002")
    assert creds.method == "connect" and creds.connect_url == "sc://127.0.0.1:15002"


@pytest.mark.parametrize("host", [None, "localhost", "http://spark:15002"])
def test_connect_without_an_sc_url_is_one_clear_error(host):
    with pytest.raises(DbtRuntimeError) as error:
        credentials(method="connect", host=host)
    message = error.value.msg  # dbt prints it under "Runtime Error"
    assert f"host: {host}" in message and "sc://" in message and "\n" not in message


def test_unknown_method_names_both_choices():
    with pytest.raises(DbtRuntimeError) as error:
        credentials(method="thrift")
    assert "method: thrift" in str(error.value) and "`connect`" in str(error.value)
