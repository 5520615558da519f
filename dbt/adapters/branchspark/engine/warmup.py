"""The engine warms itself up: once it answers, its supervisor runs this in a process of its own, which
drives one small branchspark workload through the engine, on a scratch warehouse under the engine's home
(removed after): keyless and keyed tables written, an overwrite and an upsert compared by value, a delete and
an update (tombstones), reads through the deletion-vector reader, a join, an aggregate, a window, the
changes of a branch and a merge of two branches.

Why: a new JVM runs each kind of query several times slower the first time (its classes loaded, its code
compiled), so the first dbt invocations on a new engine paid for that (bench/dbt_cli.py: a sample-project
cycle of 27 s on a new engine, 21 s on a warm one). The warm-up runs while no invocation is attached (the
user between commands) and yields at its next step when one attaches, so it never competes with one for
long; the invocations that follow run warmer. Its client side runs at a lower CPU priority; a failure
only costs the warm-up (one line in engine.log). BRANCHSPARK_ENGINE_WARMUP=0 turns it off.

    python -m dbt.adapters.branchspark.engine.warmup HOME
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ..core.catalog.store import default_catalog_url
from ..core.changes import table_changes
from ..core.lakehouse import Lakehouse
from ..core.spark_session import spark_session
from .state import EngineHome

ROWS = 5000  # enough rows that the per-row code runs hot, few enough to take seconds


class Yielded(Exception):
    """An invocation attached: the warm-up stops at its next step and leaves the engine to it."""


def workload(spark: SparkSession, warehouse: str, busy=lambda: False) -> None:
    """What a dbt run does through the engine, once, on a few thousand rows; `busy()` is asked between steps."""

    def step() -> None:
        if busy():
            raise Yielded()

    # Its own catalog in the scratch warehouse: the user's environment may name theirs (BRANCHSPARK_CATALOG_URL),
    # which the warm-up must neither write nor bind to a warehouse that is deleted after.
    lh = Lakehouse(spark, warehouse, catalog_url=default_catalog_url(warehouse))
    orders = spark.range(ROWS).selectExpr(
        "id", "id % 97 AS customer_id", "CAST(id * 1.5 AS DOUBLE) AS amount",
        "concat('s', CAST(id % 5 AS STRING)) AS status", "date_add(DATE'2024-01-01', CAST(id % 90 AS INT)) AS day")
    with lh.transaction("main", message="warm-up") as tx:
        tx.create_database("warmup")
        tx.create_table_as("warmup.orders", orders, primary_key=["id"])
        tx.create_table_as("warmup.events", orders.drop("id"))
    lh.create_branch("dev")
    dev = lh.branch("dev")
    step()
    dev.overwrite("warmup.events", orders.drop("id").where("id % 10 != 3"))  # a rebuild: compared by value
    step()
    dev.upsert("warmup.orders", orders.where("id < 200").withColumn("amount", F.col("amount") + 1))
    step()
    dev.insert("warmup.orders", orders.selectExpr("id + 100000 AS id", "customer_id", "amount", "status", "day")
               .where("id < 50"))
    step()
    dev.delete("warmup.orders", "id % 50 = 7")
    step()
    dev.update("warmup.orders", "status = 's1'", {"status": "'s9'"})
    step()
    lh.read("warmup.orders", "dev").createOrReplaceTempView("warmup_orders")
    spark.sql("""
        WITH per_customer AS (
            SELECT customer_id, count(*) AS n, sum(amount) AS total, max(day) AS last_day
            FROM warmup_orders GROUP BY customer_id)
        SELECT p.customer_id, p.n, p.total, o.status, row_number() OVER (ORDER BY p.total DESC) AS rank
        FROM per_customer p JOIN warmup_orders o ON o.customer_id = p.customer_id
        WHERE o.status <> 's0'""").collect()
    step()
    table_changes(lh, "warmup.orders", "main", "dev").groupBy("_change_type").count().collect()
    step()
    lh.merge("dev", "main")
    spark.catalog.dropTempView("warmup_orders")


def main(root: str) -> int:
    home = EngineHome(Path(root))
    state = home.read()
    if state is None or not state.ready_at:
        return 0
    try:
        os.nice(10)  # the client side of the warm-up yields to the user's own invocations
    except OSError:
        pass
    while home.live_leases(prune=False):  # an invocation is running: warm up once it has detached
        current = home.read()
        if current is None or current.supervisor_pid != state.supervisor_pid:
            return 0  # the engine went away meanwhile
        time.sleep(0.5)
    started = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="warmup-", dir=home.root)
    spark = None
    try:
        spark = spark_session({"spark.sql.shuffle.partitions": "2"}, remote=state.url)
        workload(spark, os.path.join(scratch, "warehouse"), busy=lambda: bool(home.live_leases(prune=False)))
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} warm-up[{os.getpid()}]: done in "
              f"{time.monotonic() - started:.1f} s", flush=True)
        return 0
    except Yielded:
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} warm-up[{os.getpid()}]: yielded to an invocation after "
              f"{time.monotonic() - started:.1f} s", flush=True)
        return 0
    except Exception as error:  # a failed warm-up costs only the warm-up
        first = str(error).splitlines()[0] if str(error) else ""
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} warm-up[{os.getpid()}]: stopped after "
              f"{time.monotonic() - started:.1f} s ({type(error).__name__}: {first})", flush=True)
        return 1
    finally:
        if spark is not None:
            try:
                spark.stop()
            except Exception:
                pass
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
