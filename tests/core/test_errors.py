"""Bad input: one clear error line naming the object and what to do, and nothing changed."""
import pytest
from pyspark.sql import types as T

from dbt.adapters.branchspark.core import errors
from sorted_rows import rows


def unchanged(lh, orders, head, data):
    assert lh.get_branch("main").head == head
    assert rows(lh.read(orders)) == data


@pytest.mark.parametrize("action, error, text", [
    (lambda lh, s: lh.branch("nope"), errors.BranchNotFound, "branch 'nope' does not exist"),
    (lambda lh, s: lh.branch("main").delete("shop.missing", "true"), errors.TableNotFound,
     "table 'shop.missing' does not exist on branch 'main'"),
    (lambda lh, s: lh.branch("main").create_table("nodb.t", T.StructType([T.StructField("a", T.LongType())])),
     errors.DatabaseNotFound, "database 'nodb' does not exist"),
    (lambda lh, s: lh.branch("main").create_database("shop"), errors.AlreadyExists, "database 'shop' already exists"),
    (lambda lh, s: lh.branch("main").create_database("bad-name"), errors.InvalidName, "invalid database name"),
    (lambda lh, s: lh.branch("main").create_table("shop.orders", T.StructType([T.StructField("a", T.LongType())])),
     errors.AlreadyExists, "table 'shop.orders' already exists"),
    (lambda lh, s: lh.branch("main").alter_column_type("shop.orders", "amount", "float"), errors.InvalidSchemaChange,
     "from double to float"),
    (lambda lh, s: lh.branch("main").add_column("shop.orders", "_bs_x", "int"), errors.InvalidName, "reserved"),
    (lambda lh, s: lh.branch("main").drop_column("shop.orders", "nope"), errors.ColumnNotFound,
     "column 'nope' does not exist"),
])
def test_bad_input_raises_one_line_and_changes_nothing(lh, spark, orders, action, error, text):
    head, data = lh.get_branch("main").head, rows(lh.read(orders))
    with pytest.raises(error, match=text) as caught:
        action(lh, spark)
    assert "\n" not in str(caught.value)
    unchanged(lh, orders, head, data)


def test_write_to_a_dropped_table_is_refused(lh, spark, orders):
    lh.create_branch("dev")
    lh.branch("dev").drop_table(orders)
    with pytest.raises(errors.TableNotFound, match="dropped on this branch"):
        lh.branch("dev").insert(orders, spark.createDataFrame([(9, 9.0)], "id bigint, amount double"))
    assert lh.read(orders).count() == 5


def test_stale_head_with_a_conflicting_change_is_refused_not_overwritten(lh, spark, orders):
    """The head moved and the landed commit changed the table the slow transaction read and wrote: refused
    (a transaction's code cannot be re-run), never settled by the merge rules; nothing is written."""
    head, data = lh.get_branch("main").head, rows(lh.read(orders))
    slow = lh.transaction("main", message="slow writer")
    slow.update(orders, "id = 1", {"amount": "amount + 1"})
    lh.branch("main").update(orders, "id = 2", {"amount": "amount + 2"}, message="fast writer")
    fast_head = lh.get_branch("main").head
    with pytest.raises(errors.WriteConflict, match="moved while this transaction ran.*run the transaction again") as caught:
        slow.commit()
    assert "\n" not in str(caught.value)
    assert lh.get_branch("main").head == fast_head != head
    assert rows(lh.read(orders)) == [(1, 10.0), (2, 22.0), (3, 30.0), (4, 40.0), (5, 50.0)]
    assert len(data) == 5
    assert [b.name for b in lh.store.list_branches()] == ["main"]  # the hidden retry branch is gone


def test_failed_operation_inside_a_transaction_commits_nothing(lh, spark, orders):
    head = lh.get_branch("main").head
    with pytest.raises(errors.ColumnNotFound):
        with lh.transaction("main") as tx:
            tx.delete(orders, "id = 1")
            tx.drop_column(orders, "nope")
    assert lh.get_branch("main").head == head and lh.read(orders).count() == 5
