"""Writers on one branch are serializable (SPEC 1): a write whose head moved while it ran runs again on the
new head, lands unchanged when nothing it read or wrote moved, or fails with one WriteConflict line; it is
never settled by comparing values. Another writer's commit is landed at the write's own `write.before_commit`
fault point, so the race is exact."""
import pytest

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.sql.branch_session import BranchSession, statement_transaction
from dbt.adapters.branchspark.core.sql.router import StatementRouter
from sorted_rows import rows


@pytest.fixture
def counter(lh, spark):
    """s.k(id, n) keyed on id, n = 0 for ids 1..3; s.other(id) keyless."""
    with lh.transaction("main", message="setup") as tx:
        tx.create_database("s")
        tx.create_table_as("s.k", spark.createDataFrame([(i, 0) for i in (1, 2, 3)], "id bigint, n bigint"),
                           primary_key=["id"])
        tx.create_table_as("s.other", spark.createDataFrame([(1,)], "id bigint"))
    return "s.k"


def n_of(lh, key=1):
    return lh.read("s.k").filter(f"id = {key}").first().n


def land_before_commit(lh, *writes):
    """At the next write's `write.before_commit`, commit `writes` (callables) first: its head has moved."""
    pending = list(writes)

    def fault(point):
        if point == "write.before_commit" and pending:
            write = pending.pop(0)
            write()

    lh.fault = fault


def increment(lh, key=1, message="increment"):
    return lh.branch("main").update("s.k", f"id = {key}", {"n": "n + 1"}, message=message)


def test_issue_20_a_transaction_whose_table_moved_is_refused_not_settled_by_values(lh, spark, counter):
    """The issue's in-process case: both increments reported success and n ended at 1."""
    slow = lh.transaction("main", message="slow increment")
    slow.update("s.k", "id = 1", {"n": "n + 1"})
    increment(lh, message="fast increment")
    head = lh.get_branch("main").head
    with pytest.raises(errors.WriteConflict) as raised:
        slow.commit()
    message = str(raised.value)
    assert "\n" not in message and "s.k" in message and "run the transaction again" in message
    assert lh.get_branch("main").head == head  # nothing written
    assert n_of(lh) == 1
    assert [b.name for b in lh.store.list_branches()] == ["main"]  # no hidden branch left


def test_a_single_update_whose_head_moved_runs_again_on_the_new_head(lh, spark, counter):
    land_before_commit(lh, lambda: increment(lh, message="the other writer"))
    assert increment(lh, message="mine") == 1
    assert n_of(lh) == 2
    log = lh.log("main", limit=3)
    assert [c.message for c in log[:2]] == ["mine", "the other writer"]
    assert all(len(c.parents) == 1 for c in log)
    assert [b.name for b in lh.store.list_branches()] == ["main"]


def test_a_delete_runs_again_and_sees_the_rows_now_there(lh, spark, counter):
    # The other writer lands an update making id 2 match; the delete, run again, deletes it too.
    land_before_commit(lh, lambda: lh.branch("main").update("s.k", "id = 2", {"n": "5"}))
    assert lh.branch("main").delete("s.k", "n = 0 or n = 5") == 3
    assert rows(lh.read("s.k")) == []


def test_a_sql_update_from_dbt_runs_again_on_the_new_head(lh, spark, counter):
    session = BranchSession(spark, lh, "main")
    router = StatementRouter(spark, session, lambda what: statement_transaction(session, None, what))
    land_before_commit(lh, lambda: increment(lh, message="the other writer"))
    router.execute("update s.k set n = n + 1 where id = 1")
    assert n_of(lh) == 2
    router.execute("update s.k set n = n + 1 where id = 1")
    assert n_of(lh) == 3


def test_two_inserts_of_one_key_with_equal_values_are_not_agreement(lh, spark, counter):
    # Run one after the other, the second insert finds the key taken; so it must when they race.
    row = spark.createDataFrame([(4, 0)], "id bigint, n bigint")
    land_before_commit(lh, lambda: lh.branch("main").insert("s.k", row, message="first"))
    with pytest.raises(errors.InvalidArgument, match="already holds"):
        lh.branch("main").insert("s.k", row, message="second")
    assert rows(lh.read("s.k"), "id") == [(1,), (2,), (3,), (4,)]
    assert lh.log("main", limit=1)[0].message == "first"


def test_a_transaction_lands_on_a_moved_head_when_what_it_read_and_wrote_did_not_move(lh, spark, counter):
    slow = lh.transaction("main", message="slow")
    slow.update("s.k", "id = 1", {"n": "n + 1"})
    assert slow.read("s.k").count() == 3
    lh.branch("main").insert("s.other", spark.createDataFrame([(2,)], "id bigint"))
    landed = slow.commit()
    assert landed.parents == (lh.log("main", limit=2)[1].id,)
    assert n_of(lh) == 1 and lh.read("s.other").count() == 2


def test_blind_appends_to_one_keyless_table_all_land(lh, spark, counter):
    slow = lh.transaction("main", message="slow append")
    slow.insert("s.other", spark.createDataFrame([(2,)], "id bigint"))
    lh.branch("main").insert("s.other", spark.createDataFrame([(3,)], "id bigint"))
    slow.commit()
    assert rows(lh.read("s.other")) == [(1,), (2,), (3,)]


def test_an_insert_whose_rows_were_read_from_a_table_that_moved_is_refused(lh, spark, counter):
    # Its input rows are a DataFrame over s.k's old files: running it again would write stale rows.
    copied = lh.read("s.k").selectExpr("id + 10 as id")
    land_before_commit(lh, lambda: increment(lh))
    with pytest.raises(errors.WriteConflict, match=r"read from tables that changed meanwhile \(s\.k\)"):
        lh.branch("main").insert("s.other", copied)
    assert rows(lh.read("s.other")) == [(1,)]


def test_a_rerun_that_no_longer_applies_fails_with_its_own_error(lh, spark, counter):
    land_before_commit(lh, lambda: lh.branch("main").drop_table("s.k"))
    with pytest.raises(errors.TableNotFound):
        increment(lh)
    assert not lh.snapshot("main").has_table("s.k")
