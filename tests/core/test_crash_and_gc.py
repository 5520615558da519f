"""A process killed (SIGKILL) at any fault-injection point of a write, a replayed write, a merge or `gc`
leaves every branch at a consistent commit, every referenced file present and the catalog readable;
rerunning the work completes it. `gc` removes the orphans and never a referenced file. The same holds when
another writer keeps committing on the branch while the process runs and dies."""
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from sorted_rows import rows
from tests.depth import sized

HERE = Path(__file__).parent


def parquet_files(warehouse):
    return sorted(str(p) for p in walk_files(warehouse) if p.suffix == ".parquet")


def walk_files(root):
    """Every file under `root`; a directory deleted while walking is skipped (os.walk ignores it)."""
    return [Path(folder) / name for folder, _, names in os.walk(root) for name in names]


def writer_command(warehouse, catalog_url, *args, fault=None):
    """writer_process.py's command line and environment (dying at `fault`)."""
    env = dict(os.environ, PYTHONPATH=str(HERE.parent.parent))
    env.pop("BRANCHSPARK_FAULT", None)
    if fault:
        env["BRANCHSPARK_FAULT"] = fault
    command = [sys.executable, str(HERE / "writer_process.py"), warehouse, *args]
    if catalog_url:
        command += ["--catalog", catalog_url]
    return command, env


def run_process(warehouse, catalog_url, *args, fault=None):
    command, env = writer_command(warehouse, catalog_url, *args, fault=fault)
    env[WRITER_MARK] = marker = uuid.uuid4().hex
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    wait_for_leftovers(marker)
    wait_until_settled(warehouse)
    return result


WRITER_MARK = "BRANCHSPARK_TEST_WRITER"


def wait_for_leftovers(marker: str, timeout: float = 60) -> None:
    """A writer killed by SIGKILL leaves its Spark JVM behind for a moment: it sees the writer gone, then its
    shutdown aborts the jobs in flight, deleting their `_temporary` directories while a test lists the
    warehouse. Wait until no process carries the writer's mark in its environment (Linux's /proc)."""
    needle = f"{WRITER_MARK}={marker}".encode()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = False
        for entry in Path("/proc").glob("[0-9]*"):
            try:
                alive = needle in (entry / "environ").read_bytes()
            except OSError:  # gone, or not ours to read
                continue
            if alive:
                break
        if not alive:
            return
        time.sleep(0.1)
    raise AssertionError(f"a killed writer's processes still ran {timeout:.0f} s after it died")


def wait_until_settled(warehouse, timeout: float = 120, quiet: float = 0.3) -> None:
    """Under a shared Spark Connect server (CI) a killed writer's other writes run on: the writer writes
    files in parallel Spark jobs, and the server finishes (or aborts) a job whose client died. Wait until
    the warehouse holds no job's `_temporary` directory and two listings `quiet` seconds apart agree."""
    deadline = time.monotonic() + timeout
    previous = None
    while time.monotonic() < deadline:
        listing = set(walk_files(warehouse))
        if previous == listing and not any("_temporary" in p.parts for p in listing):
            return
        previous = listing
        time.sleep(quiet)
    raise AssertionError(f"the warehouse kept changing for {timeout:.0f} s after the writer ended")


def run_writer(warehouse, catalog_url, branch, table, first_id, fault=None, action="insert"):
    return run_process(warehouse, catalog_url, action, "--branch", branch, "--table", table,
                       "--first-id", str(first_id), fault=fault)


def assert_killed(result):
    assert result.returncode == -9, result.stderr[-2000:]  # SIGKILL, as a crash
    assert "committed" not in result.stdout


def assert_consistent(lh, warehouse):
    """Every commit a branch (hidden ones too) reaches has all its files, and every table reads."""
    heads = [b.head for b in lh.store.list_branches()]
    for commit in lh.store.reachable_commits(heads):
        root = lh.store.root(commit)
        tables = lh.store.tables(entry[0] for entry in root.tables.values()).values()
        for segment in lh.store.segments(s for t in tables for s in t.segments).values():
            for name in segment.files:
                assert (Path(warehouse) / segment.path / name).is_file(), (commit, segment.path, name)
        for tombstone in lh.store.tombstones(s for t in tables for s in t.tombstones).values():
            assert list((Path(warehouse) / tombstone.path).glob("*.parquet")), (commit, tombstone.path)
    for branch in lh.list_branches():
        snapshot = lh.snapshot(branch.name)
        for table in snapshot.tables():
            if table.kind == "table":
                snapshot.read(f"{table.database}.{table.name}").count()


# Every fault point is hit on both catalogs at both depths; `make test` hits each once per catalog (a write, a
# replay, a write run again, a merge, gc, and the two others beside a committing writer), `make test-long` in
# every test.
pytestmark = pytest.mark.deep
WRITE_FAULTS = ["write.after_files", "write.before_commit", "commit.before_head_swap"]
MERGE_FAULTS = ["write.after_files", "merge.before_commit", "commit.before_head_swap"]


@pytest.mark.parametrize("fault", sized(["commit.before_head_swap"], WRITE_FAULTS))
def test_writer_killed_before_commit_changes_no_branch_and_gc_removes_its_files(lh, spark, orders, warehouse,
                                                                                 fault):
    lh.create_branch("dev")
    heads = {b.name: b.head for b in lh.list_branches()}
    data = {name: rows(lh.read(orders, at=name)) for name in heads}
    files_before = parquet_files(warehouse)

    assert_killed(run_writer(warehouse, lh.catalog_url, "dev", orders, 1000, fault=fault))

    orphans = sorted(set(parquet_files(warehouse)) - set(files_before))
    assert orphans, "the writer should have left its data files behind"
    assert {b.name: b.head for b in lh.list_branches()} == heads
    assert_consistent(lh, warehouse)
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
    assert run_writer(warehouse, lh.catalog_url, "dev", orders, 1000).returncode == 0
    assert lh.read(orders, at="dev").count() == 105


@pytest.mark.parametrize("fault", ["retry.after_staged_commit"])
def test_writer_killed_while_replaying_onto_a_moved_head(lh, spark, orders, warehouse, fault):
    """The process's own second commit moves the head, so its first one is replayed; it dies in the replay."""
    result = run_writer(warehouse, lh.catalog_url, "main", orders, 1000, fault=fault, action="stale-insert")
    assert_killed(result)
    # The other commit landed; the replayed one did not, and a hidden branch may hold its staged commit.
    assert lh.read(orders).count() == 105
    assert_consistent(lh, warehouse)
    assert [b.name for b in lh.list_branches()] == ["main"]
    lh.gc(grace_seconds=0)  # drops a crashed writer's hidden branch and its files
    assert [b.name for b in lh.store.list_branches()] == ["main"]
    assert_consistent(lh, warehouse)
    assert lh.read(orders).count() == 105

    assert run_writer(warehouse, lh.catalog_url, "main", orders, 2000, action="stale-insert").returncode == 0
    assert lh.read(orders).count() == 305
    assert [c.message for c in lh.log("main", limit=2)] == ["insert from 2000", "insert from 2100"]


def test_writer_killed_before_running_again_on_a_moved_head(lh, spark, orders, warehouse):
    """The process's own second update changes the row its first one read, so the first runs again on the new
    head; it dies just before that."""
    def amount():
        return lh.read(orders).where("id = 1").first().amount

    result = run_process(warehouse, lh.catalog_url, "stale-update", "--branch", "main", "--table", orders,
                         fault="retry.before_rerun")
    assert_killed(result)
    assert amount() == 110.0  # the other update landed, the one to run again did not
    assert_consistent(lh, warehouse)
    lh.gc(grace_seconds=0)
    assert_consistent(lh, warehouse)
    assert [b.name for b in lh.store.list_branches()] == ["main"]
    rerun = run_process(warehouse, lh.catalog_url, "stale-update", "--branch", "main", "--table", orders)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert "passed retry.before_rerun 1" in rerun.stdout
    assert amount() == 211.0  # + 100, then + 1 run again on it


@pytest.fixture
def keyed_divergence(lh, spark):
    """main and dev changed different columns of one key of shop.k since dev was made: merging dev merges that
    row cell by cell, so the merge writes a segment and a tombstone."""
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.k", spark.createDataFrame([(i, float(i), "new") for i in range(1, 6)],
                                                           "id bigint, amount double, state string"),
                           primary_key=["id"])
    lh.create_branch("dev")
    lh.branch("dev").update("shop.k", "id = 1", {"amount": "100"})
    lh.branch("main").update("shop.k", "id = 1", {"state": "'checked'"})  # the same key, another column
    lh.branch("main").update("shop.k", "id = 2", {"amount": "200"})
    return "shop.k"


@pytest.mark.parametrize("fault", sized(["merge.before_commit"], MERGE_FAULTS))
def test_merge_killed_leaves_both_branches_and_reruns(lh, spark, keyed_divergence, warehouse, fault):
    table = keyed_divergence
    heads = {b.name: b.head for b in lh.list_branches()}
    files_before = parquet_files(warehouse)
    result = run_process(warehouse, lh.catalog_url, "merge", "--source", "dev", "--branch", "main", fault=fault)
    assert_killed(result)
    assert {b.name: b.head for b in lh.list_branches()} == heads
    assert set(parquet_files(warehouse)) > set(files_before)  # the merge's own files, now orphans
    assert_consistent(lh, warehouse)

    rerun = run_process(warehouse, lh.catalog_url, "merge", "--source", "dev", "--branch", "main")
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert "committed merged" in rerun.stdout
    assert rows(lh.read(table)) == [(1, 100.0, "checked"), (2, 200.0, "new"), (3, 3.0, "new"), (4, 4.0, "new"),
                                    (5, 5.0, "new")]
    lh.gc(grace_seconds=0)
    assert_consistent(lh, warehouse)


def all_files(warehouse):
    return {str(p) for p in walk_files(Path(warehouse) / "tables")}


def test_gc_killed_mid_delete_deletes_only_garbage_and_reruns(lh, spark, orders, warehouse):
    files_before = all_files(warehouse)
    for first_id in (1000, 2000):
        assert_killed(run_writer(warehouse, lh.catalog_url, "main", orders, first_id, fault="write.after_files"))
    orphans = all_files(warehouse) - files_before
    assert len(orphans) >= 2

    assert_killed(run_process(warehouse, lh.catalog_url, "gc", fault="gc.mid_delete"))
    left = all_files(warehouse)
    assert files_before <= left
    assert len(left - files_before) == len(orphans) - 1  # stopped after its first delete
    assert_consistent(lh, warehouse)
    assert rows(lh.read(orders), "id") == [(i,) for i in range(1, 6)]

    rerun = run_process(warehouse, lh.catalog_url, "gc")
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert all_files(warehouse) == files_before
    assert_consistent(lh, warehouse)


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


ALL_FAULTS = WRITE_FAULTS + ["retry.after_staged_commit", "retry.before_rerun", "merge.before_commit", "gc.mid_delete"]


def commit_while_running(lh, spark, process, table, first_id):
    """Another writer: commit one row at a time on main until `process` has exited; the ids it committed."""
    landed = []
    while process.poll() is None or not landed:
        key = first_id + len(landed)
        lh.branch("main").insert(table, spark.createDataFrame([(key, float(key))], "id bigint, amount double"))
        landed.append(key)
        time.sleep(0.2)
    return landed


def make_old_orphans(lh, spark, table, warehouse):
    """Files of a write that never committed, older than gc's grace: garbage for the killed gc to delete."""
    files_before = all_files(warehouse)
    abandoned = lh.transaction("main")
    for key in (9000, 9001):  # two segments: a gc killed after its first delete leaves some behind
        abandoned.insert(table, spark.createDataFrame([(key, 1.0)], "id bigint, amount double"))
    orphans = all_files(warehouse) - files_before
    an_hour_ago = time.time() - 3600
    for path in orphans:
        os.utime(path, (an_hour_ago, an_hour_ago))
    assert orphans
    return orphans


@pytest.mark.parametrize("fault", sized(["write.after_files", "write.before_commit"], ALL_FAULTS))
def test_killed_at_each_fault_point_while_another_writer_commits(lh, spark, orders, warehouse, fault):
    """Issue 20: kill -9 at each fault point while another writer commits on the same branch, then gc with
    grace 0: every branch reads its old or new state and no referenced file is gone."""
    lh.create_branch("dev")
    # dev has something to merge that main's new rows do not conflict with
    lh.branch("dev").create_table_as("shop.notes", spark.createDataFrame([(1, "x")], "id bigint, note string"))
    dev_head, dev_rows = lh.get_branch("dev").head, rows(lh.read(orders, at="dev"))
    base_ids = {r.id for r in lh.read(orders).collect()}
    own_rows = set()  # rows the killed process may have landed before its fault point
    if fault == "merge.before_commit":
        args = ("merge", "--source", "dev", "--branch", "main")
    elif fault == "gc.mid_delete":
        orphans = make_old_orphans(lh, spark, orders, warehouse)
        args = ("gc", "--grace", "600")  # the other writer's young files are not garbage
    elif fault == "retry.after_staged_commit":
        args = ("stale-insert", "--branch", "main", "--table", orders, "--first-id", "1000")
        own_rows = set(range(1100, 1200))  # its own second commit, which moves the head
    elif fault == "retry.before_rerun":
        args = ("stale-update", "--branch", "main", "--table", orders)  # changes amounts, adds no row
    else:
        args = ("insert", "--branch", "main", "--table", orders, "--first-id", "1000")
    command, env = writer_command(warehouse, lh.catalog_url, *args, fault=fault)
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        landed = commit_while_running(lh, spark, process, orders, 50_000)
        out, err = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -9 and "committed" not in out, err[-2000:]

    def check_branches():
        ids = {r.id for r in lh.read(orders).collect()}
        assert ids - own_rows == base_ids | set(landed)  # the other writer's commits all there, the killed one's not
        assert ids & own_rows in (set(), own_rows)
        assert lh.get_branch("dev").head == dev_head and rows(lh.read(orders, at="dev")) == dev_rows
        assert_consistent(lh, warehouse)

    check_branches()
    if fault == "gc.mid_delete":
        assert orphans & all_files(warehouse) and orphans - all_files(warehouse)  # it died mid-way
    lh.gc(grace_seconds=0)
    check_branches()
    assert sorted(b.name for b in lh.store.list_branches()) == ["dev", "main"]  # no hidden branch left
