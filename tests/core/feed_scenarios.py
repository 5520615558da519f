"""Merges whose change feed issue 67 found wrong, and the check SPEC 4 makes of each: the feed across the merge
commit, in plain and in net mode, is the multiset difference of the two versions' rows.

Shared by the in-process tests and by tests/core/feed_session_process.py, which runs them in a session of
another kind (a user's own SparkSession, branchspark's, one without deletion vectors) on another master:
what decides a row's identity must not be how Spark split or ordered the work.
"""
from __future__ import annotations

from collections import Counter

from dbt.adapters.branchspark.core.changes import CHANGE_TYPE, DELETE, table_changes

TABLE = "db.t"
ID_NAME_N = "id int, name string, n int"
COLUMNS = ("id", "name", "n")
BASE = [(0, "p", 0), (1, "q", 1), (2, "r", 2)]
SECOND = [(3, "p", 0), (4, "q", 2), (4, "r", 2)]


def frame(spark, rows, split: int = 0):
    """`rows` as a DataFrame, in `split` partitions (files of a write) when given, else as the session splits
    local data (one partition per core)."""
    df = spark.createDataFrame(rows, ID_NAME_N)
    return df.repartition(split) if split else df


def _base(lh, spark, split, primary_key=None):
    with lh.transaction("main", message="base") as tx:
        tx.create_database("db")
        tx.create_table_as(TABLE, frame(spark, BASE, split), primary_key=primary_key)
    # a second segment
    lh.branch("main").insert(TABLE, frame(spark, SECOND if primary_key is None
                                          else [(3, "p", 0), (4, "q", 2), (5, "r", 2)], split))


def _update_chain(branch):
    """Each update rewrites images the previous one wrote (issue 55's second reproduction)."""
    branch.update(TABLE, "n < 2", {"name": "concat(name, 'z')"})
    branch.update(TABLE, "name like '%z'", {"name": "concat(name, '!')", "n": "n + 1"})
    branch.update(TABLE, "n >= 1", {"name": "concat(name, '!')", "n": "n + 2"})


def chain_on_src(lh, spark, split, *, keyed=False, dest_compacts=False, src_compacts=False):
    _base(lh, spark, split, ["id"] if keyed else None)
    lh.create_branch("dev")
    dev = lh.branch("dev")
    _update_chain(dev)
    if src_compacts:
        dev.compact(TABLE)
        dev.update(TABLE, "id = 1", {"n": "n + 10"})
    if dest_compacts:
        lh.branch("main").compact(TABLE)
    return "abort"


def settled_after_an_overwrite(lh, spark, split, *, on_conflict):
    """src rebuilt the table and then updated it; dest updated rows of the base segment src's update also
    touched (A3), so `on_conflict` settles the contested rows (SPEC 3.6)."""
    _base(lh, spark, split)
    lh.create_branch("dev")
    dev = lh.branch("dev")
    dev.update(TABLE, "id in (0, 1)", {"n": "n + 1"})
    dev.overwrite(TABLE, frame(spark, BASE + [(5, "s", 1), (5, "s", 1)], split))
    dev.update(TABLE, "n >= 1", {"name": "concat(name, '+')"})
    main = lh.branch("main")
    main.update(TABLE, "id in (0, 3)", {"n": "n + 100"})
    main.compact(TABLE)
    return on_conflict


# name -> (setup, whether `make test` runs it); every one runs in `make test-long`
SCENARIOS = {
    "chain": (lambda *a: chain_on_src(*a), True),
    "chain, dest compacted": (lambda *a: chain_on_src(*a, dest_compacts=True), True),
    "chain, src compacted": (lambda *a: chain_on_src(*a, src_compacts=True), False),
    "chain, keyed": (lambda *a: chain_on_src(*a, keyed=True, dest_compacts=True), False),
    "overwrite, ours": (lambda *a: settled_after_an_overwrite(*a, on_conflict="ours"), True),
    "overwrite, theirs": (lambda *a: settled_after_an_overwrite(*a, on_conflict="theirs"), False),
}
# issue 55's second reproduction, word for word, as issue 67 ran it
REPRODUCTION = ("chain", "chain, dest compacted")


def _rows(frame) -> Counter:
    return Counter(tuple(r) for r in frame.select(*COLUMNS).collect())


def _feed(lh, from_, to, net: bool) -> tuple[Counter, Counter]:
    feed = table_changes(lh, TABLE, from_, to, net=net).select(CHANGE_TYPE, *COLUMNS).collect()
    deleted = Counter(tuple(r[c] for c in COLUMNS) for r in feed if r[CHANGE_TYPE] == DELETE)
    inserted = Counter(tuple(r[c] for c in COLUMNS) for r in feed if r[CHANGE_TYPE] != DELETE)
    return deleted, inserted


def feed_problems(lh, spark, scenario: str, split: int = 0) -> list[str]:
    """Run `scenario` on `lh` (its frames in `split` partitions, see `frame`), merge dev into main, and say how
    the feed across the merge differs from the difference of main's two versions (nothing: it is exact)."""
    setup, _ = SCENARIOS[scenario]
    on_conflict = setup(lh, spark, split)
    pre = lh.log("main", limit=1)[0].id
    lh.merge("dev", "main", on_conflict=on_conflict)
    post = lh.log("main", limit=1)[0].id
    before, after = _rows(lh.snapshot(pre).read(TABLE)), _rows(lh.snapshot(post).read(TABLE))
    removed, added = before - after, after - before
    problems = []
    for net in (False, True):
        deleted, inserted = _feed(lh, pre, post, net)
        # one commit: plain and net mode both list exactly the difference (no row is deleted and inserted
        # with identical values at one commit, SPEC 4)
        if (deleted, inserted) != (removed, added):
            problems.append(
                f"{scenario}, {'net' if net else 'plain'} mode: deletes not removed {dict(deleted - removed)}, "
                f"inserts not added {dict(inserted - added)}, removed rows missing {dict(removed - deleted)}, "
                f"added rows missing {dict(added - inserted)}")
    return problems
