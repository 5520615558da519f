"""The JVM's class-data archive: the classes a Spark driver loads, dumped once by `make install`
(jvm_archive_build.py) and mapped by every driver JVM branchspark starts (in-process sessions, the warm engine,
Connect servers). A JVM then starts Spark in about 0.6 of the time: it maps classes already parsed and verified
instead of reading them from the jars pyspark ships (docs/performance.md, "Starting a JVM").

Where branchspark's JVMs start through a launcher home (JDK 25 and later, jvm_home.py), the archive is the JDK's
AOT cache instead (`.aot`, dumped the same way, with more work): the classes linked ahead and the profiles of the
methods the work ran hot, so a fresh JVM compiles them sooner (docs/performance.md, "The AOT cache's method
profiles"); so does a Connect server whose script exports the launcher home as JAVA_HOME (tests/connect_server.sh):
its first query took 2.0 s against 2.5 s with the class-data archive. A JVM started otherwise (a JAVA_HOME the
caller set to a JDK itself) maps the class-data archive as before.

Without the archive a JVM starts as before. With one that no longer matches (another JDK, or a jar on the
class path rebuilt since) the JVM refuses it and starts as before; its own warning about that is switched off,
since it would land in a command's output.
"""
from __future__ import annotations

import os
from pathlib import Path

import pyspark

from . import jvm_home

ARCHIVE_ENV = "BRANCHSPARK_JVM_ARCHIVE"  # an archive elsewhere than the checkout's .jars/jvm-archive
_CHECKOUT_ARCHIVES = Path(__file__).resolve().parents[4] / ".jars" / "jvm-archive"
DRIVER_OPTIONS = "spark.driver.extraJavaOptions"
# the JVM's messages about archives, off both when it maps one and when it refuses one (the `aot` tag only on
# JDKs that have it: an unknown tag is an error)
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
AOT_QUIET = "-Xlog:aot*=off"
# options that already name an archive, to map or to dump
_NAMING = ("SharedArchiveFile", "ArchiveClassesAtExit", "AOTCache")


def class_archive_path() -> Path:
    """Where the class-data archive of the installed pyspark is (or would be)."""
    return _CHECKOUT_ARCHIVES / f"spark-{pyspark.__version__}.jsa"


def aot_cache_path() -> Path:
    """Where the AOT cache of the installed pyspark is (or would be)."""
    return _CHECKOUT_ARCHIVES / f"spark-{pyspark.__version__}.aot"


def archive_path() -> Path:
    """The archive a driver JVM branchspark starts maps: the AOT cache where the JVMs start through a launcher
    home and it was built, else the class-data archive (either may be missing)."""
    if os.environ.get(ARCHIVE_ENV):
        return Path(os.environ[ARCHIVE_ENV])
    cache = aot_cache_path()
    return cache if jvm_home.through_launcher() and cache.is_file() else class_archive_path()


def session_config(config: dict) -> dict:
    """`config` for a new driver JVM, its options naming the archive when there is one; unchanged when there is
    none, or when the options already name an archive (to map, or to dump, as jvm_archive_build.py does)."""
    archive = archive_path()
    options = str(config.get(DRIVER_OPTIONS, ""))
    if any(flag in options for flag in _NAMING) or not archive.is_file():
        return config
    aot = archive.suffix == ".aot"
    flag = "-XX:AOTCache" if aot else "-XX:SharedArchiveFile"
    named = f'"{flag}={archive}"' if " " in str(archive) else f"{flag}={archive}"
    quiet = f"{QUIET} {AOT_QUIET}" if aot else QUIET
    return {**config, DRIVER_OPTIONS: f"{options} {named} {quiet}".strip()}
