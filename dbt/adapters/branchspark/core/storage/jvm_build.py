"""Builds branchspark's jar (deletion vectors and a local file system, `jvm/*.java`) when the package is
installed or built.

The jar is compiled with the JDK's `javac` against the installed pyspark's jars, so it matches that Spark
exactly, and it is placed beside its sources as `jvm/branchspark-spark<version>.jar`, where
`deletion_vectors.jar_path()` looks for it. Nothing compiles at run time: `make install` runs this module,
and setup.py's build step runs it for a wheel when pyspark and a JDK are present. Without the jar, reads
apply tombstones by a join (the same rows, slower) and say so once.

    python -m dbt.adapters.branchspark.core.storage.jvm_build      # build (or rebuild) the jar here
"""
from __future__ import annotations

import glob
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCES = Path(__file__).with_name("jvm")
S3A_JARS_ENV = "BRANCHSPARK_S3_JARS"  # the folder of the S3A jars, when not the checkout's .jars/s3
_CHECKOUT_S3A_JARS = Path(__file__).resolve().parents[5] / ".jars" / "s3"


def jar_name(spark_version: str) -> str:
    return f"branchspark-spark{spark_version}.jar"


def installed_spark() -> tuple[str, Path] | None:
    """(version, jars folder) of the pyspark this interpreter would import; None without one. Found without
    importing it, so setup.py can call this in a build environment that lacks pyspark."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return importlib.metadata.version("pyspark"), Path(spec.submodule_search_locations[0]) / "jars"


def build(out_dir: Path = SOURCES) -> Path:
    """Compile the sources into `out_dir`/branchspark-spark<version>.jar; raises RuntimeError naming what
    is missing (pyspark, a JDK) or javac's first error."""
    spark = installed_spark()
    if spark is None or not spark[1].is_dir():
        raise RuntimeError("pyspark (with its jars) is not installed")
    version, spark_jars = spark
    javac, jar_tool = shutil.which("javac"), shutil.which("jar")
    if not (javac and jar_tool):
        raise RuntimeError("no JDK: javac and jar are not on PATH")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / jar_name(version)
    with tempfile.TemporaryDirectory() as work:
        classes = Path(work) / "classes"
        built = Path(work) / target.name
        sources, class_path = sorted(SOURCES.glob("*.java")), f"{spark_jars}/*"
        s3a = s3a_jars()
        if s3a:  # S3A's own classes are not pyspark's: what extends them is built when they were fetched
            sources += sorted((SOURCES / "s3a").glob("*.java"))
            class_path += ":" + ":".join(s3a)
        compiled = subprocess.run([javac, "-nowarn", "--release", "17", "-d", str(classes), "-cp", class_path,
                                   *map(str, sources)], capture_output=True, text=True)
        if compiled.returncode:
            raise RuntimeError("javac failed: " + (compiled.stderr.strip().splitlines() or ["?"])[0])
        subprocess.run([jar_tool, "cf", str(built), "-C", str(classes), "."], check=True, capture_output=True)
        shutil.move(str(built), str(target.with_suffix(".tmp")))
        os.replace(target.with_suffix(".tmp"), target)  # atomic: a session starting now sees all or nothing
    return target


def s3a_jars() -> list[str]:
    """The S3A connector's jars fetched at install (`make install`: jars/s3/pom.xml into the checkout's .jars/s3,
    or the folder BRANCHSPARK_S3_JARS names); empty when they were not."""
    folder = os.environ.get(S3A_JARS_ENV) or str(_CHECKOUT_S3A_JARS)
    return sorted(glob.glob(os.path.join(folder, "*.jar")))


def main() -> int:
    try:
        print(f"branchspark: built {build()}")
        return 0
    except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
        print(f"branchspark: its jar was not built ({error}); reads will apply tombstones by a join and local "
              f"writes start a chmod process per directory, which is slower. Install a JDK 17 and run: "
              f"{sys.executable} -m {__spec__.name}",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
