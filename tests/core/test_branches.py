"""Branches: creation from a branch, a commit or a time; drop, list, log, protect."""
import sqlalchemy as sa
import pytest

from dbt.adapters.branchspark.core import errors
from sorted_rows import rows


def count_rows(lh):
    with lh.store.engine.connect() as conn:
        names = sa.inspect(conn).get_table_names()
        return {n: conn.execute(sa.text(f"select count(*) from {n}")).scalar() for n in names if n.startswith("bs_")}


@pytest.mark.catalog_only
def test_new_catalog_has_main_and_is_migrated(lh):
    assert [b.name for b in lh.list_branches()] == ["main"]
    with lh.store.engine.connect() as conn:
        assert conn.execute(sa.text("select version_num from alembic_version")).scalar() == latest_migration()


def latest_migration() -> str:
    """The head revision of the catalog's migrations, as Alembic reads them from the package."""
    from alembic.script import ScriptDirectory

    from dbt.adapters.branchspark.core.catalog import store

    return ScriptDirectory(str(store._MIGRATIONS)).get_current_head()


def test_reopening_a_catalog_keeps_its_state(lh, spark, orders, warehouse):
    from dbt.adapters.branchspark.core.lakehouse import Lakehouse

    again = Lakehouse(spark, warehouse, lh.catalog_url)
    assert rows(again.read(orders)) == rows(lh.read(orders))
    assert [b.name for b in again.list_branches()] == ["main"]


def test_create_branch_writes_one_row_and_no_per_table_rows(lh, orders):
    before = count_rows(lh)
    lh.create_branch("dev")
    after = count_rows(lh)
    changed = {name: after[name] - before[name] for name in after if after[name] != before[name]}
    assert changed == {"bs_branches": 1}


def test_branch_from_branch_commit_and_time(lh, spark, orders):
    first = lh.get_branch("main").head
    first_ts = lh.store.get_commit(first).ts
    lh.branch("main").insert(orders, spark.createDataFrame([(6, 60.0)], "id bigint, amount double"))
    lh.create_branch("from_branch", "main")
    lh.create_branch("from_commit", first)
    lh.create_branch("from_prefix", first[:10])
    lh.create_branch("from_time", "main", as_of=first_ts)
    lh.create_branch("from_at_syntax", f"main@{first_ts.isoformat()}")
    assert lh.read(orders, at="from_branch").count() == 6
    for name in ("from_commit", "from_prefix", "from_time", "from_at_syntax"):
        assert lh.get_branch(name).head == first
        assert lh.read(orders, at=name).count() == 5


@pytest.mark.catalog_only
def test_drop_and_list(lh):
    lh.create_branch("b1")
    lh.create_branch("b2")
    assert [b.name for b in lh.list_branches()] == ["b1", "b2", "main"]
    lh.drop_branch("b1")
    assert [b.name for b in lh.list_branches()] == ["b2", "main"]
    with pytest.raises(errors.BranchNotFound, match="branch 'b1' does not exist"):
        lh.drop_branch("b1")
    with pytest.raises(errors.InvalidArgument, match="cannot be dropped"):
        lh.drop_branch("main")


def test_log_lists_commits_with_operations_newest_first(lh, spark, orders):
    lh.branch("main").delete(orders, "id = 1", message="drop order 1", author="ana")
    log = lh.log("main")
    assert [c.message for c in log] == ["drop order 1", "setup", "initialize catalog"]
    assert log[0].author == "ana"
    assert [(o.object_name, o.op) for o in log[0].operations] == [("shop.orders", "delete")]
    assert [o.op for o in log[1].operations] == ["create", "create", "insert"]
    assert log[0].ts > log[1].ts > log[2].ts and log[0].seq > log[1].seq
    assert [c.message for c in lh.log("main", limit=1)] == ["drop order 1"]


@pytest.mark.catalog_only
def test_invalid_and_duplicate_branch_names(lh):
    for bad in ("", "a..b", "-x", "x/", "a@b", "has space"):
        with pytest.raises(errors.InvalidName):
            lh.create_branch(bad)
    lh.create_branch("dev")
    with pytest.raises(errors.AlreadyExists, match="branch 'dev' already exists"):
        lh.create_branch("dev")
    with pytest.raises(errors.CommitNotFound, match="no commit matches 'nope'"):
        lh.create_branch("x", "nope")


def test_protected_branch_refuses_direct_writes(lh, spark, orders):
    lh.protect_branch("main")
    head = lh.get_branch("main").head
    with pytest.raises(errors.ProtectedBranch, match="only changes by merge"):
        lh.branch("main").delete(orders, "id = 1")
    assert lh.get_branch("main").head == head
    lh.protect_branch("main", False)
    lh.branch("main").delete(orders, "id = 1")
    assert lh.read(orders).count() == 4
