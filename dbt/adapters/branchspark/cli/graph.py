"""A text commit graph for `branchspark log --graph`, drawn as `git log --graph` draws it.

Commits come in git's graph order (`graph_order`: no parent before all its children, and the
line of history a merge brought in shown before the merge's first parent goes on). Each
commit's row is a commit line, then, for a merge (two parents), a line that forks them (`|\\`), then
as many lines as it takes for lanes that now wait for the same commit to move left and join
(`|/`, with `_` for a long move). The drawing works on character positions: a lane of column
c stands at position 2c; while moving left it passes through the positions between.
"""
from __future__ import annotations

from collections.abc import Iterable

from ..core.catalog.history import graph_order  # noqa: F401 (log_cmd and the tests take it from here)

EMPTY = -1


class GraphDrawer:
    """Feed commits in graph order; each call returns the graph text of that commit's lines."""

    def __init__(self) -> None:
        self.columns: list[str] = []  # what each lane waits for
        self.mapping: list[int] = []  # after the last line: the column each position's lane goes to
        self.last_line = "padding"  # commit | merge | collapsing | padding
        self.last_commit_column = -1
        self.last_edges_added = 0

    def draw(self, commit_id: str, parents: Iterable[str]) -> list[str]:
        parents = list(dict.fromkeys(parents))
        columns = list(self.columns)
        if commit_id not in columns:
            columns.append(commit_id)
        column = columns.index(commit_id)
        new_columns, targets, parent_columns = _next_columns(columns, column, parents)
        merge = len(parent_columns) > 1
        # A merge whose first parent is a lane to its left forks from there (layout 0: `/|`);
        # otherwise the first parent goes straight down and the others branch right (layout 1: `|\`).
        layout = (0 if parent_columns[0] < column else 1) if merge else 0
        edges_added = layout if merge else 0
        if edges_added and column + 1 < len(columns) and columns[column + 1] == parents[1]:
            edges_added = -1  # the lane to its right waits for the second parent: the branch joins it
        width = 2 * len(columns) + 2 * max(edges_added, 0)

        # Where each lane stands after the commit line (or the merge line), and where it goes.
        mapping = [EMPTY] * max(width, 2 * len(new_columns))
        for index, target in targets.items():
            shift = 2 if merge and index > column and edges_added > 0 else 0
            mapping[2 * index + shift] = target
        if merge:
            first, second = parent_columns[0], parent_columns[1]
            if layout == 0:
                # the first parent's lane leaves by the `/`; from further away it starts near its column
                mapping[2 * column - 1 if column - first == 1 else 2 * first + 3] = first
                mapping[2 * column] = second
            else:
                mapping[2 * column], mapping[2 * column + 2] = first, second
        elif parent_columns:
            mapping[2 * column] = parent_columns[0]
        lines = [self._commit_line(columns, column, mapping, width, edges_added)]
        if merge:
            lines.append(self._merge_line(columns, column, layout, edges_added, parent_columns[0]))
        self.last_line = "merge" if merge else "commit"
        self.last_commit_column, self.last_edges_added = column, edges_added
        self.mapping = mapping
        while not _settled(self.mapping):
            lines.append(self._collapse())
        self.columns = new_columns
        return lines[:1] + [line.rstrip() for line in lines[1:]]  # the commit line keeps its width

    def _commit_line(self, columns, column, mapping, width, edges_added) -> str:
        chars = [" "] * width
        for index in range(len(columns)):
            if index == column:
                chars[2 * index] = "*"
            elif index > column and edges_added > 0:
                # right of a merge that adds a lane: `\\` where the last merge's branch line comes in
                after_merge = (self.last_line == "merge" and self.last_edges_added > 0
                               and self.last_commit_column < index)
                chars[2 * index] = "\\" if after_merge else "|"
            elif (self.last_line == "collapsing" and 2 * index + 1 < len(self.mapping)
                  and self.mapping[2 * index + 1] == index and mapping[2 * index] < index):
                chars[2 * index] = "/"  # the lane that just arrived here moves on left
            else:
                chars[2 * index] = "|"
        return "".join(chars)

    @staticmethod
    def _merge_line(columns, column, layout, edges_added, first_parent) -> str:
        chars = [" "] * (2 * len(columns) + 2 * max(edges_added, 0))
        for index in range(column):
            chars[2 * index] = "|"
            if layout == 0 and first_parent < index < column - 1:
                chars[2 * index + 1] = "_"  # the first parent's lane runs left along the bottom
        if layout == 0:
            chars[2 * column - 1], chars[2 * column] = "/", "|"
        else:
            chars[2 * column], chars[2 * column + 1] = "|", "\\"
        for index in range(column + 1, len(columns)):
            if edges_added > 0:
                chars[2 * index + 1] = "\\"
            else:
                chars[2 * index] = "|"
        return "".join(chars)

    def _collapse(self) -> str:
        """One line of lanes moving left towards the column they wait for."""
        mapping = self.mapping
        moved = [EMPTY] * len(mapping)
        horizontal_from = horizontal_target = None
        for position, target in enumerate(mapping):
            if target == EMPTY:
                continue
            if 2 * target == position:
                moved[position] = target
                continue
            if moved[position - 1] == EMPTY:
                moved[position - 1], start = target, position
            elif moved[position - 1] != target:
                moved[position - 2], start = target, position - 1  # another lane stands there: step over it
            else:
                continue  # it joins the lane to its left, which goes where it goes
            if horizontal_from is None:
                # the first lane to move this line may run left along the bottom (`_`) in one go
                horizontal_from, horizontal_target = start, target
                for run in range(2 * target + 3, position - 2, 2):
                    moved[run] = target
        chars, used_run = [], False
        for position, target in enumerate(moved):
            if target == EMPTY:
                chars.append(" ")
            elif 2 * target == position:
                chars.append("|")
            elif target == horizontal_target and position != horizontal_from - 1:
                if position != 2 * target + 3:
                    moved[position] = EMPTY  # the run is drawn; only its first segment goes on
                used_run = True
                chars.append("_")
            else:
                if used_run and position < horizontal_from:
                    moved[position] = EMPTY
                chars.append("/")
        self.mapping = moved
        self.last_line = "collapsing"
        return "".join(chars)


def _next_columns(columns: list[str], column: int, parents: list[str]):
    """The lanes after the commit in `column`: its parents take its place, every other lane keeps its
    order, and lanes waiting for the same commit become one. Returns the new lanes, each other old lane's
    new column, and the parents' new columns."""
    new_columns: list[str] = []

    def place(wanted: str) -> int:
        if wanted not in new_columns:
            new_columns.append(wanted)
        return new_columns.index(wanted)

    targets: dict[int, int] = {}
    parent_columns: list[int] = []
    for index, waiting in enumerate(columns):
        if index == column:
            parent_columns = [place(p) for p in parents]
        else:
            targets[index] = place(waiting)
    return new_columns, targets, parent_columns


def _settled(mapping: list[int]) -> bool:
    return all(target == EMPTY or target == position // 2 for position, target in enumerate(mapping))
