"""net mode on a keyless table: identical rows net out (SPEC 4), exact row by row."""
from collections import Counter

from click.testing import CliRunner

from dbt.adapters.branchspark.core.changes import table_changes
from dbt.adapters.branchspark.cli.main import cli
from tests.core.changes_replay import multiset, replay


def rows(spark, data):
    return spark.createDataFrame(data, "id bigint, amount double")


def changes_of(frame):
    return Counter((r["_change_type"], r["id"], r["amount"]) for r in frame.collect())


def test_net_mode_nets_identical_rows_of_a_keyless_table(lh, spark, orders):
    """orders (keyless) starts with ids 1..5; a rebuild keeps 4 rows and changes 1, duplicates come and go."""
    start = lh.get_branch("main").head
    b = lh.branch("main")
    b.overwrite(orders, rows(spark, [(1, 10.0), (2, 20.0), (3, 30.0), (4, 40.0), (5, 55.0)]))  # only id 5 changed
    b.insert(orders, rows(spark, [(7, 70.0), (7, 70.0), (8, 80.0)]))   # two identical rows and one more
    b.delete(orders, "id = 8")                                            # inserted, then deleted: nothing
    b.delete(orders, "id = 1")                                            # a row of `from` deleted
    b.insert(orders, rows(spark, [(2, 20.0)]))                           # a second copy of a row of `from`
    b.delete(orders, "id = 7")                                            # both copies of 7 gone again

    frame = table_changes(lh, orders, start, "main", net=True)
    assert changes_of(frame) == Counter({("delete", 1, 10.0): 1, ("delete", 5, 50.0): 1, ("insert", 5, 55.0): 1,
                                         ("insert", 2, 20.0): 1})
    assert frame.columns == ["id", "amount", "_change_type", "_commit_id", "_commit_ts", "_commit_seq"]
    order = [(r["_commit_seq"], r["_change_type"] != "delete") for r in frame.collect()]
    assert order == sorted(order)  # ordered as the full feed: by commit, deletes first within one
    width = 2
    assert replay(multiset(lh.read(orders, at=start)), frame.collect(), width) == multiset(lh.read(orders))
    # the full feed has many more changes, and replays to the same rows
    full = table_changes(lh, orders, start, "main")
    assert sum(changes_of(full).values()) > sum(changes_of(frame).values())
    assert replay(multiset(lh.read(orders, at=start)), full.collect(), width) == multiset(lh.read(orders))


def test_net_mode_keeps_the_surplus_of_repeated_identical_rows(lh, spark, orders):
    """Three copies of a row inserted over two commits and one deleted: two inserts remain, the latest."""
    start = lh.get_branch("main").head
    b = lh.branch("main")
    b.insert(orders, rows(spark, [(9, 90.0), (9, 90.0)]))
    b.insert(orders, rows(spark, [(9, 90.0)]))
    b.delete(orders, "id = 9")
    b.insert(orders, rows(spark, [(9, 90.0), (9, 90.0)]))
    frame = table_changes(lh, orders, start, "main", net=True)
    got = frame.collect()
    assert [(r["_change_type"], r["id"]) for r in got] == [("insert", 9), ("insert", 9)]
    assert {r["_commit_id"] for r in got} == {lh.get_branch("main").head}  # the last change's commit
    assert replay(multiset(lh.read(orders, at=start)), got, 2) == multiset(lh.read(orders))


def test_cli_changes_net_on_a_keyless_table(lh, spark, orders, warehouse):
    start = lh.get_branch("main").head
    lh.branch("main").overwrite(orders, rows(spark, [(1, 10.0), (2, 21.0), (3, 30.0), (4, 40.0), (5, 50.0)]))
    result = CliRunner().invoke(cli, ["--warehouse", warehouse, "changes", orders, "--from", start, "--net"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "(net): 1 deleted, 1 inserted" in result.output
