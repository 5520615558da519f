"""A warehouse on S3 (moto's server on 127.0.0.1) against one on the local file system, side by side.

    python bench/object_store.py [--small 1000000] [--large 10000000] [--changed 10000] [--port 5000]

For each size, `main` holds a keyed table written by one insert; `dev` updates half of `--changed` rows
(spread over every file) and inserts the other half; `main` updates a tenth as many other rows, so that the
merge of dev into main is a real three-way merge. Timed on each warehouse: dev's write (one commit), the
merge (one commit). Then one `dbt run` of the sample project (after its seed) on each. On S3 it counts the
requests each commit sent to the store, from the server's request log (one line per request).

Targets: S3 requests per merge commit do not grow with the table (large / small within 1.2x); `gc` lists
only the folders of tables its catalog knows (every listing's prefix is checked).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

ROOT = Path(__file__).resolve().parents[1]
_REQUEST = re.compile(r'"(GET|PUT|POST|HEAD|DELETE) (\S+) HTTP')


class RequestLog:
    """moto's request log: counts what was asked since the last mark."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0

    def mark(self) -> None:
        self.offset = self.path.stat().st_size

    def since(self) -> list[tuple[str, str]]:
        with open(self.path, "rb") as log:
            log.seek(self.offset)
            text = log.read().decode("utf-8", "replace")
        return [(m.group(1), m.group(2)) for m in _REQUEST.finditer(text)]


def start_server(port: int) -> tuple[str, Path]:
    env = {**os.environ, "BRANCHSPARK_S3_PORT": str(port), "VENV": str(Path(sys.executable).parent.parent)}
    url = subprocess.run(["bash", str(ROOT / "tests/moto_server.sh"), "start"], env=env, check=True,
                         capture_output=True, text=True).stdout.strip()
    return url, ROOT / ".moto-server" / str(port) / "requests.log"


def stop_server(port: int) -> None:
    env = {**os.environ, "BRANCHSPARK_S3_PORT": str(port)}
    subprocess.run(["bash", str(ROOT / "tests/moto_server.sh"), "stop"], env=env, check=False)


def kinds(requests: list[tuple[str, str]]) -> str:
    counted = Counter("LIST" if method == "GET" and "list-type" in path else method for method, path in requests)
    return ", ".join(f"{kind} {n}" for kind, n in sorted(counted.items()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", type=int, default=1_000_000)
    parser.add_argument("--large", type=int, default=10_000_000)
    parser.add_argument("--changed", type=int, default=10_000)
    parser.add_argument("--port", type=int, default=int(os.environ.get("BRANCHSPARK_S3_PORT", "5000")))
    parser.add_argument("--no-dbt", action="store_true", help="leave out the dbt run")
    args = parser.parse_args()

    url, log_path = start_server(args.port)
    os.environ.update(AWS_ENDPOINT_URL=url, AWS_REGION="us-east-1", AWS_ACCESS_KEY_ID="bench",
                      AWS_SECRET_ACCESS_KEY="bench-secret")
    try:
        run(args, url, RequestLog(log_path))
    finally:
        stop_server(args.port)


def run(args, url: str, log: RequestLog) -> None:
    import boto3

    sys.path.insert(0, str(ROOT / "bench"))
    from common import scratch_dir, spark_session
    from merge import TABLE, rows_of

    from dbt.adapters.branchspark.core.lakehouse import Lakehouse

    bucket = f"bench-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=url).create_bucket(Bucket=bucket)
    spark = spark_session()
    spark.sparkContext.setLogLevel("ERROR")
    results = {}
    for rows in (args.small, args.large):
        for place in ("local", "s3"):
            warehouse = scratch_dir(f"objstore-{rows}") if place == "local" else f"s3a://{bucket}/m{rows}"
            catalog = f"sqlite:///{scratch_dir('objstore-catalog')}/catalog.db"
            lakehouse = Lakehouse(spark, warehouse, catalog)
            start = time.perf_counter()
            with lakehouse.transaction("main", message="load") as tx:
                tx.create_database("bench")
                tx.create_table_as(TABLE, rows_of(spark, 0, rows).repartition(4), primary_key=["id"])
            load_s = time.perf_counter() - start
            lakehouse.create_branch("dev")
            half = args.changed // 2
            step = rows // half
            log.mark()
            start = time.perf_counter()
            with lakehouse.transaction("dev", message="dev work") as tx:
                tx.update(TABLE, f"id % {step} = 0", {"balance": "balance + 1"})
                tx.insert(TABLE, rows_of(spark, rows, rows + half))
            write_s, write_requests = time.perf_counter() - start, log.since()
            with lakehouse.transaction("main", message="main work") as tx:
                tx.update(TABLE, f"id % {step * 10} = 1", {"name": "concat(name, '-main')"})
            log.mark()
            start = time.perf_counter()
            result = lakehouse.merge("dev", "main")
            merge_s, merge_requests = time.perf_counter() - start, log.since()
            assert result.status == "merged", result
            gc_check = ""
            if place == "s3":
                known = {lakehouse.snapshot().state(TABLE).id}
                log.mark()
                lakehouse.gc(grace_seconds=0)
                listed = [unquote(parse_qs(urlparse(path).query).get("prefix", [""])[0])
                          for method, path in log.since() if method == "GET" and "list-type" in path]
                outside = [p for p in listed if not any(p.startswith(f"m{rows}/tables/{t}") for t in known)]
                gc_check = (f"gc: {len(listed)} listings, all inside the catalog's tables' folders"
                            if not outside else f"gc: listed OUTSIDE its tables: {outside}")
            results[(rows, place)] = (load_s, write_s, merge_s, len(write_requests), len(merge_requests))
            print(f"{rows:>12,} rows {place:>5}: load {load_s:7.2f} s, dev write {write_s:6.2f} s, merge {merge_s:6.2f} s"
                  + (f"; S3 requests: write commit {len(write_requests)} ({kinds(write_requests)}), merge commit "
                     f"{len(merge_requests)} ({kinds(merge_requests)}); {gc_check}" if place == "s3" else ""),
                  flush=True)
            lakehouse.store.dispose()
            if place == "local":
                shutil.rmtree(warehouse, ignore_errors=True)

    small, large = args.small, args.large
    print(f"\n== a warehouse on S3 (moto on 127.0.0.1) against the local file system, {args.changed:,} changed rows")
    for rows in (small, large):
        local, s3 = results[(rows, "local")], results[(rows, "s3")]
        print(f"  {rows:>12,} rows: dev write S3/local {s3[1] / local[1]:6.2f}x, merge S3/local {s3[2] / local[2]:6.2f}x")
    for index, label in ((3, "write commit"), (4, "merge commit")):
        ratio = results[(large, "s3")][index] / max(results[(small, "s3")][index], 1)
        verdict = "ok" if ratio <= 1.2 else "OVER TARGET"
        print(f"  S3 requests per {label}, {large:,} / {small:,} rows: {results[(large, 's3')][index]} / "
              f"{results[(small, 's3')][index]} = {ratio:.2f}x (target <= 1.2x: {verdict})")
    if not args.no_dbt:
        dbt_run(url, bucket, log)


def dbt_run(url: str, bucket: str, log: RequestLog) -> None:
    """One `dbt run` of the sample project (after its seed), in a process of its own per warehouse."""
    import yaml

    from common import scratch_dir

    timings = {}
    for place in ("local", "s3"):
        project = Path(scratch_dir(f"objstore-dbt-{place}")) / "sample_project"
        shutil.copytree(ROOT / "sample_project", project,
                        ignore=shutil.ignore_patterns("warehouse", "target", "logs", "dbt_packages"))
        profiles = yaml.safe_load((project / "profiles.yml").read_text())
        for output in profiles["branchspark_sample"]["outputs"].values():
            output.update(method="session", protected_branches=[])
            if place == "s3":
                output.update(warehouse=f"s3://{bucket}/dbt", catalog=f"sqlite:///{project}/catalog.db")
        (project / "profiles.yml").write_text(yaml.safe_dump(profiles))
        dbt = [str(Path(sys.executable).with_name("dbt")), "--project-dir", str(project), "--profiles-dir", str(project)]
        subprocess.run([dbt[0], "seed", *dbt[1:]], check=True, capture_output=True)
        log.mark()
        start = time.perf_counter()
        subprocess.run([dbt[0], "run", *dbt[1:]], check=True, capture_output=True)
        timings[place] = time.perf_counter() - start
        requests = log.since() if place == "s3" else []
        print(f"  dbt run of the sample project, {place:>5}: {timings[place]:7.2f} s (a process with its own JVM)"
              + (f"; {len(requests)} S3 requests for the run's one landing commit and its models' writes "
                 f"({kinds(requests)})" if place == "s3" else ""), flush=True)
    print(f"  dbt run S3/local: {timings['s3'] / timings['local']:.2f}x")


if __name__ == "__main__":
    main()
