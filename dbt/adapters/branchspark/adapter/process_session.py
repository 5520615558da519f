"""The one SparkSession of a dbt process.

Built once, on the first connection, and reused afterwards (also when a test
process or a notebook already has an active session): static settings only
take effect on the first build, and building per statement, as dbt-spark's
session cursor does, costs seconds.
"""

import os
import sys
import threading
from typing import Dict

from pyspark.sql import SparkSession

from dbt.adapters.branchspark.core.storage import deletion_vectors
from dbt.adapters.branchspark.core.spark_session import CONNECT_RUNTIME_SETTINGS, connect_progress, is_connect, quiet

# No Hive: writes never go to the Spark catalog, it only holds our temp views.
DEFAULT_SPARK_CONFIG: Dict[str, str] = {
    "spark.master": "local[*]",
    "spark.app.name": "dbt-branchspark",
    "spark.sql.catalogImplementation": "in-memory",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    # dbt-spark's macros assume the pre-Spark-4 (non-ANSI) casting rules.
    "spark.sql.ansi.enabled": "false",
}

# What Spark Connect lets a client set; the server owns master, catalog and UI.
RUNTIME_SETTINGS = CONNECT_RUNTIME_SETTINGS

_build_lock = threading.Lock()


def spark_session(spark_config: Dict[str, str], remote_url: str = "") -> SparkSession:
    """The active session of this process, or a new one built with our defaults + spark_config."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with _build_lock:
        session = SparkSession.getActiveSession()
        if session is not None and is_connect(session) != bool(remote_url):
            session = None  # the profile asks for the other kind of session: build that one
        if session is None:
            config = dict(DEFAULT_SPARK_CONFIG)
            if remote_url:
                config = {k: v for k, v in config.items() if k in RUNTIME_SETTINGS}
                # the server owns static settings: send the runtime ones only
                config.update({k: v for k, v in spark_config.items() if k in RUNTIME_SETTINGS})
            else:
                config.update(spark_config)
                config = deletion_vectors.session_config(config)  # the compiled tombstone test
            if not remote_url and str(config.get("spark.master", "")).startswith("local"):
                # a local driver needs no outside address (and skips a slow hostname lookup)
                os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            builder = SparkSession.builder
            if remote_url:
                connect_progress(spark_config)  # the client's bars: off unless the profile asks
                builder = builder.remote(remote_url)
            for key, value in config.items():
                builder = builder.config(key, value)
            session = builder.getOrCreate()
            quiet(session)
        else:
            _apply_runtime_settings(session, spark_config)
        return session


def _apply_runtime_settings(session: SparkSession, spark_config: Dict[str, str]) -> None:
    """On a reused session: our ANSI default plus the profile's settings that can still change."""
    wanted = {"spark.sql.ansi.enabled": DEFAULT_SPARK_CONFIG["spark.sql.ansi.enabled"]}
    wanted.update(spark_config)
    if is_connect(session):  # one round trip per key: send only what a Connect client may set
        wanted = {k: v for k, v in wanted.items() if k in RUNTIME_SETTINGS}
    for key, value in wanted.items():
        try:
            if session.conf.get(key, None) != value:
                session.conf.set(key, value)
        except Exception:  # static settings (master, catalog, ...) are fixed once built
            pass
