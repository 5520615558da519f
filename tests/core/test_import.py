"""Zero-copy import (issue 70): a Parquet directory, Hive-partitioned or not, becomes a branch table in one commit
that writes no data file; its files are borrowed (gc never deletes them), later writes write owned files and merge
as always, and bad input is one line with nothing committed. Delta and Iceberg sources, built by Spark 4.1 with
their runtimes: test_import_spark41.py."""
from __future__ import annotations

import os

import pytest
from click.testing import CliRunner
from pyiceberg.catalog.rest import RestCatalog
from pyspark.sql import functions as F

from dbt.adapters.branchspark.cli.main import cli
from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.operations import Op
from tests.iceberg_clients import served


def parquet_files(root: str) -> set[str]:
    return {os.path.join(d, n) for d, _, names in os.walk(root) for n in names if n.endswith(".parquet")}


def source_files(root: str) -> dict[str, tuple[int, int]]:
    """Every file under a source and its (size, mtime in ns): what a borrowing reader must leave as it found."""
    return {os.path.join(d, n): (os.stat(os.path.join(d, n)).st_size, os.stat(os.path.join(d, n)).st_mtime_ns)
            for d, _, names in os.walk(root) for n in names}


def same_rows(left, right) -> None:
    assert left.count() == right.count()
    assert left.exceptAll(right).count() == 0 and right.exceptAll(left).count() == 0


@pytest.fixture(scope="module")
def sources(spark, tmp_path_factory):
    """Two Parquet directories written by Spark: `events` (300 rows, Hive-partitioned by region, a NULL region
    too) and `plain` (200 rows, no partitions, two files)."""
    root = tmp_path_factory.mktemp("import_sources")
    events = str(root / "events")
    (spark.range(300).selectExpr("id", "CAST(id * 1.5 AS DOUBLE) AS amount", "concat('e', id) AS label",
                                 "CASE WHEN id % 10 = 0 THEN NULL ELSE element_at(array('east', 'west', 'north'), "
                                 "CAST(id % 3 AS INT) + 1) END AS region")
     .write.partitionBy("region").parquet(events))
    plain = str(root / "plain")
    spark.range(200).selectExpr("id", "id % 7 AS bucket", "concat('p', id) AS name").repartition(2).write.parquet(plain)
    return {"events": events, "plain": plain}


def test_partitioned_directory_is_one_commit_of_borrowed_files(lh, spark, sources):
    before = source_files(sources["events"])
    info = lh.import_table(sources["events"], "raw.events")
    assert parquet_files(lh.warehouse.root) == set()  # zero data bytes written: no Parquet file at all
    same_rows(lh.read("raw.events"), spark.read.parquet(sources["events"]))
    table = lh.snapshot("main").table("raw.events")
    assert table.partition_by == ("region",)
    assert [c.name for c in table.columns] == ["id", "amount", "label", "region"]
    commit = lh.log("main", limit=1)[0]
    assert commit.id == info.id and "import raw.events" in commit.message
    ops = [(o.object_kind, o.op) for o in lh.store.operations(info.id)]
    assert ops == [("database", Op.CREATE), ("table", Op.CREATE), ("table", Op.INSERT)]
    insert = lh.store.operations(info.id)[-1].detail
    assert insert["imported_from"] == sources["events"] and insert["source_format"] == "parquet"
    state = lh.snapshot("main").state("raw.events")
    segments = lh.store.segments(state.segments).values()
    assert all(s.borrowed and s.path.startswith(sources["events"]) for s in segments)
    assert len(segments) == 4  # one per partition folder (east, west, north, NULL)
    assert source_files(sources["events"]) == before


def test_writes_after_import_are_owned_and_merge(lh, spark, sources):
    """Changes on two branches to rows of different borrowed segments (partition folders) merge row by row;
    the new rows are owned files in the warehouse, and the source is left as it was."""
    imported = lh.import_table(sources["events"], "raw.events").id
    before = source_files(sources["events"])
    new_row = spark.createDataFrame([(1000, 1.0, "new", "south")], "id bigint, amount double, label string, region string")
    lh.create_branch("dev")
    with lh.transaction("dev") as tx:
        assert tx.update("raw.events", "region = 'east'", {"label": "'changed'"}) == 90
        tx.insert("raw.events", new_row)
    with lh.transaction("main") as tx:
        assert tx.delete("raw.events", "region = 'west'") == 90
    written = parquet_files(lh.warehouse.root)
    assert written and all(p.startswith(lh.warehouse.root + "/tables/") for p in written)  # owned, in the warehouse
    lh.merge("dev", "main")
    expected = (spark.read.parquet(sources["events"]).where("region IS NULL OR region != 'west'")
                .withColumn("label", F.expr("IF(region = 'east', 'changed', label)")).unionByName(new_row))
    same_rows(lh.read("raw.events"), expected)
    changes = lh.sql(f"SELECT * FROM branch_changes('raw.events', '{imported}', 'dev')")
    old_east = spark.read.parquet(sources["events"]).where("region = 'east'")
    same_rows(changes.where("_change_type = 'delete'").select(*old_east.columns), old_east)
    same_rows(changes.where("_change_type = 'insert'").select(*old_east.columns),
              old_east.withColumn("label", F.lit("changed")).unionByName(new_row))
    assert source_files(sources["events"]) == before


def test_gc_never_deletes_borrowed_files(lh, spark, sources):
    """An overwrite and a compaction of an imported table, and an imported table whose branch is dropped (no
    commit reaches its files any more): gc deletes owned files only, and says it keeps the borrowed ones."""
    lh.import_table(sources["plain"], "raw.plain")
    lh.create_branch("scratch")
    lh.import_table(sources["events"], "raw.events", branch="scratch")
    before = {**source_files(sources["plain"]), **source_files(sources["events"])}
    with lh.transaction("main") as tx:
        tx.overwrite("raw.plain", spark.createDataFrame([(1, 1, "only")], "id bigint, bucket bigint, name string"))
    with lh.transaction("main") as tx:
        tx.insert("raw.plain", spark.createDataFrame([(2, 2, "two")], "id bigint, bucket bigint, name string"))
    with lh.transaction("main") as tx:
        tx.compact("raw.plain")
    lh.drop_branch("scratch", force=True)
    dry = lh.gc(grace_seconds=0, dry_run=True)
    events_files = len([p for p in source_files(sources["events"]) if p.endswith(".parquet")])
    assert dry.borrowed_files == len([p for p in before if p.endswith(".parquet")])
    assert dry.unreferenced_borrowed_files == events_files  # no commit reaches them, yet they are kept
    report = lh.gc(grace_seconds=0)
    assert not any(p.startswith(sources["plain"]) or p.startswith(sources["events"]) for p in report.deleted_files)
    assert {**source_files(sources["plain"]), **source_files(sources["events"])} == before
    first = lh.log("main")[-2].id  # the import's commit still reads the borrowed files
    same_rows(lh.read("raw.plain", first), spark.read.parquet(sources["plain"]))
    done = CliRunner().invoke(cli, ["--warehouse", lh.warehouse.root, "gc", "--grace", "0", "--dry-run"])
    assert "borrowed files of imported tables" in done.output and "gc never deletes them" in done.output


def test_bad_input_is_one_line_and_commits_nothing(lh, sources, tmp_path):
    lh.import_table(sources["plain"], "raw.plain")
    head = lh.get_branch("main").head
    bad = [
        (str(tmp_path / "nowhere"), {}, "no such file or directory"),
        (sources["plain"], {"format": "orc"}, "unknown import format 'orc'"),
        (sources["plain"], {"version": 3}, "a Parquet directory has no versions"),
        (sources["events"], {"name": "raw.plain"}, "already exists"),
        ("spark_catalog.no_such_db.customers", {}, "Spark's catalogs do not have it"),
        ("customers", {}, "give the table's location"),
        (sources["plain"], {"format": "delta"}, "Delta log cannot be read"),
        (sources["plain"], {"format": "iceberg"}, "metadata"),
        (sources["plain"], {"primary_key": ["bucket"]}, "repeats primary key"),
    ]
    for source, options, said in bad:
        name = options.pop("name", "raw.other")
        with pytest.raises(errors.BranchsparkError) as raised:
            lh.import_table(source, name, **options)
        text = str(raised.value)
        assert said in text and "\n" not in text, text
        assert lh.get_branch("main").head == head


def test_command_line_import(lh, spark, sources):
    """`branchspark import`: the same commit as Lakehouse.import_table (no Spark needed), its bad input one line."""
    runner = CliRunner()
    done = runner.invoke(cli, ["--warehouse", lh.warehouse.root, "import", sources["plain"], "--as", "raw.plain",
                               "--branch", "main", "--format", "parquet"])
    assert done.exit_code == 0, done.output
    assert "as raw.plain on main" in done.output and "files borrowed, none copied" in done.output
    same_rows(lh.read("raw.plain"), spark.read.parquet(sources["plain"]))
    head = lh.get_branch("main").head
    for args, said in ((["--format", "avro"], "unknown import format 'avro'"),
                       (["--version", "2", "--snapshot", "3"], "not both"),
                       (["--primary-key", "bucket", "--as", "raw.keyed"], "repeats primary key")):
        done = runner.invoke(cli, ["--warehouse", lh.warehouse.root, "import", sources["plain"], "--as", "raw.x", *args])
        assert done.exit_code != 0 and said in done.output, done.output
    done = runner.invoke(cli, ["--warehouse", lh.warehouse.root, "import", sources["events"], "--as", "raw.plain"])
    assert done.output.strip().count("\n") == 0 and "already exists" in done.output
    assert lh.get_branch("main").head == head


def test_served_to_iceberg_clients(lh, spark, sources):
    """`branchspark serve` names an imported table's borrowed files where they lie (a branchspark delete on them
    as a position delete): pyiceberg reads what Lakehouse.read does."""
    lh.import_table(sources["events"], "raw.events")
    lh.branch("main").delete("raw.events", "id % 4 = 1")
    expected = sorted(tuple(r) for r in lh.read("raw.events").collect())
    with served(lh.warehouse.root) as url:
        table = RestCatalog("bs", uri=url, warehouse="main").load_table(("raw", "events"))
        data_files = [task.file.file_path for task in table.scan().plan_files()]
        assert data_files and all(p.startswith(sources["events"]) for p in data_files)
        got = sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist())
    assert got == expected


def test_take_ownership_lets_gc_delete_the_files_once_unread(lh, spark, sources, tmp_path):
    """After `--take-ownership`, gc deletes the files it was handed where they lie once no commit reachable from a
    branch reads them, and not before; files no table took stay borrowed."""
    retired = str(tmp_path / "retired")
    spark.read.parquet(sources["plain"]).write.parquet(retired)  # a source of its own: this test deletes it
    lh.import_table(sources["plain"], "raw.plain")
    lh.create_branch("scratch")
    lh.import_table(retired, "raw.retired", branch="scratch")
    done = CliRunner().invoke(cli, ["--warehouse", lh.warehouse.root, "import", retired, "--as", "raw.retired",
                                    "--branch", "scratch", "--take-ownership"])
    assert done.exit_code == 0 and "are branchspark's now" in done.output, done.output
    handed = sorted(p for p in source_files(retired) if p.endswith(".parquet"))
    assert lh.gc(grace_seconds=0).deleted_files == [] and all(os.path.exists(p) for p in handed)  # still read
    lh.drop_branch("scratch", force=True)
    dry = lh.gc(grace_seconds=0, dry_run=True)
    assert sorted(dry.deleted_files) == handed and all(os.path.exists(p) for p in handed)
    report = lh.gc(grace_seconds=0)
    assert sorted(report.deleted_files) == handed and not any(os.path.exists(p) for p in handed)
    assert report.borrowed_files == len([p for p in source_files(sources["plain"]) if p.endswith(".parquet")])
    same_rows(lh.read("raw.plain"), spark.read.parquet(sources["plain"]))


def test_table_of_sparks_catalog_by_name(lh, spark, sources, tmp_path):
    """A partitioned Parquet table of Spark's session catalog (as a Hive metastore's would be), named: read where
    its catalog says it lies, its partitions from its folders."""
    location = str(tmp_path / "catalog_table")
    spark.sql("CREATE DATABASE IF NOT EXISTS import_catalog_src")
    spark.sql(f"CREATE TABLE import_catalog_src.events USING parquet PARTITIONED BY (region) LOCATION '{location}' "
              f"AS SELECT * FROM parquet.`{sources['events']}`")
    try:
        info = lh.import_table("spark_catalog.import_catalog_src.events", "raw.events")
        same_rows(lh.read("raw.events"), spark.table("import_catalog_src.events"))
        assert lh.store.operations(info.id)[-1].detail["imported_from"] == location
        assert lh.snapshot("main").table("raw.events").partition_by == ("region",)
        assert parquet_files(lh.warehouse.root) == set()
    finally:
        spark.sql("DROP TABLE IF EXISTS import_catalog_src.events")


def test_iceberg_table_written_by_pyiceberg_with_a_delete_imports_without_copying(lh, spark, tmp_path):
    """An Iceberg table no column of which was ever renamed (written by PyIceberg, as ingestion scripts write them):
    its files' names are the table's, so no footer is read for them; a delete PyIceberg wrote as a copy-on-write
    rewrite leaves the old file out of the snapshot. Rows equal the source's; no data file is written."""
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("ingest", uri=f"sqlite:///{tmp_path}/ingest.db", warehouse=f"file://{tmp_path}/ingest")
    catalog.create_namespace("raw")
    batch = pa.table({"id": pa.array(range(500), pa.int64()), "kind": pa.array([f"k{i % 4}" for i in range(500)])})
    table = catalog.create_table("raw.events", schema=batch.schema)
    table.append(batch.slice(0, 300))
    table.append(batch.slice(300, 200))
    table.delete("id < 50")
    location = table.metadata_location
    before = source_files(str(tmp_path / "ingest"))
    lh.import_table(location, "raw.events", format="iceberg")
    assert lh.read("raw.events").count() == 450
    expected = spark.createDataFrame(table.scan().to_arrow().to_pandas())
    same_rows(lh.read("raw.events").select("id", "kind"), expected.select("id", "kind"))
    written = [p for p in parquet_files(lh.warehouse.root)]
    assert written == [], written  # no data file, and no tombstone: the delete rewrote its file
    assert source_files(str(tmp_path / "ingest")) == before


@pytest.mark.parametrize("keyed", [True, False], ids=["primary-key", "keyless"])
def test_refresh_of_a_copy_on_write_rewrite_merges_with_a_branch(lh, tmp_path, keyed):
    """PyIceberg deletes a row by rewriting its file (copy-on-write) while branch dev updates another row of that
    file; main's refresh deletes the old file's rows and inserts the new file's. branch_changes of the refresh gives
    only the deleted row (its unchanged rows pair away). With a primary key the merge is row-level: both changes
    land. Without one, the rewrite moved the updated row to another file, so the merge stops at it (A3, nothing
    changed) rather than keep both its images (docs/import.md)."""
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("ingest", uri=f"sqlite:///{tmp_path}/ingest.db", warehouse=f"file://{tmp_path}/ingest")
    catalog.create_namespace("raw")
    batch = pa.table({"id": pa.array(range(10), pa.int64()), "v": pa.array([f"v{i}" for i in range(10)])})
    table = catalog.create_table("raw.t", schema=batch.schema)
    table.append(batch)
    lh.import_table(table.metadata_location, "raw.t", format="iceberg", primary_key=["id"] if keyed else None)
    lh.create_branch("dev", "main")
    with lh.transaction("dev", message="update 3") as tx:
        tx.update("raw.t", "id = 3", {"v": "'changed'"})
    table.delete("id = 5")
    head = lh.get_branch("main").head
    assert len(lh.refresh_import("raw.t")) == 1
    refreshed = lh.get_branch("main").head
    feed = lh.sql(f"SELECT id, v, _change_type FROM branch_changes('raw.t', '{head}', 'main')").collect()
    assert [tuple(r) for r in feed] == [(5, "v5", "delete")]
    expected = sorted([(i, "changed" if i == 3 else f"v{i}") for i in range(10) if i != 5])
    if keyed:
        lh.merge("dev", "main")
        assert sorted(tuple(r) for r in lh.read("raw.t").collect()) == expected
    else:
        with pytest.raises(errors.MergeConflict, match="A3"):
            lh.merge("dev", "main")
        assert lh.get_branch("main").head == refreshed
