"""The JVM's class-data archive: the classes a Spark driver loads, dumped once by `make install`
(jvm_archive_build.py) and mapped by every driver JVM branchspark starts (in-process sessions, the warm engine,
Connect servers). A JVM then starts Spark in about 0.6 of the time: it maps classes already parsed and verified
instead of reading them from the jars pyspark ships (docs/performance.md, "Starting a JVM").

Without the archive a JVM starts as before. With one that no longer matches (another JDK, or a jar on the
class path rebuilt since) the JVM refuses it and starts as before; its own warning about that is switched off,
since it would land in a command's output.
"""
from __future__ import annotations

import os
from pathlib import Path

import pyspark

ARCHIVE_ENV = "BRANCHSPARK_JVM_ARCHIVE"  # an archive elsewhere than the checkout's .jars/jvm-archive
_CHECKOUT_ARCHIVES = Path(__file__).resolve().parents[4] / ".jars" / "jvm-archive"
DRIVER_OPTIONS = "spark.driver.extraJavaOptions"
# the JVM's messages about archives, off both when it maps one and when it refuses one
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def archive_path() -> Path:
    """Where the archive of the installed pyspark is (or would be)."""
    return Path(os.environ.get(ARCHIVE_ENV) or _CHECKOUT_ARCHIVES / f"spark-{pyspark.__version__}.jsa")


def session_config(config: dict) -> dict:
    """`config` for a new driver JVM, its options naming the archive when there is one; unchanged when there is
    none, or when the options already name an archive (to map, or to dump, as jvm_archive_build.py does)."""
    archive = archive_path()
    options = str(config.get(DRIVER_OPTIONS, ""))
    if "SharedArchiveFile" in options or "ArchiveClassesAtExit" in options or not archive.is_file():
        return config
    named = f'"-XX:SharedArchiveFile={archive}"' if " " in str(archive) else f"-XX:SharedArchiveFile={archive}"
    return {**config, DRIVER_OPTIONS: f"{options} {named} {QUIET}".strip()}
