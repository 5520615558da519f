"""branchspark's side of bench/peers.py: its table, upserts, change feed, deletes and scans.

bench/peers.py runs it in its own process (pyspark 4.3, the project's) and, as a second side, in a process of
.venv-peers' Python (pyspark 4.1.4, where `make peers` installs branchspark with its 4.1 jar): the peers run on
Spark 4.1, so that side shows how much of a gap is our code and how much Spark's version. Run as a script, it
takes one JSON command per line on stdin and answers one JSON line on stdout, as bench/peers_side.py does.
"""
from __future__ import annotations

import functools
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import full_scan, spark_session  # noqa: E402  (puts the repo on sys.path)

import peers_side  # noqa: E402  (the same rows on every side)
from dbt.adapters.branchspark.core.changes import plan_range, table_changes  # noqa: E402
from dbt.adapters.branchspark.core.lakehouse import Lakehouse  # noqa: E402

TABLE = "bench.events"


class Branchspark:
    def __init__(self, root: str, config: dict | None = None):
        if config:
            from dbt.adapters.branchspark.core.spark_session import local_session
            self.spark = local_session(config.get("spark.master"), config)
        else:
            self.spark = spark_session()
        self.root = root
        self.lh = Lakehouse(self.spark, os.path.join(root, "warehouse"))
        self.floor = None
        self.data_files: list[str] | None = None  # files_scan's, listed once: the scans run after the last change
        self.data_columns: list[str] = []

    def setup(self, total: int) -> dict:
        data = peers_side.rows(self.spark, 0, total).repartition(4)
        start = time.perf_counter()
        with self.lh.transaction("main", message="load") as tx:
            tx.create_database("bench")
            tx.create_table_as(TABLE, data, primary_key=["id"])
        return {"seconds": time.perf_counter() - start}

    def upsert(self, total: int, changed: int, round_index: int) -> dict:
        frame = peers_side.changes(self.spark, total, changed, round_index)
        before = self.lh.get_branch("main").head
        start = time.perf_counter()
        self.lh.branch("main").upsert(TABLE, frame, key=["id"])
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "before": before, "after": self.lh.get_branch("main").head}

    def change_feed(self, before, after) -> dict:
        start = time.perf_counter()
        full_scan(table_changes(self.lh, TABLE, before, after))
        return {"seconds": time.perf_counter() - start}

    def feed_files_scan(self, before, after) -> dict:
        """The feed's floor: the files the commit `after` wrote (new segments', tombstones'), each kind one plain
        Parquet scan in the table's columns, unioned, read in full: the feed's one job without the catalog's
        reads, the plans of our reader, the labels."""
        step = plan_range(self.lh, TABLE, before, after).steps[-1]
        store, warehouse = self.lh.store, self.lh.warehouse
        columns = [c.name for c in store.schemas([step.after.schema_id])[step.after.schema_id].columns]
        kinds = (store.segments(set(step.after.segments) - set(step.before.segments)).values(),
                 store.tombstones(set(step.after.tombstones) - set(step.before.tombstones)).values())
        paths = [[warehouse.uri(f"{info.path}/{name}") for info in infos for name in info.files] for infos in kinds]
        start = time.perf_counter()
        parts = [self.spark.read.parquet(*files).select(*columns) for files in paths if files]
        full_scan(functools.reduce(lambda a, b: a.union(b), parts))
        return {"seconds": time.perf_counter() - start}

    def delete_percent(self) -> dict:
        start = time.perf_counter()
        self.lh.branch("main").delete(TABLE, "id % 100 = 42")
        return {"seconds": time.perf_counter() - start}

    def full_scan(self) -> dict:
        start = time.perf_counter()
        total = list(self.lh.read(TABLE).selectExpr(*peers_side.ROW_HASH_SUM).collect()[0])
        return {"seconds": time.perf_counter() - start, "sum": total}

    def floor_scan(self) -> dict:
        """The scan's floor: the same hash over a plain Parquet copy of the table's live rows (written once)."""
        if self.floor is None:
            self.floor = os.path.join(self.root, "live_rows")
            self.lh.read(TABLE).write.parquet(self.floor)
        start = time.perf_counter()
        total = list(self.spark.read.parquet(self.floor).selectExpr(*peers_side.ROW_HASH_SUM).collect()[0])
        return {"seconds": time.perf_counter() - start, "sum": total}

    def files_scan(self) -> dict:
        """The layout's floor (no target): the same hash over the data files the table's head names, read plain
        by Spark's Parquet source: every row they hold, the deleted and the superseded ones too. It is what a
        reader that drops rows by position must read at least; Iceberg merge-on-read's is peers_side's."""
        if self.data_files is None:
            state = self.lh.snapshot("main").state(TABLE)
            store, warehouse = self.lh.store, self.lh.warehouse
            self.data_columns = [c.name for c in store.schemas([state.schema_id])[state.schema_id].columns]
            self.data_files = [warehouse.uri(f"{info.path}/{name}")
                               for info in store.segments(set(state.segments)).values() for name in info.files]
        start = time.perf_counter()
        frame = self.spark.read.parquet(*self.data_files).select(*self.data_columns)
        total = list(frame.selectExpr(*peers_side.ROW_HASH_SUM).collect()[0])
        return {"seconds": time.perf_counter() - start, "sum": total, "files": len(self.data_files)}

    def count(self) -> dict:
        return {"seconds": 0.0, "count": self.lh.read(TABLE).count()}

    def preview(self, name: str) -> dict:
        """Bytes: under the warehouse but the catalog's SQLite files, which grow by pages (reported apart)."""
        data, catalog = self._sizes()
        start = time.perf_counter()
        self.lh.create_branch(name)
        seconds = time.perf_counter() - start
        data_after, catalog_after = self._sizes()
        return {"seconds": seconds, "bytes": data_after - data, "catalog bytes": catalog_after - catalog}

    def setup_project(self, tables: int, rows_each: int) -> dict:
        """The preview's project: the big table and `tables` - 1 small ones (peers_side.project_rows), one commit."""
        start = time.perf_counter()
        with self.lh.transaction("main", message="project") as tx:
            for name, first, last in peers_side.project_rows(tables, rows_each):
                tx.create_table_as(f"bench.{name}", peers_side.rows(self.spark, first, last).coalesce(1),
                                   primary_key=["id"])
        return {"seconds": time.perf_counter() - start}

    def _sizes(self) -> tuple[int, int]:
        warehouse = os.path.join(self.root, "warehouse")
        catalog = sum(os.path.getsize(os.path.join(warehouse, f)) for f in os.listdir(warehouse)
                      if f.startswith("catalog.db"))
        return peers_side.dir_bytes(warehouse) - catalog, catalog


def main() -> None:
    """The side process: {"op": "start", "root": ..., "config": ...} first, then one method call per line."""
    peers_side.serve(Branchspark)


if __name__ == "__main__":
    main()
