"""What a driver JVM that branchspark starts in-process logs: errors only, from its first line
(jvm_log4j2.properties beside this file), unless the user configured Spark's log themselves.

Without it every command that starts Spark printed Spark's start-up lines, and a task failing on a damaged
file printed the executor's and the scheduler's copy of the error, 40 lines of JVM stack, before the one line
the command meant to print (issue 51).
"""
from __future__ import annotations

import os
from pathlib import Path

LOG_CONFIG = Path(__file__).with_name("jvm_log4j2.properties")
DRIVER_OPTIONS = "spark.driver.extraJavaOptions"
_USER_SETTINGS = ("log4j2.configurationFile", "log4j.configurationFile", "log4j2.configuration")


def _user_configured(options: str) -> bool:
    """Whether the user names a log configuration: in the driver's options, or as Spark's conf/log4j2.properties."""
    if any(f"-D{name}=" in options for name in _USER_SETTINGS):
        return True
    conf_dirs = [os.environ.get("SPARK_CONF_DIR")] + [
        os.path.join(os.environ["SPARK_HOME"], "conf") if os.environ.get("SPARK_HOME") else None]
    return any(d and os.path.isfile(os.path.join(d, "log4j2.properties")) for d in conf_dirs)


def session_config(config: dict) -> dict:
    """`config` for a new in-process driver JVM, its options naming branchspark's log configuration (unless the
    user has one of their own)."""
    options = str(config.get(DRIVER_OPTIONS, ""))
    if _user_configured(options) or not LOG_CONFIG.is_file():
        return config
    named = f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}"
    return {**config, DRIVER_OPTIONS: f"{options} {named}".strip()}
