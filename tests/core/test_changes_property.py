"""Property: replaying the changes between any two versions on the table at `from` gives the table at `to`.

Random short histories of inserts, deletes, updates, upserts, overwrites, compactions and
restores on a tiny table (with and without a primary key), and merges into it of a branch made
from an earlier version that did a few operations of its own (conflicts settled with `theirs`);
rows compare as multisets, so for a keyless table only the multiset of images matters, not which
duplicate a delete removes.
"""
import itertools
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbt.adapters.branchspark.core.changes import table_changes
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from tests.core.changes_replay import multiset, replay
from tests.depth import sized

TABLE = "shop.t"
SCHEMA = "id bigint, amount double"

operations = st.one_of(
    st.tuples(st.just("insert"), st.lists(st.integers(0, 3), min_size=1, max_size=3)),
    st.tuples(st.just("delete"), st.integers(0, 3)),
    st.tuples(st.just("update"), st.integers(0, 3)),
    st.tuples(st.just("upsert"), st.lists(st.integers(0, 4), min_size=1, max_size=2, unique=True)),
    st.tuples(st.just("overwrite"), st.lists(st.integers(0, 4), min_size=0, max_size=2, unique=True)),
    st.tuples(st.just("compact"), st.none()),
    st.tuples(st.just("restore"), st.integers(0, 10)),
)
side_operations = st.one_of(
    st.tuples(st.just("insert"), st.lists(st.integers(0, 3), min_size=1, max_size=2)),
    st.tuples(st.just("delete"), st.integers(0, 3)),
    st.tuples(st.just("update"), st.integers(0, 3)),
    st.tuples(st.just("compact"), st.none()),
)
operations = st.one_of(operations, st.tuples(st.just("merge"), st.tuples(st.integers(0, 10),
                                                                        st.lists(side_operations, min_size=1,
                                                                                 max_size=2))))


def apply(lh, spark, keyed: bool, operation, versions: list[str], fresh: itertools.count,
          branch: str = "main") -> None:
    kind, arg = operation
    b = lh.branch(branch)
    if kind == "insert":
        ids = [next(fresh) for _ in arg] if keyed else arg  # keyless tables may hold duplicates
        b.insert(TABLE, spark.createDataFrame([(i, float(i)) for i in ids], SCHEMA))
    elif kind == "delete":
        b.delete(TABLE, f"id % 4 = {arg}")
    elif kind == "update":
        b.update(TABLE, f"id % 4 = {arg}", {"amount": "amount + 1"})
    elif kind == "upsert":
        rows = spark.createDataFrame([(i, 100.0 + i) for i in arg], SCHEMA)
        b.upsert(TABLE, rows, key=["id"])
    elif kind == "overwrite":
        b.overwrite(TABLE, spark.createDataFrame([(i, -1.0) for i in arg], SCHEMA))
    elif kind == "compact":
        b.compact(TABLE)
    elif kind == "restore":
        lh.restore_table("main", TABLE, versions[arg % len(versions)])
    elif kind == "merge":
        start, side_history = arg
        side = f"side{len(versions)}"
        lh.create_branch(side, versions[start % len(versions)])
        for side_operation in side_history:
            apply(lh, spark, keyed, side_operation, versions, fresh, branch=side)
        lh.merge(side, "main", on_conflict="theirs")


# random histories, 24 in `make test-long` only (2026-12-03, the suite's time: 20 s of a worker): in `make test` the
# model test replays every commit's changes and the feed across each merge against the model
@pytest.mark.deep
@pytest.mark.long_only
@settings(max_examples=sized(6, 24), deadline=None, suppress_health_check=list(HealthCheck))
@given(keyed=st.booleans(), history=st.lists(operations, min_size=2, max_size=5), data=st.data())
def test_replaying_changes_between_any_two_versions_gives_the_table_at_to(spark, keyed, history, data):
    warehouse = tempfile.mkdtemp(prefix="changes-property-")
    lh = Lakehouse(spark, warehouse)
    try:
        with lh.transaction("main") as tx:
            tx.create_database("shop")
            seed = (0, 1, 2) if keyed else (0, 1, 1, 2)
            tx.create_table_as(TABLE, spark.createDataFrame([(i, float(i)) for i in seed], SCHEMA),
                               primary_key=["id"] if keyed else None)
        versions = [lh.get_branch("main").head]
        fresh = itertools.count(10)
        for operation in history:
            apply(lh, spark, keyed, operation, versions, fresh)
            versions.append(lh.get_branch("main").head)
        pairs = {(0, len(versions) - 1)}
        first = data.draw(st.integers(0, len(versions) - 1), label="from")
        pairs.add((first, data.draw(st.integers(first, len(versions) - 1), label="to")))
        for i, j in sorted(pairs):
            changes = table_changes(lh, TABLE, versions[i], versions[j]).collect()
            at_from, at_to = multiset(lh.read(TABLE, at=versions[i])), multiset(lh.read(TABLE, at=versions[j]))
            assert replay(at_from, changes, 2) == at_to, (i, j, history)
            if keyed:
                net = table_changes(lh, TABLE, versions[i], versions[j], net=True).collect()
                assert replay(at_from, net, 2) == at_to, ("net", i, j, history)
    finally:
        lh.store.dispose()
        shutil.rmtree(warehouse, ignore_errors=True)
