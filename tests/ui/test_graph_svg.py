"""The history page's SVG commit graph (ui/graph_svg.py) on random histories, without Spark: every commit is one
node in its own row, every parent link is one edge from the child's node to the parent's, and an edge runs down
a lane no node between them stands in (so no line crosses a commit it does not join)."""
import random
import re
from dataclasses import dataclass

from dbt.adapters.branchspark.core.catalog.history import graph_order
from dbt.adapters.branchspark.ui.graph_svg import ROW_HEIGHT, lay_out


@dataclass
class Commit:
    id: str
    seq: int
    parents: tuple


def random_history(rng: random.Random, size: int) -> list[Commit]:
    """Newest first: a root, then commits on one of the recent ones, some merges of two."""
    commits = [Commit("c0", 0, ())]
    for index in range(1, size):
        recent = [c.id for c in commits[-8:]]
        parents = tuple(rng.sample(recent, 2)) if rng.random() < 0.3 and len(recent) > 2 else (rng.choice(recent),)
        commits.append(Commit(f"c{index}", index, parents))
    return commits[::-1]


def test_every_edge_joins_child_to_parent_down_a_free_lane():
    rng = random.Random(54)
    for _ in range(200):
        commits = random_history(rng, rng.randint(1, 40))
        ordered = graph_order(commits, lambda c: c.parents)
        layout = lay_out(ordered, lambda c: c.parents)
        assert sorted(layout.rows_of.values()) == list(range(len(commits)))
        edges = {(e.child_row, e.parent_row) for e in layout.edges}
        assert edges == {(layout.rows_of[c.id], layout.rows_of[p]) for c in commits for p in c.parents}
        node_at = {(row, layout.lanes_of[cid]) for cid, row in layout.rows_of.items()}
        for edge in layout.edges:
            assert edge.child_row < edge.parent_row  # a parent is drawn below all its children
            between = range(edge.child_row + 1, edge.parent_row)
            assert not any((row, edge.lane) in node_at for row in between), edge
        svg = layout.svg(0, len(commits))
        assert svg.count("<circle") == len(commits) and svg.count("<path") == len(layout.edges)


def test_a_page_of_a_long_history_draws_only_its_rows():
    commits = random_history(random.Random(7), 300)
    ordered = graph_order(commits, lambda c: c.parents)
    layout = lay_out(ordered, lambda c: c.parents)
    svg = layout.svg(100, 50)
    shown = set(re.findall(r'data-commit="(c\d+)"', svg))
    assert shown == {c.id for c in ordered[100:150]}
    assert f'viewBox="0 {100 * ROW_HEIGHT} ' in svg
