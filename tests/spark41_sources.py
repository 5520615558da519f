"""A team's lakehouse read by branchspark on Spark 4.1 (issue 68): run by .venv-peers' Python, in one JVM.

The sources are what a team's ingestion writes: `raw.customers` (Delta) and `raw.payments` (Parquet) in a Hive
metastore (Derby, no server), `lake.raw.orders` in an Iceberg catalog beside it (a dbt source naming it with
`database: lake`). A dbt project on branch `dev` seeds, runs, tests and merges into protected `main`; ingestion
appends; `dev` rebuilds and sees the new rows while `main` keeps what it merged. `Lakehouse.sql` and
`branchspark sql -e` read the metastore, the Iceberg catalog and the branch in one query, and the bad inputs
are run from dbt and from the command line. Run with the request (directories, jars) as JSON on stdin; writes
what it saw as JSON on stdout, which tests/core/test_sources_spark41.py asserts. With `import_dir` it then writes
the Delta and Iceberg tables tests/core/test_import_spark41.py imports (tests/spark41_import_sources.py), and
three of the tables above imported by name and refreshed.
"""
from __future__ import annotations

import contextlib
import glob
import io
import json
import os
import sys
import time
from pathlib import Path

SOURCES_YML = """
version: 2
sources:
  - name: raw
    schema: raw
    tables:
      - name: customers
      - name: payments
      - name: nope
  - name: lake_raw
    database: lake
    schema: raw
    tables:
      - name: orders
  - name: files
    schema: files
    tables:
      - name: customers_path
        meta:
          external_location: "delta.`{customers_path}`"
"""

ALL_ORDERS = """
{{ config(materialized='table') }}
select o.order_id, o.customer_id, c.name, r.region_name, p.amount
from {{ source('lake_raw', 'orders') }} o
join {{ source('raw', 'customers') }} c on c.id = o.customer_id
join {{ ref('regions') }} r on r.region_id = c.region_id
left join {{ source('raw', 'payments') }} p on p.order_id = o.order_id
"""

# names in a model's SQL, not sources: as in dbt-spark
CUSTOMER_COUNTS = """
{{ config(materialized='table') }}
select c.id, count(o.order_id) as orders
from raw.customers c left join lake.raw.orders o on o.customer_id = c.id
group by c.id
"""

# a path table, through a source's meta.external_location
PATH_CUSTOMERS = """
{{ config(materialized='table') }}
select id, name from {{ source('files', 'customers_path') }}
"""

# a view model (dbt's default) over the Iceberg source: its reads are recorded, and under sources_as_of its stored
# SQL reads the pinned snapshot
ORDERS_VIEW = """
select order_id, customer_id from {{ source('lake_raw', 'orders') }}
"""

# a table model over that view: under sources_as_of the view (built by an earlier run, not rebuilt) reads the
# pinned snapshot too, and the model's commit records it
VIEW_READER = """
{{ config(materialized='table') }}
select order_id from {{ ref('orders_view') }}
"""

SCHEMA_YML = """
version: 2
models:
  - name: all_orders
    columns:
      - name: order_id
        tests: [not_null, unique]
"""

BROKEN = {  # views (dbt's default) check their SQL; tables read it
    "missing_source.sql": "select * from {{ source('raw', 'nope') }}",
    "missing_class.sql": "{{ config(materialized='table') }} select * from broken.raw.orders",
    # a source no run has read yet: sources_as_of a commit that recorded no version for it
    "late_source.sql": "{{ config(materialized='table') }} select * from lake.raw.events",
}


def jvm_cpu() -> float:
    """CPU seconds of this process's children (the JVM spark-submit starts), from /proc; 0 where there is none."""
    total, me = 0.0, str(os.getpid())
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:  # its parent: utime and stime follow
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def main() -> None:
    request = json.load(sys.stdin)
    os.environ["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "false"
    os.environ.setdefault("BRANCHSPARK_SPARK_MASTER", "local[1]")  # small tables: one thread, no task switching
    started = time.monotonic()
    phases: list[str] = []

    def phase(name: str) -> None:  # on stderr and in the report: where the time went (wall; this process's CPU and
        # the JVM's, which on a shared machine says more than the wall)
        line = f"{time.monotonic() - started:6.1f} s wall, {time.process_time():5.1f} s python, " \
               f"{jvm_cpu():5.1f} s JVM: {name}"
        phases.append(line)
        print(line, file=sys.stderr, flush=True)

    root = Path(request["dir"])
    full = bool(request.get("full"))  # `make test-long`: the models and the invocation `make test` leaves out
    jars = sorted(glob.glob(os.path.join(request["delta_jars"], "*.jar"))) + [request["iceberg_jar"]]
    customers_path = str(root / "paths" / "customers")
    spark_config = {
        "spark.jars": ",".join(jars),
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={root}/metastore_db;create=true",
        "spark.sql.warehouse.dir": str(root / "hive"),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension,"
                                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.catalog.lake": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.lake.type": "hadoop",
        "spark.sql.catalog.lake.warehouse": str(root / "iceberg"),
        "spark.sql.catalog.broken": "org.example.MissingCatalog",  # a catalog whose jar is not on spark.jars
        # a JVM for one short flow: the client compiler (the full JIT took 1.8 times its CPU) and the serial
        # collector, as tests/spark_iceberg_reader.py; Derby without a sync per commit (a scratch metastore)
        "spark.driver.extraJavaOptions": f"-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dderby.system.home={root} "
                                         f"-Dderby.system.durability=test",
        "spark.sql.shuffle.partitions": "1",
    }
    import pyspark
    from click.testing import CliRunner

    from dbt.adapters.branchspark.cli.main import cli
    from dbt.adapters.branchspark.core.lakehouse import Lakehouse
    from dbt.adapters.branchspark.core.spark_session import spark_session
    from dbt.cli.main import dbtRunner

    seen: dict = {"pyspark": pyspark.__version__, "path_key": f"delta.`{customers_path}`"}
    spark = spark_session(spark_config)
    seen["jar"] = [Path(p).name for p in glob.glob(str(
        Path(__file__).resolve().parents[1] / "dbt/adapters/branchspark/core/storage/jvm"
        / f"branchspark-spark{pyspark.__version__}.jar"))]

    phase("session")
    # the team's ingestion: what is there before branchspark
    spark.sql("create database raw")
    spark.sql("create table raw.customers (id int, name string, region_id int) using delta")
    spark.sql("insert into raw.customers values (1, 'ada', 10), (2, 'bo', 20), (3, 'cy', 10)")
    spark.sql("create table raw.payments (order_id int, amount double) using parquet")
    spark.sql("insert into raw.payments values (100, 5.0), (101, 7.5)")
    spark.sql("create table lake.raw.orders (order_id int, customer_id int) using iceberg")
    spark.sql("insert into lake.raw.orders values (100, 1), (101, 2)")
    if full:
        spark.sql(f"create table delta.`{customers_path}` (id int, name string, region_id int) using delta")
        spark.sql(f"insert into delta.`{customers_path}` values (1, 'ada', 10), (2, 'bo', 20), (3, 'cy', 10)")
    # a Hive table of the name a branch relation will have: the branch's wins, with a warning
    spark.sql("create database analytics")
    spark.sql("create table analytics.all_orders (order_id int) using parquet")
    spark.sql("insert into analytics.all_orders values (null), (null)")

    phase("sources written")
    warehouse = str(root / "warehouse")
    project = root / "project"
    (project / "models").mkdir(parents=True)
    (project / "seeds").mkdir()
    (project / "dbt_project.yml").write_text("name: sources41\nversion: '1.0.0'\nprofile: sources41\n"
                                              "config-version: 2\n")
    (project / "seeds" / "regions.csv").write_text("region_id,region_name\n10,north\n20,south\n")
    models = project / "models"
    (models / "sources.yml").write_text(SOURCES_YML.replace("{customers_path}", customers_path))
    (models / "all_orders.sql").write_text(ALL_ORDERS)
    if full:  # names in a model's SQL and a path table: their own models, in `make test-long`
        (models / "customer_counts.sql").write_text(CUSTOMER_COUNTS)
        (models / "path_customers.sql").write_text(PATH_CUSTOMERS)
    (models / "orders_view.sql").write_text(ORDERS_VIEW)
    (models / "view_reader.sql").write_text(VIEW_READER)
    (models / "schema.yml").write_text(SCHEMA_YML)
    target = {"type": "branchspark", "method": "session", "schema": "analytics", "warehouse": warehouse,
              "threads": 1, "protected_branches": ["main"], "spark_config": spark_config}
    profiles = {"sources41": {"target": "dev", "outputs": {
        "dev": {**target, "branch": "dev", "create_branch_from": "main"},
        "main": {**target, "branch": "main"}}}}
    (project / "profiles.yml").write_text(json.dumps(profiles))

    def dbt(*args: str) -> dict:
        messages: list[str] = []
        # what dbt prints (its debug lines, which repeat Spark's stack, only go to its log file)
        result = dbtRunner(callbacks=[lambda event: messages.append(event.info.msg)
                                      if event.info.level in ("info", "warn", "error") else None]).invoke(
            [*args, "--project-dir", str(project), "--profiles-dir", str(project)])
        return {"success": bool(result.success), "messages": messages}

    def rows(lakehouse, branch: str, table: str) -> list:
        return sorted([list(r) for r in lakehouse.read(table, branch).collect()], key=json.dumps)

    def view_rows(branch: str) -> list:
        return sorted([list(r) for r in lakehouse.sql("select * from analytics.orders_view", branch=branch)
                       .collect()], key=json.dumps)

    def model_sources(node: str) -> dict | None:
        """What the commit of `node`'s build in the branch's last landed run recorded (the landing's second
        parent line: the run branch's commits)."""
        landing = lakehouse.store.get_commit(lakehouse.get_branch("dev").head)
        for commit in lakehouse.store.first_parents(landing.parents[1]):
            if commit.message.endswith(f": model.sources41.{node}"):
                return commit.sources
        return None

    def versions() -> dict:
        return {"delta": spark.sql("DESCRIBE HISTORY raw.customers LIMIT 1").collect()[0]["version"],
                "iceberg": spark.sql("SELECT snapshot_id FROM lake.raw.orders.refs WHERE name = 'main'")
                .collect()[0][0]}

    seen["versions_first"] = versions()
    for step in ("seed", "run", "test"):
        seen[step] = dbt(step, "--target", "dev")
    phase("seed, run, test")
    lakehouse = Lakehouse(spark, warehouse)
    first_commit = lakehouse.get_branch("dev").head
    seen["first_commit"] = first_commit
    seen["first_sources"] = lakehouse.store.get_commit(first_commit).sources
    seen["merge"] = dbt("run-operation", "merge_branch", "--args", "{src: dev, dest: main}", "--target", "main")
    seen["main_protected"] = lakehouse.get_branch("main").protected
    seen["first"] = {"dev": rows(lakehouse, "dev", "analytics.all_orders"),
                     "main": rows(lakehouse, "main", "analytics.all_orders"),
                     "view": view_rows("dev"), "reader": rows(lakehouse, "dev", "analytics.view_reader")}

    phase("merged")
    # ingestion moves on: an order in Iceberg, a customer in Delta
    spark.sql("insert into raw.customers values (4, 'di', 20)")
    spark.sql("insert into lake.raw.orders values (102, 4)")
    seen["versions_second"] = versions()
    # the model of all three sources, the view and the model over it
    seen["rerun"] = dbt("run", "--target", "dev", "--select", "all_orders", "orders_view", "view_reader")
    seen["second_sources"] = lakehouse.store.get_commit(lakehouse.get_branch("dev").head).sources
    seen["second"] = {"dev": rows(lakehouse, "dev", "analytics.all_orders"),
                      "main": rows(lakehouse, "main", "analytics.all_orders"), "view": view_rows("dev"),
                      "reader": rows(lakehouse, "dev", "analytics.view_reader")}

    phase("rerun")
    # one query over the metastore, the Iceberg catalog and the branch
    joined = ("select a.order_id, c.name, o.customer_id from analytics.all_orders a "
              "join raw.customers c on c.id = a.customer_id join lake.raw.orders o on o.order_id = a.order_id")
    seen["lakehouse_sql"] = sorted([list(r) for r in lakehouse.sql(joined, branch="dev").collect()],
                                   key=json.dumps)
    runner = CliRunner()

    def command(*args: str) -> dict:
        done = runner.invoke(cli, ["--warehouse", warehouse, *args])
        return {"code": done.exit_code, "output": done.output,
                "exception": None if done.exception is None or isinstance(done.exception, SystemExit)
                else repr(done.exception)}

    seen["cli_sql"] = command("sql", "--branch", "dev", "-e", joined + " order by a.order_id")
    seen["cli_missing"] = command("sql", "--branch", "dev", "-e", "select * from raw.nope")
    seen["cli_class"] = command("sql", "--branch", "dev", "-e", "select * from broken.raw.orders")
    seen["cli_log"] = command("log", "dev", "-v")
    if full:
        seen["first"]["counts"] = rows(lakehouse, "dev", "analytics.customer_counts")
        seen["first"]["path"] = rows(lakehouse, "dev", "analytics.path_customers")
        seen["branch_log"] = dbt("run-operation", "branch_log", "--args", "{limit: 3}", "--target", "dev")

    phase("cli")
    # the first run again, although ingestion moved on: the versions its commit recorded; the view the rerun
    # built (reading the new snapshot) is not rebuilt, and the model over it reads it at the pinned one (back to
    # the first run's rows: a change, so the model has a commit of its own)
    seen["as_of"] = dbt("run", "--target", "dev", "--select", "all_orders", "view_reader",
                        "--vars", json.dumps({"sources_as_of": first_commit}))
    seen["as_of_rows"] = rows(lakehouse, "dev", "analytics.all_orders")
    seen["as_of_sources"] = lakehouse.store.get_commit(lakehouse.get_branch("dev").head).sources
    seen["as_of_reader"] = rows(lakehouse, "dev", "analytics.view_reader")
    seen["as_of_reader_sources"] = model_sources("view_reader")  # the model's own commit, on the run branch
    if full:  # the view rebuilt under sources_as_of: its stored SQL keeps the pinned snapshot
        seen["as_of_view_run"] = dbt("run", "--target", "dev", "--select", "orders_view",
                                     "--vars", json.dumps({"sources_as_of": first_commit}))
        seen["as_of_view"] = view_rows("dev")
        seen["as_of_view_sources"] = model_sources("orders_view")  # the view's own commit, on the run branch

    phase("as of")
    # bad input from dbt: nothing written
    for name, sql in BROKEN.items():
        (models / name).write_text(sql)
    dev_head = lakehouse.get_branch("dev").head
    # both in one run: each model fails with its own line
    seen["dbt_missing"] = seen["dbt_class"] = dbt("run", "--target", "dev", "--select", "missing_source",
                                                  "missing_class")
    spark.sql("create table lake.raw.events (id int) using iceberg")
    spark.sql("insert into lake.raw.events values (1)")
    seen["dbt_as_of_missing"] = dbt("run", "--target", "dev", "--select", "late_source",
                                    "--vars", json.dumps({"sources_as_of": first_commit}))
    seen["dev_unchanged"] = lakehouse.get_branch("dev").head == dev_head
    phase("errors")
    if request.get("import_dir"):  # the sources of tests/core/test_import_spark41.py, in this JVM: none of its own
        from spark41_import_sources import build
        seen["import_sources"] = build(spark, request["import_dir"], str(root / "iceberg"))
        phase("import sources")
    # import by name (issue 70): a Delta table of the Hive metastore, an Iceberg table of the `lake` catalog and a
    # Parquet table, onto dev (main is protected); then the Delta and Iceberg ones change and a refresh follows them
    named = {"spark_catalog.raw.customers": "named.customers", "lake.raw.orders": "named.orders",
             "raw.payments": "named.payments"}
    for source, name in named.items():
        lakehouse.import_table(source, name, branch="dev")
    spark.sql("insert into raw.customers values (4, 'di', 30)")
    spark.sql("delete from lake.raw.orders where order_id = 100")
    refreshed = {name: len(lakehouse.refresh_import(name, branch="dev")) for name in ("named.customers", "named.orders")}
    seen["imported_by_name"] = {
        name: {"rows": rows(lakehouse, "dev", name), "refresh_commits": refreshed.get(name),
               "source": sorted([list(r) for r in spark.table(source).collect()], key=json.dumps)}
        for source, name in named.items()}
    phase("imported by name")
    seen["phases"] = phases
    json.dump(seen, sys.__stdout__)


if __name__ == "__main__":
    with contextlib.redirect_stdout(io.StringIO()):  # only the JSON on stdout
        main()
