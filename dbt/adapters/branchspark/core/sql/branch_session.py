"""A SQL session's view of the lakehouse: one branch, its temp views, and its write transactions.

Writes never touch the Spark catalog; they go to the core as transactions on
the session's branch. A dbt model build opens one transaction (one commit, whose
message names the dbt invocation and the node); a statement outside a model
build (a hook, a test's SQL, `Lakehouse.sql`, the `branchspark sql` shell) commits
on its own. Commits from threads of this process are serialized per branch, so two
models built in parallel never race for the branch head.
"""

import functools
import threading
from contextlib import contextmanager
from typing import Dict, Iterator, Optional, Set, Tuple

from pyspark.sql import SparkSession

from .temp_views import VIEW, BranchViews, views_of


class _AbortTransaction(Exception):
    """Raised into the core's transaction to discard it."""


_write_locks: Dict[Tuple[int, str], threading.Lock] = {}
_cache_lock = threading.Lock()


def _write_lock(lakehouse, branch: str) -> threading.Lock:
    with _cache_lock:
        return _write_locks.setdefault((id(lakehouse), branch), threading.Lock())


class BranchSession:
    """The lakehouse, the session's branch and the session's temp views of it."""

    def __init__(self, spark: SparkSession, lakehouse, branch: str, author: Optional[str] = None):
        self.spark = spark
        self.lakehouse = lakehouse
        self.branch = branch
        self.author = author  # of every commit this session writes
        self.views: BranchViews = views_of(spark)

    def expose_branch(self) -> None:
        self.views.sync(self.lakehouse, self.branch)

    def snapshot(self):
        return self.lakehouse.snapshot(self.branch)

    def begin(self, message: str) -> "BranchTransaction":
        return BranchTransaction(self, message)


class BranchTransaction:
    """One core transaction on the branch; temp views follow its staged writes."""

    def __init__(self, session: BranchSession, message: str):
        self.session = session
        self.message = message
        self.touched: Set[str] = set()
        self._lock = _write_lock(session.lakehouse, session.branch)
        self._lock.acquire()
        try:
            # the head may have moved (another process): show it before reading for the write
            session.expose_branch()
            self._context = session.lakehouse.transaction(session.branch, message=message, author=session.author)
            self.tx = self._context.__enter__()
        except BaseException:
            self._lock.release()
            raise
        self.finished = False

    def changed(self, *names: str) -> None:
        """Show the transaction's staged state of `names` to the rest of the model build."""
        views = self.session.views
        for name in names:
            name = name.lower()
            self.touched.add(name)
            if not self.tx.has_table(name):
                views.forget(name)
            elif self.tx.table(name).kind == VIEW:
                views.show_view(name, self.tx.table(name).view_sql)
            else:
                views.stage_table(name, functools.partial(self.tx.read, name))

    def commit(self):
        """Commit; returns the core's CommitInfo (None when nothing changed)."""
        if self.finished:
            return None
        self.finished = True
        try:
            self._context.__exit__(None, None, None)
        except BaseException:
            self._show_head()
            self._lock.release()
            raise
        commit_info = getattr(self.tx, "commit_info", None) or getattr(self._context, "commit_info", None)
        try:
            self._show_head()
        finally:
            self._lock.release()
        return commit_info

    def abort(self) -> None:
        if self.finished:
            return
        self.finished = True
        try:
            self._context.__exit__(_AbortTransaction, _AbortTransaction(), None)
        except _AbortTransaction:
            pass
        finally:
            try:
                self._show_head()
            finally:
                self._lock.release()

    def _show_head(self) -> None:
        """After commit or abort: the touched relations as the branch head has them."""
        views = self.session.views
        with views.lock:
            snapshot = self.session.snapshot()
            views.show_snapshot(snapshot, self.touched)
            views.branch, views.commit_id = self.session.branch, snapshot.commit_id



@contextmanager
def statement_transaction(session: BranchSession, open_tx: Optional[BranchTransaction], message: str) -> Iterator[BranchTransaction]:
    """The model build's open transaction, or a transaction of its own for this statement."""
    if open_tx is not None and not open_tx.finished:
        yield open_tx
        return
    own = session.begin(message)
    try:
        yield own
    except BaseException:
        own.abort()
        raise
    own.commit()
