"""The commit graph of a history page, laid out in lanes and drawn by the server as SVG (no JavaScript).

Commits come in git's graph order (core/catalog/history.py), one row each. A lane is a column that waits
for one commit: a commit takes the lane that waits for it (the leftmost, when several children wait for it:
the others join it there), its first parent inherits that lane, and each further parent (a merge's second)
takes the lane already waiting for it or a free one. Lanes never shift sideways, so an edge runs down its
lane from just below the child to just above the parent and no node stands in its way.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

ROW_HEIGHT = 28
LANE_WIDTH = 16
_RADIUS = 5
_COLOURS = ("#1f6feb", "#d1242f", "#1a7f37", "#8250df", "#bc4c00", "#0598bc", "#bf3989", "#6e7781")


@dataclass
class Edge:
    child_row: int
    child_lane: int
    lane: int  # the lane the edge runs down
    parent_row: int | None  # None: the parent is below the rows laid out
    parent_lane: int | None


@dataclass
class Layout:
    lanes_of: dict[str, int] = field(default_factory=dict)  # commit id -> lane
    rows_of: dict[str, int] = field(default_factory=dict)  # commit id -> row
    edges: list[Edge] = field(default_factory=list)
    width: int = 1  # lanes in use at the widest row

    @property
    def pixel_width(self) -> int:
        return self.width * LANE_WIDTH + LANE_WIDTH // 2

    def svg(self, first_row: int, rows: int) -> str:
        """The graph of rows [first_row, first_row + rows) as one SVG element, ROW_HEIGHT per row."""
        last_row = first_row + rows - 1
        height = rows * ROW_HEIGHT
        width = self.pixel_width
        parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="{width}" height="{height}" '
                 f'viewBox="0 {first_row * ROW_HEIGHT} {width} {height}" role="img" aria-label="commit graph">']
        for edge in self.edges:
            bottom = edge.parent_row if edge.parent_row is not None else last_row + 1
            if edge.child_row > last_row or bottom < first_row:
                continue
            parts.append(f'<path d="{_edge_path(edge, last_row)}" stroke="{_colour(edge.lane)}" '
                         f'fill="none" stroke-width="2"/>')
        for commit_id, row in self.rows_of.items():
            if first_row <= row <= last_row:
                lane = self.lanes_of[commit_id]
                parts.append(f'<circle class="node" data-commit="{escape(commit_id)}" cx="{_x(lane)}" '
                             f'cy="{_y(row)}" r="{_RADIUS}" fill="{_colour(lane)}"/>')
        parts.append("</svg>")
        return "".join(parts)


def lay_out(ordered: list, parents_of) -> Layout:
    """Lanes for `ordered` (commits in graph order); `parents_of(commit)` names the parents to draw."""
    layout = Layout()
    waiting: list[str | None] = []  # what each lane waits for
    pending: list[tuple[int, int, int, str]] = []  # (child row, child lane, lane, parent id)
    for row, commit in enumerate(ordered):
        lanes = [i for i, wanted in enumerate(waiting) if wanted == commit.id]
        lane = lanes[0] if lanes else _free(waiting)
        for other in lanes[1:]:
            waiting[other] = None  # a second child's lane joins here
        layout.lanes_of[commit.id], layout.rows_of[commit.id] = lane, row
        parents = list(dict.fromkeys(parents_of(commit)))
        waiting[lane] = parents[0] if parents else None
        if parents:
            pending.append((row, lane, lane, parents[0]))
        for parent in parents[1:]:
            if parent in waiting:
                target = waiting.index(parent)
            else:
                target = _free(waiting)
                waiting[target] = parent
            pending.append((row, lane, target, parent))
        layout.width = max(layout.width, len(waiting))
    for child_row, child_lane, lane, parent in pending:
        layout.edges.append(Edge(child_row, child_lane, lane, layout.rows_of.get(parent),
                                 layout.lanes_of.get(parent)))
    return layout


def _free(waiting: list) -> int:
    if None in waiting:
        return waiting.index(None)
    waiting.append(None)
    return len(waiting) - 1


def _x(lane: int) -> int:
    return lane * LANE_WIDTH + LANE_WIDTH // 2 + 2


def _y(row: int) -> int:
    return row * ROW_HEIGHT + ROW_HEIGHT // 2


def _colour(lane: int) -> str:
    return _COLOURS[lane % len(_COLOURS)]


def _edge_path(edge: Edge, last_row: int) -> str:
    """From the child, bend into the edge's lane, run down it, bend into the parent (or leave the page)."""
    x0, y0, x1 = _x(edge.child_lane), _y(edge.child_row), _x(edge.lane)
    if edge.parent_row is None or edge.parent_row > last_row:
        return f"M{x0},{y0} C{x0},{y0 + ROW_HEIGHT // 2} {x1},{y0 + ROW_HEIGHT // 2} {x1},{y0 + ROW_HEIGHT} " \
               f"L{x1},{_y(last_row + 1) + ROW_HEIGHT}"
    x2, y2 = _x(edge.parent_lane), _y(edge.parent_row)
    if edge.parent_row == edge.child_row + 1:
        return f"M{x0},{y0} C{x0},{(y0 + y2) // 2} {x2},{(y0 + y2) // 2} {x2},{y2}"
    top, bottom = y0 + ROW_HEIGHT, y2 - ROW_HEIGHT
    half = ROW_HEIGHT // 2
    return (f"M{x0},{y0} C{x0},{y0 + half} {x1},{y0 + half} {x1},{top} L{x1},{bottom} "
            f"C{x1},{bottom + half} {x2},{bottom + half} {x2},{y2}")
