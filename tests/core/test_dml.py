"""Inserts, deletes, updates, overwrites, upserts and compaction on real Parquet."""
import pytest

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.storage.reader import ROW_FILE, ROW_POS
from sorted_rows import rows


def df(spark, data, schema="id bigint, amount double"):
    return spark.createDataFrame(data, schema)


def test_insert_appends_a_segment(lh, spark, orders):
    before = lh.snapshot().state(orders)
    lh.branch("main").insert(orders, df(spark, [(6, 60.0), (7, 70.0)]))
    after = lh.snapshot().state(orders)
    assert len(after.segments) == len(before.segments) + 1
    assert set(before.segments) < set(after.segments)  # old segments shared, never rewritten
    assert rows(lh.read(orders), "id") == [(i,) for i in range(1, 8)]


def test_insert_casts_and_fills_missing_columns(lh, spark, orders):
    lh.branch("main").insert(orders, spark.createDataFrame([(8,)], "id int"))
    assert rows(lh.read(orders).filter("id = 8")) == [(8, None)]
    with pytest.raises(errors.InvalidArgument, match=r"column\(s\) \['extra'\] that table 'shop.orders' lacks"):
        lh.branch("main").insert(orders, spark.createDataFrame([(9, 1.0, 1)], "id bigint, amount double, extra int"))


def test_delete_writes_a_tombstone_and_keeps_segments(lh, orders):
    before = lh.snapshot().state(orders)
    assert lh.branch("main").delete(orders, "amount >= 40") == 2
    after = lh.snapshot().state(orders)
    assert after.segments == before.segments and len(after.tombstones) == 1
    assert rows(lh.read(orders), "id") == [(1,), (2,), (3,)]
    op = lh.log("main", 1)[0].operations[0]
    assert op.op == "delete" and op.detail["rows"] == 2 and op.detail["segments_touched"]


def test_delete_matching_nothing_commits_nothing(lh, orders):
    head = lh.get_branch("main").head
    assert lh.branch("main").delete(orders, "id > 100") == 0
    assert lh.get_branch("main").head == head


def test_same_row_deleted_twice_counts_once(lh, spark, orders):
    lh.create_branch("a")
    lh.branch("a").delete(orders, "id = 1")
    assert lh.branch("a").delete(orders, "id = 1") == 0
    assert lh.read(orders, at="a").count() == 4


def test_update_tombstones_old_rows_and_writes_new_images(lh, orders):
    assert lh.branch("main").update(orders, "id in (2, 3)", {"amount": "amount * 100"}) == 2
    assert rows(lh.read(orders)) == [(1, 10.0), (2, 2000.0), (3, 3000.0), (4, 40.0), (5, 50.0)]
    op = lh.log("main", 1)[0].operations[0]
    assert op.op == "update" and op.detail["rows"] == 2
    # A second update of the same rows hits the new images, not the old ones.
    lh.branch("main").update(orders, "id = 2", {"amount": "amount + 1"})
    assert rows(lh.read(orders).filter("id = 2")) == [(2, 2001.0)]


def test_a_delete_and_an_update_count_their_tombstone_as_they_write_it(lh, spark, orders):
    """A tombstone's summary (its rows, the segments and files they live in) is observed while it is written:
    a delete is one Spark job, an update two (its tombstone, its new images), not one more each to read the
    tombstone back."""
    scheduler = spark.sparkContext._jsc.sc().dagScheduler()
    before = scheduler.nextJobId()
    assert lh.branch("main").delete(orders, "id = 1") == 1
    assert scheduler.nextJobId() - before == 1
    before = scheduler.nextJobId()
    assert lh.branch("main").update(orders, "id >= 4", {"amount": "amount + 1"}) == 2
    assert scheduler.nextJobId() - before == 2
    operations = [entry.operations[0] for entry in lh.log("main", 2)]
    assert [(op.op, op.detail["rows"]) for op in operations] == [("update", 2), ("delete", 1)]
    assert all(op.detail["segments_touched"] for op in operations)
    assert rows(lh.read(orders)) == [(2, 20.0), (3, 30.0), (4, 41.0), (5, 51.0)]


def test_an_update_whose_predicate_reads_the_clock_changes_each_row_once(lh, spark):
    """An update's tombstone and its new images are two writes: when each evaluated the predicate (before the matched
    rows were cached for both), `due < current_timestamp()` matched more rows in the second, later one, and every
    row falling due between the two got a new image beside its old row, never tombstoned: its key twice."""
    b = lh.branch("main")
    b.create_database("d")
    rows_due = spark.range(0, 60_000).selectExpr(
        "id", "timestamp_millis(unix_millis(current_timestamp()) + id) AS due", "false AS done")  # one a millisecond
    b.create_table_as("d.tasks", rows_due, primary_key=["id"])
    changed = b.update("d.tasks", "due < current_timestamp()", {"done": "true"})
    after = lh.read("d.tasks")
    assert after.count() == 60_000 and after.select("id").distinct().count() == 60_000, "a key twice, or lost"
    assert after.where("done").count() == changed > 0
    assert lh.log("main", 1)[0].operations[0].detail["rows"] == changed


def test_update_rejects_unknown_column_and_bad_expression(lh, orders):
    head = lh.get_branch("main").head
    with pytest.raises(errors.ColumnNotFound):
        lh.branch("main").update(orders, "id = 1", {"nope": "1"})
    with pytest.raises(errors.InvalidArgument, match="predicate 'idd = 1' is not valid"):
        lh.branch("main").update(orders, "idd = 1", {"amount": "1"})
    assert lh.get_branch("main").head == head


def test_overwrite_whole_table(lh, spark, orders):
    lh.branch("main").delete(orders, "id = 1")
    lh.branch("main").overwrite(orders, df(spark, [(100, 1.0)]))
    # Recorded as what it changed (SPEC 3.3): a tombstone of the 4 rows it removed, a segment of the new one.
    assert rows(lh.read(orders)) == [(100, 1.0)]
    [operation] = lh.log("main", 1)[0].operations
    assert operation.op == "overwrite" and operation.detail["rows"] == 4


def test_overwrite_partitions(lh, spark):
    b = lh.branch("main")
    b.create_database("d")
    schema = "id bigint, day string"
    b.create_table_as("d.e", spark.createDataFrame([(1, "mon"), (2, "mon"), (3, "tue"), (4, "wed")], schema),
                      partition_by=["day"])
    b.overwrite("d.e", spark.createDataFrame([(10, "mon")], schema), partitions="dynamic")
    assert rows(lh.read("d.e")) == [(3, "tue"), (4, "wed"), (10, "mon")]
    b.overwrite("d.e", spark.createDataFrame([(20, "tue")], schema), partitions={"day": ["tue", "wed"]})
    assert rows(lh.read("d.e")) == [(10, "mon"), (20, "tue")]
    with pytest.raises(errors.InvalidArgument, match="outside partitions"):
        b.overwrite("d.e", spark.createDataFrame([(30, "fri")], schema), partitions={"day": ["mon"]})
    assert rows(lh.read("d.e")) == [(10, "mon"), (20, "tue")]


def test_primary_key_tables_refuse_duplicates_and_upsert(lh, spark):
    b = lh.branch("main")
    b.create_database("d")
    b.create_table_as("d.k", spark.createDataFrame([(1, "a"), (2, "b")], "k bigint, v string"), primary_key=["k"])
    with pytest.raises(errors.InvalidArgument, match="already holds"):
        b.insert("d.k", spark.createDataFrame([(2, "x")], "k bigint, v string"))
    with pytest.raises(errors.InvalidArgument, match="repeats primary key"):
        b.insert("d.k", spark.createDataFrame([(3, "x"), (3, "y")], "k bigint, v string"))
    b.upsert("d.k", spark.createDataFrame([(2, "B"), (3, "C")], "k bigint, v string"))
    assert rows(lh.read("d.k")) == [(1, "a"), (2, "B"), (3, "C")]
    assert [o.op for o in lh.log("main", 1)[0].operations] == ["update", "insert"]
    # A key tombstone deletes only older rows: the new image of key 2 survives its own tombstone.
    b.update("d.k", "k = 2", {"v": "'BB'"})
    b.delete("d.k", "k = 1")
    assert rows(lh.read("d.k")) == [(2, "BB"), (3, "C")]


def test_a_keyed_insert_with_several_problems_reports_the_worst_and_writes_nothing(lh, spark):
    """The key checks run as one query (row_writes._check_rows): a NULL key outranks a repeated key, which
    outranks a key the table holds; whichever is reported, no file stays behind and the head does not move."""
    b = lh.branch("main")
    b.create_database("d")
    b.create_table_as("d.k", spark.createDataFrame([(1, "a"), (2, "b")], "k bigint, v string"), primary_key=["k"])
    head = lh.snapshot().commit_id
    data_dir = lh.warehouse.data_dir(lh.snapshot().state("d.k").id)
    files = sorted(p for p, _ in lh.warehouse.list_files(data_dir))
    schema = "k bigint, v string"
    with pytest.raises(errors.InvalidArgument, match="repeats primary key"):  # 2 is held, 3 repeated
        b.insert("d.k", spark.createDataFrame([(2, "x"), (3, "x"), (3, "y")], schema))
    with pytest.raises(errors.InvalidArgument, match="NULL in NOT NULL"):  # NULL key, 3 repeated, 2 held
        b.insert("d.k", spark.createDataFrame([(None, "n"), (2, "x"), (3, "x"), (3, "y")], schema))
    with pytest.raises(errors.InvalidArgument, match="already holds"):
        b.insert("d.k", spark.createDataFrame([(4, "x"), (1, "y")], schema))
    assert lh.snapshot().commit_id == head
    assert sorted(p for p, _ in lh.warehouse.list_files(data_dir)) == files
    assert rows(lh.read("d.k")) == [(1, "a"), (2, "b")]


def test_an_upsert_writes_only_the_rows_it_changes_and_nothing_when_a_key_repeats(lh, spark):
    """An upsert computes its rows once into a cache (row_writes.upsert): a repeated key leaves no file and
    no version behind, and of rows that equal the ones they replace none reaches a file."""
    b = lh.branch("main")
    b.create_database("d")
    schema = "k bigint, v string"
    b.create_table_as("d.k", spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], schema), primary_key=["k"])
    data_dir = lh.warehouse.data_dir(lh.snapshot().state("d.k").id)
    files = sorted(p for p, _ in lh.warehouse.list_files(data_dir))
    head = lh.snapshot().commit_id
    with pytest.raises(errors.InvalidArgument, match="repeats key"):
        b.upsert("d.k", spark.createDataFrame([(2, "x"), (4, "y"), (4, "z")], schema))
    assert lh.snapshot().commit_id == head
    assert sorted(p for p, _ in lh.warehouse.list_files(data_dir)) == files
    b.upsert("d.k", spark.createDataFrame([(1, "a"), (2, "B"), (3, "c"), (4, "d")], schema))  # 1 and 3 unchanged
    assert rows(lh.read("d.k")) == [(1, "a"), (2, "B"), (3, "c"), (4, "d")]
    new_segments = [p for p, _ in lh.warehouse.list_files(data_dir) if p not in files and p.endswith(".parquet")]
    written = spark.read.parquet(*[lh.warehouse.uri(p) for p in new_segments])
    assert sorted(tuple(r) for r in written.select("k", "v").collect()) == [(2, "B"), (4, "d")]


def test_an_upsert_on_the_primary_key_checks_its_rows_in_the_comparisons_write(lh, spark):
    """On the primary key of a table without partitions the upsert's one write also counts the new rows'
    problems (row_writes._check_counts) and refuses them after it: a repeated key also when one of its rows
    equals the row it replaces (that one pairs, the other cannot), a NULL key, a NULL in a NOT NULL column,
    and the NULL reported first. Each leaves the files and the head as they were. An upsert on another key
    of a keyless table, whose old rows may share a key, keeps its check before the write."""
    b = lh.branch("main")
    b.create_database("d")
    schema = "k bigint, v string"
    b.create_table_as("d.k", spark.createDataFrame([(1, "a"), (2, "b")], schema), primary_key=["k"])
    b.set_nullable("d.k", "v", False)
    b.create_table_as("d.free", spark.createDataFrame([(1, "a"), (1, "a")], schema))
    head = lh.snapshot().commit_id
    data_dirs = [lh.warehouse.data_dir(lh.snapshot().state(t).id) for t in ("d.k", "d.free")]
    files = [sorted(p for p, _ in lh.warehouse.list_files(d)) for d in data_dirs]
    refused = [("d.k", [(2, "b"), (2, "x")], "repeats key"), ("d.k", [(None, "n"), (3, "c")], "NULL in NOT NULL"),
               ("d.k", [(3, None)], "NULL in NOT NULL"), ("d.k", [(4, "d"), (4, "e"), (5, None)], "NULL in NOT NULL"),
               ("d.free", [(1, "a"), (1, "a")], "repeats key")]
    for table, new_rows, message in refused:
        with pytest.raises(errors.InvalidArgument, match=message):
            b.upsert(table, spark.createDataFrame(new_rows, schema), key=["k"])
    assert lh.snapshot().commit_id == head
    assert [sorted(p for p, _ in lh.warehouse.list_files(d)) for d in data_dirs] == files
    b.upsert("d.k", spark.createDataFrame([(2, "b"), (3, "c")], schema))
    assert rows(lh.read("d.k")) == [(1, "a"), (2, "b"), (3, "c")]
    assert [o.op for o in lh.log("main", 1)[0].operations] == ["insert"]  # key 2 unchanged: no tombstone


def test_compaction_keeps_rows_and_row_identity(lh, spark, orders):
    b = lh.branch("main")
    b.insert(orders, df(spark, [(6, 60.0)]))
    b.delete(orders, "id = 2")
    b.update(orders, "id = 3", {"amount": "0"})
    before = rows(lh.read(orders))
    ids_before = rows(lh.snapshot().read(orders, with_row_ids=True), "id", ROW_FILE, ROW_POS)
    b.compact(orders)
    state = lh.snapshot().state(orders)
    assert len(state.segments) >= 1 and state.tombstones == ()
    assert rows(lh.read(orders)) == before
    assert rows(lh.snapshot().read(orders, with_row_ids=True), "id", ROW_FILE, ROW_POS) == ids_before
    assert lh.log("main", 1)[0].operations[0].op == "compaction"
    # Deletes after compaction still find their rows.
    b.delete(orders, "id = 6")
    assert 6 not in [r[0] for r in rows(lh.read(orders))]


def test_filters_reach_the_parquet_scan(lh, orders):
    plan = lh.read(orders).filter("amount > 25")._jdf.queryExecution().executedPlan().toString()
    assert "FileScan parquet" in plan and "PushedFilters: [IsNotNull(amount), GreaterThan(amount,25.0)]" in plan


def test_a_transaction_is_one_commit_and_sees_its_own_writes(lh, spark, orders):
    head = lh.get_branch("main").head
    with lh.transaction("main", message="two steps") as tx:
        tx.insert(orders, df(spark, [(6, 60.0)]))
        tx.update(orders, "id = 6", {"amount": "61"})
        assert rows(tx.read(orders).filter("id = 6")) == [(6, 61.0)]
    log = lh.log("main", 2)
    assert log[1].id == head and log[0].message == "two steps"
    assert [o.op for o in log[0].operations] == ["insert", "update"]
    assert rows(lh.read(orders).filter("id = 6")) == [(6, 61.0)]


def test_generic_and_per_file_anti_joins_agree(lh, spark, orders, monkeypatch):
    from dbt.adapters.branchspark.core.storage import reader

    b = lh.branch("main")
    b.insert(orders, spark.range(100, 400, numPartitions=3).selectExpr("id", "cast(id as double) as amount"))
    b.delete(orders, "id % 7 = 0")
    b.update(orders, "id % 5 = 0", {"amount": "-amount"})
    per_file = rows(lh.read(orders))
    monkeypatch.setattr(reader, "_TARGETED_FILES_LIMIT", 0)  # as if too many files were targeted
    assert rows(lh.read(orders)) == per_file
    assert len(per_file) == 305 - len([i for i in list(range(1, 6)) + list(range(100, 400)) if i % 7 == 0])


def test_a_table_without_rows_reads_empty_with_its_columns(lh):
    from pyspark.sql import types as T

    lh.branch("main").create_database("d")
    with lh.transaction("main") as tx:
        tx.create_table("d.empty", T.StructType([T.StructField("k", T.LongType()), T.StructField("v", T.StringType())]))
        assert tx.read("d.empty").count() == 0
    assert lh.read("d.empty").columns == ["k", "v"] and lh.read("d.empty").count() == 0
    assert lh.snapshot().read("d.empty", with_row_ids=True).columns == ["k", "v", "_bs_seg", "_bs_file", "_bs_pos",
                                                                         "_bs_seq"]
