"""A ref's history as a commit graph orders it, shared by `branchspark log --graph` (cli/graph.py draws it as
text) and `branchspark ui` (ui/graph_svg.py draws it as SVG): the commits reachable from some heads, and git's
graph order of them. Metadata only: commits are read once from the catalog and kept (they never change)."""
from __future__ import annotations

from collections.abc import Sequence

from .commits import CommitInfo
from .store import CatalogStore


def history_commits(store: CatalogStore, heads: list[str], first_parent: bool) -> list[CommitInfo]:
    """Commits reachable from `heads` (by first parents only, if asked), newest first."""
    if not first_parent:
        found = store.commits(store.reachable_commits(heads))  # one scan of the commit graph
        return sorted(found.values(), key=lambda c: c.seq, reverse=True)
    chains: dict[str, CommitInfo] = {}
    for head in dict.fromkeys(heads):
        for commit in store.first_parents(head):
            if commit.id in chains:
                break  # the rest of this chain is listed already
            chains[commit.id] = commit
    return sorted(chains.values(), key=lambda c: c.seq, reverse=True)


def graph_order(commits: Sequence, parents_of) -> list:
    """`commits` (newest first) in git's topological order for a graph: a commit comes after all its
    children; from a merge, the last-named parent's line comes first (git's LIFO walk)."""
    ids = {c.id for c in commits}
    children = {c.id: 0 for c in commits}
    for commit in commits:
        for parent in parents_of(commit):
            if parent in ids:
                children[parent] += 1
    by_id = {c.id: c for c in commits}
    stack = [c for c in reversed(commits) if children[c.id] == 0]
    ordered = []
    while stack:
        commit = stack.pop()
        ordered.append(commit)
        for parent in parents_of(commit):
            if parent in ids:
                children[parent] -= 1
                if children[parent] == 0:
                    stack.append(by_id[parent])
    return ordered
