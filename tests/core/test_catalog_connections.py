"""The SQLite catalog keeps a few connections open and lends them out; a forked process opens its own."""
from __future__ import annotations

import os

from sqlalchemy import event

from dbt.adapters.branchspark.core.catalog.store import MAIN, CatalogStore


def _store(tmp_path) -> tuple[CatalogStore, list]:
    url = f"sqlite:///{tmp_path / 'catalog.db'}"
    CatalogStore(url).create()
    store = CatalogStore(url)  # nothing opened yet
    opened = []
    event.listen(store.engine, "connect", lambda dbapi_connection, _record: opened.append(os.getpid()))
    return store, opened


def test_reads_reuse_the_connections_they_opened(tmp_path):
    store, opened = _store(tmp_path)
    for _ in range(20):
        assert store.get_branch(MAIN).name == MAIN
    assert 1 <= len(opened) <= 4, opened  # was one per read: 20


def test_a_forked_process_opens_connections_of_its_own_and_leaves_the_parents_alone(tmp_path):
    store, opened = _store(tmp_path)
    head = store.get_branch(MAIN).head  # a connection of the parent's now waits in the pool
    for round_index in range(3):
        child = os.fork()
        if child == 0:  # pragma: no cover - runs in the child
            code = 1
            try:
                store.create_branch(f"from_child_{round_index}", head, MAIN)
                code = 0 if opened and opened[-1] == os.getpid() else 2  # it opened one, not the parent's
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        # The parent's pooled connection still works, and sees the child's commit.
        assert store.get_branch(f"from_child_{round_index}").head == head
        store.create_branch(f"from_parent_{round_index}", head, MAIN)
    assert {b.name for b in store.list_branches()} == {MAIN} | {f"from_{who}_{i}" for who in ("child", "parent")
                                                                for i in range(3)}
    assert set(opened) == {os.getpid()}  # the children's connections were counted in their own copies
