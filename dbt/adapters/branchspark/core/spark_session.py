"""The one SparkSession factory: for the command line, plain-Python use, tests, bench and the dbt adapter.

One behaviour for every caller. A process keeps one session (static settings take effect only when its
JVM starts, and building one costs seconds): an active session of the kind asked for is reused, and only
the runtime settings the caller's `config` names are applied to it; otherwise a session is built from
DEFAULTS plus `config`. With a Spark Connect URL (`remote`, or pyspark's own $SPARK_REMOTE) the session is
a Connect client that sends runtime settings only: the server owns master, catalog, memory and UI. What a
caller needs beyond the defaults it says in `config` (the dbt adapter: ANSI off, for dbt-spark's macros).
The warm local engine is the engine package's: whoever wants it asks it for the address and passes it as
`remote` (cli/session.py, adapter/connections.py). Nothing here, or anywhere in the core, needs a local
SparkContext: the same code runs on a classic session and on a Connect client session.
"""
from __future__ import annotations

import logging
import os
import sys
import threading

from pyspark.errors import PySparkException
from pyspark.logger import PySparkLogger
from pyspark.sql import SparkSession
from pyspark.sql.connect.shell import PROGRESS_BAR_ENABLED

from . import jvm_archive, jvm_home, jvm_log
from .connect import is_connect
from .spark_errors import translate_action_errors
from .storage import deletion_vectors, local_files, object_store

# No Hive: branchspark never writes to Spark's catalog, which only holds temp views.
DEFAULTS = {
    "spark.app.name": "branchspark",
    "spark.sql.catalogImplementation": "in-memory",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",  # PySpark turns it on for its JVM; `config` may ask again
    "spark.sql.shuffle.partitions": "4",
    # On, every pyspark function call (F.col, DataFrame.select, ...) captures the Python call stack for error
    # messages and asks the JVM for a setting: measured 3-5 ms a call here, against about 1 ms without.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}
MASTER_ENV = "BRANCHSPARK_SPARK_MASTER"  # the master of a new in-process session (default local[*])
# What a Spark Connect client may set; the server owns master, catalog, memory and UI.
CONNECT_RUNTIME_SETTINGS = ("spark.sql.ansi.enabled", "spark.sql.session.timeZone", "spark.sql.shuffle.partitions",
                            "spark.sql.adaptive.coalescePartitions.initialPartitionNum",
                            "spark.sql.connect.serverStacktrace.enabled")
# A Connect client's error carries the server's JVM stack unless asked not to (pyspark's classic sessions show
# none by default): a failed action on a damaged file is then one line naming the file, as in-process (issue 51)
CONNECT_DEFAULTS = {"spark.sql.connect.serverStacktrace.enabled": "false"}
# Spark's progress bars write over the command's output: off unless a config asks for them.
SHOW_PROGRESS = "spark.ui.showConsoleProgress"

_build_lock = threading.Lock()  # dbt opens connections from several threads at once


def spark_session(config: dict | None = None, remote: str | None = None, master: str | None = None) -> SparkSession:
    """This process's session: reused when one of the kind asked for is active, else built.

    `remote`: a Spark Connect URL (sc://host:port); None takes $SPARK_REMOTE when no `master` is asked for.
    Without either, an active session of any kind is reused (a Connect client process stays one), else an
    in-process session is built on `master` (default $BRANCHSPARK_SPARK_MASTER or local[*])."""
    config = {key: str(value) for key, value in (config or {}).items()}
    _quiet_query_context_logs()
    object_store.remember(config)  # the Python side opens the warehouse with the same fs.s3a.* settings
    if remote is None and master is None:
        remote = os.environ.get("SPARK_REMOTE") or None
    with _build_lock:
        active = SparkSession.getActiveSession()
        if active is not None and (is_connect(active) if remote else master is None or not is_connect(active)):
            _apply_runtime_settings(active, config)
            if not is_connect(active):
                translate_action_errors()
            return active
        return _connect(remote, config) if remote else _in_process(master, config)


def _quiet_query_context_logs() -> None:
    """pyspark logs every SQL error it raises, with the JVM's stack, as JSON on stderr (its SQLQueryContextLogger):
    the caller gets the error, which branchspark reports as one line; no second copy."""
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


def local_session(master: str | None = None, config: dict | None = None) -> SparkSession:
    """spark_session on `master`, for callers that name a master first (tests, bench)."""
    return spark_session(config, master=master)


def connect_session(url: str, config: dict | None = None) -> SparkSession:
    """spark_session on the Spark Connect server at `url`.

    Call `stop()` on it when done: a client with an open session keeps its process from exiting."""
    return spark_session(config, remote=url)


def _in_process(master: str | None, config: dict[str, str]) -> SparkSession:
    # Spark's Python workers must use this interpreter: it is the one with pyarrow and pandas.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = {"spark.master": os.environ.get(MASTER_ENV, "local[*]"), **DEFAULTS, **config}
    if master:
        settings["spark.master"] = master
    if settings["spark.master"].startswith("local"):
        # a local driver needs no outside address (and skips a slow hostname lookup)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Static settings take effect on a new JVM only: with them, tombstones are tested by a compiled
    # expression (an existing session keeps what it has, and the reader registers a UDF instead), and a
    # local master's writes set permissions without a chmod process each (storage/local_files.py).
    settings = local_files.session_config(deletion_vectors.session_config(settings), settings["spark.master"])
    # the S3A connector and committers when installed (object_store.py): a warehouse may be on s3a://
    settings = object_store.session_config(settings)
    # the driver maps the classes dumped at install (jvm_archive.py): Spark starts in about 0.6 of the time
    settings = jvm_archive.session_config(settings)
    # errors only in its log from the first line, no executor's copy of a failed task's error (jvm_log.py)
    settings = jvm_log.session_config(settings)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, str(value))
    with jvm_home.launching():  # on the JDK the install chose, which the class-data archive was dumped by
        session = builder.getOrCreate()
    quiet(session)
    # a failed action on a warehouse's damaged or missing file: one line, not the JVM's stack (spark_errors.py)
    translate_action_errors()
    return session


def _connect(url: str, config: dict[str, str]) -> SparkSession:
    connect_progress(config)
    builder = SparkSession.builder.remote(url)
    for key, value in {**CONNECT_DEFAULTS, **config}.items():
        if key in CONNECT_RUNTIME_SETTINGS:
            builder = builder.config(key, value)
    return builder.getOrCreate()


def _apply_runtime_settings(session: SparkSession, config: dict[str, str]) -> None:
    """On a reused session: the settings `config` names that can still change, and nothing else."""
    if is_connect(session):  # one round trip per key: send only what a Connect client may set
        connect_progress(config)
        config = {key: value for key, value in config.items() if key in CONNECT_RUNTIME_SETTINGS}
    for key, value in config.items():
        try:
            if session.conf.get(key, None) != value:
                session.conf.set(key, value)
        except PySparkException:  # static settings (master, catalog, ...) are fixed once built
            pass


def connect_progress(config: dict) -> None:
    """A Connect client draws progress bars only when told (pyspark's variable, which its shell sets):
    `spark.ui.showConsoleProgress` in `config` says whether; without it the variable stays as it is."""
    if SHOW_PROGRESS in config:
        os.environ[PROGRESS_BAR_ENABLED] = "1" if str(config[SHOW_PROGRESS]).lower() == "true" else "0"


def quiet(session: SparkSession) -> None:
    """Only warnings and errors in the log; a Connect server's log level is the server's own."""
    if not is_connect(session):
        session.sparkContext.setLogLevel("ERROR")  # keep the command line's output readable


def server_arguments(master: str, config: dict | None = None) -> list[str]:
    """spark-submit's `--conf` arguments for a Spark server on `master` that branchspark's sessions use (a
    Connect server): `config`, plus our local file system on a local master, the S3A connector and committers
    when installed, the S3 settings of the AWS variables, and the JVM's class-data archive when built."""
    settings = local_files.session_config(dict(config or {}), master)
    settings = jvm_archive.session_config(object_store.session_config(settings))
    return [argument for key, value in settings.items() for argument in ("--conf", f"{key}={value}")]


if __name__ == "__main__":  # tests/connect_server.sh: one argument a line, for a server on MASTER [JAVA_OPTIONS]
    options = {"spark.driver.extraJavaOptions": sys.argv[2]} if len(sys.argv) > 2 else {}
    for argument in server_arguments(sys.argv[1], options):
        print(argument)
