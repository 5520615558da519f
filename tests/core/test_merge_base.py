"""Merge base on the commit graph alone (no Spark needed): linear, forked, after merges both ways."""
import pytest

from dbt.adapters.branchspark.core.catalog.state import Root
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.core.merge.base import is_ancestor, merge_base


@pytest.fixture
def catalog(tmp_path):
    lakehouse = Lakehouse(None, str(tmp_path / "wh"))  # metadata only: no Spark session is started
    yield lakehouse
    lakehouse.store.dispose()


def commit(lh, branch, merge_parent=None):
    store = lh.store
    head = store.get_branch(branch).head
    return store.commit(branch, head, Root({}, {}), message=f"on {branch}", merge_parent=merge_parent,
                        operations=()).id


def test_linear_and_forked_histories(catalog):
    lh = catalog
    root = lh.get_branch("main").head
    a1 = commit(lh, "main")
    lh.create_branch("dev")
    a2 = commit(lh, "main")
    b1 = commit(lh, "dev")
    assert merge_base(lh.store, a2, b1) == a1
    assert merge_base(lh.store, a1, a2) == a1 and is_ancestor(lh.store, root, b1)
    assert not is_ancestor(lh.store, a2, b1)


def test_after_merges_in_both_directions(catalog):
    lh = catalog
    lh.create_branch("dev")
    commit(lh, "main")
    b1 = commit(lh, "dev")
    m1 = commit(lh, "main", merge_parent=b1)  # dev merged into main
    assert merge_base(lh.store, m1, b1) == b1
    b2 = commit(lh, "dev")
    a3 = commit(lh, "main")
    assert merge_base(lh.store, a3, b2) == b1
    m2 = commit(lh, "dev", merge_parent=a3)  # main merged into dev
    a4 = commit(lh, "main")
    assert merge_base(lh.store, a4, m2) == a3
