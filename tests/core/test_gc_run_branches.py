"""`gc` can expire the run branches failed dbt runs keep (docs/runs.md), and then their files."""
from pathlib import Path

from sorted_rows import rows


def test_gc_drops_expired_run_branches_then_their_files(lh, spark, orders, warehouse):
    run = "dbt/main/run-0f3c"
    lh.create_branch(run, run_branch=True)  # as a dbt invocation records its run branch
    lh.create_branch("dev")
    lh.branch(run).insert(orders, spark.createDataFrame([(100, 1.0)], "id bigint, amount double"))
    run_files = {p for p in Path(warehouse).rglob("*.parquet")} - {p for p in Path(warehouse).rglob("*.parquet")
                                                                     if "tombstones" in str(p)}
    main_rows = rows(lh.read(orders, at="main"))

    # not old enough: kept, and so are its files
    report = lh.gc(grace_seconds=0, drop_run_branches_after=3600)
    assert report.dropped_branches == [] and report.deleted_files == []
    assert lh.branch_exists(run)

    # a dry run only says what it would drop
    assert lh.gc(grace_seconds=0, drop_run_branches_after=0, dry_run=True).dropped_branches == [run]
    assert lh.branch_exists(run)

    report = lh.gc(grace_seconds=0, drop_run_branches_after=0)
    assert report.dropped_branches == [run]
    assert not lh.branch_exists(run) and lh.branch_exists("dev")  # only run branches expire
    assert report.deleted_files  # the run's segment, reachable from no branch any more
    assert {p for p in Path(warehouse).rglob("*.parquet")} < run_files
    assert rows(lh.read(orders, at="main")) == main_rows
