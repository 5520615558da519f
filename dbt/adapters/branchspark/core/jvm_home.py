"""The JDK that branchspark's JVMs run on: the one BRANCHSPARK_JAVA_HOME names; else the caller's JAVA_HOME, as Spark
would use it; else the one `make install` chose for the installed pyspark (the newest from 17 to 25 installed;
jars/jdk_home.sh); else `java` on the PATH, as before. On JDK 25 a fresh process's first upsert of 100k rows took
10-20% less than on 17, the next three 3-11% less, and a scan of 10M rows 6% less (docs/performance.md).

The choice is kept per pyspark version (`.jars/jdk/spark-<version>`, beside the class-data archive it goes with):
a checkout's environment of another pyspark (Spark 4.1's, whose Hadoop cannot start on JDK 25) finds none and
keeps its own. A JDK that is no longer there is not chosen.

On JDK 25 and later the choice is a launcher home (`.jars/jdk/launcher-<jdk>`, made by `make install`): links to
the JDK's own files, but a `bin/java` that leaves out the one option Spark's launcher gives every JVM that keeps the
JDK's AOT cache from linking classes ahead and replaying method profiles: `--add-modules=jdk.incubator.vector`
(with an added module the JDK archives no module graph, and without one no AOT-linked classes). Only MLlib's
vectorized BLAS uses that module, and it falls back to plain Java without it. Through the launcher, a fresh
process's upserts warm up sooner (docs/performance.md, "The AOT cache's method profiles").
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
from pathlib import Path

import pyspark

JAVA_HOME_ENV = "BRANCHSPARK_JAVA_HOME"
_CHECKOUT_CHOICES = Path(__file__).resolve().parents[4] / ".jars" / "jdk"
AOT_LINKING_MAJOR = 25  # the first JDK whose AOT cache holds method profiles (JEP 515)
LEFT_OUT = "--add-modules=jdk.incubator.vector"
LAUNCHER_MARK = "branchspark-launcher"  # in a launcher home: the JDK home it runs


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


def jdk_of(home: str) -> str:
    """The JDK home that `home` runs: a launcher home's JDK, else `home` itself."""
    try:
        return (Path(home) / LAUNCHER_MARK).read_text().strip()
    except OSError:
        return home


def through_launcher() -> bool:
    """Whether branchspark's JVMs start through a launcher home (so an AOT cache can link classes ahead): its own
    choice, or a JAVA_HOME that is one (tests/connect_server.sh and tests/spark_cluster.sh export the choice)."""
    home = java_home() or os.environ.get("JAVA_HOME")
    return bool(home) and jdk_of(home) != home


def major_version(jdk: str) -> int | None:
    """The feature version a JDK's `release` file names (17, 25), or None."""
    try:
        release = (Path(jdk) / "release").read_text()
    except OSError:
        return None
    match = re.search(r'^JAVA_VERSION="(\d+)', release, re.MULTILINE)
    return int(match.group(1)) if match else None


def launcher_home(jdk: str) -> str:
    """For `make install`: the home to choose for `jdk`. On JDK 25 and later a launcher home beside the choices,
    made again from scratch; otherwise `jdk` itself."""
    if (major_version(jdk) or 0) < AOT_LINKING_MAJOR:
        return jdk
    jdk = os.path.realpath(jdk)
    home = _CHECKOUT_CHOICES / f"launcher-{os.path.basename(jdk)}"
    shutil.rmtree(home, ignore_errors=True)
    (home / "bin").mkdir(parents=True)
    for entry in os.listdir(jdk):
        if entry != "bin":
            os.symlink(os.path.join(jdk, entry), home / entry)
    for tool in os.listdir(os.path.join(jdk, "bin")):
        if tool != "java":
            os.symlink(os.path.join(jdk, "bin", tool), home / "bin" / tool)
    java = home / "bin" / "java"
    java.write_text(f"""#!/bin/sh
# made by `make install` (dbt/adapters/branchspark/core/jvm_home.py): {jdk}/bin/java without {LEFT_OUT}
for arg do shift; [ "$arg" = "{LEFT_OUT}" ] || set -- "$@" "$arg"; done
exec "{jdk}/bin/java" "$@"
""")
    java.chmod(0o755)
    (home / LAUNCHER_MARK).write_text(jdk + "\n")
    return str(home)


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


if __name__ == "__main__":
    if sys.argv[1:2] == ["--choose"]:  # make install: the home to write as the choice for the JDK it found
        print(launcher_home(sys.argv[2]))
    else:  # for shell scripts that start Spark's JVMs (tests/spark_cluster.sh)
        print(java_home() or "")
