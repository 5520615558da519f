"""Local files without a process per permission: our jar's Hadoop file system for `file:` paths.

pyspark ships no Hadoop native library, so Hadoop's local file system sets each permission by starting
`chmod` as a process (a fork of the whole JVM): one for every directory a write makes, about 4 ms each
here, a fifth to a third of a small Parquet write's time (`bench/local_writes.py` measures both side by
side). `branchspark.PosixLocalFileSystem` (jvm/PosixLocalFileSystem.java) sets the same bits through
java.nio; everything else, checksum files included, is Hadoop's own.

Only on a local master: there the driver's JVM runs every task, and our jar on the driver's class path is
on the class path of every file-system lookup. Executors of a cluster keep Hadoop's own file system.
"""
from __future__ import annotations

from . import deletion_vectors

FILE_SYSTEM = "branchspark.PosixLocalFileSystem"
FILE_SYSTEM_SETTING = "spark.hadoop.fs.file.impl"
CLASS_PATH_SETTING = "spark.driver.extraClassPath"


def session_config(config: dict, master: str | None) -> dict:
    """`config` for a new JVM on `master`, plus our file system when the master is local and the jar is
    built; unchanged otherwise, or when `config` already names a file system for `file:`."""
    if not (master or "").startswith("local") or FILE_SYSTEM_SETTING in config:
        return config
    jar = deletion_vectors.jar_path()
    if jar is None:
        return config
    present = [p for p in str(config.get(CLASS_PATH_SETTING, "")).split(":") if p]
    class_path = ":".join(present if jar in present else present + [jar])
    return {**config, CLASS_PATH_SETTING: class_path, FILE_SYSTEM_SETTING: FILE_SYSTEM}


def submit_arguments(master: str) -> list[str]:
    """spark-submit's `--conf` arguments for our file system on `master` (none without the jar)."""
    return [argument for key, value in session_config({}, master).items() for argument in ("--conf", f"{key}={value}")]


if __name__ == "__main__":  # tests/connect_server.sh: one argument a line, for a server it starts
    import sys

    for argument in submit_arguments(sys.argv[1]):
        print(argument)
