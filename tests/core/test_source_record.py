"""A run's record of the external tables it read (issue 68), on this suite's Spark: kept on its commit only (the
next commit starts without it), shown by `Lakehouse.log`, `branchspark log -v` and the web view's commit page,
and what `sources_as_of` finds for a commit or a branch. The whole path through dbt, Delta and Iceberg runs on
Spark 4.1 in tests/core/test_sources_spark41.py."""
import urllib.request

import pytest
from click.testing import CliRunner

from dbt.adapters.branchspark.cli.main import cli
from dbt.adapters.branchspark.core.errors import SourceUnavailable
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.core.sql import sources
from dbt.adapters.branchspark.ui.app import create_app
from tests.ui.conftest import TOKEN, Served

READ = {"lake.raw.orders": {"format": "iceberg", "version": 6020551873542218011},
        "raw.customers": {"format": "delta", "version": 3},
        "raw.payments": {"format": "parquet", "version": "unversioned"}}


@pytest.fixture
def recorded(spark, tmp_path):
    warehouse = str(tmp_path / "warehouse")
    lh = Lakehouse(spark, warehouse)
    with lh.transaction("main", message="a dbt run's landing") as tx:
        tx.create_database("analytics")
        tx.create_table_as("analytics.t", spark.createDataFrame([(1,)], "id int"))
        tx.sources = READ
    run = lh.get_branch("main").head
    with lh.transaction("main", message="a later write") as tx:
        tx.insert("analytics.t", spark.createDataFrame([(2,)], "id int"))
    yield lh, warehouse, run
    lh.store.dispose()


def test_the_record_stays_on_its_commit_and_lakehouse_log_shows_it(recorded):
    lh, _, run = recorded
    later, landing = lh.log("main", limit=2)
    assert landing.id == run and landing.sources == READ
    assert later.sources is None  # not carried to the next commit
    # a fresh store reads it back from the catalog, not from a cache
    assert Lakehouse(lh.spark, str(lh.warehouse.root)).store.get_commit(run).sources == READ


def test_branchspark_log_v_and_the_commit_page_show_the_versions(recorded):
    lh, warehouse, run = recorded
    shown = CliRunner().invoke(cli, ["--warehouse", warehouse, "log", "main", "-v"])
    assert shown.exit_code == 0, shown.output
    line = next(line for line in shown.output.splitlines() if "sources:" in line)
    assert line.strip() == ("sources: lake.raw.orders (iceberg snapshot 6020551873542218011), raw.customers "
                            "(delta version 3), raw.payments (parquet, unversioned)")
    assert "sources:" not in CliRunner().invoke(cli, ["--warehouse", warehouse, "log", "main"]).output
    with Served(create_app(lh, TOKEN, reads_need_token=False)) as server:
        page = urllib.request.urlopen(f"{server.url}/commit/{run}").read().decode()
    assert "raw.customers (delta version 3)" in page and "lake.raw.orders (iceberg snapshot 6020551873542218011)" \
        in page and "raw.payments (parquet, unversioned)" in page


def test_sources_as_of_a_branch_finds_its_newest_recorded_run_and_names_a_missing_source(recorded):
    lh, _, run = recorded
    assert sources.recorded_commit(lh, "main").id == run
    assert sources.recorded_commit(lh, run[:12]).id == run
    ledger = sources.SourceLedger()
    ledger.begin(run[:12])
    ledger._resolve_pins(lh)
    assert ledger.pins == READ and ledger.pinned_commit == run
    with pytest.raises(SourceUnavailable) as missing:
        sources.raise_no_version(run[:12], run, "lake.raw.events")
    assert str(missing.value).startswith(f"sources_as_of {run[:12]}: commit {run[:12]} recorded no version for "
                                         "source lake.raw.events")
    first = lh.log("main")[-1].id  # the catalog's first commit, before any run
    with pytest.raises(SourceUnavailable, match="no commit in its history recorded source versions"):
        sources.recorded_commit(lh, first)


def test_a_view_of_the_branch_records_the_tables_of_sparks_catalogs_it_reads_when_read_later(spark, tmp_path):
    """A view built by an earlier statement (an earlier dbt run) and read by a later one reads Spark's tables as the
    reading statement does: recorded on that invocation's record (and its model's commit), and pinned under
    sources_as_of (tests/core/test_sources_spark41.py, with Iceberg). Before: only the statement that built the view
    recorded them, so a later run that read the view recorded nothing and read the source unpinned."""
    spark.sql("create database if not exists raw_record")
    spark.sql(f"create table if not exists raw_record.payments (order_id int, amount double) using parquet "
              f"location '{tmp_path / 'payments'}'")
    spark.sql("insert into raw_record.payments values (100, 5.0)")
    lh = Lakehouse(spark, str(tmp_path / "warehouse"))
    try:
        lh.sql("create schema analytics")
        lh.sql("create view analytics.paid as select order_id from raw_record.payments")
        sources.ledger.begin()  # a later invocation: nothing read yet
        sources.ledger.begin_model()
        assert [tuple(r) for r in lh.sql("select * from analytics.paid").collect()] == [(100,)]
        expected = {"raw_record.payments": {"format": "parquet", "version": sources.UNVERSIONED}}
        assert sources.ledger.recorded() == expected
        assert sources.ledger.model_reads() == expected
    finally:
        sources.ledger.begin()
        lh.store.dispose()
        spark.sql("drop table if exists raw_record.payments")


def test_a_name_its_sql_already_reads_at_a_version_is_recorded_at_it_and_not_pinned_again():
    """A view built under sources_as_of keeps `VERSION AS OF n` in its stored SQL: read again under another
    sources_as_of it reads that version (not a second clause, which Spark would refuse) and records it."""
    ledger = sources.SourceLedger()
    ledger.begin()
    ledger.pins = {}  # as once sources_as_of's commit is resolved
    ledger.read["raw.customers"] = {"format": "delta", "version": 1}
    assert ledger.pin(None, None, "select * from raw.customers c") == "select * from raw.customers VERSION AS OF 1 c"
    pinned = "select * from raw.customers version as of 4 c join raw.customers for timestamp as of '2026-12-01' d"
    assert ledger.pin(None, None, pinned) == pinned
