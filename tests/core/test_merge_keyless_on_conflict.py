"""Keyless merges the issue 55 reproductions found wrong: `on_conflict: ours | theirs` settles only the contested
rows (SPEC 3.6), the change feed across a merge commit is the multiset difference of the two versions (SPEC 4),
and a merge that reads tombstone files never fails inside Spark (the deletion-vector filter)."""
from __future__ import annotations

from collections import Counter

import pytest
from sorted_rows import rows

from dbt.adapters.branchspark.core.changes import CHANGE_TYPE, DELETE, table_changes
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.core.connect import is_connect
from dbt.adapters.branchspark.core.storage import deletion_vectors
from tests.core.feed_scenarios import REPRODUCTION, SCENARIOS, feed_problems
from tests.depth import sized
from tests.sessions import make_active
from tests.spark_settings import session_settings

KN = "k string, n int"


def base_table(lh, spark, data, schema, table="db.t"):
    with lh.transaction("main", message="base") as tx:
        tx.create_database("db")
        tx.create_table_as(table, spark.createDataFrame(data, schema))


def head(lh, branch):
    return lh.log(branch, limit=1)[0].id


def net_feed(lh, table, from_, to, columns):
    """(deleted, inserted) multisets of the net change feed between two commits."""
    feed = table_changes(lh, table, from_, to, net=True).select(CHANGE_TYPE, *columns).collect()
    deleted = Counter(tuple(r[c] for c in columns) for r in feed if r[CHANGE_TYPE] == DELETE)
    inserted = Counter(tuple(r[c] for c in columns) for r in feed if r[CHANGE_TYPE] != DELETE)
    return deleted, inserted


def difference(lh, table, from_, to, columns):
    """(rows of `from_` not in `to`, rows of `to` not in `from_`), as multisets: what the feed must list."""
    before = Counter(rows(lh.snapshot(from_).read(table), *columns))
    after = Counter(rows(lh.snapshot(to).read(table), *columns))
    return before - after, after - before


# ------------------------------------------------------------ ours / theirs settle only contested rows
@pytest.mark.parametrize("mode, merged", [("ours", [("a", 100), ("b", 0), ("c", 10)]),
                                          ("theirs", [("a", 1), ("b", 0), ("c", 10)])])
def test_on_conflict_keeps_src_update_of_an_uncontested_row_in_a_contested_segment(lh, spark, mode, merged):
    base_table(lh, spark, [("a", 0), ("b", 0), ("c", 0)], KN)
    lh.create_branch("dev")
    lh.branch("dev").update("db.t", "k = 'a'", {"n": "n + 1"})
    lh.branch("dev").update("db.t", "k = 'c'", {"n": "n + 10"})  # only src touches c
    lh.branch("main").update("db.t", "k = 'a'", {"n": "n + 100"})  # A3 on a
    lh.create_branch("try", "main")
    result = lh.merge("dev", "try", on_conflict=mode)
    assert {c.rule for c in result.resolved} == {"A3"}
    assert rows(lh.read("db.t", "try"), "k", "n") == merged


@pytest.mark.parametrize("mode, merged", [("ours", [("a", 100), ("b", 5), ("c", 0)]),
                                          ("theirs", [("a", 6), ("b", 5), ("c", 0)])])
def test_on_conflict_takes_the_final_version_of_a_row_a_side_updated_twice(lh, spark, mode, merged):
    """src updates a twice and b once; dest updates a and deletes c (A1 and A3 in one segment): a is contested,
    b only src changed, c only dest deleted."""
    base_table(lh, spark, [("a", 0), ("b", 0), ("c", 0)], KN)
    lh.create_branch("dev")
    dev = lh.branch("dev")
    dev.update("db.t", "k = 'a'", {"n": "n + 1"})
    dev.compact("db.t")
    dev.update("db.t", "k in ('a', 'b')", {"n": "n + 5"})
    lh.branch("main").compact("db.t")
    lh.branch("main").update("db.t", "k = 'a'", {"n": "n + 100"})
    lh.branch("main").delete("db.t", "k = 'c'")
    lh.branch("main").insert("db.t", spark.createDataFrame([("c", 0)], KN))  # a CONFLICT cell: update x insert
    lh.create_branch("try", "main")
    result = lh.merge("dev", "try", on_conflict=mode)
    assert {c.rule for c in result.resolved} >= {"A3"}
    assert rows(lh.read("db.t", "try"), "k", "n") == merged


# ------------------------------------------------------------ the change feed across a merge commit
ID_NAME_N = "id int, name string, n int"
# Issue 67: every way a session applies keyless tombstones, and shuffle partitions as a user's session has them
# (test sessions run one); `make test` runs two, `make test-long` 1, 2 and 4, issue 55's reproduction 5 times
READ_PATHS = ("session", "udf", "join")
SHUFFLE_PARTITIONS = sized([2], [1, 2, 4])
RUNS = sized(1, 5)
# each file a scan partition of its own (its open cost counts as a whole partition's bytes), as a session with
# several cores splits a segment's files: test sessions (one core's parallelism) pack a scan's files into one
ONE_FILE_A_SCAN_PARTITION = ("spark.sql.files.openCostInBytes", str(128 << 20))


@pytest.fixture(params=READ_PATHS)
def read_path_lh(request, spark, warehouse, catalog_url, monkeypatch):
    """A Lakehouse whose reads apply tombstones the session's own way (in-process: our extension's expression
    and Parquet source; through Spark Connect: the UDF), by the UDF as a user's own session does, or by the join
    (no jar)."""
    session = spark
    if request.param == "udf":
        if is_connect(spark):
            pytest.skip("through Spark Connect the session's own way is the UDF (the `session` case)")
        if not deletion_vectors.enabled(spark):
            pytest.skip("no deletion-vector jar (no JDK at install): reads join (the `join` case)")
        monkeypatch.setattr(deletion_vectors, "FUNCTION", "branchspark_deleted_row_as_udf")
        session = spark.newSession()  # registered per session; the test session's extension shadows the name
    elif request.param == "join":
        monkeypatch.setenv("BRANCHSPARK_DELETION_VECTORS", "off")
    lakehouse = Lakehouse(session, warehouse, catalog_url)
    yield lakehouse
    lakehouse.store.dispose()
    make_active(spark)


@pytest.mark.deep  # `make test-long`: 1, 2 and 4 shuffle partitions, 5 runs each (in-process and through Connect)
@pytest.mark.parametrize("partitions", SHUFFLE_PARTITIONS)
@pytest.mark.parametrize("scenario", REPRODUCTION, ids=["plain", "dest_compacted"])
def test_change_feed_across_a_merge_lists_no_intermediate_update_image(read_path_lh, scenario, partitions):
    """Issue 55's second reproduction, as issue 67 ran it: dev updates keyless rows in a chain, a clean merge;
    the feed across it, plain and net, is the difference of main's two versions. Writes split in two files each,
    as on two cores."""
    lh = read_path_lh
    with session_settings(lh.spark, {"spark.sql.shuffle.partitions": partitions, **dict([ONE_FILE_A_SCAN_PARTITION])}):
        for run in range(RUNS):
            if run:
                lh.drop_branch("dev", force=True)
                with lh.transaction("main", message="again") as tx:
                    tx.drop_database("db", cascade=True)
            problems = feed_problems(lh, lh.spark, scenario, split=2)
            assert not problems, f"run {run + 1}: " + "\n".join(problems)


OTHER_SCENARIOS = [name for name in SCENARIOS if name not in REPRODUCTION]
# `make test` reads each of these by one path, every path once (a scenario costs 15-25 s quiet); `make
# test-long` every scenario by every path
OTHER_READS = sized(list(zip(("join", "udf", "session", "udf"), OTHER_SCENARIOS)),
                    [(path, name) for path in READ_PATHS for name in OTHER_SCENARIOS])


@pytest.mark.deep
@pytest.mark.parametrize("read_path_lh, scenario", OTHER_READS, indirect=["read_path_lh"],
                         ids=[f"{path}-{name}" for path, name in OTHER_READS])
def test_change_feed_across_other_merges_is_the_difference(read_path_lh, scenario):
    """Compaction on the other side, a keyed chain, `on_conflict: ours|theirs` after src rebuilt the table."""
    with session_settings(read_path_lh.spark, dict([ONE_FILE_A_SCAN_PARTITION])):
        problems = feed_problems(read_path_lh, read_path_lh.spark, scenario, split=2)
    assert not problems, "\n".join(problems)


def test_change_feed_across_a_clean_count_merge_is_the_difference(lh, spark):
    """src overwrote and inserted, dest inserted: a count merge (SPEC 3.3) with no conflict."""
    base_table(lh, spark, [(1, "p", 1), (1, "p", 1), (2, "q", 0)], ID_NAME_N)
    lh.create_branch("dev")
    lh.branch("dev").overwrite("db.t", spark.createDataFrame([(1, "p", 1), (3, "r", 2), (3, "r", 2)], ID_NAME_N))
    lh.branch("dev").insert("db.t", spark.createDataFrame([(3, "r", 2), (2, "q", 0)], ID_NAME_N))
    lh.branch("main").insert("db.t", spark.createDataFrame([(1, "p", 1), (3, "r", 2)], ID_NAME_N))
    pre = head(lh, "main")
    lh.merge("dev", "main")
    post = head(lh, "main")
    columns = ("id", "name", "n")
    assert net_feed(lh, "db.t", pre, post, columns) == difference(lh, "db.t", pre, post, columns)


# ------------------------------------------------------------ tombstones read through the deletion-vector filter
ABC = "a int, b string, c int"


@pytest.fixture(params=["expression", "udf"])
def dv_lh(request, spark, warehouse, catalog_url, monkeypatch):
    """A Lakehouse whose reads filter deleted rows by our session extension's expression, or by the Java UDF as a
    session without the extension has it (a user's own session, a Connect server). The test session has the
    extension, whose function shadows any UDF of its name, so the UDF registers under another name here."""
    if not deletion_vectors.enabled(spark):
        pytest.skip("no deletion-vector jar (no JDK at install): reads join, nothing to check")
    session = spark
    if request.param == "udf":
        monkeypatch.setattr(deletion_vectors, "FUNCTION", "branchspark_deleted_row_as_udf")
        session = spark.newSession()  # registered per session
        assert deletion_vectors.enabled(session) and not deletion_vectors.scan_leaves_out_deleted(session, [])
    lakehouse = Lakehouse(session, warehouse, catalog_url)
    yield lakehouse
    lakehouse.store.dispose()
    make_active(spark)


def test_merge_of_an_overwrite_against_an_update_reads_tombstones_without_failing(dv_lh):
    lh = dv_lh
    spark = lh.spark  # the UDF's session: through Spark Connect a new session's frames do not mix with another's
    base_table(lh, spark, [(1, "p", 1), (1, "p", 1)], ABC, "db.t1")
    lh.create_branch("dev", "main")
    lh.branch("dev").overwrite("db.t1", spark.createDataFrame(
        [(1, "p", 1), (4, "q", 2), (3, "p", 0), (0, "q", 2), (3, "p", 0)], ABC))
    lh.branch("main").update("db.t1", "a % 4 = 1", {"b": "concat(b, '!')"})
    lh.merge("dev", "main")  # SPEC 3.3: the count rule merges it; an overwrite never conflicts
    # per distinct row: src removed one (1,p,1) and added the rest; dest turned both (1,p,1) into (1,p!,1)
    assert rows(lh.read("db.t1", "main"), "a", "b", "c") == sorted(
        [(1, "p!", 1), (1, "p!", 1), (4, "q", 2), (3, "p", 0), (0, "q", 2), (3, "p", 0)])


def test_merge_of_an_overwrite_and_a_delete_on_src_alone_reads_tombstones_without_failing(dv_lh):
    lh = dv_lh
    spark = lh.spark  # the UDF's session (see above)
    base_table(lh, spark, [(1, "p", 1), (1, "p", 1), (2, "q", 0)], ABC, "db.t1")
    lh.create_branch("dev", "main")
    dev = lh.branch("dev")
    dev.overwrite("db.t1", spark.createDataFrame([(1, "p", 1), (3, "r", 2), (3, "r", 2)], ABC))
    dev.add_column("db.t1", "d", "int")
    dev.delete("db.t1", "a = 3")
    lh.merge("dev", "main")
    assert rows(lh.read("db.t1", "main"), "a", "b", "c", "d") == [(1, "p", 1, None)]
