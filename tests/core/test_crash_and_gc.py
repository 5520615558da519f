"""A writer killed between writing its files and committing leaves every branch as it was;
`gc` removes the orphan files and never a referenced one."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.conftest import rows

HERE = Path(__file__).parent


def parquet_files(warehouse):
    return sorted(str(p) for p in Path(warehouse).rglob("*.parquet"))


def run_writer(warehouse, branch, table, first_id, fault=None):
    env = dict(os.environ, PYTHONPATH=str(HERE.parent.parent))
    env.pop("BRANCHSPARK_FAULT", None)
    if fault:
        env["BRANCHSPARK_FAULT"] = fault
    return subprocess.run([sys.executable, str(HERE / "writer_process.py"), warehouse, branch, table, str(first_id)],
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("fault", ["write.after_files", "commit.before_head_swap"])
def test_writer_killed_before_commit_changes_no_branch_and_gc_removes_its_files(lh, spark, orders, warehouse, fault):
    lh.create_branch("dev")
    heads = {b.name: b.head for b in lh.list_branches()}
    data = {name: rows(lh.read(orders, at=name)) for name in heads}
    files_before = parquet_files(warehouse)

    result = run_writer(warehouse, "dev", orders, 1000, fault=fault)
    assert result.returncode == -9, result.stderr[-2000:]  # SIGKILL, as a crash
    assert "committed" not in result.stdout

    orphans = sorted(set(parquet_files(warehouse)) - set(files_before))
    assert orphans, "the writer should have left its data files behind"
    assert {b.name: b.head for b in lh.list_branches()} == heads
    for name in heads:
        assert rows(lh.read(orders, at=name)) == data[name]

    assert lh.gc(grace_seconds=3600).deleted_files == []  # young files may belong to a writer in flight
    report = lh.gc(grace_seconds=0)
    deleted = {str(Path(warehouse) / p) for p in report.deleted_files}
    assert set(orphans) <= deleted
    assert parquet_files(warehouse) == files_before
    for name in heads:
        assert rows(lh.read(orders, at=name)) == data[name]

    # Rerunning the work completes it.
    assert run_writer(warehouse, "dev", orders, 1000).returncode == 0
    assert lh.read(orders, at="dev").count() == 105


def test_gc_keeps_files_of_every_reachable_commit(lh, spark, orders, warehouse):
    b = lh.branch("main")
    old = lh.get_branch("main").head
    b.overwrite(orders, spark.createDataFrame([(9, 9.0)], "id bigint, amount double"))
    lh.gc(grace_seconds=0)
    assert lh.read(orders, at=old).count() == 5  # an older commit still reads its files
    lh.create_branch("keep", old)
    lh.restore_branch("main", old)
    lh.branch("main").overwrite(orders, spark.createDataFrame([(8, 8.0)], "id bigint, amount double"))
    lh.drop_branch("keep")
    report = lh.gc(grace_seconds=0)
    assert report.referenced_segments >= 3
    assert lh.read(orders, at=old).count() == 5
    assert rows(lh.read(orders)) == [(8, 8.0)]
