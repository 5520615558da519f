"""The merge base: the nearest common ancestor of two commits.

Commits carry a catalog-wide sequence number that grows along every path of
the history, so walking one side's ancestors newest-first and stopping at
the first one the other side also reaches gives the nearest common ancestor
(the newest, when a criss-cross history has several).
"""
from __future__ import annotations

from ..catalog.store import CatalogStore


def merge_base(store: CatalogStore, left: str, right: str) -> str | None:
    """Id of the nearest common ancestor of commits `left` and `right` (either may be it), or None."""
    if left == right:
        return left
    reachable_from_left = {commit.id for commit in store.ancestors(left)}
    for commit in store.ancestors(right):
        if commit.id in reachable_from_left:
            return commit.id
    return None


def is_ancestor(store: CatalogStore, ancestor: str, descendant: str) -> bool:
    return merge_base(store, ancestor, descendant) == ancestor
