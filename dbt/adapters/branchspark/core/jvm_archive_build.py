"""Dumps the JVM's class-data archive (jvm_archive.py) at install: one driver JVM does a branch's usual work on
a few rows in a scratch warehouse (writes, a merge, changes, a diff), then exits, and the JVM writes every
class it loaded to the archive. Nothing runs this at run time; `make install` does, after the jars the driver's
class path names (branchspark's own, the S3A connector's), since the archive records that class path.

    python -m dbt.adapters.branchspark.core.jvm_archive_build     # (re)build .jars/jvm-archive/spark-<v>.jsa
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile

from pyspark import SparkContext

from . import jvm_archive
from .catalog.store import default_catalog_url
from .changes import table_changes
from .diff.plan import branch_diff
from .lakehouse import Lakehouse
from .spark_session import spark_session


def _branch_work(spark, warehouse: str) -> None:
    """What a dbt run, a merge and a review ask of a driver, so their classes are in the archive."""
    # its own catalog: the environment may name the user's (BRANCHSPARK_CATALOG_URL), which must stay untouched
    lakehouse = Lakehouse(spark, warehouse, catalog_url=default_catalog_url(warehouse))
    rows = spark.createDataFrame([(i, f"name {i}", i * 1.5) for i in range(6)], "id bigint, name string, x double")
    with lakehouse.transaction("main", message="base") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.keyed", rows, primary_key=["id"])
        tx.create_table_as("shop.keyless", rows)
    base = lakehouse.snapshot("main").commit_id
    lakehouse.create_branch("dev", "main")
    with lakehouse.transaction("dev", message="changes") as tx:
        tx.update("shop.keyed", "id < 2", {"x": "x + 1"})
        tx.upsert("shop.keyed", spark.createDataFrame([(9, "new", 0.5)], "id bigint, name string, x double"))
        tx.delete("shop.keyless", "id = 3")
        tx.insert("shop.keyless", spark.createDataFrame([(7, "more", 2.0)], "id bigint, name string, x double"))
    with lakehouse.transaction("main", message="other side") as tx:
        tx.update("shop.keyed", "id = 4", {"name": "'renamed'"})
    lakehouse.merge("dev", "main")
    table_changes(lakehouse, "shop.keyed", from_=base).collect()
    table_changes(lakehouse, "shop.keyless", from_=base, net=True).collect()
    branch_diff(lakehouse, "main", "dev", mode="two_dot")
    lakehouse.read("shop.keyless", "main").orderBy("id").toPandas()
    spark.sql("SELECT 1 AS one").collect()


def build() -> bool:
    """Write the archive of the installed pyspark; False, saying why in one line, when no JVM could dump it."""
    target = jvm_archive.archive_path()
    partial = target.with_name(target.name + ".partial")
    target.parent.mkdir(parents=True, exist_ok=True)
    for old in (target, partial):
        old.unlink(missing_ok=True)
    options = f"-XX:ArchiveClassesAtExit={partial} {jvm_archive.QUIET}"
    warehouse = tempfile.mkdtemp(prefix="branchspark-jvm-archive-")
    try:
        spark = spark_session({jvm_archive.DRIVER_OPTIONS: options}, master="local[2]")
        jvm = SparkContext._gateway.proc  # spark-submit execs the JVM: this is its process
        _branch_work(spark, warehouse)
        spark.stop()
        jvm.stdin.close()  # the gateway JVM exits when its stdin closes, and dumps the archive as it does
        jvm.wait(timeout=600)
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)
    if not partial.is_file() or partial.stat().st_size == 0:
        print(f"branchspark: the JVM wrote no class-data archive to {partial}; Spark will start without one "
              f"(slower)", file=sys.stderr)
        return False
    os.replace(partial, target)  # a local install artifact: a JVM never meets a half-written archive
    print(f"branchspark: JVM class-data archive {target} ({target.stat().st_size // 2**20} MB)")
    return True


if __name__ == "__main__":
    sys.exit(0 if build() else 1)
