"""bench/peers.py's `dbt` step: `dbt run` of the sample project from the shell, branchspark against dbt-spark
on Delta Lake and on Apache Iceberg (issue 52's first row).

Four setups, each `dbt` its own process started here as from a shell, timed from start to exit (Python's and
dbt's start, the profile, the Spark session, parsing with dbt's partial-parse file, every model):

    branchspark, warm engine   `method: local`: the warm local engine (`branchspark engine start`), started
                               once before the rounds and warmed up (its own warm-up, engine/warmup.py): the
                               timed `dbt run` attaches to an engine already running
    branchspark, session       `method: session`: each `dbt run` starts its own Spark JVM (cold start timed)
    dbt-spark delta            dbt-spark 1.11 `method: session` in .venv-peers (pyspark 4.1.4), `file_format:
                               delta`: Delta 4.4.0's session extension and `DeltaCatalog` as spark_catalog, a
                               Hive metastore in Derby (dbt-spark's session enables Hive support)
    dbt-spark iceberg          the same with `file_format: iceberg`: Iceberg 1.12.0's extension and its
                               `SparkSessionCatalog` (type hive, the same Derby metastore) as spark_catalog

dbt-spark's session method builds its SparkSession as `SparkSession.builder.enableHiveSupport()` plus every
`server_side_parameters` entry of the profile, in the `dbt` process, before its JVM starts: so the profile
gives it the peers' jars (`spark.jars`, the files `make peers` put in .jars/peers and .jars/spark-iceberg;
nothing is fetched at run time), the extensions and the catalog. Same Spark settings on every setup:
`local[2]`, 4 shuffle partitions, 4 GB of driver memory (the engine: $BRANCHSPARK_ENGINE_MEMORY), no UI, ANSI
mode off (branchspark's default; dbt-spark's macros predate Spark 4's ANSI default), `threads: 1`.

The same models on every setup: the sample project's models but `fct_order_changes`, which reads
`branch_changes_since_last_build` (a branchspark-only macro) and is tagged `branchspark_only`: excluded on every
side (`--exclude tag:branchspark_only`) and removed from the dbt-spark copies, which could not parse it. That
leaves stg_customers and stg_orders (views), dim_customers (table) and fct_orders (incremental, `merge` on
order_id; Delta and Iceberg merge as branchspark does, so unlike bench/dbt_run.py's parquet copy it keeps its
strategy; the timed run is its first build). Each side's run_results.json must list those four models, all
`success`. The dbt-spark copies' seed CSVs get a backslash before each `'` (dbt-spark's session cursor pastes
bound values unescaped; bench/dbt_run.py). Per round, every setup gets a fresh copy of the project and an empty
warehouse, then an untimed `dbt parse` and `dbt seed`, then the timed `dbt run`s in turn, the order rotating
per round.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

from dbt_cli import wait_for_engine_warmup
from dbt_run import copy_project, escape_seed_quotes, write_yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
PEERS_BIN = os.path.join(REPO, ".venv-peers", "bin")
SELECT = ["--exclude", "tag:branchspark_only"]
MODELS = {"stg_customers", "stg_orders", "dim_customers", "fct_orders"}
SETUPS = ("branchspark, warm engine", "branchspark, session", "dbt-spark delta", "dbt-spark iceberg")
ENGINE_PORT = "16101"  # this bench's engine; the project's port range for issue 52's benches


def runtime_settings(spark: dict) -> dict:
    """What a session can set at run time (the engine owns master and memory)."""
    return {"spark.sql.shuffle.partitions": spark["spark.sql.shuffle.partitions"], "spark.sql.ansi.enabled": "false"}


def branchspark_project(side_dir: str, method: str, spark: dict) -> str:
    project = copy_project(side_dir)
    config = ({**spark, "spark.sql.ansi.enabled": "false", "spark.sql.warehouse.dir": f"{side_dir}/spark-warehouse"}
              if method == "session" else runtime_settings(spark))
    write_yaml(os.path.join(side_dir, "profiles.yml"), {"branchspark_sample": {"target": "dev", "outputs": {
        "dev": {"type": "branchspark", "method": method, "branch": "dev", "create_branch_from": "main",
                "schema": "shop", "threads": 1, "warehouse": os.path.join(side_dir, "warehouse"),
                "spark_config": config}}}})
    return project


def dbt_spark_project(side_dir: str, file_format: str, spark: dict, jars: list[str]) -> str:
    import yaml

    project = copy_project(side_dir)
    config_path = os.path.join(project, "dbt_project.yml")
    with open(config_path) as src:
        config = yaml.safe_load(src)
    config["profile"] = "dbt_spark_peers"
    for kind in ("models", "seeds", "snapshots"):
        config[kind] = config.get(kind) or {}
        config[kind].setdefault(config["name"], {})["+file_format"] = file_format
    write_yaml(config_path, config)
    escape_seed_quotes(project)
    for root, _, files in os.walk(os.path.join(project, "models")):
        for file in (f for f in files if f.endswith((".sql", ".py"))):
            path = os.path.join(root, file)
            with open(path) as src:
                if "branchspark_only" in src.read():
                    os.remove(path)
    if file_format == "delta":
        catalog = {"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
                   "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"}
    else:
        catalog = {"spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
                   "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
                   "spark.sql.catalog.spark_catalog.type": "hive",
                   # Iceberg's Hive client opens the Derby metastore itself, outside Spark's Hive client, with
                   # Hive's defaults: BoneCP (not shipped with Spark; HikariCP is), no schema creation, and a
                   # commit lock in Hive's transaction tables, which only Hive's schematool creates
                   "spark.hadoop.datanucleus.connectionPoolingType": "HikariCP",
                   "spark.hadoop.iceberg.engine.hive.lock-enabled": "false",
                   "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
                   "spark.hadoop.hive.metastore.schema.verification": "false"}
    parameters = {**spark, "spark.sql.ansi.enabled": "false", "spark.jars": ",".join(jars), **catalog,
                  "spark.sql.warehouse.dir": f"{side_dir}/spark-warehouse",
                  "spark.hadoop.javax.jdo.option.ConnectionURL":
                      f"jdbc:derby:;databaseName={side_dir}/metastore_db;create=true"}
    write_yaml(os.path.join(side_dir, "profiles.yml"), {"dbt_spark_peers": {"target": "dev", "outputs": {
        "dev": {"type": "spark", "method": "session", "host": "localhost", "schema": "shop", "threads": 1,
                "server_side_parameters": parameters}}}})
    return project


class Setup:
    """One setup's project copy for one round: untimed parse and seed, then the timed `dbt run`."""

    def __init__(self, name: str, side_dir: str, spark: dict, jars: list[str], environment: dict):
        os.makedirs(side_dir)
        self.name, self.side_dir = name, side_dir
        if name.startswith("branchspark"):
            self.bin = BIN
            self.project = branchspark_project(side_dir, "local" if "engine" in name else "session", spark)
            self.env = {**environment, "PYSPARK_PYTHON": sys.executable}
        else:
            self.bin = PEERS_BIN
            self.project = dbt_spark_project(side_dir, name.split()[-1], spark, jars)
            self.env = {k: v for k, v in environment.items() if k not in ("SPARK_HOME", "PYTHONPATH")}
            self.env["PYSPARK_PYTHON"] = os.path.join(PEERS_BIN, "python")
        self.log = os.path.join(side_dir, "dbt.log")

    def dbt(self, *args: str) -> float:
        command = [os.path.join(self.bin, "dbt"), *args, "--target", "dev", "--project-dir", self.project,
                   "--profiles-dir", self.side_dir]
        with open(self.log, "a") as log:
            log.write(f"\n######## {' '.join(command)}\n")
            log.flush()
            start = time.perf_counter()
            done = subprocess.run(command, cwd=self.side_dir, env=self.env, stdout=log, stderr=subprocess.STDOUT)
            seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"`dbt {' '.join(args)}` failed on {self.name}; its log: {self.log}")
        return seconds

    def prepare(self) -> None:
        self.dbt("parse")
        self.dbt("seed", *SELECT)

    def run(self) -> dict:
        seconds = self.dbt("run", *SELECT)
        with open(os.path.join(self.project, "target", "run_results.json")) as src:
            results = json.load(src)["results"]
        models = {r["unique_id"].split(".")[-1]: r["status"] for r in results}
        if set(models) != MODELS or set(models.values()) != {"success"}:
            raise SystemExit(f"{self.name}: `dbt run` built {models}, not the models {sorted(MODELS)}; log {self.log}")
        return {"seconds": seconds}


def dbt_step(root: str, spark: dict, jars: list[str], repeats: int, rounds, setups=SETUPS) -> dict:
    """Median wall seconds of `dbt run` per setup; `rounds(sides, repeats, step)` is bench/peers.py's rotation."""
    environment = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DO_NOT_TRACK": "1",
                   "BRANCHSPARK_ENGINE_HOME": os.path.join(root, "engine"), "BRANCHSPARK_ENGINE_PORT": ENGINE_PORT,
                   "BRANCHSPARK_ENGINE_MASTER": spark["spark.master"],
                   "BRANCHSPARK_ENGINE_MEMORY": spark["spark.driver.memory"]}
    engine = [os.path.join(BIN, "branchspark"), "engine"]
    try:
        if "branchspark, warm engine" in setups:
            start = time.perf_counter()
            subprocess.run([*engine, "start"], env=environment, check=True, stdout=subprocess.DEVNULL)
            os.environ["BRANCHSPARK_ENGINE_HOME"] = environment["BRANCHSPARK_ENGINE_HOME"]  # read by the wait
            wait_for_engine_warmup()
            print(f"warm engine started and warmed up before the rounds (untimed): {time.perf_counter() - start:.1f} s",
                  flush=True)
        prepared: dict[tuple[str, int], Setup] = {}

        def step(label: str, setup: str, index: int) -> dict:
            if index not in {i for _, i in prepared}:  # a round's untimed part: every setup's copy, parse, seed
                for name in setups:
                    side = Setup(name, os.path.join(root, "dbt", f"{name.replace(', ', '-').replace(' ', '-')}-{index}"),
                                 spark, jars, environment)
                    side.prepare()
                    prepared[(name, index)] = side
            answer = prepared[(setup, index)].run()
            print(f"  round {index + 1}: `dbt run` on {setup}: {answer['seconds']:.1f} s", flush=True)
            return answer

        answers = rounds({name: name for name in setups}, repeats, step)
    finally:
        if "branchspark, warm engine" in setups:
            subprocess.run([*engine, "stop"], env=environment, stdout=subprocess.DEVNULL)
    return {name: statistics.median(a["seconds"] for a in runs) for name, runs in answers.items()}
