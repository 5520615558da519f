"""What a commit and a read cost on S3, counted on the server (issue 73): an insert is one commit of a handful of
requests, and a full read opens the files the catalog names with no HEAD and no LIST: only their GETs.

The counts are deterministic (the same requests in every run, whatever the machine's load); they do not grow
with the table (bench/object_store.py compares 1M and 10M rows), so a table of a few thousand rows in a few files
shows them. Not a timed test.
"""
from __future__ import annotations

from collections import Counter

import pytest
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core.connect import is_connect
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.core.storage import known_files, object_store
from tests.missing import missing
from tests.s3_store import ServerRequests, s3_client

# The target for an insert (measured: 7 with direct commits, 49 with S3A's magic committer, 89 before issue
# 73). A read opens only files the catalog names: no LIST, and no lookup before or as a file is opened (S3A's
# analytics stream sends a HEAD the first time a JVM opens an object unless it is given the object's ETag, which
# the catalog records as each upload was answered: catalog revision 0007).
INSERT_LIMIT = 12
TABLE = "shop.accounts"


def rows(spark, start: int, end: int):
    return spark.range(start, end).select("id", (F.col("id") % 97).alias("balance"))


def test_an_insert_and_a_read_on_s3_cost_only_the_requests_their_data_needs(spark, bucket, s3_catalog):
    if is_connect(spark):
        pytest.skip("counted in the in-process pass: a Connect cluster splits the work (and so the files and "
                    "their requests) otherwise; bench/object_store.py counts what users run")
    log = ServerRequests(bucket)
    if not log.available():
        missing(f"no request log of the S3 server at {log.path}: start the server with tests/moto_server.sh")
    lh = Lakehouse(spark, f"s3a://{bucket}/lake", s3_catalog)
    with lh.transaction("main", message="load") as tx:
        tx.create_database("shop")
        tx.create_table_as(TABLE, rows(spark, 0, 4000).repartition(4), primary_key=["id"])
    with lh.transaction("main", message="update") as tx:  # a tombstone too: the read opens its files
        tx.update(TABLE, "id % 100 = 0", {"balance": "balance + 1"})

    log.mark()
    with lh.transaction("main", message="insert") as tx:
        tx.insert(TABLE, rows(spark, 4000, 5000).coalesce(1))
    insert = log.since()
    print(f"insert: {len(insert)} requests {Counter(k for k, _ in insert)}")
    assert not [path for _, path in insert if path.endswith(("/_SUCCESS", ".pending"))], "no success or pending marker"
    assert len(insert) <= INSERT_LIMIT, f"an insert cost {len(insert)} requests: {Counter(k for k, _ in insert)}"
    assert not [k for k, _ in insert if k in ("LIST", "POST", "DELETE")], \
        f"an insert listed, uploaded in parts or deleted: {Counter(k for k, _ in insert)}"

    snapshot = lh.snapshot()
    state = snapshot.state(TABLE)
    segments = snapshot.ns.segment_infos(state.segments)
    tombstones = snapshot.ns.tombstone_infos(state.tombstones)
    assert all(s.file_sizes for s in segments) and all(t.file_sizes for t in tombstones), "the catalog has the sizes"
    # the sizes a direct commit counted as it wrote are the objects' sizes on the server
    filesystem, base = object_store.filesystem(f"s3a://{bucket}/lake")
    recorded = {f"{base}/{item.path}/{name}": size for item in [*segments, *tombstones]
                for name, size in zip(item.files, item.file_sizes)}
    stored = {info.path: info.size for info in filesystem.get_file_info(list(recorded))}
    assert stored == recorded
    # and the ETags the store answered the uploads with are the objects' ETags (a wrong one fails every read)
    client = s3_client()
    etags = {f"{item.path}/{name}": etag for item in [*segments, *tombstones]
             for name, etag in zip(item.files, item.file_etags)}
    assert len(etags) == len(recorded) and all(etags.values()), "every file written has its ETag in the catalog"
    assert {path: client.head_object(Bucket=bucket, Key=f"lake/{path}")["ETag"] for path in etags} == etags
    if not known_files.usable(spark):
        missing("branchspark's jar is not loaded with this session: build it (make install)")
    log.mark()
    total, count = lh.read(TABLE).agg(F.sum("balance"), F.count(F.lit(1))).collect()[0]
    read = log.since()
    print(f"read: {len(read)} requests {Counter(k for k, _ in read)}")
    assert count == 5000 and total == sum(i % 97 for i in range(5000)) + 40
    listings = [path for kind, path in read if kind == "LIST"]
    assert not listings, f"a read listed folders: {listings}"
    heads = [path for kind, path in read if kind == "HEAD"]
    assert not heads, f"a read looked files up: {heads}"
    assert not [k for k, _ in read if k != "GET"], Counter(k for k, _ in read)
    opened = {path for _, path in read}
    named = {f"/lake/{s.path}/{name}" for s in segments for name in s.files} | \
            {f"/lake/{t.path}/{name}" for t in tombstones for name in t.files}
    assert opened <= named, f"a read opened files the catalog does not name: {sorted(opened - named)}"
