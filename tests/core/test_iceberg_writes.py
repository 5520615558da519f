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
from dbt.adapters.branchspark.iceberg.metadata import _Build
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
    assert _ops(lh, deleted.id) == ["delete"]  # the rewrite's copies of 1 and 3 are no change
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


def _feed(lh, table: str, start: str, end: str) -> list:
    return sorted((r["_change_type"], *[r[c] for c in r.asDict() if not c.startswith("_")])
                  for r in table_changes(lh, table, start, end).collect())


def _rows_table_on_a_branch(lake, name: str) -> tuple[RestCatalog, pa.Schema]:
    """A new branch `name` and its empty table `name`.rows (id, name) through REST."""
    lake["lh"].create_branch(name)
    catalog = _catalog(lake, name)
    catalog.create_namespace(name)
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    catalog.create_table(f"{name}.rows", schema=schema)
    return catalog, schema


def test_plain_feed_of_a_copy_on_write_rewrite_lists_only_the_rows_that_changed(lake):
    """Regression (issue 69): a copy-on-write rewrite copies the rows of a file it did not change into its
    new file; the plain change feed listed those rows as deleted and inserted again (SPEC 4: a row that
    did not change is no change). Duplicates pair as a multiset: each copy with one old row."""
    lh, catalog, schema = lake["lh"], *_rows_table_on_a_branch(lake, "cow")
    catalog.load_table("cow.rows").append(pa.table({"id": [1, 1, 2, 3, 4], "name": ["a", "a", "b", "c", "d"]},
                                                   schema=schema))
    appended = lh.resolve("cow")
    catalog.load_table("cow.rows").delete("id = 2")  # rewrites the file: 1, 1, 3, 4 copied
    deleted = lh.resolve("cow")
    assert _feed(lh, "cow.rows", appended.id, deleted.id) == [("delete", 2, "b")]
    # a delete by filter plus an append, one commit: the rewrite copies 1, 1 and 4; (1, 'a') comes in a third time
    catalog.load_table("cow.rows").overwrite(pa.table({"id": [3, 1], "name": ["C", "a"]}, schema=schema),
                                             overwrite_filter="id = 3")
    end = lh.resolve("cow")
    assert _feed(lh, "cow.rows", deleted.id, end.id) == [("delete", 3, "c"), ("insert", 1, "a"), ("insert", 3, "C")]
    expected = [(1, "a"), (1, "a"), (1, "a"), (3, "C"), (4, "d")]
    assert _rows(lh, "cow.rows", "cow") == expected == _scan(catalog, "cow.rows")
    assert _feed(lh, "cow.rows", appended.id, end.id) == [("delete", 2, "b"), ("delete", 3, "c"),
                                                           ("insert", 1, "a"), ("insert", 3, "C")]


def test_copy_on_write_of_a_file_with_deleted_rows_deletes_exactly_the_rows_it_dropped(lake):
    """A rewrite of a file some of whose rows were already deleted (branchspark's tombstones): the match
    takes the file's live rows only (a mask over the file's rows), so each tombstone must land on the row the
    writer dropped, not on its neighbour, and the rows deleted before must not come back. Run twice: the
    second rewrite's files are the server's decoded rows of the first."""
    lh, catalog, schema = lake["lh"], *_rows_table_on_a_branch(lake, "holes")
    catalog.load_table("holes.rows").append(pa.table({"id": list(range(100)),
                                                      "name": [f"n{i}" for i in range(100)]}, schema=schema))
    lh.branch("holes").delete("holes.rows", "id % 10 = 0")
    live = [(i, f"n{i}") for i in range(100) if i % 10]
    for doomed in (55, 56):
        before = lh.resolve("holes")
        catalog.load_table("holes.rows").delete(f"id = {doomed}")  # rewrites the file: its other live rows copied
        live = [r for r in live if r[0] != doomed]
        assert _feed(lh, "holes.rows", before.id, lh.resolve("holes").id) == [("delete", doomed, f"n{doomed}")]
        assert _rows(lh, "holes.rows", "holes") == live == _scan(catalog, "holes.rows")


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
    # an update by rows (a delete by filter and the new row, one commit); a plain delete of it would merge (3.3)
    table.overwrite(pa.table({"id": [8], "name": ["o8"], "qty": [81]}, schema=table.schema().as_arrow()),
                    overwrite_filter="id = 8")
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


def test_every_snapshot_of_a_history_of_writes_reads_as_it_was_from_this_server_and_a_fresh_one(lake):
    """The server describes each version's files once (its manifests, its position delete files) and names
    them again in the metadata of every later version: after a random history of appends, copy-on-write
    deletes, position-delete-free overwrites, every snapshot the history served reads as the rows of its
    commit, through the server that built them and through a fresh server on the same warehouse."""
    import random

    lh = lake["lh"]
    lh.create_branch("history")
    catalog = _catalog(lake, "history")
    catalog.create_namespace("hist")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string())])
    table = catalog.create_table("hist.rows", schema=schema)
    rng, model, served, next_id = random.Random(69), [], [], 0
    for step in range(sized(10, 24)):
        action = rng.choice(["append", "append", "delete", "overwrite"]) if model else "append"
        table = catalog.load_table("hist.rows")
        if action == "append":
            rows = [(next_id + i, f"s{step}") for i in range(rng.randint(1, 6))]
            next_id += len(rows)
            table.append(pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows]}, schema=schema))
            model += rows
        elif action == "delete":  # rewrites the files holding them: copies of the others, deleted at once
            doomed = {r[0] for r in rng.sample(model, max(1, len(model) // 3))}
            table.delete(f"id IN ({', '.join(map(str, sorted(doomed)))})")
            model = [r for r in model if r[0] not in doomed]
        else:
            rows = [(next_id + i, f"o{step}") for i in range(rng.randint(1, 3))]
            next_id += len(rows)
            table.overwrite(pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows]}, schema=schema))
            model = rows
        current = catalog.load_table("hist.rows")
        assert _scan(catalog, "hist.rows") == sorted(model) == _rows(lh, "hist.rows", "history"), (step, action)
        served.append((current.current_snapshot().snapshot_id, sorted(model)))
    fresh = _Server(lake["warehouse"])
    try:
        for client in (catalog, RestCatalog("fresh", uri=fresh.url, warehouse="history")):
            loaded = client.load_table("hist.rows")
            for snapshot_id, rows in served:
                got = sorted(tuple(r.values()) for r in loaded.scan(snapshot_id=snapshot_id).to_arrow().to_pylist())
                assert got == rows, snapshot_id
    finally:
        fresh.stop()
    # each version is described once and named again by later versions' metadata: a chain described version
    # by version, as commits come, reads exactly as the whole chain described at once by a fresh builder
    service = CatalogService(Lakehouse(None, lake["warehouse"]))
    head = service.snapshot("history")
    chain = service._chain(head.commit, head.ns.table_id("hist.rows"))
    whole = _Build(CatalogService(Lakehouse(None, lake["warehouse"])).builder, "hist.rows", chain).run()
    for end in range(1, len(chain) + 1):
        grown = _Build(service.builder, "hist.rows", chain[:end]).run()
    assert grown == whole


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
    # only the rows the statements changed: none of the rows the copy-on-write rewrites copied (issue 69)
    assert sorted(r["id"] for r in changes if r["_change_type"] == "delete") == [0, 1, 2, 3, 4]
    assert sorted(r["id"] for r in changes if r["_change_type"] == "insert") == [0, 1, 2, 4, 100]
    # the table holds its 10 first rows and the 5 new images, not the rewrites' copies beside the rows they
    # copied (a referenced copy-on-write file of 5 rows would hold 4 copies: 22 rows and more)
    assert _physical_rows(lh, "shop.items", "sdev", lake["warehouse"]) == 10 + 5
    # Spark compressed its files as on Iceberg's own catalogs (zstd, served as they set it), not with gzip
    assert _codecs(lh, "lab.t", "sdev", lake["warehouse"]) == {"ZSTD"}
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


def _physical_rows(lh, table: str, at: str, warehouse: str) -> int:
    """Rows in the data files of the table's segments at `at`, deleted or not."""
    import pyarrow.parquet as pq

    snapshot = lh.snapshot(at)
    segments = snapshot.ns.segment_infos(snapshot.state(table).segments)
    return sum(pq.read_metadata(f"{warehouse}/{s.path}/{n}").num_rows for s in segments for n in s.files)


def _codecs(lh, table: str, at: str, warehouse: str) -> set[str]:
    """The compression codecs of the table's data files at `at`."""
    import pyarrow.parquet as pq

    snapshot = lh.snapshot(at)
    segments = snapshot.ns.segment_infos(snapshot.state(table).segments)
    footers = [pq.read_metadata(f"{warehouse}/{s.path}/{n}") for s in segments for n in s.files]
    return {f.row_group(g).column(c).compression for f in footers for g in range(f.num_row_groups)
            for c in range(f.num_columns)}


def test_served_write_defaults_unless_the_table_sets_its_own(lake):
    """Writers are served zstd (Iceberg's catalogs set it; Java falls back to gzip) and position deletes by
    partition (the server turns them into tombstones: a delete file per data file is only more files to
    write); a table's own setting wins, in the create answer and every load after it."""
    from dbt.adapters.branchspark.iceberg.files import ICEBERG_TABLE_DEFAULTS

    assert ICEBERG_TABLE_DEFAULTS == {"write.parquet.compression-codec": "zstd", "write.delete.granularity": "partition"}
    catalog, schema = _rows_table_on_a_branch(lake, "served")
    own = catalog.create_table("served.own", schema=schema, properties={"write.delete.granularity": "file"})
    for table in (catalog.load_table("served.rows"), own, catalog.load_table("served.own")):
        got = {k: table.properties.get(k) for k in ICEBERG_TABLE_DEFAULTS}
        expected = dict(ICEBERG_TABLE_DEFAULTS, **({"write.delete.granularity": "file"} if table.name()[-1] == "own"
                                                  else {}))
        assert got == expected, table.name()


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


def _commit_delete_file(lake, ref: str, table_name: str, delete_file) -> requests.Response:
    """A hand-built commit (as any Iceberg writer may send): the table's manifests plus one delete manifest
    holding `delete_file`."""
    import random
    import uuid

    from pyiceberg.manifest import ManifestContent, ManifestEntry, ManifestEntryStatus, ManifestWriterV2, \
        write_manifest_list

    class DeleteManifestWriter(ManifestWriterV2):
        def content(self) -> ManifestContent:
            return ManifestContent.DELETES

        @property
        def _meta(self) -> dict:
            return {**super()._meta, "content": "deletes"}

    table = _catalog(lake, ref).load_table(table_name)
    meta, io = table.metadata, table.io
    current = meta.current_snapshot()
    snapshot_id = random.getrandbits(62)
    manifest_path = f"{meta.location}/metadata/{uuid.uuid4().hex}-m0.avro"
    with DeleteManifestWriter(meta.spec(), meta.schema(), io.new_output(manifest_path), snapshot_id,
                              "deflate") as writer:
        writer.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id,
                                           data_file=delete_file))
    delete_manifest = writer.to_manifest_file()
    list_path = f"{meta.location}/metadata/snap-{snapshot_id}-{uuid.uuid4().hex}.avro"
    sequence = meta.last_sequence_number + 1
    with write_manifest_list(2, io.new_output(list_path), snapshot_id, current.snapshot_id, sequence,
                             "deflate") as manifests:
        manifests.add_manifests(current.manifests(io) + [delete_manifest])
    snapshot = {"snapshot-id": snapshot_id, "parent-snapshot-id": current.snapshot_id, "sequence-number": sequence,
                "timestamp-ms": int(time.time() * 1000), "manifest-list": list_path,
                "summary": {"operation": "delete"}, "schema-id": meta.current_schema_id}
    namespace, name = table_name.split(".")
    return _post(lake, ref, f"/namespaces/{namespace}/tables/{name}", {
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": current.snapshot_id}],
        "updates": [{"action": "add-snapshot", "snapshot": snapshot},
                    {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}]})


def test_equality_deletes_and_deletion_vectors_are_refused_in_one_line_and_nothing_committed(lake):
    """An equality delete file and a deletion vector (a Puffin delete file, Iceberg v3), each in a hand-built
    commit: 400 naming what is not supported and what to write instead; the branch does not move and every
    row is still there."""
    import os

    import pyarrow.parquet as pq
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    lh = lake["lh"]
    lh.create_branch("eq")
    table = _catalog(lake, "eq").load_table("shop.orders")
    data_path = table.metadata.properties["write.data.path"]
    os.makedirs(data_path.removeprefix("file:"), exist_ok=True)
    equality_path = f"{data_path}/eq-deletes.parquet"
    pq.write_table(pa.table({"id": [1]}), equality_path.removeprefix("file:"))
    puffin_path = f"{data_path}/dv.puffin"
    with open(puffin_path.removeprefix("file:"), "wb") as handle:
        handle.write(b"PFA1" + b"\0" * 16 + b"PFA1")
    a_data_file = next(iter(table.scan().plan_files())).file.file_path
    id_field = table.schema().find_field("id").field_id
    files = {
        "equality deletes": DataFile.from_args(
            content=DataFileContent.EQUALITY_DELETES, file_path=equality_path, file_format=FileFormat.PARQUET,
            partition=Record(), record_count=1, file_size_in_bytes=os.path.getsize(equality_path.removeprefix("file:")),
            equality_ids=[id_field]),
        "deletion vectors": DataFile.from_args(
            content=DataFileContent.POSITION_DELETES, file_path=puffin_path, file_format=FileFormat.PUFFIN,
            partition=Record(), record_count=1, file_size_in_bytes=24, referenced_data_file=a_data_file),
    }
    before, rows = lh.resolve("eq").id, _rows(lh, "shop.orders", "eq")
    for named, delete_file in files.items():
        response = _commit_delete_file(lake, "eq", "shop.orders", delete_file)
        message = response.json()["error"]["message"]
        assert response.status_code == 400 and named in message and "position deletes" in message, message
        assert "\n" not in message
        assert lh.resolve("eq").id == before and _rows(lh, "shop.orders", "eq") == rows


def test_pyiceberg_writes_a_partitioned_table_read_back_exact_and_merged_row_level(lake):
    """A table partitioned by identity through REST: PyIceberg creates it, appends, deletes (copy-on-write
    of one partition's file) and overwrites by filter; each partition's files are a segment where they lie;
    reads, the exact change feed, and a merge with branchspark's change to another partition on main."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    lh = lake["lh"]
    setup = _catalog(lake, "main")  # main is not protected in this module: the table is made there
    setup.create_namespace("parts")
    schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "region", StringType(),
                                                                                    required=False))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"))
    table = setup.create_table("parts.sales", schema=schema, partition_spec=spec)
    arrow = table.schema().as_arrow()
    table.append(pa.table({"id": [1, 2, 3, 4], "region": ["eu", "eu", "us", "us"]}, schema=arrow))
    setup.load_table("parts.sales").append(pa.table({"id": [5], "region": ["eu"]}, schema=arrow))  # another write
    state = lh.snapshot("main").state("parts.sales")
    assert state.partition_by == ("region",)
    assert sorted(s.partition_values["region"] for s in lh.snapshot("main").ns.segment_infos(state.segments)) == \
        ["eu", "eu", "us"]
    lh.create_branch("pdev")
    base = lh.resolve("pdev")
    catalog = _catalog(lake, "pdev")
    catalog.load_table("parts.sales").delete("id = 2")  # rewrites eu's file only
    assert _ops(lh, lh.resolve("pdev").id) == ["delete"]
    catalog.load_table("parts.sales").overwrite(pa.table({"id": [30], "region": ["us"]}, schema=arrow),
                                                overwrite_filter="id = 3")
    expected = [(1, "eu"), (4, "us"), (5, "eu"), (30, "us")]
    assert _rows(lh, "parts.sales", "pdev") == expected == _scan(catalog, "parts.sales")
    assert _feed(lh, "parts.sales", base.id, lh.resolve("pdev").id) == [
        ("delete", 2, "eu"), ("delete", 3, "us"), ("insert", 30, "us")]
    # a NULL partition's directory (Iceberg's `region=null`) would read back as the text 'null': refused
    head = lh.resolve("pdev").id
    with pytest.raises(Exception) as refused:
        catalog.load_table("parts.sales").append(pa.table({"id": [9], "region": [None]}, schema=arrow))
    assert "partition" in str(refused.value) and lh.resolve("pdev").id == head
    # branchspark changes a row of the other write on main meanwhile (the same partition as pdev's delete,
    # another segment: SPEC 3.3's "same segment" is the write a row came from); the merge lands both
    lh.branch("main").update("parts.sales", "id = 5", {"id": "50"})
    lh.merge("pdev", "main")
    merged = [(1, "eu"), (4, "us"), (30, "us"), (50, "eu")]
    assert _rows(lh, "parts.sales", "main") == merged == _scan(_catalog(lake, "main"), "parts.sales")


@pytest.mark.long_only  # a JVM of its own; make test runs the partitioned flow through PyIceberg (above)
def test_spark_with_iceberg_runtime_writes_a_partitioned_table_and_replaces_a_table(lake):
    """Spark 4.1 with Iceberg's runtime on warehouse=rdev: a table PARTITIONED BY (region), INSERT, then
    DELETE, UPDATE and MERGE INTO in copy-on-write and in merge-on-read; CREATE OR REPLACE TABLE ... AS SELECT
    (RTAS) of an existing table, recorded as an overwrite by rows; reads back exact; then a merge with
    branchspark's change to another row on main is row-level and the change feed exact."""
    require_spark_iceberg()
    lh = lake["lh"]
    lh.create_branch("rdev")
    start = lh.resolve("rdev")
    mor = ("'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
           "'write.merge.mode'='merge-on-read'")
    statements = {
        "01 namespace": "CREATE NAMESPACE c.geo",
        "02 create": "CREATE TABLE c.geo.p (id bigint, region string, qty bigint) USING iceberg PARTITIONED BY (region)",
        "03 insert": "INSERT INTO c.geo.p VALUES (1, 'eu', 1), (2, 'eu', 2), (3, 'us', 3), (4, 'us', 4), (5, 'ap', 5)",
        "04 cow delete": "DELETE FROM c.geo.p WHERE id = 2",
        "05 cow update": "UPDATE c.geo.p SET qty = 30 WHERE id = 3",
        "06 cow merge": "MERGE INTO c.geo.p t USING (SELECT 4L AS id, 'us' AS region, 40L AS qty UNION ALL "
                        "SELECT 6L, 'eu', 6L) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.qty = s.qty "
                        "WHEN NOT MATCHED THEN INSERT *",
        "07 to mor": f"ALTER TABLE c.geo.p SET TBLPROPERTIES ({mor})",
        "08 mor delete": "DELETE FROM c.geo.p WHERE id = 6",
        "09 mor update": "UPDATE c.geo.p SET qty = 10 WHERE id = 1",
        "10 mor merge": "MERGE INTO c.geo.p t USING (SELECT 4L AS id, 'us' AS region, 41L AS qty) s ON t.id = s.id "
                        "WHEN MATCHED THEN UPDATE SET t.qty = s.qty",
        "11 read p": "SELECT id, region, qty FROM c.geo.p",
        "12 rtas": "CREATE OR REPLACE TABLE c.shop.orders USING iceberg AS "
                   "SELECT id, name, CASE WHEN id = 3 THEN -3 ELSE qty END AS qty FROM c.shop.orders WHERE id <> 4",
        "13 read orders": "SELECT id, name, qty FROM c.shop.orders",
    }
    before_orders = _rows(lh, "shop.orders", "rdev")
    answers = spark_iceberg_read(lake["url"], {"c": "rdev"}, statements)
    failed = {k: v["error"] for k, v in answers.items() if "error" in v}
    assert not failed, failed
    partitioned = [(1, "eu", 10), (3, "us", 30), (4, "us", 41), (5, "ap", 5)]
    assert answers["11 read p"]["rows"] == canonical(partitioned)
    assert _rows(lh, "geo.p", "rdev") == partitioned
    assert lh.snapshot("rdev").state("geo.p").partition_by == ("region",)
    replaced = sorted((i, n, -3 if i == 3 else q) for i, n, q in before_orders if i != 4)
    assert answers["13 read orders"]["rows"] == canonical(replaced) and _rows(lh, "shop.orders", "rdev") == replaced
    rtas = next(c for c in lh.log("rdev") if "shop.orders" in c.message)
    assert "overwrite" in _ops(lh, rtas.id) and not {"insert", "update", "delete"} & set(_ops(lh, rtas.id))
    # the replace changed two rows: its feed is those, not the table (SPEC 4: an overwrite by rows)
    old_3 = next(r for r in before_orders if r[0] == 3)
    assert _feed(lh, "shop.orders", rtas.parents[0], rtas.id) == sorted(
        [("delete", *old_3), ("delete", *next(r for r in before_orders if r[0] == 4)), ("insert", 3, old_3[1], -3)])
    for table in ("geo.p", "shop.orders"):
        changes = table_changes(lh, table, start.id, lh.resolve("rdev").id).collect()
        had = multiset(lh.read(table, at=start.id)) if lh.snapshot(start.id).has_table(table) else Counter()
        assert replay(had, changes, 3) == multiset(lh.read(table, at="rdev")), table
    # main changed a row the replace kept as it was: the merge lands both sides (an overwrite merges by rows)
    lh.branch("main").update("shop.orders", "id = 7", {"qty": "qty + 100"})
    before_merge = lh.resolve("main")
    lh.merge("rdev", "main")
    merged = sorted((i, n, q + 100 if i == 7 else q) for i, n, q in replaced)
    assert any(r[0] == 7 for r in replaced) and _rows(lh, "shop.orders", "main") == merged
    assert _rows(lh, "geo.p", "main") == partitioned
    changes = table_changes(lh, "shop.orders", before_merge.id, lh.resolve("main").id).collect()
    assert replay(multiset(lh.read("shop.orders", at=before_merge.id)), changes, 3) == \
        multiset(lh.read("shop.orders", at="main"))
