"""Iceberg REST writes through `branchspark serve` (SPEC 6, 11; docs/iceberg.md): a real PyIceberg client
creates, appends, overwrites and deletes on a branch; each REST commit is one branchspark commit recorded as
the operation it is, a read through the catalog and `Lakehouse.read` return exactly the rows written, the
change feed over the commits is exact, and a merge of the branch is row-level. Stale requirements are 409s
that change nothing; fixed versions and protected branches refuse writes with 403; unknown updates and
requirements are 400s naming them."""
import threading
import time
from collections import Counter

import pyarrow as pa
import pytest
import requests
import uvicorn
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.changes import table_changes
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.iceberg.routes import create_app
from dbt.adapters.branchspark.iceberg.service import CatalogService
from tests.core.changes_replay import multiset, replay
from tests.depth import sized
from tests.iceberg_clients import free_port
from tests.spark_iceberg import require_spark_iceberg, spark_iceberg_read
from tests.spark_iceberg_reader import canonical


class _Server:
    """`branchspark serve`'s app on a real HTTP port in this process (its Lakehouse never starts Spark)."""

    def __init__(self, warehouse: str, token: str | None = None):
        self.lh = Lakehouse(None, warehouse)
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(create_app(CatalogService(self.lh), token), host="127.0.0.1",
                                                    port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 30
        while not self.server.started:
            assert time.time() < deadline, "the server did not start"
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{self.port}/iceberg"

    def stop(self):
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.lh.store.dispose()


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    warehouse = str(tmp_path_factory.mktemp("iceberg_writes") / "warehouse")
    lh = Lakehouse(spark, warehouse)
    df = spark.createDataFrame
    with lh.transaction("main", message="setup") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.orders", df([(i, f"o{i}", 10 * i) for i in range(5)], "id long, name string, qty long"))
    lh.branch("main").insert("shop.orders", df([(i, f"o{i}", 10 * i) for i in range(5, 10)],
                                               "id long, name string, qty long"))  # a second segment
    server = _Server(warehouse)
    yield {"lh": lh, "url": server.url, "warehouse": warehouse, "spark": spark}
    server.stop()
    lh.store.dispose()


def _catalog(lake, warehouse: str) -> RestCatalog:
    return RestCatalog("bs", uri=lake["url"], warehouse=warehouse)


def _rows(lh, table: str, at: str) -> list:
    return sorted(tuple(r) for r in lh.read(table, at=at).collect())


def _scan(catalog: RestCatalog, table: str) -> list:
    return sorted(tuple(r.values()) for r in catalog.load_table(table).scan().to_arrow().to_pylist())


def _ops(lh, commit_id: str) -> list:
    return sorted(str(o.op) for o in lh.store.operations(commit_id))


def _prefix(lake, ref: str) -> str:
    return requests.get(f"{lake['url']}/v1/config", params={"warehouse": ref}, timeout=30).json()["overrides"]["prefix"]


def test_pyiceberg_creates_appends_overwrites_and_deletes_on_a_branch(lake):
    lh = lake["lh"]
    lh.create_branch("py")
    catalog = _catalog(lake, "py")
    catalog.create_namespace("ingest", {"owner": "loader"})
    assert lh.snapshot("py").has_database("ingest") and not lh.snapshot("main").has_database("ingest")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    table = catalog.create_table("ingest.events", schema=schema)
    created = lh.resolve("py")
    assert _ops(lh, created.id) == ["create"] and lh.read("ingest.events", at="py").count() == 0

    table.append(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}, schema=schema))
    table.append(pa.table({"id": [4, 5], "name": ["d", "e"]}, schema=schema))
    appended = lh.resolve("py")
    assert _ops(lh, appended.id) == ["insert"]
    expected = [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")]
    assert _rows(lh, "ingest.events", "py") == expected == _scan(catalog, "ingest.events")
    # the added files are segments where the client wrote them: nothing copied
    state = lh.snapshot("py").state("ingest.events")
    written = {f"{s.path}/{n}" for s in lh.snapshot("py").ns.segment_infos(state.segments) for n in s.files}
    served = {f.file_path for f in catalog.load_table("ingest.events").scan().plan_files() for f in [f.file]}
    assert {p.split("/tables/", 1)[1] for p in served} == {w.split("tables/", 1)[1] for w in written}

    table = catalog.load_table("ingest.events")
    table.delete("id = 2")  # copy-on-write: the file of 1, 2, 3 is rewritten
    deleted = lh.resolve("py")
    assert _ops(lh, deleted.id) == ["insert", "update"]
    expected = [(1, "a"), (3, "c"), (4, "d"), (5, "e")]
    assert _rows(lh, "ingest.events", "py") == expected == _scan(catalog, "ingest.events")
    # the rewrite carried 1 and 3 over: net, the commit deleted row 2 only
    net = table_changes(lh, "ingest.events", appended.id, deleted.id, net=True).collect()
    assert [(r["id"], r["name"], r["_change_type"]) for r in net] == [(2, "b", "delete")]

    table = catalog.load_table("ingest.events")
    table.delete("id >= 4")  # a whole file: a delete, nothing added
    assert _ops(lh, lh.resolve("py").id) == ["delete"]
    table = catalog.load_table("ingest.events")
    table.overwrite(pa.table({"id": [7, 8], "name": ["g", "h"]}, schema=schema))
    assert _rows(lh, "ingest.events", "py") == [(7, "g"), (8, "h")] == _scan(catalog, "ingest.events")

    # exact change feed over the REST commits (SPEC 4): rows of `from` + changes = rows of `to`
    changes = table_changes(lh, "ingest.events", appended.id, lh.resolve("py").id).collect()
    assert replay(multiset(lh.read("ingest.events", at=appended.id)), changes, 2) == \
        multiset(lh.read("ingest.events", at="py"))
    # the table's own main branch did not move
    assert not lh.snapshot("main").has_database("ingest")
    # gc treats REST commits as any other: what they reference stays, the clients' own manifests go
    report = lh.gc(grace_seconds=0)
    assert any("/metadata/" in p for p in report.deleted_files)
    assert _rows(lh, "ingest.events", "py") == [(7, "g"), (8, "h")] == _scan(catalog, "ingest.events")
    assert _rows(lh, "ingest.events", appended.id) == [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")]


@pytest.mark.long_only  # the Spark flow below checks a merge and a conflict in `make test` (tests/depth.py)
def test_merge_of_rest_writes_is_row_level_and_a_row_both_sides_updated_conflicts(lake):
    lh, df = lake["lh"], lake["spark"].createDataFrame
    lh.create_branch("loader")
    base = lh.resolve("main")
    catalog = _catalog(lake, "loader")
    # the REST side deletes a row of the first segment (a copy-on-write rewrite of its file)
    catalog.load_table("shop.orders").delete("id = 1")
    # branchspark changes another row, of the other segment, on main meanwhile
    lh.branch("main").update("shop.orders", "id = 7", {"qty": "qty + 1"})
    lh.merge("loader", "main")
    expected = sorted([(i, f"o{i}", 10 * i + (1 if i == 7 else 0)) for i in range(10) if i != 1])
    assert _rows(lh, "shop.orders", "main") == expected == _scan(_catalog(lake, "main"), "shop.orders")
    changes = table_changes(lh, "shop.orders", base.id, lh.resolve("main").id).collect()
    assert replay(multiset(lh.read("shop.orders", at=base.id)), changes, 3) == multiset(lh.read("shop.orders"))

    # both sides change the same row: a conflict with its report, nothing changed on main
    lh.create_branch("loader2")
    table = _catalog(lake, "loader2").load_table("shop.orders")
    table.delete("id = 8")
    lh.branch("main").update("shop.orders", "id = 8", {"qty": "0"})
    before = lh.resolve("main")
    with pytest.raises(errors.MergeConflict) as conflict:
        lh.merge("loader2", "main")
    assert "shop.orders" in str(conflict.value) and conflict.value.report is not None
    assert lh.resolve("main").id == before.id and (8, "o8", 0) in _rows(lh, "shop.orders", "main")


def test_stale_requirement_is_409_and_changes_nothing_then_the_retry_lands(lake):
    lh = lake["lh"]
    lh.create_branch("stale")
    catalog = _catalog(lake, "stale")
    first, second = catalog.load_table("shop.orders"), catalog.load_table("shop.orders")
    row = pa.table({"id": [100], "name": ["x"], "qty": [1]}, schema=first.schema().as_arrow())
    stale_snapshot = second.metadata.current_snapshot_id
    first.append(row)
    head = lh.resolve("stale").id
    response = _post(lake, "stale", "/namespaces/shop/tables/orders", {
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": stale_snapshot}],
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    error = response.json()["error"]
    assert response.status_code == 409 and error["type"] == "CommitFailedException"
    assert "assert-ref-snapshot-id" in error["message"] and "reload the table and retry" in error["message"]
    assert lh.resolve("stale").id == head
    second.append(row)  # stale too: pyiceberg's own retry reloads on the 409 and lands
    assert Counter(r[0] for r in _rows(lh, "shop.orders", "stale"))[100] == 2


def test_eight_writers_appending_at_once_every_row_once(lake):
    lh = lake["lh"]
    lh.create_branch("many")
    catalog = _catalog(lake, "many")
    catalog.create_namespace("feed")
    schema = pa.schema([pa.field("writer", pa.int64()), pa.field("n", pa.int64())])
    catalog.create_table("feed.rows", schema=schema)
    commits, retries = sized(2, 6), Counter()

    def write(writer: int):
        client = _catalog(lake, "many")
        for n in range(commits):
            while True:
                try:
                    client.load_table("feed.rows").append(pa.table({"writer": [writer], "n": [n]}, schema=schema))
                    break
                except CommitFailedException:
                    retries[writer] += 1

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _rows(lh, "feed.rows", "many") == sorted((w, n) for w in range(8) for n in range(commits))
    assert _scan(catalog, "feed.rows") == _rows(lh, "feed.rows", "many")
    ours = [c for c in lh.log("many") if c.message.startswith("iceberg: commit feed.rows")]
    assert len(ours) == 8 * commits and all(_ops(lh, c.id) == ["insert"] for c in ours)


def _post(lake, ref: str, path: str, body: dict) -> requests.Response:
    return requests.post(f"{lake['url']}/v1/{_prefix(lake, ref)}{path}", json=body, timeout=30)


def test_writes_refused_on_fixed_versions_and_protected_branches_naming_them(lake):
    lh = lake["lh"]
    at = lh.resolve("main").id
    response = _post(lake, f"main@{at}", "/namespaces", {"namespace": ["nope"]})
    assert response.status_code == 403 and "fixed version of branch 'main'" in response.json()["error"]["message"]
    lh.create_branch("guarded")
    lh.protect_branch("guarded")
    response = _post(lake, "guarded", "/namespaces", {"namespace": ["nope"]})
    body = response.json()["error"]
    assert response.status_code == 403 and body["type"] == "ForbiddenException"
    assert "'guarded'" in body["message"] and "merge into it instead" in body["message"]
    assert not lh.snapshot("guarded").has_database("nope") and not lh.snapshot("main").has_database("nope")


def test_unknown_update_or_requirement_is_400_naming_it_and_changes_nothing(lake):
    lh = lake["lh"]
    lh.create_branch("odd")
    head = lh.resolve("odd").id
    for body, named in (({"requirements": [], "updates": [{"action": "set-statistics", "statistics": {}}]},
                         "set-statistics"),
                        ({"requirements": [{"type": "assert-something"}], "updates": []}, "assert-something")):
        response = _post(lake, "odd", "/namespaces/shop/tables/orders", body)
        assert response.status_code == 400 and named in response.json()["error"]["message"]
        assert "\n" not in response.json()["error"]["message"]
    response = _post(lake, "odd", "/namespaces/shop/tables/orders",
                     {"requirements": [{"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}],
                      "updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    assert response.status_code == 409 and response.json()["error"]["type"] == "CommitFailedException"
    assert lh.resolve("odd").id == head


def test_bearer_token_needed_for_writes(lake):
    server = _Server(lake["warehouse"], token="s3cret")
    try:
        config = requests.get(f"{server.url}/v1/config", params={"warehouse": "main"},
                              headers={"Authorization": "Bearer s3cret"}, timeout=30).json()
        url = f"{server.url}/v1/{config['overrides']['prefix']}/namespaces"
        refused = requests.post(url, json={"namespace": ["tok"]}, timeout=30)
        assert refused.status_code == 401 and refused.json()["error"]["type"] == "NotAuthorizedException"
        assert not lake["lh"].snapshot("main").has_database("tok")
    finally:
        server.stop()


def test_spark_with_iceberg_runtime_writes_a_branch_and_the_merge_is_row_level(lake):
    """Spark 4.1 with Iceberg's runtime (one JVM) on warehouse=sdev: CREATE TABLE, INSERT, DELETE, UPDATE,
    MERGE INTO copy-on-write and merge-on-read, ALTER TABLE ADD COLUMN and a CTAS; branchspark changes other
    rows of the same table on main meanwhile; the merge lands both sides; a row both sides updated (on
    sdev2) is a conflict with its report; the change feed over the REST commits and the merge is exact."""
    require_spark_iceberg()
    lh, df = lake["lh"], lake["spark"].createDataFrame
    rows = "id long, name string, qty long"
    with lh.transaction("main", message="items") as tx:
        tx.create_table_as("shop.items", df([(i, f"i{i}", i) for i in range(5)], rows))
    lh.branch("main").insert("shop.items", df([(i, f"i{i}", i) for i in range(5, 10)], rows))  # segment B: 5..9
    lh.create_branch("sdev")
    lh.create_branch("sdev2")
    base = lh.resolve("main")
    main = lh.branch("main")  # meanwhile, on main: rows of segment B only
    main.update("shop.items", "id = 8", {"qty": "800"})
    main.delete("shop.items", "id = 9")
    main.update("shop.items", "id = 5", {"qty": "500"})
    dev_start = lh.resolve("sdev")
    mor = ("'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
           "'write.merge.mode'='merge-on-read'")
    statements = {
        "01 namespace": "CREATE NAMESPACE c.lab",
        "02 create": "CREATE TABLE c.lab.t (id bigint, name string) USING iceberg",
        "03 insert": "INSERT INTO c.lab.t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        "04 delete": "DELETE FROM c.lab.t WHERE id = 2",
        "05 update": "UPDATE c.lab.t SET name = 'C' WHERE id = 3",
        "06 add column": "ALTER TABLE c.lab.t ADD COLUMN qty bigint",
        "07 insert": "INSERT INTO c.lab.t VALUES (4, 'd', 40)",
        "08 read t": "SELECT id, name, qty FROM c.lab.t",
        "09 ctas": "CREATE TABLE c.lab.copy USING iceberg AS SELECT id, name FROM c.lab.t WHERE id > 1",
        "10 read copy": "SELECT id, name FROM c.lab.copy",
        "11 cow update": "UPDATE c.shop.items SET qty = -1 WHERE id = 1",
        "12 cow merge": "MERGE INTO c.shop.items t USING (SELECT 2L AS id, 'm2' AS name, 22L AS qty UNION ALL "
                        "SELECT 100L, 'new', 1L) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.qty = s.qty "
                        "WHEN NOT MATCHED THEN INSERT *",
        "13 to mor": f"ALTER TABLE c.shop.items SET TBLPROPERTIES ({mor})",
        "14 mor delete": "DELETE FROM c.shop.items WHERE id = 3",
        "15 mor update": "UPDATE c.shop.items SET qty = 44 WHERE id = 4",
        "16 mor merge": "MERGE INTO c.shop.items t USING (SELECT 0L AS id, 'z' AS name, 7L AS qty) s ON t.id = s.id "
                        "WHEN MATCHED THEN UPDATE SET t.qty = s.qty",
        "17 read items": "SELECT id, name, qty FROM c.shop.items",
        "18 other branch": "UPDATE c2.shop.items SET qty = 555 WHERE id = 5",
    }
    answers = spark_iceberg_read(lake["url"], {"c": "sdev", "c2": "sdev2"}, statements)
    failed = {k: v["error"] for k, v in answers.items() if "error" in v}
    assert not failed, failed
    assert answers["08 read t"]["rows"] == canonical([(1, "a", None), (3, "C", None), (4, "d", 40)])
    assert answers["10 read copy"]["rows"] == canonical([(3, "C"), (4, "d")])
    dev_items = {i: (i, f"i{i}", i) for i in range(10)}
    dev_items.update({1: (1, "i1", -1), 2: (2, "i2", 22), 100: (100, "new", 1), 4: (4, "i4", 44), 0: (0, "i0", 7)})
    del dev_items[3]
    assert answers["17 read items"]["rows"] == canonical(dev_items.values())
    # Lakehouse.read of the branch: exactly the rows Spark wrote
    assert _rows(lh, "shop.items", "sdev") == sorted(dev_items.values())
    assert _rows(lh, "lab.t", "sdev") == [(1, "a", None), (3, "C", None), (4, "d", 40)]
    # each REST commit is one branchspark commit, recorded as the operation it is
    ours = [c for c in reversed(lh.log("sdev")) if c.id not in {a.id for a in lh.log(dev_start.id)}]
    kinds = [_ops(lh, c.id) for c in ours]
    assert ["create"] in kinds and ["alter column"] in kinds, kinds and ["create", "insert"] in kinds  # CTAS: one commit
    assert ["delete"] in kinds  # the merge-on-read delete: position deletes as a tombstone
    assert ["insert", "update"] in kinds and ["alter properties"] in kinds
    changes = table_changes(lh, "shop.items", dev_start.id, lh.resolve("sdev").id).collect()
    assert replay(multiset(lh.read("shop.items", at=dev_start.id)), changes, 3) == multiset(lh.read("shop.items",
                                                                                                     at="sdev"))
    # MERGE BRANCH sdev TO main: both sides' rows
    before_merge = lh.resolve("main")
    lh.merge("sdev", "main")
    merged = dict(dev_items)
    merged.update({8: (8, "i8", 800), 5: (5, "i5", 500)})
    del merged[9]
    assert _rows(lh, "shop.items", "main") == sorted(merged.values())
    assert lh.snapshot("main").has_table("lab.copy")
    changes = table_changes(lh, "shop.items", before_merge.id, lh.resolve("main").id).collect()
    assert replay(multiset(lh.read("shop.items", at=before_merge.id)), changes, 3) == multiset(lh.read("shop.items"))
    assert base.id in {c.id for c in lh.log("main")}
    # row 5: updated by Spark on sdev2 and by branchspark on main
    head = lh.resolve("main")
    with pytest.raises(errors.MergeConflict) as conflict:
        lh.merge("sdev2", "main")
    assert "shop.items" in str(conflict.value) and conflict.value.report is not None
    assert lh.resolve("main").id == head.id


def test_transaction_of_two_tables_is_one_commit_rename_drop_and_namespace_properties(lake):
    lh = lake["lh"]
    lh.create_branch("multi")
    catalog = _catalog(lake, "multi")
    catalog.create_namespace("pair")
    schema = pa.schema([pa.field("id", pa.int64())])
    uuids = {t: str(catalog.create_table(f"pair.{t}", schema=schema).metadata.table_uuid) for t in ("a", "b")}
    head = lh.resolve("multi")
    changes = [{"identifier": {"namespace": ["pair"], "name": t},
                "requirements": [{"type": "assert-table-uuid", "uuid": uuids[t]}],
                "updates": [{"action": "set-properties", "updates": {"owner": t}}]} for t in ("a", "b")]
    stale = [dict(changes[0]), {**changes[1], "requirements": [{"type": "assert-table-uuid", "uuid": uuids["a"]}]}]
    response = _post(lake, "multi", "/transactions/commit", {"table-changes": stale})
    assert response.status_code == 409 and lh.resolve("multi").id == head.id  # one stale table: nothing lands
    response = _post(lake, "multi", "/transactions/commit", {"table-changes": changes})
    assert response.status_code == 204, response.text
    commit = lh.resolve("multi")
    assert [c.id for c in lh.log("multi", limit=2)][1] == head.id  # ONE commit for both tables
    assert {o.object_name for o in lh.store.operations(commit.id)} == {"pair.a", "pair.b"}
    assert lh.snapshot("multi").table("pair.b").properties["owner"] == "b"

    catalog.rename_table("pair.a", "pair.renamed")
    assert _ops(lh, lh.resolve("multi").id) == ["alter name"] and lh.snapshot("multi").has_table("pair.renamed")
    catalog.drop_table("pair.b")
    assert _ops(lh, lh.resolve("multi").id) == ["drop"] and not lh.snapshot("multi").has_table("pair.b")
    result = catalog.update_namespace_properties("pair", removals={"nothere"}, updates={"team": "ingest"})
    assert result.updated == ["team"] and result.missing == ["nothere"]
    assert lh.snapshot("multi").ns.database_info(lh.snapshot("multi").ns.database_id("pair")).properties == \
        {"team": "ingest"}
    response = requests.delete(f"{lake['url']}/v1/{_prefix(lake, 'multi')}/namespaces/pair", timeout=30)
    assert response.status_code == 409 and response.json()["error"]["type"] == "NamespaceNotEmptyException"
    catalog.drop_table("pair.renamed")
    catalog.drop_namespace("pair")
    assert not lh.snapshot("multi").has_database("pair")


def test_data_file_outside_the_write_path_is_refused_in_one_line_and_nothing_committed(lake, tmp_path):
    """PyIceberg's add_files of a Parquet file written elsewhere: branchspark references files where
    segments live and never copies, so it names the path to write to instead (importing is another issue)."""
    import pyarrow.parquet as pq

    lh = lake["lh"]
    lh.create_branch("outside")
    catalog = _catalog(lake, "outside")
    table = catalog.load_table("shop.orders")
    elsewhere = str(tmp_path / "stray.parquet")
    pq.write_table(pa.table({"id": [1000], "name": ["far"], "qty": [1]}, schema=table.schema().as_arrow()), elsewhere)
    head = lh.resolve("outside").id
    with pytest.raises(Exception) as refused:
        table.add_files([elsewhere])
    message = str(refused.value)
    assert "write.data.path" in message and "\n" not in message.strip()
    assert lh.resolve("outside").id == head
