"""One line instead of a traceback, naming the object and what to do, changing nothing (issue 20 item 6).

The catalog's own refusals (an older or newer catalog) are in test_catalog_binding.py, a malformed URL
in test_secrets.py.
"""
import glob
import os

import pytest
from click.testing import CliRunner
from pyspark.errors import PySparkException

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.cli.main import cli
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.core.merge.report import MergeResult
from sorted_rows import rows


def run(lh, *args):
    result = CliRunner().invoke(cli, ["--warehouse", lh.warehouse.root, "--catalog", lh.catalog_url, *args],
                                env={"COLUMNS": "300"})
    return result.exit_code, result.output


def data_files(warehouse, table_id):
    return sorted(glob.glob(f"{warehouse}/tables/{table_id}/data/*/*.parquet"))


@pytest.mark.parametrize("damage", ["missing", "damaged"])
def test_missing_or_damaged_segment_file_is_one_line(lh, spark, orders, damage, spark_connect_url):
    table_id = lh.snapshot().state(orders).id
    head = lh.get_branch("main").head
    victim = data_files(lh.warehouse.root, table_id)[0]
    if damage == "missing":
        os.remove(victim)
    else:
        with open(victim, "wb") as broken:
            broken.write(b"not parquet at all")
    code, out = run(lh, "show", orders)
    relative = victim[len(lh.warehouse.root) + 1:]
    assert code == 1 and "Traceback" not in out, out
    error = out.splitlines()[-1]
    assert error.startswith("error: data file ") and relative in error and "of table shop.orders" in error, out
    assert ("is missing" if damage == "missing" else "is damaged") in error and "restore" in error
    if spark_connect_url:  # a Connect client plans on the server, at the action: Spark's own line naming the
        # file, without the server's JVM stack (the CLI's line above is the same as in-process)
        with pytest.raises(PySparkException) as failed:
            lh.read(orders).count()
        assert relative in str(failed.value) and "\n" not in str(failed.value).strip(), str(failed.value)[:3000]
    else:  # found by the caller's own action on the DataFrame the core handed out (issue 51): the read names
        # the files the catalog recorded, looking none up (storage/known_files.py), so a missing one too
        with pytest.raises(errors.DataFileUnreadable, match=f"{relative} of table shop.orders is {damage}"):
            lh.read(orders).count()
    assert lh.get_branch("main").head == head


def test_bad_predicate_is_one_short_line_naming_only_the_tables_columns(lh, spark, orders):
    head = lh.get_branch("main").head
    with pytest.raises(errors.InvalidArgument) as caught:
        lh.branch("main").delete(orders, "amout > 10")
    message = str(caught.value)
    assert message.startswith("predicate 'amout > 10' is not valid on 'shop.orders'"), message
    assert "\n" not in message and len(message) < 400, message
    assert "_bs_" not in message and "`amount`" in message, message
    with pytest.raises(errors.InvalidArgument) as caught:
        lh.branch("main").update(orders, "id = 1", {"amount": "amout + 1"})
    assert "_bs_" not in str(caught.value) and "\n" not in str(caught.value)
    assert lh.get_branch("main").head == head


def test_view_reads_in_a_bare_session(lh, spark, orders, warehouse, catalog_url):
    """Issue 20: `Lakehouse.read` of a view failed in a session where the view's tables were not registered."""
    lh.branch("main").create_view("shop.big", "select * from `shop.orders` where amount > 20")
    lh.branch("main").create_view("shop.bigger", "select id from `shop.big` where amount > 30")
    for name in ("shop.orders", "shop.big", "shop.bigger"):
        spark.catalog.dropTempView(name)
    fresh = Lakehouse(spark, warehouse, lh.catalog_url)
    assert rows(fresh.read("shop.bigger")) == [(4,), (5,)]
    assert rows(fresh.read("shop.big").select("id")) == [(3,), (4,), (5,)]


def test_merge_conflict_is_raised_with_the_merge_result_as_readme_says(lh, spark, orders):
    """README: a conflicting merge raises MergeConflict (nothing written) whose `report` is the MergeResult;
    the CLI prints the one-line report."""
    lh.create_branch("dev")
    lh.branch("dev").update(orders, "id = 1", {"amount": "1.5"})
    lh.branch("main").update(orders, "id = 1", {"amount": "2.5"})
    head = lh.get_branch("main").head
    with pytest.raises(errors.MergeConflict) as caught:
        lh.merge("dev", "main")
    assert isinstance(caught.value.report, MergeResult) and caught.value.report.status == "conflicts"
    assert len(caught.value.report.conflicts) == 1 and lh.get_branch("main").head == head
    code, out = run(lh, "merge", "dev", "--into", "main")
    assert code == 1 and "Traceback" not in out and "conflict" in out.splitlines()[-1], out
    assert lh.get_branch("main").head == head
