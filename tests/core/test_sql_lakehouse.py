"""Branches in SQL through `Lakehouse.sql` (SPEC 9): every branch statement, reads at a version, the table
functions, and Spark SQL on a branch, on a real catalog file, real Parquet and a real SparkSession."""
import pytest

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.changes import table_changes
from dbt.adapters.branchspark.core.diff import counts
from dbt.adapters.branchspark.core.diff import THREE_DOT
from dbt.adapters.branchspark.core.sql.statements import SqlSyntaxError
from dbt.adapters.branchspark.ui import compare


def _ids(df) -> list:
    return sorted(r["id"] for r in df.collect())


def test_writes_land_on_the_session_branch_one_commit_each(lh, orders):
    lh.create_branch("dev")
    before = len(lh.log("dev"))
    lh.sql("INSERT INTO shop.orders VALUES (6, 60.0); DELETE FROM shop.orders WHERE id = 1", branch="dev")
    assert _ids(lh.read("shop.orders", at="dev")) == [2, 3, 4, 5, 6]
    assert _ids(lh.read("shop.orders", at="main")) == [1, 2, 3, 4, 5]  # main untouched
    log = lh.log("dev")
    assert len(log) == before + 2 and log[0].message == "sql delete shop.orders"
    assert log[0].author.startswith("sql")
    # a read sees the session's branch
    assert lh.sql("SELECT count(*) AS n FROM shop.orders", branch="dev").first()["n"] == 5


def test_merge_branch_with_no_to_merges_into_the_session_branch_and_returns_the_report(lh, orders):
    session = lh.sql_session("main")
    assert session.sql("CREATE BRANCH dev").columns == []  # a statement without rows: no columns
    lh.sql("UPDATE shop.orders SET amount = 99 WHERE id = 2", branch="dev")
    report = session.sql("MERGE BRANCH dev").collect()
    assert {(r["src"], r["dest"], r["status"]) for r in report} == {("dev", "main", "fast-forward")} or \
        {(r["src"], r["dest"], r["status"]) for r in report} == {("dev", "main", "merged")}
    assert lh.read("shop.orders", at="main").filter("id = 2").first()["amount"] == 99
    # a dry run reports and writes nothing
    lh.sql("DELETE FROM shop.orders WHERE id = 3", branch="dev")
    head = lh.get_branch("main").head
    rows = session.sql("MERGE BRANCH dev TO main WITH (dry_run = true)").collect()
    assert rows[0]["status"] == "dry-run" and lh.get_branch("main").head == head


def test_a_merges_dry_run_counts_the_rows_each_table_would_gain_and_lose(lh, orders, spark):
    """Issue 71: `MERGE BRANCH feat TO main WITH (dry_run = true)` reported NULL in rows_added and rows_deleted;
    it reports what the web view's compare main...feat counts (an update is a delete and an insert)."""
    with lh.transaction("main", message="keyed") as tx:
        tx.create_table_as("shop.customers", spark.createDataFrame(
            [(i, f"c{i}") for i in range(1, 5)], "id bigint, name string"), primary_key=["id"])
    lh.sql("CREATE BRANCH feat")
    lh.sql("INSERT INTO shop.orders VALUES (6, 60.0), (7, 70.0); DELETE FROM shop.orders WHERE id = 1; "
           "UPDATE shop.orders SET amount = 99 WHERE id = 2; UPDATE shop.customers SET name = 'x' WHERE id < 3; "
           "DELETE FROM shop.customers WHERE id = 4", branch="feat")
    lh.sql("INSERT INTO shop.customers VALUES (9, 'c9')", branch="main")  # main moved: a three-way merge
    head = lh.get_branch("main").head
    rows = {r["object"]: r for r in lh.sql("MERGE BRANCH feat TO main WITH (dry_run = true)").collect()}
    assert lh.get_branch("main").head == head
    assert {o: (r["status"], r["rows_added"], r["rows_deleted"]) for o, r in rows.items()} == {
        "shop.orders": ("dry-run", 3, 2),  # 2 inserted + 1 update image; 1 deleted + 1 updated away
        "shop.customers": ("dry-run", 2, 3)}  # 2 keys modified; 1 deleted
    assert "2 modified" in rows["shop.customers"]["detail"]
    shown = {t.table: t for t in compare.summary(lh, "main", "feat", THREE_DOT).tables}  # the web view's counts
    for name, row in rows.items():
        t = shown[name]
        assert (row["rows_added"], row["rows_deleted"]) == (t.added + t.modified, t.removed + t.modified)
    # the merge itself reports what its commit changed on main: here what feat changed, as main's change feed
    # across the merge lists it (main's own insert is no change of the merge's)
    merged = {r["object"]: r for r in lh.sql("MERGE BRANCH feat TO main").collect()}
    merge_commit = lh.get_branch("main").head
    for name, row in merged.items():
        feed = table_changes(lh, name, head, merge_commit, net=True)
        types = [r["_change_type"] for r in feed.select("_change_type").collect()]
        assert (row["status"], row["rows_added"], row["rows_deleted"]) == (
            "merged", types.count("insert"), types.count("delete")) == (
            "merged", rows[name]["rows_added"], rows[name]["rows_deleted"]), name
    assert "2 modified" in merged["shop.customers"]["detail"]


def test_a_merges_report_counts_what_its_commit_changed_on_dest(lh, orders):
    """Both sides changed one keyless table: the merge reports main's gain and loss (feat's inserts; its delete
    main had made too), not feat's own change (2 added, 1 deleted)."""
    lh.sql("CREATE BRANCH feat")
    lh.sql("INSERT INTO shop.orders VALUES (6, 60.0), (7, 70.0); DELETE FROM shop.orders WHERE id = 1",
           branch="feat")
    lh.sql("DELETE FROM shop.orders WHERE id IN (1, 2)", branch="main")  # feat's delete too (A2: taken once)
    before = lh.get_branch("main").head
    row = lh.sql("MERGE BRANCH feat TO main").first()
    types = [r["_change_type"] for r in table_changes(lh, "shop.orders", before, lh.get_branch("main").head)
             .select("_change_type").collect()]
    assert (row["object"], row["rows_added"], row["rows_deleted"]) == ("shop.orders", 2, 0) == (
        "shop.orders", types.count("insert"), types.count("delete"))
    assert _ids(lh.read("shop.orders", at="main")) == [3, 4, 5, 6, 7]



def test_a_merge_whose_count_fails_still_reports_that_it_merged(lh, orders, monkeypatch):
    """The count runs after the merge commit landed: its failure is a note on the report, not a failed merge."""
    def unreadable(*args, **kwargs):
        raise RuntimeError("[PATH_NOT_FOUND] Path does not exist: file:/lost\nstack")

    monkeypatch.setattr(counts, "branch_diff", unreadable)
    lh.sql("CREATE BRANCH feat")
    lh.sql("INSERT INTO shop.orders VALUES (6, 60.0)", branch="feat")
    lh.sql("INSERT INTO shop.orders VALUES (7, 70.0)", branch="main")
    row = lh.sql("MERGE BRANCH feat TO main").first()
    assert (row["status"], row["rows_added"], row["rows_deleted"]) == ("merged", None, None)
    assert row["detail"].endswith("rows not counted: [PATH_NOT_FOUND] Path does not exist: file:/lost")
    assert _ids(lh.read("shop.orders", at="main")) == [1, 2, 3, 4, 5, 6, 7]

def test_a_conflicting_merge_stops_with_its_report_and_changes_nothing(lh, orders):
    lh.sql("CREATE BRANCH dev; CREATE BRANCH other")
    lh.sql("UPDATE shop.orders SET amount = 1 WHERE id = 1", branch="dev")
    lh.sql("DELETE FROM shop.orders WHERE id = 1", branch="other")
    head = lh.get_branch("other").head
    with pytest.raises(errors.MergeConflict) as stopped:
        lh.sql("MERGE BRANCH dev TO other")
    assert lh.get_branch("other").head == head
    assert [c.rule for c in stopped.value.report.conflicts] == ["A1"]
    # on_conflict settles it, in one merge commit with two parents
    rows = lh.sql("MERGE BRANCH dev TO other WITH (on_conflict = 'theirs')").collect()
    assert "settled by on_conflict" in {r["action"] for r in rows}
    assert len(lh.log("other", limit=1)[0].parents) == 2
    assert lh.read("shop.orders", at="other").filter("id = 1").first()["amount"] == 1


def test_a_paused_merge_shows_its_status_resolves_and_continues(lh, orders):
    lh.sql("CREATE BRANCH dev; CREATE BRANCH other")
    lh.sql("UPDATE shop.orders SET amount = 1 WHERE id = 1", branch="dev")
    lh.sql("UPDATE shop.orders SET amount = 2 WHERE id = 1", branch="other")
    session = lh.sql_session("other")
    head = lh.get_branch("other").head
    # a paused merge aborted: the branch as it was, nothing left paused
    assert session.sql("MERGE BRANCH dev WITH (on_conflict = 'pause')").first()["status"] == "paused"
    aborted = session.sql("ABORT MERGE ON other")
    assert aborted.columns == [] and lh.get_branch("other").head == head
    assert session.sql("SHOW MERGE STATUS").first()["phase"] == "not started"
    assert session.sql("SELECT amount FROM shop.orders WHERE id = 1").first()["amount"] == 2
    paused = session.sql("MERGE BRANCH dev WITH (on_conflict = 'pause')").collect()
    assert paused[0]["status"] == "paused"
    status = session.sql("SHOW MERGE STATUS").collect()
    assert [(r["phase"], r["table"], r["open_conflicts"]) for r in status] == [("resolving data", "shop.orders", 1)]
    session.sql("RESOLVE CONFLICTS ON other TABLE shop.orders TAKE THEIRS")
    done = session.sql("CONTINUE MERGE").collect()
    assert done[0]["status"] == "merged"
    assert session.sql("SELECT amount FROM shop.orders WHERE id = 1").first()["amount"] == 1
    assert session.sql("SHOW MERGE STATUS ON other").first()["phase"] == "finished"
    assert list(lh.log("other", limit=1)[0].parents) == [head, lh.get_branch("dev").head]


def test_branches_log_use_and_drop(lh, orders):
    session = lh.sql_session("main")
    session.sql("CREATE BRANCH IF NOT EXISTS dev FROM main")
    session.sql("CREATE BRANCH IF NOT EXISTS dev FROM main")  # exists: left as it is
    first = lh.log("main")[-1]
    session.sql(f"CREATE BRANCH old FROM main AT TIMESTAMP '{first.ts.isoformat()}'")
    assert lh.get_branch("old").head == first.id
    branches = {r["branch"]: r for r in session.sql("SHOW BRANCHES").collect()}
    assert set(branches) == {"main", "dev", "old"} and branches["main"]["current"] and not branches["dev"]["current"]
    session.sql("USE BRANCH dev")
    assert session.branch == "dev"
    session.sql("INSERT INTO shop.orders VALUES (7, 70.0)")
    log = session.sql("SHOW LOG LIMIT 1").collect()
    assert len(log) == 1 and log[0]["message"] == "sql insert shop.orders" and "insert shop.orders" in log[0]["operations"]
    assert [r["commit"] for r in session.sql("SHOW LOG ON main").collect()] == [c.id[:12] for c in lh.log("main")]
    with pytest.raises(errors.InvalidArgument, match="this session's branch"):
        session.sql("DROP BRANCH dev")
    with pytest.raises(errors.InvalidArgument, match="no other branch reaches"):
        lh.sql("DROP BRANCH dev")
    session.sql("USE BRANCH main; DROP BRANCH dev FORCE; DROP BRANCH IF EXISTS nope")
    assert not lh.branch_exists("dev")
    with pytest.raises(errors.BranchNotFound):
        session.sql("USE BRANCH nope")


def test_protected_branches_refuse_writes_but_take_merges(lh, orders):
    lh.sql("CREATE BRANCH dev")
    lh.protect_branch("main")
    head = lh.get_branch("main").head
    with pytest.raises(errors.ProtectedBranch):
        lh.sql("INSERT INTO shop.orders VALUES (8, 80.0)")
    assert lh.get_branch("main").head == head
    lh.sql("INSERT INTO shop.orders VALUES (8, 80.0)", branch="dev")
    lh.sql("MERGE BRANCH dev")
    assert 8 in _ids(lh.read("shop.orders"))


def test_reads_at_a_version_and_the_table_functions(lh, orders):
    lh.sql("CREATE BRANCH dev")
    base = lh.get_branch("main").head
    lh.sql("DELETE FROM shop.orders WHERE id = 5; INSERT INTO shop.orders VALUES (9, 90.0)", branch="dev")
    at_dev = lh.sql("SELECT id FROM shop.orders VERSION AS OF 'dev' ORDER BY id")
    assert _ids(at_dev) == [1, 2, 3, 4, 9]
    assert _ids(lh.sql(f"SELECT * FROM shop.orders VERSION AS OF '{base[:12]}'", branch="dev")) == [1, 2, 3, 4, 5]
    created = lh.log("main")[0].ts
    old = lh.sql(f"SELECT * FROM shop.orders TIMESTAMP AS OF '{created.isoformat()}'", branch="dev")
    assert _ids(old) == [1, 2, 3, 4, 5]
    changes = lh.sql(f"SELECT id, _change_type FROM branch_changes('shop.orders', '{base}', 'dev')").collect()
    assert sorted((r["id"], r["_change_type"]) for r in changes) == [(5, "delete"), (9, "insert")]
    # the same columns as dbt's relation (and as table_changes)
    from dbt.adapters.branchspark.changes import table_changes
    assert lh.sql(f"SELECT * FROM branch_changes('shop.orders', '{base}', 'dev')").columns == \
        table_changes(lh, "shop.orders", base, "dev").columns
    diff = lh.sql("SELECT _diff_type, id FROM branch_diff('main', 'dev', 'shop.orders')").collect()
    assert sorted((r["_diff_type"], r["id"]) for r in diff) == [("added", 9), ("removed", 5)]
    snapshot = lh.sql("SELECT count(*) AS n FROM branch_changes('shop.orders', 0, 'dev')").first()["n"]
    assert snapshot == 5


def test_a_bad_statement_is_one_line_with_its_position_and_changes_nothing(lh, orders):
    head = lh.get_branch("main").head
    with pytest.raises(SqlSyntaxError) as bad:
        lh.sql("INSERT INTO shop.orders VALUES (6, 60.0);\nMERGE BRANCH dev TO")
    assert str(bad.value) == ("syntax error at line 2, column 20: expected the branch to merge into after TO, "
                              "found the end of the statement")
    # the script is checked before its first statement runs: nothing changed
    assert lh.get_branch("main").head == head
    with pytest.raises(SqlSyntaxError, match="column 41: expected a quoted version"):
        lh.sql("SELECT * FROM shop.orders VERSION AS OF dev")
    with pytest.raises(errors.NotFound, match="'nope'"):  # no branch, nor a commit, of that name
        lh.sql("MERGE BRANCH nope")
    assert lh.get_branch("main").head == head
