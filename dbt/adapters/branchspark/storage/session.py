"""A local SparkSession for the command line and plain-Python use, when the caller brings none."""
from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession


def local_session(master: str | None = None, config: dict | None = None) -> SparkSession:
    # Spark's Python workers must use this interpreter: it is the one with pyarrow and pandas.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master(master or os.environ.get("BRANCHSPARK_SPARK_MASTER", "local[*]"))
               .appName("branchspark")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.catalogImplementation", "in-memory"))
    for key, value in (config or {}).items():
        builder = builder.config(key, str(value))
    session = builder.getOrCreate()
    if _classic(session):
        session.sparkContext.setLogLevel("ERROR")  # keep the command line's output readable
    return session


def _classic(session) -> bool:
    return type(session).__module__.startswith("pyspark.sql.session")
