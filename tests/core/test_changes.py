"""branch_changes (CDC): the rows inserted and deleted in one table between two versions."""
import click
import pytest
from click.testing import CliRunner

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.changes import Hint, open_changes, table_changes
from dbt.adapters.branchspark.core.changes.feed import commit_micros
from dbt.adapters.branchspark.cli.changes_cmd import changes as changes_command
from dbt.adapters.branchspark.cli.main import cli
from tests.core.changes_replay import multiset, replay


def df(spark, data, schema="id bigint, amount double"):
    return spark.createDataFrame(data, schema)


def head(lh, branch="main"):
    return lh.get_branch(branch).head


def summary(frame):
    """(change type, id, amount, commit seq) per change, in the order the DataFrame gives."""
    return [(r["_change_type"], r["id"], r["amount"], r["_commit_seq"]) for r in frame.collect()]


def assert_replays(lh, table, from_, to, frame=None):
    frame = frame if frame is not None else table_changes(lh, table, from_, to)
    width = len(lh.read(table, at=to).columns)
    assert replay(multiset(lh.read(table, at=from_)), frame.collect(), width) == multiset(lh.read(table, at=to))


def merged_changes(lh, table, src, dest="main", **options):
    """Merge `src` into `dest`; the changes the merge made on dest, checked to replay, as (type, id, amount)."""
    before = head(lh, dest)
    lh.merge(src, dest, **options)
    assert_replays(lh, table, before, dest)
    return [r[:3] for r in summary(table_changes(lh, table, before, dest))]


@pytest.fixture
def keyed(lh, spark):
    """main: shop.items(id primary key, amount) with ids 1..5."""
    with lh.transaction("main", message="setup") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.items", df(spark, [(i, float(i * 10)) for i in range(1, 6)]), primary_key=["id"])
    return "shop.items"


# ---------------------------------------------------------------- order and content
def test_changes_come_in_commit_order_with_deletes_first_at_one_commit(lh, spark, orders):
    start = head(lh)
    b = lh.branch("main")
    b.insert(orders, df(spark, [(6, 60.0)]))
    b.update(orders, "id = 2", {"amount": "amount + 1"})
    b.delete(orders, "id = 3")
    c1, c2, c3 = reversed([c for c in lh.log("main", 3)])
    frame = table_changes(lh, orders, start, "main")
    assert frame.columns == ["id", "amount", "_change_type", "_commit_id", "_commit_ts", "_commit_seq"]
    assert summary(frame) == [("insert", 6, 60.0, c1.seq), ("delete", 2, 20.0, c2.seq),
                              ("insert", 2, 21.0, c2.seq), ("delete", 3, 30.0, c3.seq)]
    got = [(r["_commit_id"], r["_commit_ts"]) for r in frame.collect()]
    assert got == [(c1.id, c1.ts), (c2.id, c2.ts), (c2.id, c2.ts), (c3.id, c3.ts)]
    assert dict(frame.dtypes)["_commit_ts"] == "timestamp" and dict(frame.dtypes)["_commit_seq"] == "bigint"
    assert_replays(lh, orders, start, "main", frame)
    assert table_changes(lh, orders, "main", "main").count() == 0


@pytest.mark.parametrize("partitions", [1, 3])
def test_changes_whose_commit_times_rise_come_in_order_without_a_sort(lh, spark, keyed, partitions):
    """Issue 72: where commit times rise along the range, the feed is listed in order as its union gives it, with
    no sort (a sampling job and a shuffle): each commit's deletes and inserts spread over several partitions."""
    start = head(lh)
    b = lh.branch("main")
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    try:
        b.upsert(keyed, spark.range(1, 400, numPartitions=3).selectExpr("id", "CAST(id AS DOUBLE) * 2 AS amount"))
        b.delete(keyed, "id % 3 = 0")
        b.upsert(keyed, spark.range(200, 600, numPartitions=4).selectExpr("id", "-CAST(id AS DOUBLE) AS amount"))
        frame = table_changes(lh, keyed, start, "main")
        assert not any(line.lstrip(" +-:").startswith("Sort ")
                       for line in frame._jdf.queryExecution().optimizedPlan().toString().splitlines())
        labels = [(r["_commit_ts"], r["_commit_seq"], r["_change_type"]) for r in frame.collect()]
        assert labels == sorted(labels) and len({label[1] for label in labels}) == 3
        assert_replays(lh, keyed, start, "main", frame)
        net = table_changes(lh, keyed, start, "main", net=True)
        assert any(line.lstrip(" +-:").startswith("Sort ") for line in net._jdf.queryExecution().optimizedPlan()
                   .toString().splitlines())
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)


def test_an_update_of_many_rows_reports_every_delete_before_any_insert(lh, spark, keyed):
    start = head(lh)
    lh.branch("main").upsert(keyed, df(spark, [(1, 11.0), (2, 22.0), (9, 90.0)]))
    kinds = [r[0] for r in summary(table_changes(lh, keyed, start, "main"))]
    assert kinds == ["delete", "delete", "insert", "insert", "insert"]
    assert_replays(lh, keyed, start, "main")


def test_snapshot_mode_returns_the_rows_of_to_as_inserts(lh, spark, orders):
    lh.branch("main").delete(orders, "id = 5")
    to = lh.log("main", 1)[0]
    for empty in (None, "", 0, "0"):
        frame = table_changes(lh, orders, empty, "main")
        assert sorted(summary(frame)) == [("insert", i, i * 10.0, to.seq) for i in range(1, 5)]
        assert {r["_commit_id"] for r in frame.collect()} == {to.id}


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
def test_each_commit_is_labelled_with_its_own_time_sequence_and_id_in_any_session_time_zone(lh, spark, keyed, zone):
    """The labels of a commit whose sides are one read each come from that read's source as values of every row
    (issue 72: no projection, nothing compiled anew per commit); a merge commit's from a projection; a snapshot's
    from its read. Each is the commit's own instant, sequence and id whatever the session's time zone."""
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        start = head(lh)
        lh.create_branch("dev")
        lh.branch("main").upsert(keyed, df(spark, [(1, 11.0), (9, 90.0)]))  # one segment, one tombstone
        lh.branch("dev").delete(keyed, "id = 4")
        lh.merge("dev", "main")
        commits = {c.id: c for c in lh.log("main", 3)}
        frames = {"range": table_changes(lh, keyed, start, "main"), "snapshot": table_changes(lh, keyed, None, "main")}
        for mode, frame in frames.items():
            got = frame.selectExpr("_commit_id", "unix_micros(_commit_ts)", "_commit_seq", "_change_type").collect()
            assert got, mode
            for commit_id, micros, seq, _ in got:
                commit = commits[commit_id]
                assert (micros, seq) == (commit_micros(commit), commit.seq), (mode, zone)
        assert len({r[0] for r in frames["range"].select("_commit_seq").collect()}) == 2  # the upsert's, the merge's
        assert_replays(lh, keyed, start, "main")
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


# ---------------------------------------------------------------------- compaction
def test_compaction_reports_nothing_and_later_deletes_keep_their_images(lh, spark, orders):
    start = head(lh)
    b = lh.branch("main")
    b.delete(orders, "id = 1")
    before_compaction = head(lh)
    b.compact(orders)
    assert table_changes(lh, orders, before_compaction, "main").count() == 0
    b.delete(orders, "id = 2")
    b.update(orders, "id = 3", {"amount": "-1"})
    got = [(kind, i, amount) for kind, i, amount, _ in summary(table_changes(lh, orders, start, "main"))]
    assert got == [("delete", 1, 10.0), ("delete", 2, 20.0), ("delete", 3, 30.0), ("insert", 3, -1.0)]
    assert_replays(lh, orders, start, "main")
    assert_replays(lh, orders, before_compaction, "main")


def test_restore_across_a_compaction_reports_only_real_changes(lh, spark, keyed):
    b = lh.branch("main")
    b.delete(keyed, "id = 1")
    deleted = head(lh)
    b.compact(keyed)
    compacted = head(lh)
    lh.restore_table("main", keyed, deleted)  # same rows, uncompacted layout
    assert table_changes(lh, keyed, compacted, "main").count() == 0
    restored = head(lh)
    first = lh.log("main")[-2].id  # the setup commit: id 1 still there
    lh.restore_table("main", keyed, first)
    assert summary(table_changes(lh, keyed, restored, "main"))[0][:3] == ("insert", 1, 10.0)
    assert table_changes(lh, keyed, restored, "main").count() == 1
    assert_replays(lh, keyed, compacted, "main")


# ------------------------------------------------------------ overwrite and restore
def test_overwrite_deletes_live_rows_and_restore_brings_them_back(lh, spark, orders):
    b = lh.branch("main")
    start = head(lh)
    b.delete(orders, "id = 1")
    deleted = head(lh)
    b.overwrite(orders, df(spark, [(100, 1.0)]))
    overwritten = head(lh)
    assert sorted(r[:3] for r in summary(table_changes(lh, orders, deleted, "main"))) == \
        [("delete", i, i * 10.0) for i in range(2, 6)] + [("insert", 100, 1.0)]
    lh.restore_table("main", orders, deleted)
    assert sorted(r[:3] for r in summary(table_changes(lh, orders, overwritten, "main"))) == \
        [("delete", 100, 1.0)] + [("insert", i, i * 10.0) for i in range(2, 6)]
    restored = head(lh)
    lh.restore_table("main", orders, start)  # drops the tombstone: row 1 comes back
    assert [r[:3] for r in summary(table_changes(lh, orders, restored, "main"))] == [("insert", 1, 10.0)]
    assert_replays(lh, orders, start, "main")


def test_partition_overwrite_changes_only_that_partition(lh, spark):
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.sales", df(spark, [(1, 1.0, "a"), (2, 2.0, "b"), (3, 3.0, "b")],
                                            "id bigint, amount double, region string"), partition_by=["region"])
    start = head(lh)
    lh.branch("main").delete("shop.sales", "id = 3")
    lh.branch("main").overwrite("shop.sales", df(spark, [(4, 4.0, "b")], "id bigint, amount double, region string"),
                                partitions={"region": ["b"]})
    got = [r[:3] for r in summary(table_changes(lh, "shop.sales", start, "main"))]
    assert got == [("delete", 3, 3.0), ("delete", 2, 2.0), ("insert", 4, 4.0)]
    assert_replays(lh, "shop.sales", start, "main")


def test_a_merge_commit_reports_exactly_what_the_merge_changed(lh, spark, orders):
    lh.create_branch("dev")
    lh.branch("main").delete(orders, "id = 1")
    lh.branch("main").update(orders, "id = 3", {"amount": "33.0"})
    dev = lh.branch("dev")
    dev.delete(orders, "id in (1, 2)")  # row 1 deleted on both sides: main reports only row 2 (A2)
    dev.insert(orders, df(spark, [(7, 70.0)]))
    before = head(lh)
    lh.merge("dev", "main")
    got = sorted(r[:3] for r in summary(table_changes(lh, orders, before, "main")))
    assert got == [("delete", 2, 20.0), ("insert", 7, 70.0)]
    assert_replays(lh, orders, before, "main")
    # Across the merge, on dev's side of it: main's own changes arrive when main merges into dev.
    dev_before = head(lh, "dev")
    lh.merge("main", "dev")
    got = sorted(r[:3] for r in summary(table_changes(lh, orders, dev_before, "dev")))
    assert got == [("delete", 3, 30.0), ("insert", 3, 33.0)]
    assert_replays(lh, orders, dev_before, "dev")


def test_a_keyed_merge_reports_an_update_as_delete_and_insert(lh, spark, keyed):
    lh.create_branch("dev")
    lh.branch("dev").update(keyed, "id = 2", {"amount": "amount + 1"})
    lh.branch("main").update(keyed, "id = 3", {"amount": "0"})
    assert merged_changes(lh, keyed, "dev") == [("delete", 2, 20.0), ("insert", 2, 21.0)]


def test_a_keyed_merge_from_a_compacted_branch_reports_the_rows_it_replaced(lh, spark, keyed):
    """src compacted, then updated a key dest still holds in its original segment: the merge's delete
    of dest's row is reported (found by the changes property test)."""
    lh.create_branch("dev")
    lh.branch("main").delete(keyed, "id = 1")
    lh.branch("dev").compact(keyed)
    lh.branch("dev").update(keyed, "id = 2", {"amount": "amount + 1"})
    assert merged_changes(lh, keyed, "dev", on_conflict="theirs") == [("delete", 2, 20.0), ("insert", 2, 21.0)]


def test_a_keyed_merge_sharing_src_files_reports_only_what_dest_did_not_have(lh, spark, keyed):
    """Different keys on each side: src's segments and tombstones join main as they are; a row src
    inserted and then changed is one insert of its last image, and src's delete is reported."""
    lh.create_branch("dev")
    dev = lh.branch("dev")
    dev.insert(keyed, df(spark, [(10, 100.0)]))
    dev.update(keyed, "id = 10", {"amount": "101.0"})
    dev.delete(keyed, "id = 1")
    lh.branch("main").update(keyed, "id = 3", {"amount": "0"})
    assert merged_changes(lh, keyed, "dev") == [("delete", 1, 10.0), ("insert", 10, 101.0)]


def test_a_keyed_merge_into_a_compacted_branch_reports_the_rows_it_replaced(lh, spark, keyed):
    """dest compacted, so it holds the base row a src delete replaces only in its compaction: the merge's
    delete of that row is still reported (found by the changes property test)."""
    start = head(lh)
    lh.branch("main").delete(keyed, "id = 4")
    lh.branch("main").compact(keyed)
    lh.create_branch("dev", start)
    lh.branch("dev").insert(keyed, df(spark, [(10, 100.0)]))
    lh.branch("dev").delete(keyed, "id = 1")
    assert merged_changes(lh, keyed, "dev") == [("delete", 1, 10.0), ("insert", 10, 100.0)]


def test_a_keyless_merge_into_a_compacted_branch_reports_the_rows_it_replaced(lh, spark, orders):
    """dev updated rows 1 and 2 and compacted; main compacted, then deleted row 1; merged with theirs. Row 2
    lives on main only in its compaction, which dev's tombstone does not name: the merge commit's delete of
    main's row 2 is still reported (found by the engine-against-model test, 2026-11-27)."""
    lh.create_branch("dev")
    dev = lh.branch("dev")
    dev.update(orders, "id <= 2", {"amount": "amount + 1"})
    dev.compact(orders)
    main = lh.branch("main")
    main.compact(orders)
    main.delete(orders, "id = 1")
    assert sorted(merged_changes(lh, orders, "dev", on_conflict="theirs")) == [
        ("delete", 2, 20.0), ("insert", 1, 11.0), ("insert", 2, 21.0)]


# ---------------------------------------------------------------- schema and table life
def test_schema_changes_in_the_range_project_onto_the_schema_at_to(lh, spark, orders):
    start = head(lh)
    b = lh.branch("main")
    b.delete(orders, "id = 1")
    b.add_column(orders, "note", "string", default="'n/a'")
    b.rename_column(orders, "amount", "total")
    b.insert(orders, spark.createDataFrame([(6, 60.0, "new")], "id bigint, total double, note string"))
    b.drop_column(orders, "note")
    b.add_column(orders, "qty", "int")
    b.update(orders, "id = 2", {"qty": "5"})
    frame = table_changes(lh, orders, start, "main")
    assert frame.columns[:3] == ["id", "total", "qty"]
    got = [(r["_change_type"], r["id"], r["total"], r["qty"]) for r in frame.collect()]
    assert got == [("delete", 1, 10.0, None), ("insert", 6, 60.0, None), ("delete", 2, 20.0, None),
                   ("insert", 2, 20.0, 5)]
    assert_replays(lh, orders, head(lh), "main")


def test_table_created_renamed_and_dropped_inside_the_range(lh, spark):
    with lh.transaction("main") as tx:
        tx.create_database("shop")
    start = head(lh)
    b = lh.branch("main")
    b.create_table_as("shop.t", df(spark, [(1, 1.0), (2, 2.0)]))
    b.delete("shop.t", "id = 1")
    b.rename_table("shop.t", "shop.u")
    b.insert("shop.u", df(spark, [(3, 3.0)]))
    got = [r[:3] for r in summary(table_changes(lh, "shop.u", start, "main"))]
    assert sorted(got[:2]) == [("insert", 1, 1.0), ("insert", 2, 2.0)]  # from the creation on
    assert got[2:] == [("delete", 1, 1.0), ("insert", 3, 3.0)]  # followed through the rename
    b.drop_table("shop.u")
    dropped = [r[:3] for r in summary(table_changes(lh, "shop.u", start, "main"))]
    assert dropped == got  # changes up to the drop; the drop itself changes no rows


# ------------------------------------------------------------------------- versions
def test_versions_as_commit_ids_times_and_branch_names(lh, spark, orders):
    base = lh.log("main", 1)[0]
    lh.create_branch("dev")
    dev = lh.branch("dev")
    dev.insert(orders, df(spark, [(6, 60.0)]))
    middle = lh.log("dev", 1)[0]
    dev.delete(orders, "id = 6")
    expected = [("insert", 6, 60.0, middle.seq)]
    assert summary(table_changes(lh, orders, base.id[:10], middle.id)) == expected
    assert summary(table_changes(lh, orders, base.ts.isoformat(), middle.ts, branch="dev")) == expected
    assert summary(table_changes(lh, orders, "main", f"dev@{middle.ts.isoformat()}")) == expected
    assert len(summary(table_changes(lh, orders, "main", "dev"))) == 2  # times default to the branch `to` names


def test_net_mode_folds_each_key_into_its_net_effect(lh, spark, keyed):
    start = head(lh)
    b = lh.branch("main")
    b.insert(keyed, df(spark, [(10, 100.0)]))
    b.delete(keyed, "id = 10")                      # inserted then deleted: vanishes
    b.update(keyed, "id = 2", {"amount": "21"})
    b.update(keyed, "id = 2", {"amount": "22"})     # two updates: old image out, final image in
    b.update(keyed, "id = 3", {"amount": "31"})
    b.update(keyed, "id = 3", {"amount": "30"})     # back to where it was: nothing
    b.delete(keyed, "id = 4")
    b.insert(keyed, df(spark, [(11, 110.0)]))
    frame = table_changes(lh, keyed, start, "main", net=True)
    got = [r[:3] for r in summary(frame)]
    assert got == [("delete", 2, 20.0), ("insert", 2, 22.0), ("delete", 4, 40.0), ("insert", 11, 110.0)]
    assert_replays(lh, keyed, start, "main", frame)


# --------------------------------------------------------------------------- errors
def test_bad_input_gets_one_clear_error_line(lh, spark, orders):
    start = head(lh)
    lh.create_branch("dev")
    lh.branch("dev").delete(orders, "id = 1")
    lh.branch("main").delete(orders, "id = 2")
    with pytest.raises(errors.TableNotFound, match="table 'shop.nope' does not exist"):
        table_changes(lh, "shop.nope", start, "main")
    with pytest.raises(errors.InvalidArgument, match=r"is not on the first-parent history of 'main'") as info:
        table_changes(lh, orders, "dev", "main")
    assert "\n" not in str(info.value)
    with pytest.raises(errors.InvalidArgument, match="not on the first-parent history"):
        table_changes(lh, orders, "main", start)  # from newer than to
    with pytest.raises(errors.CommitNotFound):
        table_changes(lh, orders, "no-such-version", "main")
    with pytest.raises(errors.BranchNotFound):
        table_changes(lh, orders, start, None, branch="nope")
    with pytest.raises(errors.InvalidArgument, match="batch_rows"):
        open_changes(lh, orders, start, "main", batch_rows=0)


# --------------------------------------------------------------------------- handle
def test_handle_batches_follow_commit_boundaries_and_hints(lh, spark, orders):
    start = head(lh)
    b = lh.branch("main")
    b.insert(orders, df(spark, [(i, 1.0) for i in range(10, 14)]))    # 4 rows
    b.insert(orders, df(spark, [(i, 1.0) for i in range(20, 22)]))    # 2 rows
    b.insert(orders, df(spark, [(i, 1.0) for i in range(30, 40)]))    # 10 rows: larger than the window
    b.delete(orders, "id < 6")                                         # 5 rows
    expected = table_changes(lh, orders, start, "main").collect()
    seen, sizes, hints, buffered, peak = [], [], [], [], 0
    with open_changes(lh, orders, start, "main", batch_rows=3) as handle:
        for data, tombstones, hint in handle:
            sizes.append(data.num_rows + tombstones.num_rows)
            hints.append(hint)
            assert "_change_type" not in data.schema.names and data.schema == tombstones.schema
            buffered += [("delete", r) for r in tombstones.to_pylist()] + [("insert", r) for r in data.to_pylist()]
            peak = max(peak, len(buffered))
            if hint is Hint.TAIL_DONE:  # consume the buffer: by commit, deletes first
                buffered.sort(key=lambda c: (c[1]["_commit_seq"], c[0] == "insert"))
                seen += [(kind, r["id"], r["_commit_seq"]) for kind, r in buffered]
                buffered = []
        assert handle.next() is None
    assert buffered == [] and hints[-1] is Hint.TAIL_DONE
    assert seen == [(r["_change_type"], r["id"], r["_commit_seq"]) for r in expected]
    assert all(3 <= s <= 6 for s in sizes[:-1]) and sum(sizes) == 21
    assert Hint.TAIL_WIP in hints and peak <= 10 + 6  # at most one commit plus one batch
    # Every WIP batch ends inside a commit, every DONE batch at a commit boundary.
    position = 0
    for size, hint in zip(sizes, hints):
        position += size
        at_boundary = position == len(expected) or \
            expected[position]["_commit_seq"] != expected[position - 1]["_commit_seq"]
        assert at_boundary == (hint is Hint.TAIL_DONE)


def test_handle_in_snapshot_mode_gives_only_data(lh, orders):
    handle = open_changes(lh, orders, None, "main", batch_rows=2)
    batches = list(handle)
    assert [h for _, _, h in batches] == [Hint.SNAPSHOT] * 3
    assert [d.num_rows for d, _, _ in batches] == [2, 2, 1] and all(t.num_rows == 0 for _, t, _ in batches)
    assert sorted(r["id"] for d, _, _ in batches for r in d.to_pylist()) == [1, 2, 3, 4, 5]
    handle.close()
    assert handle.next() is None


# ------------------------------------------------------------------------------ CLI
def test_cli_changes_prints_counts_and_first_rows(lh, spark, orders, warehouse):
    start = head(lh)
    lh.branch("main").update(orders, "id = 1", {"amount": "99"})
    result = CliRunner().invoke(cli, ["--warehouse", warehouse, "changes", orders, "--from", start, "--limit", "1"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "1 deleted, 1 inserted" in result.output and "_commit_seq" in result.output
    assert "first 1 of 2 changes" in result.output
    assert isinstance(changes_command, click.Command)
