"""A warehouse on S3 (moto's server on 127.0.0.1) against one on the local file system, side by side.

    python bench/object_store.py [--small 1000000] [--large 10000000 | --large 0] [--changed 10000]
                                 [--port 5000] [--no-dbt] [--trace FOLDER]

For each size, `main` holds a keyed table written by one insert in key order (4 files, each a range of ids) and
`dev` branches from it. Each
step is one commit on `dev` (or a read of `main`), timed on each warehouse and, on S3, counted by method
from the server's request log (one line per request; LIST is a GET with list-type): an insert of
`--changed` rows, an update, an upsert (half replaced, half new), a delete and an overwrite (a rebuild that
drops rows) of a tenth as many (the update and delete by a predicate over every file, `id % 1000 = 0`, and again
by a range of ids, which reads only the files whose key range can hold one), the merge of dev into main after main moved (a three-way merge), a merge
that writes nothing (a branch with no changes of its own) and a full read (an aggregate of every row), in the
writer's process and in a new one (as a new dbt run reads: no cache of the writer's JVM helps it).
Then one `dbt run` of the sample project (after its seed) on each. --trace writes each step's requests.

Targets (issue 73): an insert of 10k rows <= 12 requests, an update of 1k <= 20, a merge that writes
nothing <= 2, a read (either) with no HEAD and no LIST; per step, large / small within 1.1x; `gc` lists only the
folders of tables its catalog knows (every listing's prefix is checked).
"""
from __future__ import annotations

import argparse
import json
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
    """moto's request log: counts what was asked of one bucket since the last mark (others may share the server)."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.bucket = None

    def mark(self) -> None:
        self.offset = self.path.stat().st_size

    def since(self) -> list[tuple[str, str]]:
        with open(self.path, "rb") as log:
            log.seek(self.offset)
            text = log.read().decode("utf-8", "replace")
        found = [(m.group(1), m.group(2)) for m in _REQUEST.finditer(text)]
        if self.bucket is None:
            return found
        return [(method, path) for method, path in found if path.split("?", 1)[0].split("/")[1] == self.bucket]


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
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a session setting (for measuring one lever at a time: the caller's settings win)")
    parser.add_argument("--s3-only", action="store_true", help="leave out the local warehouse (no time ratios)")
    parser.add_argument("--trace", help="a folder to write each S3 step's requests into, one file a step")
    args = parser.parse_args()

    url, log_path = start_server(args.port)
    os.environ.update(AWS_ENDPOINT_URL=url, AWS_REGION="us-east-1", AWS_ACCESS_KEY_ID="bench",
                      AWS_SECRET_ACCESS_KEY="bench-secret")
    try:
        run(args, url, RequestLog(log_path))
    finally:
        stop_server(args.port)


STEPS = ("insert", "update", "update by key", "upsert", "delete", "delete by key", "overwrite", "merge",
         "merge (nothing to write)", "read", "read (new process)")
# A process of its own reads the table as a new dbt run or CLI call would: nothing of the writer's JVM (S3A's
# caches of objects and their metadata) helps it. Its time includes the JVM's start: only the requests count.
_NEW_PROCESS_READ = """
import json, sys
from pyspark.sql import functions as F
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.core.spark_session import local_session
spark = local_session("local[2]", {"spark.ui.showConsoleProgress": "false", **json.loads(sys.argv[4])})
spark.sparkContext.setLogLevel("ERROR")
lakehouse = Lakehouse(spark, sys.argv[1], sys.argv[2])
table = sys.argv[3]
lakehouse.snapshot("main").state(table)  # the catalog's answer first: its requests are not the read's
print("MARK", flush=True)
sys.stdin.readline()
print(lakehouse.read(table, "main").agg(F.sum("balance"), F.count(F.lit(1))).collect(), flush=True)
"""


def kinds_counter(requests: list[tuple[str, str]]) -> Counter:
    return Counter("LIST" if method == "GET" and "list-type" in path else method for method, path in requests)


def steps(spark, lakehouse, rows: int, changed: int, rows_of, table: str):
    """The commits and the read each warehouse runs, as (label, action): on a keyed table of `rows` rows."""
    from pyspark.sql import functions as F

    step = max(rows // changed, 1)
    small = max(changed // 10, 1)  # the 1k rows of an update / delete / upsert beside a 10k-row insert
    small_step = max(rows // small, 1)

    def insert():
        with lakehouse.transaction("dev", message="insert") as tx:
            tx.insert(table, rows_of(spark, rows, rows + changed))

    def update():
        with lakehouse.transaction("dev", message="update") as tx:
            tx.update(table, f"id % {small_step} = 0", {"balance": "balance + 1"})

    def update_by_key():  # 1k ids in a row: the files whose key range cannot hold one are not read
        with lakehouse.transaction("dev", message="update by key") as tx:
            tx.update(table, f"id BETWEEN {rows // 2} AND {rows // 2 + small - 1}", {"balance": "balance + 1"})

    def upsert():
        with lakehouse.transaction("dev", message="upsert") as tx:
            half = small // 2
            changed_rows = rows_of(spark, 0, half).select(
                (F.col("id") * small_step + 1).alias("id"), F.lit(-1).cast("long").alias("balance"), "name")
            tx.upsert(table, changed_rows.unionByName(rows_of(spark, rows + changed, rows + changed + half)))

    def delete():
        with lakehouse.transaction("dev", message="delete") as tx:
            tx.delete(table, f"id % {small_step} = 2")

    def delete_by_key():
        with lakehouse.transaction("dev", message="delete by key") as tx:
            tx.delete(table, f"id >= {rows // 4} AND id < {rows // 4 + small}")

    def overwrite():  # a rebuild that reproduces all but 1k rows: only its difference is written
        with lakehouse.transaction("dev", message="overwrite") as tx:
            tx.overwrite(table, tx.read(table).where(f"id % {small_step} != 3"))

    def merge():  # main moved too: a real three-way merge
        with lakehouse.transaction("main", message="main work") as tx:
            # 1k rows of the first quarter, none of which dev changed (the key-range steps are beyond it)
            tx.update(table, f"id % {max(small_step // 4, 1)} = 5 AND id < {rows // 4}",
                      {"name": "concat(name, '-main')"})
        return "main's own update first"

    def read():
        return lakehouse.read(table, "main").agg(F.sum("balance"), F.count(F.lit(1))).collect()

    return {"insert": insert, "update": update, "update by key": update_by_key, "upsert": upsert, "delete": delete,
            "delete by key": delete_by_key, "overwrite": overwrite}, merge, read


def run(args, url: str, log: RequestLog) -> None:
    import boto3

    sys.path.insert(0, str(ROOT / "bench"))
    from common import scratch_dir
    from merge import TABLE, rows_of

    from dbt.adapters.branchspark.core.lakehouse import Lakehouse
    from dbt.adapters.branchspark.core.spark_session import local_session

    bucket = f"bench-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=url).create_bucket(Bucket=bucket)
    log.bucket = bucket
    conf = dict(c.split("=", 1) for c in args.conf)
    spark = local_session("local[2]", {"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "4g",
                                       "spark.ui.showConsoleProgress": "false",
                                       **conf})
    spark.sparkContext.setLogLevel("ERROR")
    sizes = [args.small] + ([args.large] if args.large else [])
    results = {}  # (rows, place, step) -> (seconds, Counter of requests)
    for rows in sizes:
        for place in (("s3",) if args.s3_only else ("local", "s3")):
            warehouse = scratch_dir(f"objstore-{rows}") if place == "local" else f"s3a://{bucket}/m{rows}"
            catalog = f"sqlite:///{scratch_dir('objstore-catalog')}/catalog.db"
            lakehouse = Lakehouse(spark, warehouse, catalog)
            with lakehouse.transaction("main", message="load") as tx:
                tx.create_database("bench")
                # in key order, as tables whose ids or event times grow are: each file holds a range of ids
                tx.create_table_as(TABLE, rows_of(spark, 0, rows).repartitionByRange(4, "id"), primary_key=["id"])
            lakehouse.create_branch("dev")
            writes, main_moves, read = steps(
                spark, lakehouse, rows, args.changed, rows_of, TABLE)

            def measured(label, action):
                log.mark()
                start = time.perf_counter()
                action()
                requests = log.since() if place == "s3" else []
                results[(rows, place, label)] = (time.perf_counter() - start, kinds_counter(requests))
                if args.trace and requests:
                    os.makedirs(args.trace, exist_ok=True)
                    name = re.sub(r"\W+", "_", label).strip("_")
                    Path(args.trace, f"{rows}-{name}.txt").write_text("".join(f"{m} {unquote(p)}\n" for m, p in requests))

            for label, action in writes.items():
                measured(label, action)
            main_moves()
            measured("merge", lambda: lakehouse.merge("dev", "main"))
            lakehouse.create_branch("idle", "main")
            measured("merge (nothing to write)", lambda: lakehouse.merge("idle", "main"))
            read()  # the session's first read of the table plans it once: count a second, as a reader would
            measured("read", read)
            measured("read (new process)", lambda: read_in_new_process(warehouse, catalog, TABLE, log, conf))
            # the block cache's timing moves GETs with the machine's load (docs/performance.md, "Requests that follow
            # the data"): print it beside the counts
            line = [f"{rows:>12,} rows {place:>5}:  (load average {os.getloadavg()[0]:.2f})"]
            for label in STEPS:
                seconds, counted = results[(rows, place, label)]
                line.append(f"    {label:<26} {seconds:6.2f} s" + (
                    f"  {sum(counted.values()):4d} requests ({', '.join(f'{k} {n}' for k, n in sorted(counted.items()))})"
                    if place == "s3" else ""))
            if place == "s3":
                known = {lakehouse.snapshot().state(TABLE).id}
                log.mark()
                lakehouse.gc(grace_seconds=0)
                listed = [unquote(parse_qs(urlparse(path).query).get("prefix", [""])[0])
                          for method, path in log.since() if method == "GET" and "list-type" in path]
                outside = [p for p in listed if not any(p.startswith(f"m{rows}/tables/{t}") for t in known)]
                line.append(f"    gc: {len(listed)} listings, all inside the catalog's tables' folders"
                            if not outside else f"    gc: listed OUTSIDE its tables: {outside}")
            print("\n".join(line), flush=True)
            lakehouse.store.dispose()
            if place == "local":
                shutil.rmtree(warehouse, ignore_errors=True)

    print(f"\n== a warehouse on S3 (moto on 127.0.0.1) against the local file system; insert of "
          f"{args.changed:,} rows, the other writes {max(args.changed // 10, 1):,} rows")
    targets = {"insert": 12, "update": 20, "update by key": 20, "merge (nothing to write)": 2}
    for rows in sizes:
        for label in STEPS:
            s3 = results[(rows, "s3", label)]
            local = results.get((rows, "local", label), (float("nan"), None))
            total = sum(s3[1].values())
            target = targets.get(label)
            verdict = ("" if target is None else f"  (target <= {target}: {'ok' if total <= target else 'OVER'})")
            if label.startswith("read"):
                probes = s3[1]["HEAD"] + s3[1]["LIST"]
                verdict = f"  (target no HEAD/LIST: {'ok' if not probes else f'OVER, {probes} probes'})"
            print(f"  {rows:>12,} rows {label:<26} S3/local {s3[0] / max(local[0], 1e-9):5.2f}x, "
                  f"{total:4d} requests{verdict}")
    if args.large:
        for label in STEPS:
            big = sum(results[(args.large, "s3", label)][1].values())
            little = sum(results[(args.small, "s3", label)][1].values())
            ratio = big / max(little, 1)
            print(f"  S3 requests of {label}, {args.large:,} / {args.small:,} rows: {big} / {little} = {ratio:.2f}x "
                  f"(target <= 1.1x: {'ok' if ratio <= 1.1 else 'OVER TARGET'})")
    if not args.no_dbt:
        dbt_run(url, bucket, log)


def read_in_new_process(warehouse: str, catalog: str, table: str, log: RequestLog, conf: dict) -> None:
    """A full read of `table` on main by a Python process of its own (with the --conf settings), counted from
    when its session is up."""
    reader = subprocess.Popen([sys.executable, "-c", _NEW_PROCESS_READ, warehouse, catalog, table, json.dumps(conf)],
                              text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    for line in reader.stdout:
        if line.startswith("MARK"):
            break
    log.mark()  # the session's start (the catalog's file on S3, if any) is not the read's
    reader.stdin.write("\n")
    reader.stdin.flush()
    out, _ = reader.communicate(timeout=600)
    if reader.returncode != 0:
        raise RuntimeError(f"the reading process failed: {out}")


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
