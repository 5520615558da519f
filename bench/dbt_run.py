"""The sample dbt project on branchspark against plain dbt-spark (parquet), in one run.

    python bench/dbt_run.py [--repeats 3] [--warmups 2] [--per-node] [--keep] [--baseline REV]

Each side gets its own copy of `sample_project/` in a scratch dir, its own profiles.yml there,
and its own worker process (working directory = the scratch dir, so dbt-spark's Derby metastore
and both sides' spark-warehouse dirs land there). The workers run dbt in-process with
`dbtRunner`; a process keeps one JVM, so the sides cannot share a process (one SparkSession
each: in-memory catalog for branchspark, Hive for dbt-spark's session method).

Both sides: `threads: 1`, Spark `local[2]`, 2 shuffle partitions, no UI, ANSI mode off
(branchspark's default; dbt-spark's macros predate Spark 4's ANSI default), models tagged
`branchspark_only` excluded. One cycle, per side:

    reset (untimed)         branchspark: drop branch `dev`, create it from `main` again
                            dbt-spark:   drop schema shop cascade
    dbt seed                timed
    dbt run                 timed (first build of every model)
    add_late_orders         untimed run-operation: 2 new rows in raw_orders
    dbt run                 timed ("dbt run (incremental)": fct_orders takes the new rows)

Untimed warm-up cycles per side (`--warmups`, 2) pay the JVM start, Derby's metastore creation and
the JIT's warm-up; then `--repeats` timed cycles, alternating which side goes first so that both share
the machine's noise, and the report shows medians of each command and of their sum. The ratio
branchspark / dbt-spark of the sum has a target of <= 1.15x. The script exits 0 whatever the
ratios are. `--baseline REV` adds a third side, branchspark as it was at git revision REV (its package
from a `git archive` of REV, put first on the import path of that side's worker), with the same project
copy and profile: the ratio branchspark / branchspark@REV says whether a change made runs slower,
measured side by side in the same run. `--per-node` adds each node's execution_time (dbt's run_results.json) and the number of
Spark jobs each command and each node starts, to see where a difference comes from.

Differences between the two copies of the project (the models' SQL is the same):
- dbt-spark copy: `+file_format: parquet` for models, seeds and snapshots in dbt_project.yml
  (branchspark always writes Parquet segments).
- `fct_orders` is `incremental_strategy='merge'` with `unique_key='order_id'`; dbt-spark cannot
  merge into parquet tables, so in the dbt-spark copy its config() block says
  `incremental_strategy='append'` without unique_key (a config() in the model file takes
  precedence over dbt_project.yml, so the header is rewritten; the select is untouched). On the
  incremental run branchspark therefore upserts the new rows on order_id, dbt-spark appends
  them: the same rows read, slightly different writes.
- `dbt snapshot` is left out on both sides: dbt-spark's snapshot materialization needs delta,
  iceberg or hudi and refuses parquet.
- dbt-spark copy: a backslash before each `'` in the seed CSVs. dbt-spark's session cursor pastes
  bound values into the SQL unescaped, so `Seán O'Brien` is a syntax error there; `O\\'Brien`
  loads as `O'Brien`. (It also loads empty cells as the string 'None', not NULL; left as is.)
- dbt-spark copy: model files tagged `branchspark_only` are removed (excluded on both sides
  anyway; they may call branchspark-only macros, which dbt-spark could not even parse).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
import traceback

from common import report, scratch_dir

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(REPO, "sample_project")
SELECT = ["--exclude", "tag:branchspark_only"]
TIMED = ("dbt seed", "dbt run", "dbt run (incremental)")
TARGET = 1.15

# The same Spark settings on both sides (the sample profile's master and shuffle partitions).
SPARK_CONFIG = {
    "spark.master": "local[2]",
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.ansi.enabled": "false",
}


# -- the two project copies --------------------------------------------------------------------

def copy_project(side_dir: str) -> str:
    project = os.path.join(side_dir, "project")
    shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns(
        "target", "logs", "warehouse", "spark-warehouse", "metastore_db", "derby.log", "dbt_packages",
        "profiles.yml", "run_demo.sh"))
    return project


def write_yaml(path: str, data: dict) -> None:
    import yaml

    with open(path, "w") as out:
        yaml.safe_dump(data, out, sort_keys=False)


def escape_seed_quotes(project: str) -> None:
    """dbt-spark's session cursor pastes bound values into the SQL unescaped ('Seán O'Brien' is a syntax
    error): a backslash before each quote in the project's seed CSVs makes Spark read back the same string."""
    for root, _, files in os.walk(os.path.join(project, "seeds")):
        for file in (f for f in files if f.endswith(".csv")):
            path = os.path.join(root, file)
            with open(path, encoding="utf-8") as src:
                text = src.read()
            with open(path, "w", encoding="utf-8") as out:
                out.write(text.replace("'", "\\'"))


def spark_config(side_dir: str) -> dict:
    return {**SPARK_CONFIG, "spark.sql.warehouse.dir": os.path.join(side_dir, "spark-warehouse")}


def setup_branchspark(side_dir: str) -> str:
    project = copy_project(side_dir)
    common = {"type": "branchspark", "method": "session", "schema": "shop", "threads": 1,
              "warehouse": os.path.join(side_dir, "warehouse"), "spark_config": spark_config(side_dir)}
    write_yaml(os.path.join(side_dir, "profiles.yml"), {"branchspark_sample": {"target": "dev", "outputs": {
        "main": {**common, "branch": "main"},
        "dev": {**common, "branch": "dev", "create_branch_from": "main"},
    }}})
    return project


def setup_dbt_spark(side_dir: str) -> str:
    import yaml

    project = copy_project(side_dir)
    config_path = os.path.join(project, "dbt_project.yml")
    with open(config_path) as src:
        config = yaml.safe_load(src)
    config["profile"] = "dbt_spark_bench"
    name = config["name"]
    for kind in ("models", "seeds", "snapshots"):
        section = config.setdefault(kind, {}) or {}
        config[kind] = section
        section.setdefault(name, {})["+file_format"] = "parquet"
    write_yaml(config_path, config)

    # merge -> append for fct_orders (see the docstring); fail loudly if the sample changed.
    fct = os.path.join(project, "models", "marts", "fct_orders.sql")
    with open(fct) as src:
        text = src.read()
    new, merges = re.subn(r"incremental_strategy\s*=\s*'merge'", "incremental_strategy='append'", text)
    new, keys = re.subn(r"\n\s*unique_key\s*=\s*'order_id',", "", new)
    if merges != 1 or keys != 1:
        raise SystemExit(f"{fct}: expected one merge strategy and one unique_key to rewrite for dbt-spark")
    with open(fct, "w") as out:
        out.write(new)

    escape_seed_quotes(project)

    for root, _, files in os.walk(os.path.join(project, "models")):
        for file in files:
            path = os.path.join(root, file)
            if file.endswith((".sql", ".py")) and "branchspark_only" in open(path).read():
                os.remove(path)

    hive = {**spark_config(side_dir),
            "spark.hadoop.javax.jdo.option.ConnectionURL":
                f"jdbc:derby:;databaseName={os.path.join(side_dir, 'metastore_db')};create=true"}
    write_yaml(os.path.join(side_dir, "profiles.yml"), {"dbt_spark_bench": {"target": "dev", "outputs": {
        "dev": {"type": "spark", "method": "session", "host": "localhost", "schema": "shop", "threads": 1,
                "server_side_parameters": hive},
    }}})
    return project


# -- the worker: one side, one process, one JVM --------------------------------------------------

def worker(conn, side: str, side_dir: str, project: str, log_path: str, package_root: str | None = None) -> None:
    # dbt's and the JVM's output go to the side's log, the pipe carries the results
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.chdir(side_dir)
    os.environ.update(DBT_SEND_ANONYMOUS_USAGE_STATS="false", DO_NOT_TRACK="1", DBT_PROFILES_DIR=side_dir)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if package_root:  # the baseline side: branchspark's package and macros of another revision come first
        import dbt.adapters
        import dbt.include

        dbt.adapters.__path__.insert(0, os.path.join(package_root, "dbt", "adapters"))
        dbt.include.__path__.insert(0, os.path.join(package_root, "dbt", "include"))
    from dbt.cli.main import dbtRunner

    node_jobs, jobs_at_start = {}, {}

    def count_node_jobs(event) -> None:
        """Spark jobs started between a node's NodeStart and NodeFinished events (threads: 1)."""
        name = event.info.name
        if name in ("NodeStart", "NodeFinished"):
            node = event.data.node_info.unique_id
            if name == "NodeStart":
                jobs_at_start[node] = spark_jobs_so_far()
            elif node in jobs_at_start:
                node_jobs[node] = spark_jobs_so_far() - jobs_at_start.pop(node)

    runner = dbtRunner(callbacks=[count_node_jobs])
    target = ["--target", "dev"]

    def dbt(*args: str, check: bool = True) -> None:
        print(f"\n######## dbt {' '.join(args)}", flush=True)
        result = runner.invoke([*args, "--project-dir", project, "--profiles-dir", side_dir])
        if check and not result.success:
            raise RuntimeError(f"dbt {' '.join(args)} failed on {side}: {result.exception or 'see log'}")

    def reset() -> None:
        if side.startswith("branchspark"):
            # its own target path: a change of target throws away dbt's partial-parse state
            # (target/partial_parse.msgpack), and the timed commands would pay a full parse
            on_main = ["--target", "main", "--target-path", os.path.join(side_dir, "target-main")]
            # force: dev holds the last cycle's unmerged commits, which the drop guard keeps otherwise; a
            # baseline from before the guard knows no `force` and drops without it
            for drop in ("{name: dev, force: true}", "{name: dev}"):
                dbt("run-operation", "drop_branch", "--args", drop, *on_main, check=False)
            dbt("run-operation", "create_branch", "--args", "{name: dev, from: main}", *on_main)
        else:
            from pyspark import SparkContext
            from pyspark.sql import SparkSession

            if SparkContext._active_spark_context is not None:  # none before the first cycle
                SparkSession.builder.getOrCreate().sql("drop schema if exists shop cascade")

    def node_times(command: str) -> dict:
        with open(os.path.join(project, "target", "run_results.json")) as src:
            results = json.load(src)["results"]
        return {f"{r['unique_id']} ({command})": r["execution_time"] for r in results}

    def spark_jobs_so_far() -> int:
        """Spark jobs started in this process (job ids are sequential); 0 before the JVM."""
        from pyspark import SparkContext

        context = SparkContext._active_spark_context
        ids = context.statusTracker().getJobIdsForGroup() if context is not None else []
        return max(ids) + 1 if ids else 0

    def cycle() -> dict:
        reset()
        times, nodes, jobs, per_node_jobs = {}, {}, {}, {}
        for command, args in (("dbt seed", ["seed"]), ("dbt run", ["run"]), ("dbt run (incremental)", ["run"])):
            if command == "dbt run (incremental)":
                dbt("run-operation", "add_late_orders", *target)
            node_jobs.clear()
            jobs_before, start = spark_jobs_so_far(), time.perf_counter()
            dbt(*args, *SELECT, *target)
            times[command] = time.perf_counter() - start
            jobs[command] = spark_jobs_so_far() - jobs_before
            nodes.update(node_times(command))
            per_node_jobs.update({f"{node} ({command})": n for node, n in node_jobs.items()})
        return {"times": times, "nodes": nodes, "jobs": jobs, "node_jobs": per_node_jobs}

    while True:
        message = conn.recv()
        if message == "stop":
            break
        try:
            conn.send(("ok", cycle()))
        except BaseException:
            traceback.print_exc()
            conn.send(("error", traceback.format_exc()))
            break
    conn.close()


# -- the driver -----------------------------------------------------------------------------------

def baseline_package(revision: str, root: str) -> str:
    """The package (dbt/) as of git `revision`, unpacked below `root`; its directory."""
    target = os.path.join(root, "baseline")
    os.makedirs(target)
    archive = os.path.join(root, "baseline.tar")
    subprocess.run(["git", "-C", REPO, "archive", "--format=tar", "-o", archive, revision, "dbt"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed cycles per side (after the warm-ups)")
    # One cycle pays the JVM start; the JIT keeps warming over the next cycles (a side's cycles fell from 8.1 to
    # 5.4 s over three timed cycles after a single warm-up), which a median of few cycles then measures.
    parser.add_argument("--warmups", type=int, default=2, help="untimed cycles per side before the timed ones")
    parser.add_argument("--per-node", action="store_true", help="also print per-node medians (run_results.json)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch dir (kept anyway on failure)")
    parser.add_argument("--baseline", metavar="REV", help="also run branchspark as of git revision REV")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    root = scratch_dir("dbt")
    print(f"scratch dir {root}; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    sides = {"branchspark": (setup_branchspark, None), "dbt-spark": (setup_dbt_spark, None)}
    if args.baseline:
        sides[f"branchspark@{args.baseline}"] = (setup_branchspark, baseline_package(args.baseline, root))
    context = multiprocessing.get_context("spawn")
    workers = {}
    for side, (setup, package_root) in sides.items():
        side_dir = os.path.join(root, re.sub(r"[^\w.-]", "_", side))  # a warehouse path is a URI: no ^ or ~
        os.makedirs(side_dir)
        project = setup(side_dir)
        parent_end, child_end = context.Pipe()
        log_path = os.path.join(side_dir, "dbt.log")
        process = context.Process(target=worker, args=(child_end, side, side_dir, project, log_path, package_root),
                                  daemon=True)
        process.start()
        child_end.close()
        workers[side] = (process, parent_end, log_path)

    def cycle(side: str) -> dict:
        process, pipe, log_path = workers[side]
        pipe.send("cycle")
        try:
            status, payload = pipe.recv()
        except EOFError:
            status, payload = "error", f"worker exited with code {process.join(5) or process.exitcode}"
        if status != "ok":
            print(f"\n{side} failed; its log: {log_path}\n{payload}", file=sys.stderr)
            for other, (proc, _, _) in workers.items():
                proc.kill()
            sys.exit(1)
        return payload

    samples = {side: [] for side in sides}
    order = list(sides)
    try:
        for warmup in range(args.warmups):
            for side in order:
                start = time.perf_counter()
                cycle(side)  # warm-up: JVM, metastore, JIT, dbt's partial parse file
                print(f"warm-up cycle {warmup + 1}/{args.warmups} of {side}: {time.perf_counter() - start:.1f} s",
                      flush=True)
        for rep in range(args.repeats):
            for side in (order if rep % 2 == 0 else order[::-1]):
                samples[side].append(cycle(side))
                total = sum(samples[side][-1]["times"].values())
                print(f"cycle {rep + 1}/{args.repeats} of {side}: {total:.1f} s", flush=True)
    finally:
        for process, pipe, _ in workers.values():
            if process.is_alive():
                try:
                    pipe.send("stop")
                except OSError:
                    pass
                process.join(60)

    def median(side: str, key: str, field: str = "times") -> float:
        return statistics.median(sample[field].get(key, float("nan")) for sample in samples[side])

    rows, ratios = [], []
    for command in TIMED:
        bs, ds = median("branchspark", command), median("dbt-spark", command)
        rows += [(f"{command}: branchspark", bs), (f"{command}: dbt-spark", ds)]
        ratios.append((f"{command}: branchspark / dbt-spark", bs / ds, TARGET))
    totals = {side: statistics.median(sum(s["times"].values()) for s in samples[side]) for side in sides}
    rows += [("seed + run + incremental run: branchspark", totals["branchspark"]),
             ("seed + run + incremental run: dbt-spark", totals["dbt-spark"])]
    ratios.append(("seed + run + incremental run: branchspark / dbt-spark",
                   totals["branchspark"] / totals["dbt-spark"], TARGET))
    if args.baseline:
        base = f"branchspark@{args.baseline}"
        for command in TIMED:
            rows.append((f"{command}: {base}", median(base, command)))
            ratios.append((f"{command}: branchspark / {base}", median("branchspark", command) / median(base, command),
                           1.0))
        total = statistics.median(sum(s["times"].values()) for s in samples[base])
        rows.append((f"seed + run + incremental run: {base}", total))
        ratios.append((f"seed + run + incremental run: branchspark / {base}", totals["branchspark"] / total, 1.0))
    report(f"sample dbt project, median of {args.repeats} cycles per side (dbt snapshot: not on dbt-spark parquet)",
           rows, ratios)

    if args.per_node:
        keys = [k for k in samples["branchspark"][0]["nodes"] if all(k in samples[side][0]["nodes"] for side in sides)]
        short = {"branchspark": "bs", "dbt-spark": "ds"}
        node_rows = [(f"{key} {short.get(side, side)}", median(side, key, "nodes")) for key in keys for side in sides]
        report("per node, dbt's execution_time (bs = branchspark, ds = dbt-spark)", node_rows, [])
        print("  Spark jobs per node (median): " + "; ".join(
            f"{key} " + " ".join(f"{short.get(side, side)} {median(side, key, 'node_jobs'):.0f}" for side in sides)
            for key in keys))
        print("  Spark jobs per command (median): " + "; ".join(
            f"{command} " + " ".join(f"{side} {median(side, command, 'jobs'):.0f}" for side in sides)
            for command in TIMED))

    print(f"\nload average {os.getloadavg()[0]:.2f} at end")
    if args.keep:
        print(f"kept {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
