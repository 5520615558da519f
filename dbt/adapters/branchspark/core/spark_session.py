"""SparkSessions for the command line, plain-Python use and tests: in-process, or Spark Connect.

Nothing here (or anywhere in the core) needs a local SparkContext: the same code runs on a
classic session and on a Spark Connect client session.
"""
from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql.connect.shell import PROGRESS_BAR_ENABLED

from .connect import is_connect
from .storage import deletion_vectors

# What a Spark Connect client may set; the server owns master, catalog, memory and UI.
CONNECT_RUNTIME_SETTINGS = ("spark.sql.ansi.enabled", "spark.sql.session.timeZone", "spark.sql.shuffle.partitions",
                            "spark.sql.adaptive.coalescePartitions.initialPartitionNum")
# Spark's progress bars write over the command's output: off unless a config asks for them.
SHOW_PROGRESS = "spark.ui.showConsoleProgress"


def local_session(master: str | None = None, config: dict | None = None) -> SparkSession:
    """An in-process session; with no master asked for, a Spark Connect session when $SPARK_REMOTE
    names a server (pyspark's own variable) or this process is already a Connect client. (The warm local
    engine is the engine package's: whoever wants it asks it for the address, as cli/session.py does.)"""
    if master is None:
        active = SparkSession.getActiveSession()
        if active is not None and is_connect(active):
            return active
        if os.environ.get("SPARK_REMOTE"):
            return connect_session(os.environ["SPARK_REMOTE"], config)
    # Spark's Python workers must use this interpreter: it is the one with pyarrow and pandas.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master(master or os.environ.get("BRANCHSPARK_SPARK_MASTER", "local[*]"))
               .appName("branchspark")
               .config("spark.ui.enabled", "false")
               .config(SHOW_PROGRESS, "false")  # PySpark turns it on for its JVM; `config` may ask again
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.catalogImplementation", "in-memory"))
    # Static settings take effect on a new JVM only: with them, tombstones are tested by a compiled
    # expression (an existing session keeps what it has, and the reader registers a UDF instead).
    for key, value in deletion_vectors.session_config(config or {}).items():
        builder = builder.config(key, str(value))
    session = builder.getOrCreate()
    quiet(session)
    return session


def connect_session(url: str, config: dict | None = None) -> SparkSession:
    """A Spark Connect client session on `url` (sc://host:port); only runtime settings are sent.

    Call `stop()` on it when done: a client with an open session keeps its process from exiting."""
    connect_progress(config or {})
    builder = SparkSession.builder.remote(url)
    for key, value in (config or {}).items():
        if key in CONNECT_RUNTIME_SETTINGS:
            builder = builder.config(key, str(value))
    return builder.getOrCreate()


def connect_progress(config: dict) -> None:
    """A Connect client draws progress bars only when told (pyspark's variable, which its shell sets):
    `spark.ui.showConsoleProgress` in `config` says whether; without it the variable stays as it is."""
    if SHOW_PROGRESS in config:
        os.environ[PROGRESS_BAR_ENABLED] = "1" if str(config[SHOW_PROGRESS]).lower() == "true" else "0"


def quiet(session: SparkSession) -> None:
    """Only warnings and errors in the log; a Connect server's log level is the server's own."""
    if not is_connect(session):
        session.sparkContext.setLogLevel("ERROR")  # keep the command line's output readable
