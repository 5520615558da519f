"""Isolation between branches, time travel, restore, and interleaved writes from one base."""
import time

import pytest

from dbt.adapters.branchspark.core import errors
from sorted_rows import rows


def test_write_on_dev_is_invisible_on_main_and_on_older_commits(lh, spark, orders):
    old = lh.get_branch("main").head
    lh.create_branch("dev")
    dev = lh.branch("dev")
    dev.insert(orders, spark.createDataFrame([(6, 60.0)], "id bigint, amount double"))
    dev.delete(orders, "id = 1")
    dev.add_column(orders, "note", "string")
    assert rows(lh.read(orders, at="dev"), "id") == [(2,), (3,), (4,), (5,), (6,)]
    assert rows(lh.read(orders, at="main"), "id") == [(i,) for i in range(1, 6)]
    assert lh.read(orders, at="main").columns == ["id", "amount"]
    assert lh.read(orders, at=old).columns == ["id", "amount"] and lh.read(orders, at=old).count() == 5
    assert lh.get_branch("main").head == old


def test_time_travel_by_commit_and_by_time(lh, spark, orders):
    b = lh.branch("main")
    c1 = lh.get_branch("main").head
    time.sleep(0.01)
    b.delete(orders, "id = 1")
    c2 = lh.get_branch("main").head
    t2 = lh.store.get_commit(c2).ts
    b.add_column(orders, "note", "string", default="'n'")
    b.update(orders, "id = 2", {"note": "'x'"})
    assert lh.read(orders, at=c1).count() == 5
    assert lh.read(orders, at=c2).count() == 4 and lh.read(orders, at=c2).columns == ["id", "amount"]
    assert lh.read(orders, at="main", as_of=t2).count() == 4
    assert lh.read(orders, at=f"main@{t2.isoformat()}").columns == ["id", "amount"]
    assert rows(lh.read(orders), "id", "note")[:2] == [(2, "x"), (3, "n")]
    with pytest.raises(errors.CommitNotFound):
        lh.read(orders, at="main", as_of="1999-01-01T00:00:00")


def test_restore_table_is_one_new_commit(lh, spark, orders):
    b = lh.branch("main")
    good = lh.get_branch("main").head
    b.delete(orders, "id > 2")
    b.add_column(orders, "note", "string")
    info = lh.restore_table("main", orders, good)
    assert info.parents == (lh.log("main", 2)[1].id,)
    assert rows(lh.read(orders)) == rows(lh.read(orders, at=good))
    assert lh.read(orders).columns == ["id", "amount"]
    assert {o.op for o in info.operations or lh.log("main", 1)[0].operations} >= {"overwrite"}


def test_restore_a_dropped_table_and_a_whole_branch(lh, spark, orders):
    good = lh.get_branch("main").head
    b = lh.branch("main")
    b.drop_table(orders)
    lh.restore_table("main", orders, good)
    assert lh.read(orders).count() == 5
    b.create_database("other")
    b.delete(orders, "id = 1")
    lh.restore_branch("main", good)
    snap = lh.snapshot()
    assert [d.name for d in snap.databases()] == ["shop"]
    assert rows(snap.read(orders)) == rows(lh.read(orders, at=good))
    # init, setup, drop, restore table, create database, delete, restore branch: history is kept
    assert [c.message.split(" ")[0] for c in lh.log("main")][:2] == ["restore", "delete"]
    assert len(lh.log("main")) == 7


def test_interleaved_writes_on_two_branches_from_one_base(lh, spark, orders):
    lh.create_branch("a")
    lh.create_branch("b")
    a, b = lh.branch("a"), lh.branch("b")
    a.insert(orders, spark.createDataFrame([(6, 60.0)], "id bigint, amount double"))
    b.delete(orders, "id <= 2")
    a.add_column(orders, "a_note", "string", default="'a'")
    b.update(orders, "id = 5", {"amount": "5.5"})
    a.delete(orders, "id = 3")
    b.rename_column(orders, "amount", "b_amount")
    a.update(orders, "id = 6", {"a_note": "'six'"})
    b.insert(orders, spark.createDataFrame([(7, 7.0)], "id bigint, b_amount double"))
    sa, sb = lh.snapshot("a").table(orders), lh.snapshot("b").table(orders)
    assert [(c.name, c.type) for c in sa.columns] == [("id", "bigint"), ("amount", "double"), ("a_note", "string")]
    assert [(c.name, c.type) for c in sb.columns] == [("id", "bigint"), ("b_amount", "double")]
    assert rows(lh.read(orders, at="a")) == [(1, 10.0, "a"), (2, 20.0, "a"), (4, 40.0, "a"), (5, 50.0, "a"),
                                            (6, 60.0, "six")]
    assert rows(lh.read(orders, at="b")) == [(3, 30.0), (4, 40.0), (5, 5.5), (7, 7.0)]
    assert rows(lh.read(orders, at="main")) == [(i, float(i * 10)) for i in range(1, 6)]
