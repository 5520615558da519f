"""The JDK that branchspark's JVMs run on: the one BRANCHSPARK_JAVA_HOME names; else the caller's JAVA_HOME, as Spark
would use it; else the one `make install` chose for the installed pyspark (the newest from 17 to 25 installed;
jars/jdk_home.sh); else `java` on the PATH, as before. On JDK 25 a fresh process's first upsert of 100k rows took
10-20% less than on 17, the next three 3-11% less, and a scan of 10M rows 6% less (docs/performance.md).

The choice is kept per pyspark version (`.jars/jdk/spark-<version>`, beside the class-data archive it goes with):
a checkout's environment of another pyspark (Spark 4.1's, whose Hadoop cannot start on JDK 25) finds none and
keeps its own. A JDK that is no longer there is not chosen.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pyspark

JAVA_HOME_ENV = "BRANCHSPARK_JAVA_HOME"
_CHECKOUT_CHOICES = Path(__file__).resolve().parents[4] / ".jars" / "jdk"


def choice_path() -> Path:
    """Where `make install` writes the JDK it chose for the installed pyspark."""
    return _CHECKOUT_CHOICES / f"spark-{pyspark.__version__}"


def java_home() -> str | None:
    """The JDK home branchspark's JVMs should run on, or None: Spark's own choice (a JAVA_HOME the caller set is
    theirs, even one that does not work: Spark then says so)."""
    home = os.environ.get(JAVA_HOME_ENV)
    if not home:
        if os.environ.get("JAVA_HOME"):
            return None
        try:
            home = choice_path().read_text().strip()
        except OSError:
            return None
    return home if home and os.path.isfile(os.path.join(home, "bin", "java")) else None


def launch_env(env: dict) -> dict:
    """`env` for a spark-submit or spark-class process, its JAVA_HOME the chosen JDK when there is one."""
    home = java_home()
    return {**env, "JAVA_HOME": home} if home else env


@contextlib.contextmanager
def launching():
    """JAVA_HOME set to the chosen JDK while pyspark starts a driver JVM in this process (it hands os.environ to
    spark-submit), then put back as it was."""
    home = java_home()
    if home is None:
        yield
        return
    before = os.environ.get("JAVA_HOME")
    os.environ["JAVA_HOME"] = home
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("JAVA_HOME", None)
        else:
            os.environ["JAVA_HOME"] = before


if __name__ == "__main__":  # for shell scripts that start Spark's JVMs (tests/spark_cluster.sh)
    print(java_home() or "")
