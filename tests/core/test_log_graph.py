"""`branchspark log`: the graph drawn as git draws it, first-parent by default, --all, --nodes (issue 24)."""
import random
import re
from types import SimpleNamespace

from click.testing import CliRunner

from dbt.adapters.branchspark.cli.graph import GraphDrawer, graph_order
from dbt.adapters.branchspark.cli.main import cli
from dbt.adapters.branchspark.cli.log_cmd import landing_summary
from dbt.adapters.branchspark.adapter.run_landing import land_unmoved
from tests.core.git_history import git_log_graph

# a commit line of `branchspark log`: graph, short id, (branches), time, message, [operations]
COMMIT_LINE = re.compile(r"^(?P<graph>[ |/\\_*]*?)(?P<id>[0-9a-f]{12})(?: \([^)]*\))? "
                         r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?P<message>.*?)(?: \[[^\]]*\])?$")


def drawn(commits, parents_of) -> list[str]:
    """GraphDrawer's lines for `commits` (newest first) as `git log --graph --format=%s` prints them."""
    drawer, lines = GraphDrawer(), []
    for commit in graph_order(commits, parents_of):
        graph = drawer.draw(commit.id, parents_of(commit))
        lines += [graph[0] + commit.message, *graph[1:]]
    return [line.rstrip() for line in lines]


def random_history(rng: random.Random, size: int):
    """Commits (key, message, parents), oldest first: a root, then commits on a recent commit, some merges."""
    commits = [("c0", "c0", [])]
    for index in range(1, size):
        keys = [key for key, _, _ in commits]
        parents = rng.sample(keys, 2) if rng.random() < 0.3 and len(keys) > 2 else [rng.choice(keys[-6:])]
        commits.append((f"c{index}", f"c{index}", parents))
    return commits


def test_the_graph_is_the_one_git_draws_for_random_histories():
    rng = random.Random(24)
    for _ in range(60):
        commits = random_history(rng, rng.randint(3, 24))
        with_children = {p for _, _, parents in commits for p in parents}
        tips = {f"b{i}": key for i, (key, _, _) in enumerate(commits) if key not in with_children}
        ours = [SimpleNamespace(id=key, message=message, parents=tuple(parents))
                for key, message, parents in reversed(commits)]
        assert drawn(ours, lambda c: c.parents) == git_log_graph(commits, tips, "--all"), commits


def log_lines(warehouse, *args) -> list[str]:
    result = CliRunner().invoke(cli, ["--warehouse", warehouse, "log", *args], catch_exceptions=False,
                                env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def as_git(lines: list[str]) -> list[str]:
    """Our log lines as `git log --graph --format=%s` shows them: graph and message."""
    out = []
    for line in lines:
        found = COMMIT_LINE.match(line)
        out.append((found["graph"] + found["message"]) if found else line.rstrip())
    return out


def build_history(lh):
    """main and dev fork, feat forks from dev and merges back, a dbt run lands on main, dev merges into main.
    Returns the history as (key, message, parents) oldest first, keyed by commit id, and the branches."""
    main = lh.branch("main")
    main.create_database("shop", message="create shop")
    lh.create_branch("dev")                                   # fork 1
    lh.branch("dev").create_database("d1", message="dev: d1")
    lh.create_branch("feat", "dev")                           # fork 2
    lh.branch("feat").create_database("f1", message="feat: f1")
    lh.branch("dev").create_database("d2", message="dev: d2")
    main.create_database("m1", message="main: m1")
    lh.branch("feat").create_database("f2", message="feat: f2")
    lh.merge("feat", "dev", message="merge feat into dev")   # merge 1
    # a dbt run on main: its run branch, one commit per node, landed as one commit with two parents
    base = lh.get_branch("main").head
    lh.create_branch("dbt/main/run-1", "main")
    run = lh.branch("dbt/main/run-1")
    run.create_database("n1", message="dbt run 1: model.shop.n1")
    run.create_database("n2", message="dbt run 1: model.shop.n2")
    land_unmoved(lh, "main", base, "dbt/main/run-1", lh.get_branch("dbt/main/run-1").head, base,
                 "dbt run 1: landed 2 nodes from dbt/main/run-1: model.shop.n1, model.shop.n2", "test")
    lh.drop_branch("dbt/main/run-1")
    lh.branch("dev").create_database("d3", message="dev: d3")
    lh.merge("dev", "main", message="merge dev into main")   # merge 2
    lh.branch("feat").create_database("f3", message="feat: f3")  # on feat only
    commits = sorted(lh.store.ancestors(lh.get_branch("feat").head), key=lambda c: c.seq)
    commits += [c for c in sorted(lh.store.ancestors(lh.get_branch("main").head), key=lambda c: c.seq)
                if c.id not in {x.id for x in commits}]
    commits.sort(key=lambda c: c.seq)
    # a landing's line leaves out its node list (the nodes are on its second parent's lines)
    history = [(c.id, landing_summary(c.message), list(c.parents)) for c in commits]
    branches = {b.name: b.head for b in lh.list_branches()}
    return history, branches


def test_log_graph_matches_git_on_forks_merges_and_a_run_landing(lh, spark, warehouse):
    history, branches = build_history(lh)
    ours = as_git(log_lines(warehouse, "main", "--graph"))
    git = git_log_graph(history, branches, "main")
    assert ours == git
    assert any("|\\" in line for line in ours) and any("|/" in line for line in ours)  # forks and merges drawn
    # --all: feat's commit that main lacks too, as `git log --graph --all`
    assert as_git(log_lines(warehouse, "--all", "--graph")) == git_log_graph(history, branches, "--all")


def test_log_is_first_parent_by_default_with_nodes_on_request(lh, spark, warehouse):
    history, _ = build_history(lh)
    lines = log_lines(warehouse)
    first_parents = [c for c in lh.store.first_parents(lh.get_branch("main").head)]
    assert len(lines) == len(first_parents)  # one line per commit of main's own history
    messages = [COMMIT_LINE.match(line)["message"] for line in lines]
    assert messages[:3] == ["merge dev into main", "dbt run 1: landed 2 nodes from dbt/main/run-1", "main: m1"]
    assert not any("feat" in m or "model.shop.n1" in m for m in messages)  # not main's first parents
    verbose = log_lines(warehouse, "main", "--nodes")
    landing = verbose.index(next(line for line in verbose if "landed 2 nodes" in line))
    assert "model.shop.n1, model.shop.n2" in verbose[landing]
    assert [line.split()[-1] for line in verbose[landing + 1:landing + 3]] == ["model.shop.n2", "model.shop.n1"]
    assert all(line.startswith("    ") for line in verbose[landing + 1:landing + 3])
    # --all lists every branch's commits by time, newest first: feat's last commit is the newest
    everything = log_lines(warehouse, "--all")
    assert COMMIT_LINE.match(everything[0])["message"] == "feat: f3" and len(everything) == len(history)
    assert len(log_lines(warehouse, "main", "-n", "2")) == 2
