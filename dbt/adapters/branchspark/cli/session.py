"""The command line's Spark, started on first data access: the warm local engine when asked for.

`BRANCHSPARK_SPARK=local` takes a session on this user's local engine (engine/), which this process
attaches to; otherwise the core's factory decides ($SPARK_REMOTE, an active session, or in-process).
The core never imports the engine: the command line asks it for the address and hands it over.
"""
from __future__ import annotations

import os

from pyspark.sql import SparkSession

from ..core.spark_session import connect_session, local_session
from ..engine import client as engine_client

ENGINE_CHOICE_ENV = "BRANCHSPARK_SPARK"


def command_session(config: dict | None = None) -> SparkSession:
    """`config`: the Spark settings of `branchspark --conf KEY=VALUE` (catalogs a team's tables are in)."""
    wants_engine = os.environ.get(ENGINE_CHOICE_ENV, "").lower() == "local"
    if wants_engine and not os.environ.get("SPARK_REMOTE") and SparkSession.getActiveSession() is None:
        session = connect_session(engine_client.attach("branchspark"), config)
        engine_client.own_session(session)
        return session
    return local_session(config=config)
