"""Views a merge carries when asked (merge/views.py): what dbt's merge_branch uses to publish a project's
views with its tables in one merge commit; without `views` the core merges only databases and tables."""
import pytest

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.sql.temp_views import views_of


@pytest.fixture
def shop(lh, spark):
    """main: shop.orders (ids 1..3) and the view shop.big (amount > 10); main is protected."""
    with lh.transaction("main", message="setup") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.orders", spark.createDataFrame([(1, 5.0), (2, 20.0), (3, 30.0)],
                                                                "id bigint, amount double"))
        tx.create_view("shop.big", "SELECT * FROM `shop.orders` WHERE amount > 10")
    lh.protect_branch("main")
    return lh


def view_sql(lh, branch, name):
    snapshot = lh.snapshot(branch)
    return snapshot.table(name).view_sql if snapshot.has_table(name) else None


def query(lh, spark, branch, view):
    """Rows of `view` as Spark SQL sees it on `branch` (the relations it reads are that branch's)."""
    views = views_of(spark)
    views.sync(lh, branch)
    views.ensure([view])
    return sorted(tuple(r) for r in spark.sql(f"SELECT * FROM `{view}`").collect())


def test_views_named_arrive_in_the_one_merge_commit(shop, spark):
    lh = shop
    lh.create_branch("dev")
    with lh.transaction("dev") as tx:
        tx.insert("shop.orders", spark.createDataFrame([(4, 40.0)], "id bigint, amount double"))
        tx.create_view("shop.big", "SELECT * FROM `shop.orders` WHERE amount > 25")  # changed on dev
        tx.create_view("shop.small", "SELECT * FROM `shop.orders` WHERE amount <= 10")  # new on dev
        tx.create_view("shop.scratch", "SELECT 1 AS one")  # not asked for: stays on dev
    main_head = lh.get_branch("main").head
    result = lh.merge("dev", "main", views=["shop.big", "SHOP.Small", "shop.missing"])
    head = lh.store.get_commit(lh.get_branch("main").head)
    assert head.parents == (main_head, lh.get_branch("dev").head)  # one merge commit, tables and views
    assert view_sql(lh, "main", "shop.big") == view_sql(lh, "dev", "shop.big")
    assert view_sql(lh, "main", "shop.small") == view_sql(lh, "dev", "shop.small")
    assert view_sql(lh, "main", "shop.scratch") is None
    assert lh.snapshot("main").table("shop.small").id == lh.snapshot("dev").table("shop.small").id
    assert {(o.object_kind, o.object_name, o.action) for o in result.outcomes} >= {
        ("view", "shop.big", "replaced"), ("view", "shop.small", "added")}
    ops = {(o.object_name, o.op) for o in lh.store.operations(head.id)}
    assert {("shop.big", "alter view"), ("shop.small", "create"), ("shop.orders", "insert")} <= ops
    assert query(lh, spark, "main", "shop.small") == [(1, 5.0)]
    assert query(lh, spark, "main", "shop.big") == [(3, 30.0), (4, 40.0)]


def test_without_views_the_core_merges_tables_only(shop, spark):
    lh = shop
    lh.create_branch("dev")
    with lh.transaction("dev") as tx:
        tx.create_view("shop.small", "SELECT * FROM `shop.orders` WHERE amount <= 10")
        tx.insert("shop.orders", spark.createDataFrame([(4, 40.0)], "id bigint, amount double"))
    lh.merge("dev", "main")
    assert view_sql(lh, "main", "shop.small") is None


def test_a_view_both_sides_changed_differently_is_a_conflict_and_nothing_lands(shop):
    lh = shop
    lh.create_branch("a")
    lh.create_branch("b")
    lh.branch("a").create_view("shop.big", "SELECT * FROM `shop.orders` WHERE amount > 15")
    lh.branch("b").create_view("shop.big", "SELECT * FROM `shop.orders` WHERE amount > 25")
    lh.merge("a", "main", views=["shop.big"])
    head = lh.get_branch("main").head
    dry = lh.merge("b", "main", views=["shop.big"], dry_run=True)
    assert [(c.object_kind, c.object_name, c.rule) for c in dry.conflicts] == [("view", "shop.big", "view")]
    with pytest.raises(errors.MergeConflict) as info:
        lh.merge("b", "main", views=["shop.big"])
    assert [c.as_row()["reason"] for c in info.value.report.conflicts] == [
        "both sides changed the view's SQL differently"]
    assert lh.get_branch("main").head == head
    assert "amount > 15" in view_sql(lh, "main", "shop.big")
    # the same change on both sides is no conflict; on_conflict theirs takes src's view
    lh.merge("b", "main", views=["shop.big"], on_conflict="theirs")
    assert "amount > 25" in view_sql(lh, "main", "shop.big")


def test_dest_keeps_its_own_change_when_src_left_the_view_alone(shop):
    lh = shop
    lh.create_branch("dev")
    lh.branch("dev").create_view("shop.other", "SELECT 2 AS two")
    lh.create_branch("fix")
    lh.branch("fix").create_view("shop.big", "SELECT * FROM `shop.orders` WHERE amount > 1")
    lh.merge("fix", "main", views=["shop.big"])
    lh.merge("dev", "main", views=["shop.big", "shop.other"])  # dev's shop.big is the base's: main keeps its own
    assert "amount > 1" in view_sql(lh, "main", "shop.big")
    assert view_sql(lh, "main", "shop.other") == "SELECT 2 AS two"
