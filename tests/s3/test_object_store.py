"""The warehouse's file system on S3 without a JVM: URIs, settings from the standard places, secrets never
shown, and the store's faults as one line that changes nothing (core/storage/object_store.py)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from dbt.adapters.branchspark.cli.main import cli
from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.core.spark_session import server_arguments
from dbt.adapters.branchspark.core.storage import object_store
from dbt.adapters.branchspark.core.storage.layout import Warehouse

from tests.s3_store import keys, s3_client, s3_url


def test_s3_and_s3a_name_the_same_place_and_readers_get_s3():
    assert Warehouse("s3://b/p/").root == "s3a://b/p"
    assert Warehouse("s3a://b/p").root == "s3a://b/p"
    assert object_store.reader_uri("s3a://b/p/x.parquet") == "s3://b/p/x.parquet"
    assert object_store.reader_uri("/tmp/x") == "/tmp/x"


def test_settings_from_the_aws_variables_then_hadoop_keys_and_secrets_never_shown(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIA-visible-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "never-shown-secret")
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    s3 = object_store.settings()
    assert (s3.endpoint, s3.region, s3.path_style, s3.secret_key) == ("http://127.0.0.1:1", "eu-west-3", True,
                                                                      "never-shown-secret")
    assert "never-shown-secret" not in repr(s3) and "AKIA" not in repr(s3)
    given = object_store.settings({"spark.hadoop.fs.s3a.endpoint": "minio:9000",
                                   "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
                                   "fs.s3a.path.style.access": "false"})
    assert (given.endpoint, given.path_style) == ("http://minio:9000", False)
    # S3A reads the credentials from the environment itself: the session's settings carry none
    spark_settings = object_store.session_config({})
    assert spark_settings["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:1"
    assert spark_settings["spark.hadoop.fs.s3.impl"] == object_store.S3A
    assert "never-shown-secret" not in " ".join(server_arguments("local[2]"))
    fault = object_store.storage_fault("AWS Error ACCESS_DENIED during HeadObject operation", "bkt")
    assert "denied access to bucket bkt" in str(fault) and "never-shown-secret" not in str(fault)


def test_session_settings_add_the_jars_and_the_magic_committer():
    settings = object_store.session_config({"spark.jars": "/opt/mine.jar"})
    jars = settings["spark.jars"].split(",")
    assert jars[0] == "/opt/mine.jar" and any("hadoop-aws-3.5.0" in j for j in jars), jars
    assert any("spark-hadoop-cloud" in j for j in jars)
    assert settings["spark.hadoop.fs.s3a.committer.name"] == "magic"
    assert settings["spark.sql.sources.commitProtocolClass"].endswith("PathOutputCommitProtocol")


def test_session_settings_leave_out_s3a_probes_and_a_users_own_keys_win():
    """Issue 73: no _SUCCESS, no .pending objects, no create/mkdir probes; the user's own setting wins."""
    settings = object_store.session_config({"spark.hadoop.fs.s3a.create.performance": "false"})
    assert settings["spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs"] == "false"
    assert settings["spark.hadoop.fs.s3a.committer.magic.track.commits.in.memory.enabled"] == "true"
    assert settings["spark.hadoop.fs.s3a.performance.flags"] == "create,mkdir,delete"
    assert settings["spark.hadoop.fs.s3a.create.performance"] == "false"


def test_a_local_driver_keeps_each_uploads_etag_beside_a_users_own_interceptors():
    """Issue 73: the ETag S3 answers an upload with is kept (jvm/s3a/UploadEtags.java) so that no read sends a HEAD
    for it; added to the interceptors a user named, and only where the driver loads the class (a local master)."""
    from dbt.adapters.branchspark.core.storage import deletion_vectors, direct_writes
    from tests.missing import missing

    jar = deletion_vectors.jar_path()
    if jar is None:
        missing("branchspark's jar is not built: run `make install`")
    key = f"spark.hadoop.{object_store.INTERCEPTORS}"
    local = {"spark.master": "local[2]", "spark.driver.extraClassPath": jar}
    assert object_store.session_config(local)[key] == direct_writes.UPLOAD_ETAGS
    mine = object_store.session_config({**local, key: "com.example.Mine"})
    assert mine[key] == f"com.example.Mine,{direct_writes.UPLOAD_ETAGS}"
    assert object_store.session_config({**local, key: mine[key]})[key] == mine[key]  # not twice
    cluster = object_store.session_config({"spark.master": "spark://somewhere:7077", key: "com.example.Mine"})
    assert cluster[key] == "com.example.Mine", "executors would fail to load a class they do not have"


def test_python_side_reads_and_writes_the_bucket(s3_warehouse, bucket):
    warehouse = Warehouse(s3_warehouse)
    warehouse.write_text("tables/t1/data/x.txt", "hello")
    assert warehouse.read_text("tables/t1/data/x.txt") == "hello"
    assert warehouse.exists("tables/t1/data/x.txt") and warehouse.holds_files("tables")
    assert [path for path, _ in warehouse.list_files("tables/t1")] == ["tables/t1/data/x.txt"]
    assert keys(bucket) == ["lake/tables/t1/data/x.txt"]
    warehouse.delete_dir("tables/t1")
    # pyarrow leaves a folder marker for the parent it emptied: no data
    assert [key for key in keys(bucket) if not key.endswith("/")] == []
    assert warehouse.read_text("tables/t1/data/x.txt") is None


def test_missing_bucket_is_one_line_naming_it_and_creates_nothing(tmp_path, capsys):
    s3_url()
    catalog = f"sqlite:///{tmp_path}/catalog.db"
    with pytest.raises(errors.StorageUnavailable, match=r"^bucket no-such-bucket-51 does not exist at http://127"):
        Lakehouse(None, "s3://no-such-bucket-51/lake", catalog)
    result = CliRunner().invoke(cli, ["--warehouse", "s3a://no-such-bucket-51/lake", "--catalog", catalog, "init"])
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert result.output.startswith("error: bucket no-such-bucket-51 does not exist") and "create it" in result.output
    assert "no-such-bucket-51" not in [b["Name"] for b in s3_client().list_buckets()["Buckets"]]
    assert not (tmp_path / "catalog.db").exists()


def test_endpoint_down_is_one_line_and_changes_nothing(tmp_path, bucket, monkeypatch):
    s3_url()
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens on the discard port
    object_store.filesystem_for.cache_clear()
    try:
        result = CliRunner().invoke(cli, ["--warehouse", f"s3a://{bucket}/lake", "--catalog",
                                          f"sqlite:///{tmp_path}/catalog.db", "init"])
    finally:
        object_store.filesystem_for.cache_clear()
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert result.output.startswith("error: object storage at http://127.0.0.1:9 does not answer (bucket "), result.output
    assert "testing-secret" not in result.output
    assert keys(bucket) == []


def test_wrong_credentials_are_one_line_and_change_nothing(tmp_path, monkeypatch):
    """moto checks keys only when told (INITIAL_NO_AUTH_ACTION_COUNT): a server of its own that lets the
    bucket be made, then refuses keys it never issued."""
    import os
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    import boto3

    s3_url()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
                              env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "1"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        endpoint = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="locked")
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-never-shown")
        object_store.filesystem_for.cache_clear()
        result = CliRunner().invoke(cli, ["--warehouse", "s3a://locked/lake", "--catalog",
                                          f"sqlite:///{tmp_path}/catalog.db", "init"])
        assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
        assert result.output.startswith(f"error: object storage at {endpoint} denied access to bucket locked"), \
            result.output
        assert "wrong-secret-never-shown" not in result.output and not (tmp_path / "catalog.db").exists()
    finally:
        object_store.filesystem_for.cache_clear()
        server.terminate()
        server.wait(timeout=30)


def test_profile_fields_become_s3a_settings_and_the_keys_stay_out_of_every_setting(monkeypatch):
    from dbt.adapters.branchspark.adapter.credentials import BranchSparkCredentials

    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    credentials = BranchSparkCredentials(schema="shop", s3_endpoint="http://127.0.0.1:9000", s3_path_style=True,
                                         s3_access_key_id="id-51", s3_secret_access_key="profile-secret-51",
                                         spark_config={"spark.hadoop.fs.s3a.endpoint.region": "eu-west-1"})
    assert credentials.spark_config == {"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
                                        "spark.hadoop.fs.s3a.path.style.access": "true",
                                        "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1"}
    assert object_store.settings(credentials.spark_config).secret_key == "profile-secret-51"
    shown = repr(credentials) + repr(list(credentials.connection_info()))
    assert "profile-secret-51" not in shown
