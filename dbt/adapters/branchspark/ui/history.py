"""What the branches page and a ref's history page show, read through the core (metadata only, no Spark).

Commits never change and the store keeps each one it read, so after the first request a page costs the
branch heads and the commit graph's edges (one scan each), and the operations of commits not yet shown.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.catalog.commits import CommitInfo
from ..core.catalog.history import graph_order, history_commits
from ..core.lakehouse import Lakehouse
from ..core.operations import ObjectKind
from .graph_svg import Layout, lay_out

MAIN = "main"


@dataclass
class BranchRow:
    name: str
    head: CommitInfo
    protected: bool
    ahead: int | None  # commits of the branch that main lacks (None for main itself, or without main)
    behind: int | None  # commits of main that the branch lacks
    run_branch: bool


@dataclass
class HistoryRow:
    commit: CommitInfo
    branches: list[str]  # branches whose head this commit is
    tables: list[str]  # the tables and databases its operations touched


@dataclass
class History:
    ref: str
    head: CommitInfo
    rows: list[HistoryRow]
    svg: str
    offset: int
    total: int
    limit: int
    graph_width: int


def branch_rows(lakehouse: Lakehouse) -> list[BranchRow]:
    """Every branch with its head, protection and its distance from main, from one scan of the graph."""
    store = lakehouse.store
    branches = lakehouse.list_branches()
    commits = store.commits(store.reachable_commits([b.head for b in branches]))
    reach: dict[str, frozenset[str]] = {}

    def reachable(head: str) -> frozenset[str]:
        if head not in reach:
            seen, stack = set(), [head]
            while stack:
                cid = stack.pop()
                if cid not in seen and cid in commits:
                    seen.add(cid)
                    stack.extend(commits[cid].parents)
            reach[head] = frozenset(seen)
        return reach[head]

    main = next((b for b in branches if b.name == MAIN), None)
    main_commits = reachable(main.head) if main is not None else None
    rows = []
    for branch in sorted(branches, key=lambda b: (b.name != MAIN, b.run_branch, b.name)):
        ahead = behind = None
        if main_commits is not None and branch.name != MAIN:
            mine = reachable(branch.head)
            ahead, behind = len(mine - main_commits), len(main_commits - mine)
        rows.append(BranchRow(branch.name, commits[branch.head], branch.protected, ahead, behind,
                              branch.run_branch))
    return rows


def history(lakehouse: Lakehouse, ref: str, offset: int = 0, limit: int = 100) -> History:
    """`ref`'s commits in graph order (every parent, as `branchspark log --graph`), rows [offset, offset+limit)
    with the graph of those rows."""
    store = lakehouse.store
    head = lakehouse.resolve(ref)
    commits = history_commits(store, [head.id], first_parent=False)
    ids = {c.id for c in commits}

    def parents_of(commit: CommitInfo) -> tuple[str, ...]:
        return tuple(p for p in commit.parents if p in ids)

    ordered = graph_order(commits, parents_of)
    layout: Layout = lay_out(ordered, parents_of)
    offset = max(0, min(offset, max(len(ordered) - 1, 0)))
    shown = ordered[offset:offset + limit]
    names: dict[str, list[str]] = {}
    for branch in lakehouse.list_branches():
        names.setdefault(branch.head, []).append(branch.name)
    rows = [HistoryRow(c, sorted(names.get(c.id, [])), touched(store.operations(c.id))) for c in shown]
    return History(ref, head, rows, layout.svg(offset, max(len(shown), 1)), offset, len(ordered), limit,
                   layout.pixel_width)


def touched(operations) -> list[str]:
    """The objects a commit's operations name, tables first."""
    tables = {o.object_name for o in operations if o.object_kind in (ObjectKind.TABLE, ObjectKind.VIEW)}
    others = {o.object_name for o in operations} - tables
    return sorted(tables) + sorted(others)
