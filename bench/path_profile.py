"""Where the time of the peers' three slow paths goes, phase by phase (issue 72): one Spark process, its UI's
REST API read after each run for the Spark jobs, their stages, tasks, rows and CPU.

    python bench/path_profile.py [--scale 0.1] [--repeats 3] [--paths scan,changes,upsert]

The table is bench/peers.py's (id, amount, customer; 10M rows at scale 1, `--scale 0.1`: 1M), then three
upserts of 1/1000 of the rows and a delete of 1% of them, as peers.py's scan step finds it. For each path,
each round (the last of `--repeats`, after a warm-up, is printed in full):

    scan        lh.read then every column hashed and summed, as peers.py's scan: the deleted rows dropped by
                position (reader.by_position), against each row's key probed (storage/deleted_keys.py, the
                read before it) and the anti-join (BRANCHSPARK_DELETION_VECTORS=off takes it), and a plain
                Parquet scan of the same live rows (written once, untimed): the floor
    changes     branch_changes of the last upsert, read in full
    upsert      an upsert of 1/1000 of the rows (a new set each round)

Per run: the time to build the DataFrame (Python and the catalog), to plan it, and to run it, and each Spark
job with its start and end after planning, tasks, stages, rows read and executor CPU. Exits 0.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import time
import urllib.request
from datetime import datetime

from common import full_scan, scratch_dir  # puts the repo on sys.path

import peers_side
from dbt.adapters.branchspark.core.changes import table_changes
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.core.spark_session import local_session
from dbt.adapters.branchspark.core.storage import reader

TABLE = "bench.t"


class Timeline:
    """Spark's jobs of one labelled run, from the session's UI REST API."""

    def __init__(self, spark, port: int):
        self.spark = spark
        self.base = f"http://127.0.0.1:{port}/api/v1/applications/{spark.sparkContext.applicationId}"

    def _get(self, path: str):
        with urllib.request.urlopen(f"{self.base}/{path}") as answer:
            return json.load(answer)

    def _finished_jobs(self, label: str) -> list[dict]:
        """The group's jobs by id, once the UI's listener has seen each end (it runs behind the jobs)."""
        for _ in range(50):
            jobs = sorted((j for j in self._get("jobs") if j.get("jobGroup") == label), key=lambda j: j["jobId"])
            if all("completionTime" in j for j in jobs):
                return jobs
            time.sleep(0.1)
        return [j for j in jobs if "completionTime" in j]

    def run(self, label: str, build, act) -> dict:
        """build() -> a DataFrame or None; act(frame) runs it. Times each phase; lists the run's jobs."""
        self.spark.sparkContext.setJobGroup(label, label)
        start = time.time()
        frame = build()
        built = time.time()
        if frame is not None:
            frame._jdf.queryExecution().executedPlan()
        planned = time.time()
        act(frame)
        done = time.time()
        jobs = []
        for job in self._finished_jobs(label):
            stages = [s for sid in job["stageIds"] for s in self._get(f"stages/{sid}") if s["status"] == "COMPLETE"]
            jobs.append({"from": _stamp(job["submissionTime"]) - planned,
                         "to": _stamp(job["completionTime"]) - planned, "tasks": job["numTasks"],
                         "stages": len(stages), "rows": sum(s["inputRecords"] for s in stages),
                         "bytes": sum(s["inputBytes"] for s in stages),
                         "cpu": sum(s["executorCpuTime"] for s in stages) / 1e9,
                         "name": job.get("name", "")[:60]})
        self.spark.sparkContext.setJobGroup("", "")
        return {"build": built - start, "plan": planned - built, "run": done - planned, "total": done - start,
                "jobs": jobs}


def _stamp(text: str) -> float:
    return datetime.strptime(text.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def show(label: str, runs: list[dict]) -> None:
    totals = sorted(r["total"] for r in runs)
    last = runs[-1]
    print(f"\n{label}: total median {totals[len(totals) // 2] * 1000:.0f} ms of {len(runs)} "
          f"({', '.join(f'{t * 1000:.0f}' for t in (r['total'] for r in runs))})")
    print(f"  last run: build {last['build'] * 1000:.0f} ms, plan {last['plan'] * 1000:.0f} ms, run "
          f"{last['run'] * 1000:.0f} ms; {len(last['jobs'])} Spark jobs, "
          f"{sum(j['stages'] for j in last['jobs'])} stages, executor CPU {sum(j['cpu'] for j in last['jobs']) * 1000:.0f} ms")
    for job in last["jobs"]:
        print(f"    job +{job['from'] * 1000:5.0f} .. +{job['to'] * 1000:5.0f} ms: {job['tasks']} tasks, "
              f"{job['stages']} stages, {job['rows']} rows ({job['bytes'] / 1e6:.1f} MB) read, CPU {job['cpu'] * 1000:.0f} ms; {job['name']}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--paths", default="scan,changes,upsert")
    parser.add_argument("--port", type=int, default=4090)
    args = parser.parse_args()
    paths = args.paths.split(",")
    total, changed = int(10_000_000 * args.scale), int(10_000 * args.scale)
    root = scratch_dir("path_profile")
    spark = local_session("local[2]", {"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "4g",
                                       "spark.ui.showConsoleProgress": "false", "spark.ui.enabled": "true",
                                       "spark.ui.port": str(args.port), "spark.ui.retainedJobs": "10000",
                                       "spark.ui.retainedStages": "10000"})
    try:
        lh = Lakehouse(spark, os.path.join(root, "warehouse"))
        with lh.transaction("main", message="load") as tx:
            tx.create_database("bench")
            tx.create_table_as(TABLE, peers_side.rows(spark, 0, total).repartition(4), primary_key=["id"])
        heads = [lh.get_branch("main").head]
        for round_index in range(3):
            lh.branch("main").upsert(TABLE, peers_side.changes(spark, total, changed, round_index), key=["id"])
            heads.append(lh.get_branch("main").head)
        lh.branch("main").delete(TABLE, "id % 100 = 42")
        timeline = Timeline(spark, args.port)
        print(f"{total:,} rows, {changed:,} per upsert; load average {os.getloadavg()[0]:.2f}")

        def hashed(frame):
            frame.collect()

        def scan():
            return lh.read(TABLE).selectExpr(*peers_side.ROW_HASH_SUM)

        if "scan" in paths:
            floor = os.path.join(root, "live")
            lh.read(TABLE).write.mode("overwrite").parquet(floor)
            by_position = reader.by_position
            sides = {"scan, rows dropped by position": ("on", scan, by_position),
                     "scan, keys probed in every segment": ("on", scan, lambda table, segments, tombstones: set()),
                     "scan, anti-join": ("off", scan, by_position),
                     "scan floor: plain Parquet of the live rows":
                         ("on", lambda: spark.read.parquet(floor).selectExpr(*peers_side.ROW_HASH_SUM), by_position)}
            runs = {label: [] for label in sides}
            for round_index in range(args.repeats + 1):  # the first round warms up
                for label, (vectors, build, segments_by_position) in sides.items():
                    os.environ["BRANCHSPARK_DELETION_VECTORS"] = vectors
                    reader.by_position = segments_by_position
                    answer = timeline.run(f"{label}-{round_index}", build, hashed)
                    if round_index:
                        runs[label].append(answer)
            os.environ["BRANCHSPARK_DELETION_VECTORS"] = "on"
            reader.by_position = by_position
            for label, answers in runs.items():
                show(label, answers)
        if "changes" in paths:
            answers = [timeline.run(f"changes-{i}", lambda: table_changes(lh, TABLE, heads[-2], heads[-1]),
                                    full_scan) for i in range(args.repeats + 1)][1:]
            show("changes of the last upsert", answers)
        if "upsert" in paths:
            answers = []
            for round_index in range(args.repeats + 1):
                frame = peers_side.changes(spark, total, changed, 10 + round_index)
                answer = timeline.run(f"upsert-{round_index}", lambda: None,
                                      lambda _: lh.branch("main").upsert(TABLE, frame, key=["id"]))
                if round_index:
                    answers.append(answer)
            show("upsert", answers)
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
