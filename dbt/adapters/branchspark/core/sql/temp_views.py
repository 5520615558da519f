"""Expose one branch's tables and views to Spark SQL as session temp views.

Each relation `db.t` of the branch becomes the temp view `` `db.t` ``: tables
over the core's reassembled read of the version (a native Parquet scan),
views with their stored SQL (temp views re-resolve the names they use at query
time, so a view follows the tables it reads). One registry per SparkSession,
because temp views belong to the session.

Views are registered when a statement first names them (and, for a view, the
relations its SQL names, transitively), so opening a connection costs one
catalog lookup however many tables the branch has. A statement may pass its view
SQL through a function first (the router's: the tables of Spark's catalogs the view
reads are recorded, and pinned under `sources_as_of`, as a model's own SQL is); a
view whose SQL then differs from what its temp view shows is shown again.
"""

import threading
from typing import Callable, Dict, Iterable, List, Optional, Set

from pyspark.sql import DataFrame, SparkSession

from ..operations import ObjectKind
from ..sql_text import QUOTED, quote_identifier, tokens, unquote

TABLE, VIEW = ObjectKind.TABLE, ObjectKind.VIEW


class _Relation:
    """How to (re)create one temp view: a DataFrame factory for tables, SQL for views."""

    def __init__(self, kind: str, load: Optional[Callable[[], DataFrame]] = None, sql: Optional[str] = None):
        self.kind, self.load, self.sql = kind, load, sql
        self.shown = False  # its temp view shows this relation
        self.shown_sql: Optional[str] = None  # a view's: the SQL its temp view was made with
        self.stale_view = False  # its temp view still shows an earlier version (replaced before use)


class BranchViews:
    def __init__(self, spark: SparkSession):
        self.spark = spark
        self.branch: Optional[str] = None
        self.commit_id: Optional[str] = None
        self.relations: Dict[str, _Relation] = {}  # core name (lower case) -> how to show it
        self.lock = threading.RLock()

    # -- what is exposed ------------------------------------------------------------------
    def is_branch_relation(self, schema: str, table: str) -> bool:
        return f"{schema}.{table}".lower() in self.relations

    def kind(self, name: str) -> Optional[str]:
        relation = self.relations.get(name.lower())
        return relation.kind if relation else None

    def referenced(self, sql: str) -> List[str]:
        """Branch relations a (qualified) statement names as `` `db.t` ``."""
        names = []
        for kind, start, end in tokens(sql):
            if kind == QUOTED:
                name = unquote(sql[start:end]).lower()
                if name in self.relations:
                    names.append(name)
        return names

    def ensure(self, names: Iterable[str], view_sql: Optional[Callable[[str], str]] = None,
               _seen: Optional[Set[str]] = None) -> None:
        """Make sure `names`, and what views among them read, exist as temp views; a view's SQL as
        `view_sql` gives it (the view's stored SQL without one)."""
        seen = _seen if _seen is not None else set()
        with self.lock:
            for name in names:
                name = name.lower()
                if name in seen or name not in self.relations:
                    continue
                seen.add(name)
                relation = self.relations[name]
                if relation.kind == VIEW:
                    self.ensure(self.referenced(relation.sql), view_sql, seen)
                    sql = view_sql(relation.sql) if view_sql is not None else relation.sql
                    if not relation.shown or sql != relation.shown_sql:
                        self._show(name, relation, sql)
                elif not relation.shown:
                    self._show(name, relation)

    def _show(self, name: str, relation: _Relation, sql: Optional[str] = None) -> None:
        if relation.kind == VIEW:
            sql = relation.sql if sql is None else sql
            self.spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {quote_identifier(name)} AS {sql}")
            relation.shown_sql = sql
        else:
            relation.load().createOrReplaceTempView(quote_identifier(name))
        relation.shown = True

    # -- whole-branch sync ----------------------------------------------------------------
    def sync(self, lakehouse, branch: str) -> None:
        """Expose `branch`'s head, unless it is what the session already shows."""
        with self.lock:
            snapshot = lakehouse.snapshot(branch)
            if self.branch == branch and self.commit_id == snapshot.commit_id:
                return
            for name in list(self.relations):
                self.forget(name)
            self.show_snapshot(snapshot, [t.full_name for t in snapshot.tables()])
            self.branch, self.commit_id = branch, snapshot.commit_id

    def show_snapshot(self, snapshot, names: Iterable[str]) -> None:
        """Expose `names` as they are in `snapshot` (lazily); names it lacks disappear."""
        wanted = {name.lower() for name in names}
        infos = {t.full_name.lower(): t for t in snapshot.tables() if t.full_name.lower() in wanted}
        with self.lock:
            # A name the snapshot keeps is re-registered lazily: every statement passes `ensure`, which
            # replaces its temp view before use, so dropping it now would only cost a round trip.
            for name in wanted - infos.keys():
                self.forget(name)
            for name, info in infos.items():
                if info.kind == VIEW:
                    self._register_lazily(name, _Relation(VIEW, sql=info.view_sql))
                else:
                    self._register_lazily(name, _Relation(TABLE, load=_reader(snapshot, info.full_name)))

    def _register_lazily(self, name: str, relation: _Relation) -> None:
        """`relation` is what `name` shows from the next statement naming it on (`ensure` builds it then); a
        temp view of the relation it replaces is remembered as stale, so `forget` still drops it."""
        before = self.relations.get(name)
        relation.stale_view = before is not None and (before.shown or before.stale_view)
        self.relations[name] = relation

    # -- single relations (a model build's staged writes) -----------------------------------
    def stage_table(self, name: str, load: Callable[[], DataFrame]) -> None:
        """Show `name` as `load()` gives it, from the next statement that names it on: a model build rarely
        reads back what it wrote, and building a table's read costs a plan (0.05-0.15 s), not a Spark job."""
        with self.lock:
            self._register_lazily(name.lower(), _Relation(TABLE, load=load))

    def show_view(self, name: str, sql: str) -> None:
        with self.lock:
            relation = _Relation(VIEW, sql=sql)
            self.ensure(self.referenced(sql))
            self._show(name.lower(), relation)
            self.relations[name.lower()] = relation

    def forget(self, name: str) -> None:
        with self.lock:
            relation = self.relations.pop(name.lower(), None)
            if relation is not None and (relation.shown or relation.stale_view):
                self.spark.catalog.dropTempView(name.lower())


def _reader(snapshot, full_name: str) -> Callable[[], DataFrame]:
    def read() -> DataFrame:
        return snapshot.read(full_name)

    return read


_views_by_session: Dict[int, BranchViews] = {}
_registry_lock = threading.Lock()


def views_of(spark: SparkSession) -> BranchViews:
    with _registry_lock:
        views = _views_by_session.get(id(spark))
        if views is None or views.spark is not spark:
            views = _views_by_session[id(spark)] = BranchViews(spark)
        return views
