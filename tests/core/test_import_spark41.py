"""Zero-copy import of Delta and Iceberg tables (issue 70), built by Spark 4.1 with Delta's and Iceberg's runtimes
(tests/spark41_import_sources.py, in the JVM of the Spark 4.1 sources flow: tests/core/test_sources_spark41.py) and imported by this suite's Spark:
rows equal the source's at its current and at an older version; no data file is written (only the tombstones of
rows that deletion vectors and position deletes hide, as small Parquet files of those rows); gc leaves every
source file in place; later writes merge row by row; bad input is one line with the branch head unmoved."""
from __future__ import annotations

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog

from collections import Counter

from click.testing import CliRunner

from dbt.adapters.branchspark.cli.main import cli
from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.operations import Op
from dbt.adapters.branchspark.core.storage.layout import ICEBERG_DIR
from tests.core.test_import import source_files
from tests.iceberg_clients import served
from tests.spark_iceberg import require_spark_iceberg, spark_iceberg_read
from tests.spark_iceberg_reader import canonical
from tests.spark41_flow import spark41_flow


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The sources, built in the Spark 4.1 flow's JVM (tests/spark41_flow.py)."""
    return spark41_flow(tmp_path_factory)["import_sources"]


def rows(frame) -> list:
    return sorted([[None if v is None else str(v) for v in row] for row in frame.collect()])


def written_parquet(lh) -> list[str]:
    root = lh.warehouse.root
    return [os.path.relpath(os.path.join(d, n), root) for d, _, names in os.walk(root) for n in names
            if n.endswith(".parquet")]


def hidden_rows(lh, name: str) -> int:
    """Rows of the table's borrowed files that its tombstones hide: their footers' counts minus the visible rows."""
    state = lh.snapshot("main").state(name)
    total = sum(pq.ParquetFile(f"{s.path}/{f}").metadata.num_rows
                for s in lh.store.segments(state.segments).values() for f in s.files)
    return total - lh.read(name).count()


def test_delta_with_deletion_vectors(lh, built):
    source = built["delta_dv"]
    before = source_files(source["path"])
    assert source["dv_files"] >= 1  # the DELETE and the UPDATE wrote deletion vectors
    info = lh.import_table(source["path"], "raw.customers")
    assert rows(lh.read("raw.customers")) == source["rows"]
    assert lh.read("raw.customers").columns == source["columns"]
    assert lh.snapshot("main").table("raw.customers").partition_by == ("region",)
    state = lh.snapshot("main").state("raw.customers")
    tombstones = lh.store.tombstones(state.tombstones).values()
    # no data file: the only Parquet written holds the hidden rows' images and ids (the deletion vectors)
    written = written_parquet(lh)
    assert written and all(f"tables/{state.id}/tombstones/" in p for p in written)
    assert sum(t.row_count for t in tombstones) == hidden_rows(lh, "raw.customers") > 0
    detail = lh.store.operations(info.id)[-1].detail
    assert (detail["source_format"], detail["source_version"]) == ("delta", str(source["version"]))
    lh.import_table(source["path"], "raw.customers_v2", version=2)  # before the DELETE: no tombstone at all
    assert rows(lh.read("raw.customers_v2")) == source["rows_at_2"]
    assert all(f"tables/{state.id}/" in p for p in written_parquet(lh))
    assert source_files(source["path"]) == before


def test_delta_column_mapping_and_checkpoint(lh, built):
    source = built["delta_cm"]
    assert source["checkpoints"] >= 1
    lh.import_table(source["path"], "raw.renamed")
    assert lh.read("raw.renamed").columns == source["columns"] == ["id", "title", "amount"]
    assert rows(lh.read("raw.renamed")) == source["rows"]


def test_iceberg_with_position_deletes(lh, built):
    source = built["iceberg"]
    assert source["delete_files"] >= 1
    lh.import_table(source["path"], "lake.orders")
    assert lh.read("lake.orders").columns == source["columns"] == ["order_id", "buyer", "total"]
    assert rows(lh.read("lake.orders")) == source["rows"]
    assert hidden_rows(lh, "lake.orders") == 300 - len(source["rows"])
    state = lh.snapshot("main").state("lake.orders")
    assert sum(t.row_count for t in lh.store.tombstones(state.tombstones).values()) == 300 - len(source["rows"])
    lh.import_table(source["path"], "lake.orders_then", version=source["second_snapshot"])
    assert rows(lh.read("lake.orders_then")) == source["rows_at_second"]


def _arrow_rows(table: pa.Table) -> list:
    """pyiceberg's rows as `canonical` takes Spark's: structs as tuples, maps as dicts."""
    def plain(value, kind):
        if value is None:
            return None
        if pa.types.is_struct(kind):
            return tuple(plain(value[f.name], f.type) for f in kind)
        if pa.types.is_map(kind):
            return {k: plain(v, kind.item_type) for k, v in value}
        if pa.types.is_list(kind):
            return [plain(v, kind.value_type) for v in value]
        return value

    return canonical(tuple(plain(r[f.name], f.type) for f in table.schema) for r in table.to_pylist())


def test_imported_tables_are_served_with_their_source_field_ids(lh, spark, built):
    """Regression (issue 70): an imported Iceberg table (or Delta with column mapping) keeps its files, which carry
    the source's field ids, so `branchspark serve` refused it. Now each imported column (and nested field) is
    served under its source's id and the table's own columns above them all: pyiceberg and Spark-Iceberg read
    exactly Lakehouse.read's rows after a branch added a column, updated and deleted rows, and pyiceberg adds a
    column and appends on a branch through the REST catalog. Then `register` (_register)."""
    from pyiceberg.table import StaticTable
    from pyiceberg.types import BooleanType

    require_spark_iceberg()
    for key, name in (("iceberg", "lake.orders"), ("iceberg_nested", "lake.nested"), ("delta_cm", "raw.renamed")):
        lh.import_table(built[key]["path"], name)
    with lh.transaction("main") as tx:
        tx.add_column("lake.orders", "note", "string")
        tx.update("lake.orders", "order_id % 5 = 1", {"note": "'checked'", "total": "total + 1"})
        tx.delete("lake.nested", "id = 7")
        tx.delete("raw.renamed", "id % 4 = 0")
    names = ("lake.orders", "lake.nested", "raw.renamed")
    expected = {n: canonical(lh.read(n).collect()) for n in names}
    assert len(expected["lake.nested"]) == built["iceberg_nested"]["count"] - 1
    source = StaticTable.from_metadata(sorted(glob.glob(f"{built['iceberg']['path']}/metadata/*.metadata.json"))[-1])
    lh.create_branch("dev")
    with served(lh.warehouse.root) as url:
        catalog = RestCatalog("bs", uri=url, warehouse="main")
        for name in names:
            assert _arrow_rows(catalog.load_table(tuple(name.split("."))).scan().to_arrow()) == expected[name], name
        served_ids = {f.name: f.field_id for f in catalog.load_table(("lake", "orders")).schema().fields}
        assert {k: v for k, v in served_ids.items() if k != "note"} == {f.name: f.field_id
                                                                         for f in source.schema().fields}
        assert served_ids["note"] > 10**9
        answers = spark_iceberg_read(url, {"c": "main"}, {n: f"SELECT * FROM c.{n}" for n in names})
        assert answers == {n: {"rows": expected[n]} for n in names}
        dev = RestCatalog("bs", uri=url, warehouse="dev").load_table(("lake", "orders"))
        with dev.update_schema() as update:
            update.add_column("flag", BooleanType())
        appended = pa.table({"order_id": pa.array([5000], pa.int64()), "buyer": ["new"], "total": [1.5],
                             "note": ["pyiceberg"], "flag": [True]})
        dev.refresh().append(appended.cast(dev.refresh().schema().as_arrow()))
        _register(lh, url, built["iceberg"], source.metadata_location)
    assert lh.read("lake.orders", at="dev").columns == ["order_id", "buyer", "total", "note", "flag"]
    assert rows(lh.read("lake.orders", at="dev")) == sorted(
        [r + [None] for r in rows(lh.read("lake.orders"))] + [["5000", "new", "1.5", "pyiceberg", "True"]])


def _register(lh, url: str, source: dict, metadata_location: str) -> None:
    """Iceberg REST `register` (issue 70): pyiceberg names an Iceberg table's metadata file and gets a branch table
    of it, imported as `branchspark import` does (one commit, files borrowed, position deletes as tombstones), read
    back by pyiceberg; bad input is one line with the head unmoved."""
    lh.create_branch("reg")
    catalog = RestCatalog("bs", uri=url, warehouse="reg")
    before = set(written_parquet(lh))
    table = catalog.register_table(("lake", "registered"), metadata_location)
    assert table.name() == ("lake", "registered") or tuple(table.name()[-2:]) == ("lake", "registered")
    assert rows(lh.read("lake.registered", at="reg")) == source["rows"]
    assert not lh.snapshot("main").has_table("lake.registered")
    operation = lh.store.operations(lh.get_branch("reg").head)[-1]
    assert operation.op == Op.INSERT and operation.detail["source_format"] == "iceberg"
    # no data file: the tombstone of the rows its position deletes hide, and the served metadata's position deletes
    assert all("/tombstones/" in p or f"/{ICEBERG_DIR}/" in p for p in set(written_parquet(lh)) - before), \
        set(written_parquet(lh)) - before
    assert _arrow_rows(catalog.load_table(("lake", "registered")).scan().to_arrow()) == canonical(
        tuple(r) for r in lh.read("lake.registered", at="reg").collect())
    head = lh.get_branch("reg").head
    lh.create_branch("locked")
    lh.protect_branch("locked")
    bad = [("reg", ("lake", "registered"), metadata_location, "AlreadyExists"),
           ("reg", ("lake", "other"), metadata_location.replace(".metadata.json", "-gone.metadata.json"), "cannot"),
           ("reg", ("nowhere", "other"), metadata_location, "NoSuchNamespace"),
           ("locked", ("lake", "other"), metadata_location, "protected"),
           (f"reg@{head}", ("lake", "other"), metadata_location, "fixed version")]
    for warehouse, name, location, said in bad:
        with pytest.raises(Exception) as raised:
            RestCatalog("bs", uri=url, warehouse=warehouse).register_table(name, location)
        text = str(raised.value)
        assert said in text and "\n" not in text, (warehouse, text)
    assert lh.get_branch("reg").head == head


def test_primary_key_on_sources_with_deleted_rows(lh, spark, built):
    """Regression (issue 70): a primary key was refused on a source with deleted rows, since a key's tombstone deletes
    every older row of that key, and Delta's UPDATE hid rows whose keys live on in its new files. The files now land
    in the order their source wrote them, each write's hidden rows in a tombstone just after it: the rows equal the
    source's, and the key works as any table's (an upsert replaces a row the source updated)."""
    delta, iceberg = built["delta_dv"], built["iceberg"]
    lh.import_table(delta["path"], "raw.customers", primary_key=["id"])
    assert rows(lh.read("raw.customers")) == delta["rows"]
    updated = [r for r in delta["rows"] if r[2] == "updated"]
    assert updated  # the UPDATE's rows: their older images hidden in the files the first inserts wrote
    assert hidden_rows(lh, "raw.customers") > 0
    lh.import_table(iceberg["path"], "lake.orders", primary_key=["order_id"])
    assert rows(lh.read("lake.orders")) == iceberg["rows"]
    key = int(updated[0][0])
    lh.branch("main").upsert("raw.customers", spark.createDataFrame(
        [(key, 0.5, "upserted", updated[0][3])], "id bigint, amount double, label string, region string"))
    after = rows(lh.read("raw.customers"))
    assert [r for r in after if r[0] == str(key)] == [[str(key), "0.5", "upserted", updated[0][3]]]
    assert len(after) == len(delta["rows"])


def test_imported_tables_merge_and_gc_keeps_their_files(lh, spark, built):
    delta, iceberg = built["delta_dv"], built["iceberg"]
    before = {**source_files(delta["path"]), **source_files(iceberg["path"])}
    lh.import_table(delta["path"], "raw.customers")
    lh.import_table(iceberg["path"], "lake.orders")
    live_files = sum(len(s.files) for name in ("raw.customers", "lake.orders")
                     for s in lh.store.segments(lh.snapshot("main").state(name).segments).values())
    lh.create_branch("dev")
    with lh.transaction("dev") as tx:
        tx.update("raw.customers", "region = 'east'", {"label": "'dev'"})
        tx.delete("lake.orders", "order_id < 10")
    with lh.transaction("main") as tx:
        tx.delete("raw.customers", "region = 'west'")
    lh.merge("dev", "main")
    expected = sorted([r[0], r[1], "dev" if r[3] == "east" else r[2], r[3]] for r in delta["rows"] if r[3] != "west")
    assert rows(lh.read("raw.customers")) == expected
    assert rows(lh.read("lake.orders")) == [r for r in iceberg["rows"] if int(r[0]) >= 10]
    with lh.transaction("main") as tx:
        tx.overwrite("raw.customers", spark.createDataFrame([(1, 1.0, "x", "east")], "id bigint, amount double, "
                                                                                      "label string, region string"))
        tx.drop_table("lake.orders")
    report = lh.gc(grace_seconds=0)
    assert report.borrowed_files == live_files > 0 and not report.deleted_files
    assert {**source_files(delta["path"]), **source_files(iceberg["path"])} == before


def test_bad_versions_and_features_are_one_line(lh, built):
    lh.import_table(built["delta_cm"]["path"], "raw.renamed")
    head = lh.get_branch("main").head
    bad = [
        (built["delta_dv"]["path"], {"version": 99}, "versions go up to"),
        (built["iceberg"]["path"], {"version": 1}, "no such snapshot"),
        (built["delta_widening"]["path"], {}, "typeWidening"),
        (built["delta_dv"]["path"], {"format": "iceberg"}, "metadata"),
        (built["iceberg"]["path"], {"name": "raw.renamed"}, "already exists"),
    ]
    for source, options, said in bad:
        name = options.pop("name", "raw.other")
        with pytest.raises(errors.BranchsparkError) as raised:
            lh.import_table(source, name, **options)
        text = str(raised.value)
        assert said in text and "\n" not in text, text
        assert lh.get_branch("main").head == head


def test_delta_refresh_brings_each_later_version_as_its_own_changes(lh, spark, built):
    """Imported at version 2, refreshed: version 3 (a DELETE, deletion vectors) lands as a delete, version 4 (an
    UPDATE: deletion vectors and a new file) as an update; branch_changes gives exactly the source's changes, and a
    branch that inserted meanwhile merges with them."""
    source = built["delta_dv"]
    imported = lh.import_table(source["path"], "raw.customers", version=2).id
    lh.create_branch("dev")
    lh.branch("dev").insert("raw.customers", spark.createDataFrame(
        [(9999, 1.0, "dev", "east")], "id bigint, amount double, label string, region string"))
    commits = lh.refresh_import("raw.customers", source=source["path"])
    assert [lh.store.operations(c.id)[-1].op for c in commits] == [Op.DELETE, Op.UPDATE]
    assert rows(lh.read("raw.customers")) == source["rows"]
    changes = lh.sql(f"SELECT id, amount, label, region, _change_type FROM "
                     f"branch_changes('raw.customers', '{imported}', 'main')")
    then, now = Counter(map(tuple, source["rows_at_2"])), Counter(map(tuple, source["rows"]))
    assert rows(changes.where("_change_type = 'delete'").drop("_change_type")) == sorted(map(list, (then - now).elements()))
    assert rows(changes.where("_change_type = 'insert'").drop("_change_type")) == sorted(map(list, (now - then).elements()))
    assert lh.refresh_import("raw.customers") == []  # up to date
    done = CliRunner().invoke(cli, ["--warehouse", lh.warehouse.root, "import", source["path"], "--as",
                                    "raw.customers", "--refresh"])
    assert done.exit_code == 0 and "is up to date" in done.output, done.output
    lh.merge("dev", "main")
    assert rows(lh.read("raw.customers")) == sorted(source["rows"] + [["9999", "1.0", "dev", "east"]])
    with pytest.raises(errors.InvalidArgument, match="was imported from"):
        lh.refresh_import("raw.customers", source=built["delta_cm"]["path"])
    # with a primary key: the version's deletes land before its new files, which keep the updated keys
    keyed = lh.import_table(source["path"], "raw.keyed", version=2, primary_key=["id"]).id
    assert [lh.store.operations(c.id)[-1].op for c in lh.refresh_import("raw.keyed")] == [Op.DELETE, Op.UPDATE]
    assert rows(lh.read("raw.keyed")) == source["rows"]
    changes = lh.sql(f"SELECT id, amount, label, region, _change_type FROM "
                     f"branch_changes('raw.keyed', '{keyed}', 'main')")
    assert rows(changes.where("_change_type = 'delete'").drop("_change_type")) == sorted(map(list, (then - now).elements()))
    assert rows(changes.where("_change_type = 'insert'").drop("_change_type")) == sorted(map(list, (now - then).elements()))


def test_refresh_follows_added_columns(lh, built):
    """A refresh after the source added a column (Iceberg, and Delta) adds it to the table (its rows before it read
    NULL) and brings the rows written with it, then a copy-on-write delete of one of those rows. branch_changes of
    the refresh gives exactly those changes (not the rewritten file's unchanged rows); a second refresh has nothing
    to bring;
    pyiceberg reads the refreshed Iceberg table through `branchspark serve` (the new column under its source id)."""
    for key, name, version in (("iceberg_grown", "lake.grown", built["iceberg_grown"]["first"]),
                               ("delta_grown", "raw.grown", 1)):
        source = built[key]
        imported = lh.import_table(source["path"], name, version=version).id
        assert lh.read(name).columns == ["id", "name"] and lh.read(name).count() == 20
        assert lh.refresh_import(name)
        assert lh.read(name).columns == ["id", "name", "score"]
        assert rows(lh.read(name)) == source["rows"]
        assert lh.refresh_import(name) == []  # the column's version is recorded too
        changes = lh.sql(f"SELECT id, name, score, _change_type FROM branch_changes('{name}', '{imported}', 'main')")
        inserted = rows(changes.where("_change_type = 'insert'").drop("_change_type"))
        assert inserted == [[str(i), f"n{i}", str(i / 2)] for i in range(20, 30)]
        assert rows(changes.where("_change_type = 'delete'").drop("_change_type")) == [["25", "n25", "12.5"]]
        # the source's DELETE rewrote the file (copy-on-write): of its rows only the deleted one is a change, and
        # its image holds the added column's value
        before_delete = lh.log("main")[1].id
        assert rows(lh.sql(f"SELECT id, name, score, _change_type FROM branch_changes('{name}', '{before_delete}', "
                           f"'main')")) == [["25", "n25", "12.5", "delete"]]
    with served(lh.warehouse.root) as url:
        table = RestCatalog("bs", uri=url, warehouse="main").load_table(("lake", "grown"))
        assert _arrow_rows(table.scan().to_arrow()) == canonical(tuple(r) for r in lh.read("lake.grown").collect())
        assert table.schema().find_field("score").field_id == 3  # the source's id


def test_tables_of_spark_catalogs_are_imported_and_refreshed_by_name(tmp_path_factory):
    """In the Spark 4.1 flow's session (tests/spark41_sources.py), branchspark imports a Delta table of the Hive
    metastore (`spark_catalog.raw.customers`), an Iceberg table of a configured catalog (`lake.raw.orders`) and a
    Parquet table (`raw.payments`) by name; after an insert into the Delta one and a delete from the Iceberg one, a
    refresh brings each as one commit, and every imported table reads exactly what Spark reads of its source."""
    seen = spark41_flow(tmp_path_factory)["imported_by_name"]
    assert sorted(seen) == ["named.customers", "named.orders", "named.payments"]
    for name, found in seen.items():
        assert found["rows"] == found["source"], name
    assert [4, "di", 30] in seen["named.customers"]["rows"] and [100, 1] not in seen["named.orders"]["rows"]
    assert (seen["named.customers"]["refresh_commits"], seen["named.orders"]["refresh_commits"]) == (1, 1)


def test_iceberg_refresh_brings_each_later_snapshot(lh, built):
    """Imported at its second snapshot, refreshed: the DELETE's snapshot (position deletes) lands as one delete,
    and branch_changes gives exactly the rows it deleted."""
    source = built["iceberg"]
    imported = lh.import_table(source["path"], "lake.orders", version=source["second_snapshot"]).id
    commits = lh.refresh_import("lake.orders")
    assert [lh.store.operations(c.id)[-1].op for c in commits] == [Op.DELETE]
    assert rows(lh.read("lake.orders")) == source["rows"]
    changes = lh.sql(f"SELECT * FROM branch_changes('lake.orders', '{imported}', 'main')")
    assert changes.where("_change_type = 'insert'").count() == 0
    deleted = rows(changes.where("_change_type = 'delete'").select("order_id", "customer", "total"))
    assert deleted == sorted(r for r in source["rows_at_second"] if r not in source["rows"])
    assert lh.refresh_import("lake.orders") == []
