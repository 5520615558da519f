"""A writer whose branch head moved lands on the new head when what it read and wrote did not move (the
merge planner then combines the changes), runs again there when it is one operation, or fails in one line."""
import random

import pytest

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.catalog.retry import CommitRetry
from sorted_rows import rows


def _df(spark, *ids):
    return spark.createDataFrame([(i, float(i * 10)) for i in ids], "id bigint, amount double")


def test_a_non_conflicting_write_lands_on_the_moved_head_as_one_linear_commit(lh, spark, orders):
    slow = lh.transaction("main", message="slow writer")
    slow.insert(orders, _df(spark, 6))
    lh.branch("main").insert(orders, _df(spark, 7), message="fast writer")
    lh.branch("main").delete(orders, "id = 2", message="fast delete")
    fast_head = lh.get_branch("main").head
    landed = slow.commit()
    assert landed.parents == (fast_head,)  # linear: the hidden commit is not a parent
    assert landed.message == "slow writer"
    assert lh.get_branch("main").head == landed.id
    assert rows(lh.read(orders), "id") == [(1,), (3,), (4,), (5,), (6,), (7,)]
    assert [c.message for c in lh.log("main", limit=3)] == ["slow writer", "fast delete", "fast writer"]
    assert [b.name for b in lh.store.list_branches()] == ["main"]


def test_a_keyed_table_update_runs_again_on_the_moved_head_or_is_refused(lh, spark):
    """Serializable (SPEC 1): a transaction that read rows another writer changed is refused, whatever the keys;
    one update on its own runs again on the new head, so a clash on one key is applied in order."""
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.k", _df(spark, 1, 2, 3), primary_key=["id"])
    slow = lh.transaction("main", message="slow")
    slow.update("shop.k", "id = 1", {"amount": "-1"})
    lh.branch("main").update("shop.k", "id = 2", {"amount": "-2"})
    head = lh.get_branch("main").head
    with pytest.raises(errors.WriteConflict, match=r"changed what it read or wrote \(shop\.k\)"):
        slow.commit()
    assert lh.get_branch("main").head == head
    assert rows(lh.read("shop.k")) == [(1, 10.0), (2, -2.0), (3, 30.0)]

    def other_writer(point):
        if point == "write.before_commit" and lh.fault is other_writer:
            lh.fault = None
            lh.branch("main").update("shop.k", "id = 3", {"amount": "amount - 33"}, message="other")

    lh.fault = other_writer
    assert lh.branch("main").update("shop.k", "id = 3", {"amount": "amount * 2"}, message="mine") == 1
    assert rows(lh.read("shop.k")) == [(1, 10.0), (2, -2.0), (3, -6.0)]  # (30 - 33) * 2: in landing order
    assert [c.message for c in lh.log("main", limit=2)] == ["mine", "other"]


def test_a_delete_against_a_concurrent_insert_conflicts_as_in_a_merge(lh, spark, orders):
    slow = lh.transaction("main")
    slow.delete(orders, "id = 1")
    lh.branch("main").insert(orders, _df(spark, 7))
    with pytest.raises(errors.WriteConflict, match=r"changed what it read or wrote \(shop\.orders\)"):
        slow.commit()
    assert rows(lh.read(orders), "id") == [(1,), (2,), (3,), (4,), (5,), (7,)]


def test_a_write_against_a_dropped_table_conflicts(lh, spark, orders):
    slow = lh.transaction("main")
    slow.insert(orders, _df(spark, 6))
    lh.branch("main").drop_table(orders)
    with pytest.raises(errors.WriteConflict, match=r"changed what it read or wrote \(shop\.orders\)"):
        slow.commit()
    assert not lh.snapshot("main").has_table(orders)


def test_retry_is_bounded_by_attempts_and_time_with_jittered_growing_waits():
    now = [0.0]
    waits = []

    def sleep(seconds):
        waits.append(seconds)
        now[0] += seconds

    retry = CommitRetry(max_attempts=6, max_seconds=100, first_delay=0.01, max_delay=0.05,
                        clock=lambda: now[0], sleep=sleep, rng=random.Random(1))
    assert list(retry) == [1, 2, 3, 4, 5, 6] and retry.attempts == 6
    assert len(waits) == 5
    caps = [0.01, 0.02, 0.04, 0.05, 0.05]
    assert all(0 <= w <= cap for w, cap in zip(waits, caps))
    assert len(set(waits)) == 5  # jittered, not lockstep

    now[0], waits[:] = 0.0, []
    slow = CommitRetry(max_attempts=1000, max_seconds=1.0, first_delay=0.5, max_delay=0.5,
                       clock=lambda: now[0], sleep=sleep, rng=random.Random(2))
    attempts = list(slow)
    assert now[0] <= 1.0 and 2 <= len(attempts) < 1000
