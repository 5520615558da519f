"""Spark Connect or classic: the one test of what kind a session is (the core runs the same on both)."""
from __future__ import annotations


def is_connect(session) -> bool:
    """True for a Spark Connect client session (no SparkContext, no JVM in this process)."""
    return type(session).__module__.startswith("pyspark.sql.connect")
