"""Spark with Iceberg's runtime reading `branchspark serve` as a REST catalog, as another team's Spark would.

Run by the environment `make spark-iceberg` installs (.venv-peers with pyspark 4.1, .jars/spark-iceberg with
Iceberg's Spark runtime), not by the project's: Iceberg has no runtime for Spark 4.3 yet. It reads a JSON
request on stdin:

    {"uri": "http://127.0.0.1:PORT/iceberg", "jars": [...], "token": null,
     "catalogs": {"c_main": "main", "c_old": "main@<commit>"},      # catalog name -> warehouse (a ref)
     "queries": {"name": "SELECT * FROM c_main.shop.orders", ...}}

and writes {"name": {"rows": [...canonical rows...]} or {"error": "<first line>"}} as JSON on stdout.
One JVM answers every query. `canonical` is stdlib only: the tests apply it to Lakehouse.read's rows too.
"""
from __future__ import annotations

import datetime
import decimal
import json
import sys


def _value(value):
    """One value in a form both Spark versions' rows give alike (JSON-able, comparable)."""
    if isinstance(value, datetime.datetime):
        # pyspark gives local naive times; both processes share the time zone, so both convert alike
        return ["ts", value.astimezone(datetime.timezone.utc).isoformat()]
    if isinstance(value, datetime.date):
        return ["date", value.isoformat()]
    if isinstance(value, decimal.Decimal):
        return ["dec", str(value)]
    if isinstance(value, (bytes, bytearray)):
        return ["bin", bytes(value).hex()]
    if isinstance(value, float):
        return ["float", repr(value)]
    if isinstance(value, dict):  # a map
        return ["map", sorted(([_value(k), _value(v)] for k, v in value.items()), key=json.dumps)]
    if isinstance(value, (list, tuple)):  # an array, or a struct (a Row is a tuple)
        return [_value(v) for v in value]
    return value


def canonical(rows) -> list:
    """Rows (pyspark Rows) as sorted lists of canonical values."""
    return sorted(([_value(v) for v in row] for row in rows), key=json.dumps)


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    for line in text.splitlines():
        if line.strip() and not line.startswith("An error occurred while calling"):
            return line.strip()[:500]
    return type(error).__name__


def main() -> None:
    request = json.load(sys.stdin)
    from pyspark.sql import SparkSession

    # A JVM that lives for one batch of small reads: the client compiler only and the serial collector took the
    # 30 reads of main, a branch and an older commit from 33-35 s to 16-21 s (load 6-8, 2026-11-30); either
    # alone 20.5 s (C1) or 23.2 s (serial). A smaller heap (512 MB), no adaptive plans and no code generation
    # gained nothing measurable (docs/performance.md).
    builder = (SparkSession.builder.master(request.get("master", "local[1]"))
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
               .config("spark.jars", ",".join(request["jars"]))
               .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "1"))
    for name, warehouse in request["catalogs"].items():
        prefix = f"spark.sql.catalog.{name}"
        builder = (builder.config(prefix, "org.apache.iceberg.spark.SparkCatalog").config(f"{prefix}.type", "rest")
                   .config(f"{prefix}.uri", request["uri"]).config(f"{prefix}.warehouse", warehouse))
        if request.get("token"):
            builder = builder.config(f"{prefix}.token", request["token"])
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    answers = {}
    for name, sql in request["queries"].items():
        try:
            answers[name] = {"rows": canonical(spark.sql(sql).collect())}
        except Exception as error:  # one query's failure is its answer; the others still run
            answers[name] = {"error": _first_line(error)}
    spark.stop()
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
