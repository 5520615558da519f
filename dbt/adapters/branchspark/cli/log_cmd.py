"""`branchspark log`: a branch's history, by default one line per commit of its first-parent history
(one per landed dbt run or merge); `--graph` and `--all` as in git; `--nodes` lists what each merge
brought in (a landed run's per-model commits)."""
from __future__ import annotations

import re

import click
from rich.markup import escape
from rich.text import Text

from ..core.catalog.commits import CommitInfo, sources_summary
from ..core.catalog.history import history_commits
from .graph import GraphDrawer, graph_order
from .output import console

_OPS_SHOWN = 100  # characters of the operations list printed after a message
# A run landing's message, as adapter/run_landing.py writes it: `dbt run <id>: landed 3 nodes from <run branch>: ...`
_LANDED = re.compile(r"^(dbt \S+ .*?: landed \d+ nodes? from \S+): .+$", re.S)


def landing_summary(message: str) -> str:
    """A run landing's message without its list of nodes; any other message as it is."""
    found = _LANDED.match(message or "")
    return found.group(1) if found else (message or "")


@click.command()
@click.argument("ref", default="main")
@click.option("--graph", is_flag=True, help="Every parent, with the commit graph drawn as `git log --graph` draws it.")
@click.option("--all", "all_branches", is_flag=True, help="The history of every branch, not only REF's.")
@click.option("--first-parent", is_flag=True,
              help="Only first parents, also with --graph or --all (the default without them).")
@click.option("--nodes", "-v", is_flag=True,
              help="Under each merge (a landed dbt run), the commits it brought in (the run's nodes).")
@click.option("--limit", "-n", type=int, default=None, help="At most this many commits.")
@click.pass_obj
def log(obj, ref, graph, all_branches, first_parent, nodes, limit):
    """Commits of REF (default main), newest first: its first-parent history unless --graph or --all."""
    lakehouse = obj.lakehouse
    store = lakehouse.store
    branches = lakehouse.list_branches()
    heads = [b.head for b in branches] if all_branches else [lakehouse.resolve(ref).id]
    follow_first = first_parent or not (graph or all_branches)
    commits = history_commits(store, heads, follow_first)
    ids = {c.id for c in commits}

    def parents_of(commit: CommitInfo) -> tuple[str, ...]:
        wanted = commit.parents[:1] if follow_first else commit.parents
        return tuple(p for p in wanted if p in ids)

    if graph:
        commits = graph_order(commits, parents_of)
    if limit is not None:
        commits = commits[:max(limit, 0)]
    names: dict[str, list[str]] = {}
    for info in branches:
        names.setdefault(info.head, []).append(info.name)
    drawer = GraphDrawer() if graph else None
    for commit in commits:
        lines = drawer.draw(commit.id, parents_of(commit)) if drawer else [""]
        # the graph as plain text: its backslashes are not markup
        console.print(Text(lines[0]) + Text.from_markup(_describe(store, commit, names, full=nodes)),
                      highlight=False)
        for line in lines[1:]:
            console.print(Text(line), highlight=False)
        if nodes and commit.sources:  # what the run read of Spark's catalogs (docs/sources.md)
            console.print(Text(f"    sources: {sources_summary(commit.sources)}"), highlight=False)
        if nodes and follow_first and len(commit.parents) > 1:
            lane = "| " if drawer and commit.parents[0] in ids else ""  # a first-parent graph goes on below
            for merged in _merged_in(store, commit):
                console.print(f"{lane}    [cyan]{merged.short_id}[/cyan] {escape(merged.message or '')}",
                              highlight=False)


def _merged_in(store, merge: CommitInfo) -> list[CommitInfo]:
    """What a merge brought in: commits of its second parent's first-parent history that its first parent
    lacks (for a landed dbt run, one commit per node), newest first."""
    behind = {c.id for c in store.ancestors(merge.parents[0])}
    brought = []
    for commit in store.first_parents(merge.parents[1]):
        if commit.id in behind:
            break
        brought.append(commit)
    return brought


def _describe(store, commit: CommitInfo, names: dict[str, list[str]], full: bool) -> str:
    """`<id> (branches) <time> <message> [operations]`, as Rich markup."""
    branches = f" [yellow]({escape(', '.join(names[commit.id]))})[/yellow]" if commit.id in names else ""
    message = commit.message if full else landing_summary(commit.message)
    ops = ", ".join(sorted({f"{o.op} {o.object_name}" for o in store.operations(commit.id)}))
    if len(ops) > _OPS_SHOWN:
        ops = ops[:_OPS_SHOWN - 1] + "…"
    return (f"[cyan]{commit.short_id}[/cyan]{branches} {commit.ts:%Y-%m-%d %H:%M:%S} {escape(message or '')}"
            + (f" [dim]{escape('[' + ops + ']')}[/dim]" if ops else ""))
