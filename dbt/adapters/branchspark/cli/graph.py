"""A text commit graph for `branchspark log`, in the manner of `git log --graph`.

Each commit, newest first, gets a row of lanes: `*` where the commit is, `|`
for lanes that wait for an older commit. A merge opens a lane for its second
parent; lanes waiting for the same commit close into one.
"""
from __future__ import annotations

from ..catalog.state import CommitInfo


def commit_graph(commits: list[CommitInfo]) -> list[str]:
    lanes: list[str] = []
    rows = []
    for commit in commits:
        if commit.id not in lanes:
            lanes.append(commit.id)
        column = lanes.index(commit.id)
        rows.append(" ".join("*" if i == column else "|" for i in range(len(lanes))))
        # This commit's lane now waits for its first parent; duplicates of it close.
        lanes = [lane for i, lane in enumerate(lanes) if lane != commit.id or i == column]
        column = lanes.index(commit.id)
        if commit.parents:
            lanes[column] = commit.parents[0]
            for parent in commit.parents[1:]:
                if parent not in lanes:
                    lanes.insert(column + 1, parent)
        else:
            lanes.pop(column)
        deduped: list[str] = []
        for lane in lanes:
            if lane not in deduped:
                deduped.append(lane)
        lanes = deduped
    return rows
