"""Spark with Iceberg's runtime running the same statements on two Iceberg catalogs, timed (bench/iceberg_write.py).

Run by .venv-peers' Python (pyspark 4.1, Iceberg's Spark runtime; `make peers`). Reads a JSON request on stdin:

    {"jars": [...], "spark": {conf: value}, "catalogs": {"bs": {"type": "rest", ...}, "hadoop": {...}},
     "steps": [["bs", "insert 10k", "INSERT INTO ..."], ...]}

runs the steps in order in one JVM and writes {"times": [[catalog, step, seconds], ...]} as JSON on stdout
(a step that fails: its first line under "error", and the run stops).
"""
from __future__ import annotations

import json
import sys
import time


def main() -> None:
    request = json.load(sys.stdin)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.config("spark.jars", ",".join(request["jars"])).config(
        "spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
    for key, value in request["spark"].items():
        builder = builder.config(key, value)
    for name, settings in request["catalogs"].items():
        builder = builder.config(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
        for key, value in settings.items():
            builder = builder.config(f"spark.sql.catalog.{name}.{key}", value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    times = []
    for catalog, step, sql in request["steps"]:
        start = time.perf_counter()
        try:
            spark.sql(sql).collect()
        except Exception as exc:  # noqa: BLE001 - reported to the caller as one line
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()
                     and not line.startswith(("An error occurred while calling", "\tat ", "at "))]
            first = " | ".join(lines[:3]) or type(exc).__name__
            print(json.dumps({"times": times, "error": f"{catalog} {step}: {first[:500]}"}))
            return
        times.append([catalog, step, time.perf_counter() - start])
    print(json.dumps({"times": times}))


if __name__ == "__main__":
    main()
