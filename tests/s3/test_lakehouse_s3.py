"""A lakehouse on S3 (moto) gives the rows a local warehouse gives: writes with deletion vectors, a keyed and a
keyless cell of the merge rules (one with a conflict), changes, diff, gc, reads through `branchspark serve`
by pyiceberg and DuckDB; and a deleted or damaged object under a table is one line that changes nothing."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
import requests
from click.testing import CliRunner
from pyiceberg.catalog.rest import RestCatalog

from dbt.adapters.branchspark.changes import table_changes
from dbt.adapters.branchspark.cli.main import cli
from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.diff import branch_diff
from dbt.adapters.branchspark.core.diff.report import report
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from tests.iceberg_clients import duckdb_connection, duckdb_attach, served
from tests.s3_store import keys, s3_client

ORDERS = "id bigint, amount double"
EVENTS = "k bigint, v string"


def build(lh: Lakehouse, spark) -> dict:
    """The same history on any warehouse; returns what to compare."""
    df = spark.createDataFrame
    with lh.transaction("main", message="setup") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.orders", df([(i, float(i)) for i in range(1, 7)], ORDERS), primary_key=["id"])
        tx.create_table_as("shop.events", df([(i % 3, f"e{i}") for i in range(9)], EVENTS))  # keyless
    base = lh.resolve("main").id
    lh.create_branch("dev")
    dev, main = lh.branch("dev"), lh.branch("main")
    dev.upsert("shop.orders", df([(2, 20.0), (3, 30.0)], ORDERS))
    dev.delete("shop.events", "k = 1")  # a keyless tombstone: read through deletion vectors
    main.upsert("shop.orders", df([(3, 33.0), (9, 9.0)], ORDERS))  # id 3: both sides update it, differently
    main.insert("shop.events", df([(5, "main")], EVENTS))
    head = lh.get_branch("main").head
    with pytest.raises(errors.MergeConflict):  # keyed update/update on id 3: aborts, main unchanged
        lh.merge("dev", "main")
    assert lh.get_branch("main").head == head
    diff = report(branch_diff(lh, "main", "dev"))
    merged = lh.merge("dev", "main", on_conflict="theirs")  # keyed cell resolved by the source (dev); keyless merged
    assert merged.status == "merged"
    return {
        "orders": sorted(tuple(r) for r in lh.read("shop.orders").collect()),
        "events": sorted(tuple(r) for r in lh.read("shop.events").collect()),
        "changes": sorted(tuple(r) for r in table_changes(lh, "shop.events", base, "main")
                          .select("k", "v", "_change_type").collect()),
        "diff": sorted((t.table, t.added, t.removed, t.modified) for t in diff.tables),
    }


# What build() ends with on any warehouse: id 3 taken from dev (on_conflict theirs), k = 1 deleted on dev.
ORDERS_MERGED = [(1, 1.0), (2, 20.0), (3, 30.0), (4, 4.0), (5, 5.0), (6, 6.0), (9, 9.0)]
EVENTS_MERGED = sorted([(0, "e0"), (0, "e3"), (0, "e6"), (2, "e2"), (2, "e5"), (2, "e8"), (5, "main")])


def test_history_on_s3_gives_the_merged_rows_and_gc_stays_in_its_folders(spark, s3_warehouse, s3_catalog, bucket):
    lh = Lakehouse(spark, s3_warehouse, s3_catalog)
    on_s3 = build(lh, spark)
    assert on_s3["orders"] == ORDERS_MERGED and on_s3["events"] == EVENTS_MERGED
    assert sorted((k, v) for k, v, _ in on_s3["changes"]) == sorted([(1, "e1"), (1, "e4"), (1, "e7"), (5, "main")])
    assert {table for table, *_ in on_s3["diff"]} == {"shop.orders", "shop.events"}
    stored = keys(bucket, "lake/")
    assert not any("_temporary" in key for key in stored), "the S3A committer writes without _temporary renames"

    # gc: an orphan in a table's folder goes; objects outside the tables the catalog knows stay
    table_id = lh.snapshot().state("shop.orders").id
    client = s3_client()
    orphan = f"lake/tables/{table_id}/data/_bs_seg=s0000000000000099-orphan/part-0.parquet"
    foreign = ["lake/tables/0123456789abcdef0123456789abcdef/data/x.parquet", "elsewhere/keep.parquet"]
    for key in [orphan, *foreign]:
        client.put_object(Bucket=bucket, Key=key, Body=b"x")
    gone = lh.gc(grace_seconds=0)
    assert [path for path in gone.deleted_files if "orphan" in path]
    after = keys(bucket)
    assert orphan not in after and all(key in after for key in foreign)
    assert sorted(tuple(r) for r in lh.read("shop.orders").collect()) == ORDERS_MERGED


@pytest.mark.long_only
def test_history_on_s3_gives_the_rows_of_a_local_warehouse(spark, s3_warehouse, s3_catalog, tmp_path):
    """Every result of build() (rows, changes, diff counts) on S3 equals the same history's on local files."""
    local = build(Lakehouse(spark, str(tmp_path / "local")), spark)
    assert build(Lakehouse(spark, s3_warehouse, s3_catalog), spark) == local


def test_serve_on_s3_read_by_pyiceberg_and_duckdb(spark, s3_warehouse, s3_catalog):
    import os

    lh = Lakehouse(spark, s3_warehouse, s3_catalog)
    df = spark.createDataFrame
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.events", df([(i % 3, f"e{i}") for i in range(9)], EVENTS))
    lh.branch("main").delete("shop.events", "k = 2")  # a delete file the readers apply
    expected = sorted(tuple(r) for r in lh.read("shop.events").collect())
    with served(s3_warehouse, catalog=s3_catalog) as url:
        config = requests.get(f"{url}/v1/config", params={"warehouse": "main"}, timeout=30).json()
        defaults = config["defaults"]
        assert defaults["s3.endpoint"] == os.environ["AWS_ENDPOINT_URL"] and defaults["s3.path-style-access"] == "true"
        assert not any("secret" in key or "access-key" in key for key in defaults)  # no keys unless vended
        assert os.environ["AWS_SECRET_ACCESS_KEY"] not in json.dumps(config)
        table = RestCatalog("bs", uri=url, warehouse="main").load_table(("shop", "events"))
        assert table.metadata_location.startswith("s3://")
        assert sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist()) == expected
        con = duckdb_connection()
        endpoint = defaults["s3.endpoint"].split("://", 1)[1]
        con.execute(f"CREATE SECRET (TYPE s3, KEY_ID '{os.environ['AWS_ACCESS_KEY_ID']}', "
                    f"SECRET '{os.environ['AWS_SECRET_ACCESS_KEY']}', ENDPOINT '{endpoint}', URL_STYLE 'path', "
                    f"USE_SSL false, REGION 'us-east-1')")
        duckdb_attach(con, url, "main", "lake")
        assert sorted(con.execute("SELECT k, v FROM lake.shop.events").fetchall()) == expected


def test_pyiceberg_writes_a_branch_through_serve_on_s3(spark, s3_warehouse, s3_catalog):
    """Issue 69 on object storage: PyIceberg, with the credentials the server vends, creates a table on a branch,
    appends, deletes a row (a copy-on-write rewrite of the file) and appends again. Its files lie under the
    table's location in the bucket, the rows read back exact through the catalog and by Lakehouse.read, and the
    plain change feed of the delete is that one row (the rewrite's copies matched away)."""
    lh = Lakehouse(spark, s3_warehouse, s3_catalog)
    lh.create_branch("ingest")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string())])
    with served(s3_warehouse, "--vend-credentials", catalog=s3_catalog) as url:
        catalog = RestCatalog("bs", uri=url, warehouse="ingest")
        catalog.create_namespace("raw")
        catalog.create_table("raw.events", schema=schema).append(
            pa.table({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"]}, schema=schema))
        appended = lh.resolve("ingest")
        catalog.load_table("raw.events").delete("id = 2")
        deleted = lh.resolve("ingest")
        catalog.load_table("raw.events").append(pa.table({"id": [5], "v": ["e"]}, schema=schema))
        table = catalog.load_table("raw.events")
        rows = sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist())
        located = [task.file.file_path for task in table.scan().plan_files()]
    assert rows == [(1, "a"), (3, "c"), (4, "d"), (5, "e")]
    assert located and all(f.startswith(table.location() + "/") and f.startswith("s3") for f in located)
    assert sorted(tuple(r) for r in lh.read("raw.events", at="ingest").collect()) == rows
    changes = table_changes(lh, "raw.events", appended.id, deleted.id).collect()
    assert [(r["_change_type"], r["id"], r["v"]) for r in changes] == [("delete", 2, "b")]
    assert lh.resolve("main").id != deleted.id and not lh.snapshot("main").has_table("raw.events")


@pytest.mark.parametrize("damage", ["deleted", "damaged"])
def test_object_deleted_or_damaged_under_a_table_is_one_line(spark, s3_warehouse, s3_catalog, bucket, damage):
    lh = Lakehouse(spark, s3_warehouse, s3_catalog)
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.orders", spark.createDataFrame([(1, 1.0), (2, 2.0)], ORDERS))
    head = lh.get_branch("main").head
    victim = next(key for key in keys(bucket, "lake/tables/") if key.endswith(".parquet"))
    if damage == "deleted":
        s3_client().delete_object(Bucket=bucket, Key=victim)
    else:
        s3_client().put_object(Bucket=bucket, Key=victim, Body=b"not parquet at all")
    result = CliRunner().invoke(cli, ["--warehouse", s3_warehouse, "--catalog", s3_catalog, "show", "shop.orders"])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    error = result.output.splitlines()[-1]
    assert error.startswith("error: data file ") and victim.split("lake/", 1)[1] in error, result.output
    assert ("is missing" if damage == "deleted" else "is damaged") in error and "of table shop.orders" in error
    if damage == "damaged":  # the caller's own action on what the core's read handed out: the same line
        with pytest.raises(errors.DataFileUnreadable, match="of table shop.orders is damaged"):
            lh.read("shop.orders").count()
    assert lh.get_branch("main").head == head
