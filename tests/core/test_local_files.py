"""Local files written without a chmod process per directory (core/storage/local_files.py)."""
import os
import stat

import pytest

from dbt.adapters.branchspark.core.connect import is_connect
from dbt.adapters.branchspark.core.storage import deletion_vectors, local_files


def test_a_local_session_gets_the_jar_on_the_class_path_and_our_file_system(monkeypatch):
    monkeypatch.setattr(deletion_vectors, "jar_path", lambda: "/cache/branchspark.jar")
    config = local_files.session_config({"spark.driver.extraClassPath": "/opt/other.jar"}, "local[2]")
    assert config == {"spark.driver.extraClassPath": "/opt/other.jar:/cache/branchspark.jar",
                      "spark.hadoop.fs.file.impl": "branchspark.PosixLocalFileSystem"}
    assert local_files.session_config(config, "local[*]") == config  # applied twice: no duplicates
    assert local_files.submit_arguments("local") == [
        "--conf", "spark.driver.extraClassPath=/cache/branchspark.jar",
        "--conf", "spark.hadoop.fs.file.impl=branchspark.PosixLocalFileSystem"]


def test_a_cluster_a_file_system_the_user_chose_or_no_jar_keep_hadoops(monkeypatch):
    monkeypatch.setattr(deletion_vectors, "jar_path", lambda: "/cache/branchspark.jar")
    assert local_files.session_config({}, "spark://cluster:7077") == {}  # executors lack the driver's class path
    assert local_files.session_config({}, None) == {}
    chosen = {"spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem"}
    assert local_files.session_config(chosen, "local[2]") == chosen
    monkeypatch.setattr(deletion_vectors, "jar_path", lambda: None)  # no JDK at install
    assert local_files.session_config({}, "local[2]") == {}
    assert local_files.submit_arguments("local[2]") == []


@pytest.fixture
def file_systems(spark):
    """(ours, Hadoop's raw local file system) in the test session's JVM."""
    if is_connect(spark):
        pytest.skip("the file system's classes are checked in-process; through Connect the server owns them")
    if deletion_vectors.jar_path() is None:
        pytest.skip("branchspark's jar is not built (no JDK at install): sessions keep Hadoop's file system")
    jvm = spark._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    ours = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI("file:///"), conf)
    hadoops = jvm.org.apache.hadoop.fs.RawLocalFileSystem()
    hadoops.initialize(jvm.java.net.URI("file:///"), conf)
    return jvm, ours, hadoops


def test_the_test_session_writes_local_files_through_our_file_system(spark, file_systems):
    _, ours, _ = file_systems
    assert ours.getClass().getName() == local_files.FILE_SYSTEM


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o700, 0o644, 0o600, 0o777, 0o000, 0o1777])
def test_permissions_are_set_as_hadoops_chmod_sets_them(tmp_path, file_systems, mode):
    """Usual modes and the edges, ours against Hadoop's own (which starts chmod); the sticky bit takes
    Hadoop's way."""
    jvm, ours, hadoops = file_systems
    for name in ("ours", "hadoops"):
        (tmp_path / name).mkdir()
    permission = jvm.org.apache.hadoop.fs.permission.FsPermission(f"{mode:03o}")  # octal, as chmod takes it
    ours.setPermission(jvm.org.apache.hadoop.fs.Path(str(tmp_path / "ours")), permission)
    hadoops.setPermission(jvm.org.apache.hadoop.fs.Path(str(tmp_path / "hadoops")), permission)
    modes = {name: stat.S_IMODE(os.stat(tmp_path / name).st_mode) for name in ("ours", "hadoops")}
    assert modes["ours"] == modes["hadoops"] == mode


def test_directories_a_write_makes_have_hadoops_modes(tmp_path, file_systems):
    jvm, ours, hadoops = file_systems
    for name, fs in (("ours", ours), ("hadoops", hadoops)):
        assert fs.mkdirs(jvm.org.apache.hadoop.fs.Path(str(tmp_path / name / "a" / "b")))
    for level in ("", "a", "a/b"):
        assert os.stat(tmp_path / "ours" / level).st_mode == os.stat(tmp_path / "hadoops" / level).st_mode


def test_row_counts_of_files_given_with_their_sizes_open_local_files_by_path(tmp_path):
    """A written segment's rows are counted from its files' footers, each given with the size the catalog
    records (so that on S3 no HEAD precedes the GETs): pyarrow's local file system takes no FileInfo, so
    a local warehouse opens the same files by path (the model test found `Path must be a string`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dbt.adapters.branchspark.core.storage.layout import Warehouse

    (tmp_path / "seg").mkdir()
    pq.write_table(pa.table({"a": [1, 2, 3]}), tmp_path / "seg" / "a.parquet")
    pq.write_table(pa.table({"a": [4]}), tmp_path / "seg" / "b.parquet")
    sizes = {name: os.path.getsize(tmp_path / "seg" / name) for name in ("a.parquet", "b.parquet")}
    warehouse = Warehouse(str(tmp_path))
    assert warehouse.parquet_rows([("seg/a.parquet", sizes["a.parquet"]), "seg/b.parquet"]) == 4
