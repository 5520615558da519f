"""Expose one branch's tables and views to Spark SQL as session temp views.

Each relation `db.t` of the branch becomes the temp view `` `db.t` ``: tables
over the core's reassembled read of the version (a native Parquet scan),
views with their stored SQL (temp views re-resolve the names they use at query
time, so a view follows the tables it reads). One registry per SparkSession,
because temp views belong to the session.
"""

import threading
from typing import Dict, Iterable, Optional, Set

from pyspark.sql import DataFrame, SparkSession

from dbt.adapters.branchspark.sql_text import quote_identifier

TABLE, VIEW = "table", "view"


class BranchViews:
    def __init__(self, spark: SparkSession):
        self.spark = spark
        self.branch: Optional[str] = None
        self.commit_id: Optional[str] = None
        self.registered: Dict[str, str] = {}  # core name -> TABLE | VIEW
        self.lock = threading.RLock()

    # -- what is exposed ------------------------------------------------------------------
    def is_branch_relation(self, schema: str, table: str) -> bool:
        return f"{schema}.{table}".lower() in self.registered

    def kind(self, name: str) -> Optional[str]:
        return self.registered.get(name.lower())

    # -- whole-branch sync ----------------------------------------------------------------
    def sync(self, lakehouse, branch: str) -> None:
        """Expose `branch`'s head, unless it is what the session already shows."""
        with self.lock:
            snapshot = lakehouse.snapshot(branch)
            if self.branch == branch and self.commit_id == snapshot.commit_id:
                return
            for name in list(self.registered):
                self.drop(name)
            self.show_snapshot(snapshot, [t.full_name for t in snapshot.tables()])
            self.branch, self.commit_id = branch, snapshot.commit_id

    def show_snapshot(self, snapshot, names: Iterable[str]) -> None:
        """(Re-)register `names` as they are in `snapshot`; names it lacks are dropped."""
        wanted = {name.lower() for name in names}
        infos = {t.full_name.lower(): t for t in snapshot.tables() if t.full_name.lower() in wanted}
        for name in wanted - set(infos):
            self.drop(name)
        views = {}
        for name, info in infos.items():
            if info.kind == VIEW:
                views[name] = info.view_sql
            else:
                self.show_table(name, snapshot.read(info.full_name))
        self.show_views(views)

    def show_views(self, views: Dict[str, str]) -> None:
        """Register views in passes: a view can only be created after the views it reads."""
        pending = dict(views)
        while pending:
            failed = {}
            for name, sql in pending.items():
                try:
                    self.show_view(name, sql)
                except Exception as exc:  # reads something not (yet) registered
                    failed[name] = (sql, exc)
            if len(failed) == len(pending):
                # unresolvable (reads a dropped relation): leave them out of the session
                for name in failed:
                    self.drop(name)
                return
            pending = {name: sql for name, (sql, _) in failed.items()}

    # -- single relations -----------------------------------------------------------------
    def show_table(self, name: str, df: DataFrame) -> None:
        with self.lock:
            df.createOrReplaceTempView(quote_identifier(name.lower()))
            self.registered[name.lower()] = TABLE

    def show_view(self, name: str, sql: str) -> None:
        with self.lock:
            self.spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {quote_identifier(name.lower())} AS {sql}")
            self.registered[name.lower()] = VIEW

    def drop(self, name: str) -> None:
        with self.lock:
            self.spark.catalog.dropTempView(name.lower())
            self.registered.pop(name.lower(), None)

    def names_in_database(self, database: str) -> Set[str]:
        prefix = database.lower() + "."
        return {name for name in self.registered if name.startswith(prefix)}


_views_by_session: Dict[int, BranchViews] = {}
_registry_lock = threading.Lock()


def views_of(spark: SparkSession) -> BranchViews:
    with _registry_lock:
        views = _views_by_session.get(id(spark))
        if views is None or views.spark is not spark:
            views = _views_by_session[id(spark)] = BranchViews(spark)
        return views
