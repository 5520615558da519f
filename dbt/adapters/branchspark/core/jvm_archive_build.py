"""Dumps the JVM's class-data archive (jvm_archive.py) at install: one driver JVM does a branch's usual work on
a few rows in a scratch warehouse (writes, a merge, changes, a diff), then exits, and the JVM writes every
class it loaded to the archive. Nothing runs this at run time; `make install` does, after the jars the driver's
class path names (branchspark's own, the S3A connector's), since the archive records that class path.

Where the JVMs start through a launcher home (jvm_home.py), a second JVM dumps the JDK's AOT cache: the same work,
then the usual work of a dbt project's incremental model at 200k rows (upserts, their change feed, reads, a
delete, an update, a branch merged back), so that the methods it runs hot have profiles to replay.

    python -m dbt.adapters.branchspark.core.jvm_archive_build     # (re)build .jars/jvm-archive/spark-<v>.jsa/.aot
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from pyspark import SparkContext

from . import jvm_archive, jvm_home
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


def _incremental_work(spark, warehouse: str, rows: int = 200_000, rounds: int = 8) -> None:
    """A dbt project's incremental model at some size, over a few runs: upserts of 1/200 of its rows (some new),
    each run's change feed and a read of the whole table, a delete and an update, then a branch's run merged
    back over a change on main. Rows of several types, as a model's are; not any benchmark's table."""
    lakehouse = Lakehouse(spark, warehouse, catalog_url=default_catalog_url(warehouse))
    columns = ("order_id", "customer", "amount", "status", "ordered_at")

    def orders(start: int, count: int, step: int, version: int):
        return spark.range(start, start + count * step, step).selectExpr(
            "id AS order_id", "concat('customer ', id % 997) AS customer",
            f"CAST((id * 7 + {version}) % 10000 AS DECIMAL(12, 2)) / 100 AS amount",
            f"element_at(array('placed', 'shipped', 'returned'), CAST((id + {version}) % 3 + 1 AS INT)) AS status",
            f"timestamp_seconds(1700000000 + id * 60 + {version}) AS ordered_at")

    with lakehouse.transaction("main", message="build") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.orders", orders(0, rows, 1, 0).repartition(4), primary_key=["order_id"])
    for run in range(1, rounds + 1):
        before = lakehouse.snapshot("main").commit_id
        lakehouse.branch("main").upsert("shop.orders", orders(run, rows // 200, 203, run), key=["order_id"])
        if run % 4 == 2:
            lakehouse.branch("main").delete("shop.orders", f"order_id % 1000 = {run}")
        if run % 4 == 3:
            lakehouse.branch("main").update("shop.orders", f"order_id % 1000 = {run}", {"status": "'closed'"})
        table_changes(lakehouse, "shop.orders", from_=before).groupBy("_change_type").count().collect()
        lakehouse.read("shop.orders", "main").selectExpr(
            "count(*)", "sum(amount)", f"sum(hash({', '.join(columns)}))").collect()
    lakehouse.create_branch("feature", "main")
    lakehouse.branch("feature").upsert("shop.orders", orders(rows, rows // 100, 1, 0), key=["order_id"])
    lakehouse.branch("main").upsert("shop.orders", orders(1, rows // 400, 211, rounds + 1), key=["order_id"])
    lakehouse.merge("feature", "main")
    branch_diff(lakehouse, "main", "feature", mode="two_dot")


@contextlib.contextmanager
def _output_to(log: Path):
    """This process's and its children's output (the JVM's, which the AOT cache's dump fills with notes and its
    whole class path) into `log`."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(log, "w") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, copy in zip((1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)


def _dump(target: Path, options: str, work) -> bool:
    """One driver JVM with `options` does `work(spark, warehouse)` and exits, writing `target`; False, saying why
    in one line, when it wrote none. The JVM's output goes to `target`.log."""
    partial = target.with_name(target.name + ".partial")
    leftovers = (partial, partial.with_name(partial.name + ".config"))  # the AOT JVM's recording, before the cache
    log = target.with_name(target.name + ".log")
    target.parent.mkdir(parents=True, exist_ok=True)
    for old in (target, *leftovers):
        old.unlink(missing_ok=True)
    warehouse = tempfile.mkdtemp(prefix="branchspark-jvm-archive-")
    try:
        with _output_to(log):
            _run_and_exit(options.format(partial=partial), work, warehouse)
    except BaseException:
        for old in leftovers:
            old.unlink(missing_ok=True)
        print(f"branchspark: the JVM dumping {target.name} failed; its output is in {log}", file=sys.stderr)
        raise
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)
    if not partial.is_file() or partial.stat().st_size == 0:
        print(f"branchspark: the JVM wrote no archive to {partial} (its output: {log}); Spark will start without "
              f"it (slower)", file=sys.stderr)
        return False
    os.replace(partial, target)  # a local install artifact: a JVM never meets a half-written archive
    print(f"branchspark: JVM archive {target} ({target.stat().st_size // 2**20} MB)")
    return True


def _run_and_exit(options: str, work, warehouse: str) -> None:
    spark = spark_session({jvm_archive.DRIVER_OPTIONS: options}, master="local[2]")
    jvm = SparkContext._gateway.proc  # spark-submit execs the JVM: this is its process
    work(spark, warehouse)
    spark.stop()
    jvm.stdin.close()  # the gateway JVM exits when its stdin closes, and dumps the archive as it does
    jvm.wait(timeout=900)
    SparkContext._gateway = SparkContext._jvm = None  # the next dump starts a JVM of its own


def _aot_work(spark, warehouse: str) -> None:
    _branch_work(spark, os.path.join(warehouse, "small"))
    _incremental_work(spark, os.path.join(warehouse, "incremental"))


def build() -> bool:
    """Write the archives of the installed pyspark: the class-data archive, and the AOT cache where the JVMs start
    through a launcher home. False when one could not be dumped."""
    built = _dump(jvm_archive.class_archive_path(),
                  f"-XX:ArchiveClassesAtExit={{partial}} {jvm_archive.QUIET}", _branch_work)
    cache = jvm_archive.aot_cache_path()
    cache.unlink(missing_ok=True)
    if jvm_home.through_launcher():
        # the JVM writes the cache at exit from a second JVM it starts; its own notes about classes it leaves out
        # (signed jars, JFR's events) are not for an install's output
        built = _dump(cache, f"-XX:AOTCacheOutput={{partial}} {jvm_archive.QUIET} {jvm_archive.AOT_QUIET}",
                      _aot_work) and built
    return built


if __name__ == "__main__":
    sys.exit(0 if build() else 1)
