"""Source tables for tests/core/test_import_spark41.py, written by Spark 4.1 with Delta's and Iceberg's runtimes:
`build` runs in the JVM of the Spark 4.1 sources flow (tests/spark41_sources.py), which has both runtimes, so the
suite starts one Spark 4.1 JVM, not two; run alone (`main`), it reads the request (directory, jars) as JSON on
stdin. Either way it returns each table's location, versions and rows (as text, sorted). branchspark is not used
here.

- `delta_dv`: Delta, partitioned by region, deletion vectors on: two inserts (versions 1, 2), a DELETE and an
  UPDATE (deletion vectors, version 3 and 4);
- `delta_cm`: Delta with column mapping by name and a checkpoint every 2 versions: an insert, a renamed column,
  a DELETE (deletion vectors);
- `delta_widening`: Delta with type widening on (a reader feature import refuses);
- `iceberg`: Iceberg format 2, merge-on-read: two inserts (snapshot 2), a DELETE (position deletes), a renamed
  column;
- `iceberg_nested`: Iceberg format 2 with a struct, an array and a map column, and position deletes;
- `iceberg_grown`, `delta_grown`: an insert, a column added, an insert with it, a delete of one of those rows.
"""
from __future__ import annotations

import glob
import json
import os
import sys
import time


def rows(frame) -> list:
    return sorted([[None if v is None else str(v) for v in row] for row in frame.collect()])


def main() -> None:
    request = json.load(sys.stdin)
    root = request["dir"]
    from pyspark.sql import SparkSession

    jars = sorted(glob.glob(os.path.join(request["delta_jars"], "*.jar"))) + [request["iceberg_jar"]]
    builder = SparkSession.builder.master("local[1]").appName("import-sources")
    config = {
        "spark.jars": ",".join(jars),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension,"
                                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.catalog.lake": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.lake.type": "hadoop",
        "spark.sql.catalog.lake.warehouse": os.path.join(root, "iceberg"),
        "spark.sql.warehouse.dir": os.path.join(root, "spark-warehouse"),
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        "spark.sql.shuffle.partitions": "1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }
    for key, value in config.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    seen = build(spark, root, os.path.join(root, "iceberg"))
    spark.stop()
    json.dump(seen, sys.stdout)


def build(spark, root: str, lake_warehouse: str) -> dict:
    """Write the tables under `root` (Delta, by path) and as `lake.db.orders` (Iceberg: `spark`'s catalog `lake`,
    a Hadoop catalog at `lake_warehouse`); returns what the tests compare with."""
    spark.conf.set("spark.databricks.delta.snapshotPartitions", "1")  # a log of a few versions: one task, not 50
    seen: dict = {"phases": []}
    started = time.monotonic()

    def phase(name: str) -> None:  # where the time went (on a shared machine, wall time says little alone)
        seen["phases"].append(f"{time.monotonic() - started:6.1f} s: {name}")

    dv = os.path.join(root, "delta_dv")
    spark.sql(f"CREATE TABLE delta.`{dv}` (id BIGINT, amount DOUBLE, label STRING, region STRING) USING delta "
              f"PARTITIONED BY (region) TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    for start, stop in ((0, 200), (200, 300)):
        spark.sql(f"INSERT INTO delta.`{dv}` SELECT id, id * 1.5, concat('e', id), "
                  f"element_at(array('east', 'west', 'north'), CAST(id % 3 AS INT) + 1) FROM range({start}, {stop})")
    at_two = rows(spark.read.format("delta").option("versionAsOf", 2).load(dv))
    spark.sql(f"DELETE FROM delta.`{dv}` WHERE id % 7 = 0")
    spark.sql(f"UPDATE delta.`{dv}` SET label = 'updated' WHERE id % 11 = 0")
    frame = spark.read.format("delta").load(dv)
    seen["delta_dv"] = {"path": dv, "rows": rows(frame), "rows_at_2": at_two,
                        "version": len(glob.glob(os.path.join(dv, "_delta_log", "*.json"))) - 1,
                        "columns": frame.columns,
                        "dv_files": len(glob.glob(os.path.join(dv, "deletion_vector_*.bin")))}

    phase("delta_dv")
    cm = os.path.join(root, "delta_cm")
    spark.sql(f"CREATE TABLE delta.`{cm}` (id BIGINT, label STRING, amount DOUBLE) USING delta TBLPROPERTIES "
              f"('delta.columnMapping.mode' = 'name', 'delta.enableDeletionVectors' = 'true', "
              f"'delta.checkpointInterval' = '2')")
    spark.sql(f"INSERT INTO delta.`{cm}` SELECT id, concat('c', id), id / 4 FROM range(0, 150)")
    spark.sql(f"ALTER TABLE delta.`{cm}` RENAME COLUMN label TO title")
    spark.sql(f"DELETE FROM delta.`{cm}` WHERE id % 5 = 0")
    frame = spark.read.format("delta").load(cm)
    seen["delta_cm"] = {"path": cm, "rows": rows(frame), "columns": frame.columns,
                        "checkpoints": len(glob.glob(os.path.join(cm, "_delta_log", "*.checkpoint*.parquet")))}

    phase("delta_cm")
    widening = os.path.join(root, "delta_widening")
    spark.sql(f"CREATE TABLE delta.`{widening}` (id INT) USING delta TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"INSERT INTO delta.`{widening}` VALUES (1)")
    seen["delta_widening"] = {"path": widening}

    phase("delta_widening")
    spark.sql("CREATE TABLE lake.db.orders (order_id BIGINT, customer STRING, total DOUBLE) USING iceberg "
              "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read', "
              "'write.update.mode' = 'merge-on-read')")
    spark.sql("INSERT INTO lake.db.orders SELECT id, concat('c', id % 13), id * 2.5 FROM range(0, 200)")
    spark.sql("INSERT INTO lake.db.orders SELECT id, concat('c', id % 13), id * 2.5 FROM range(200, 300)")
    second = spark.sql("SELECT snapshot_id FROM lake.db.orders.snapshots ORDER BY committed_at").collect()[-1][0]
    at_second = rows(spark.sql(f"SELECT * FROM lake.db.orders VERSION AS OF {second}"))
    spark.sql("DELETE FROM lake.db.orders WHERE order_id % 7 = 0")
    spark.sql("ALTER TABLE lake.db.orders RENAME COLUMN customer TO buyer")
    frame = spark.table("lake.db.orders")
    deletes = spark.sql("SELECT count(*) FROM lake.db.orders.delete_files").collect()[0][0]
    seen["iceberg"] = {"path": os.path.join(lake_warehouse, "db", "orders"), "rows": rows(frame),
                       "columns": frame.columns, "second_snapshot": second, "rows_at_second": at_second,
                       "delete_files": deletes}
    phase("iceberg")
    # nested columns: their fields' ids (5-9) follow the top-level ones in Iceberg, not in branchspark
    spark.sql("CREATE TABLE lake.db.nested (id BIGINT, info STRUCT<city: STRING, zip: INT>, tags ARRAY<STRING>, "
              "attrs MAP<STRING, INT>) USING iceberg TBLPROPERTIES ('format-version' = '2', "
              "'write.delete.mode' = 'merge-on-read')")
    spark.sql("INSERT INTO lake.db.nested SELECT id, named_struct('city', concat('city', id % 5), 'zip', "
              "CAST(id AS INT)), array(concat('t', id), 'x'), map('k', CAST(id AS INT)) FROM range(0, 40)")
    spark.sql("DELETE FROM lake.db.nested WHERE id % 9 = 0")
    seen["iceberg_nested"] = {"path": os.path.join(lake_warehouse, "db", "nested"), "count": 40 - 5}
    phase("iceberg_nested")
    # a column added after the first write, for a refresh to follow
    spark.sql("CREATE TABLE lake.db.grown (id BIGINT, name STRING) USING iceberg TBLPROPERTIES ('format-version' = '2')")
    spark.sql("INSERT INTO lake.db.grown SELECT id, concat('n', id) FROM range(0, 20)")
    first = spark.sql("SELECT snapshot_id FROM lake.db.grown.snapshots").collect()[0][0]
    spark.sql("ALTER TABLE lake.db.grown ADD COLUMN score DOUBLE")
    spark.sql("INSERT INTO lake.db.grown SELECT id, concat('n', id), id / 2 FROM range(20, 30)")
    spark.sql("DELETE FROM lake.db.grown WHERE id = 25")  # a file with the new column, rewritten
    seen["iceberg_grown"] = {"path": os.path.join(lake_warehouse, "db", "grown"), "first": first,
                             "rows": rows(spark.table("lake.db.grown"))}
    grown = os.path.join(root, "delta_grown")
    spark.sql(f"CREATE TABLE delta.`{grown}` (id BIGINT, name STRING) USING delta")
    spark.sql(f"INSERT INTO delta.`{grown}` SELECT id, concat('n', id) FROM range(0, 20)")
    spark.sql(f"ALTER TABLE delta.`{grown}` ADD COLUMNS (score DOUBLE)")
    spark.sql(f"INSERT INTO delta.`{grown}` SELECT id, concat('n', id), id / 2 FROM range(20, 30)")
    spark.sql(f"DELETE FROM delta.`{grown}` WHERE id = 25")
    seen["delta_grown"] = {"path": grown, "rows": rows(spark.read.format("delta").load(grown))}
    phase("grown")
    return seen


if __name__ == "__main__":
    main()
