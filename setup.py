import importlib.util
from pathlib import Path

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

JVM_BUILD = Path(__file__).parent / "dbt/adapters/branchspark/core/storage/jvm_build.py"


class BuildWithJar(build_py):
    """Also builds the deletion-vector jar into the package, when pyspark and a JDK are at hand (a build
    without build isolation; `make install` builds it for an editable install). Without it reads join."""

    def run(self):
        super().run()
        spec = importlib.util.spec_from_file_location("jvm_build", JVM_BUILD)
        jvm_build = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(jvm_build)
        out = Path(self.build_lib) / "dbt/adapters/branchspark/core/storage/jvm"
        try:
            print(f"built {jvm_build.build(out)}")
        except Exception as error:  # the package works without it, more slowly: say so, do not fail
            print(f"warning: branchspark's deletion-vector jar not built ({error})")


setup(
    name="dbt-branchspark",
    version="0.1.0",
    description="Git-like branches and row-level merge for a Spark lakehouse, as a dbt adapter",
    python_requires=">=3.11",
    packages=find_namespace_packages(include=["dbt", "dbt.*"]),
    include_package_data=True,
    package_data={
        "dbt.include.branchspark": ["dbt_project.yml", "profile_template.yml", "macros/**/*.sql"],
        "dbt.adapters.branchspark.core": ["jvm_log4j2.properties"],  # the log of the JVMs it starts (jvm_log.py)
        "dbt.adapters.branchspark.core.catalog": ["migrations/*.py", "migrations/versions/*.py", "alembic.ini"],
        # the jar is compiled at build or install (storage/jvm_build.py), never at run time
        "dbt.adapters.branchspark.core.storage": ["jvm/*.java", "jvm/s3a/*.java", "jvm/*.jar"],
        "dbt.adapters.branchspark.ui": ["templates/*.html"],  # branchspark ui's pages
    },
    install_requires=[
        # the Spark versions tested (issue 68): 4.1, the newest with Delta's and Iceberg's runtimes (make spark41,
        # tests/core/test_sources_spark41.py), and 4.3, the newest (the rest of make test)
        "pyspark[connect]>=4.1,<4.4",
        "pandas<3",
        "pyarrow",
        "dbt-core>=1.11,<1.12",
        "dbt-spark[session]>=1.11,<1.12",
        "dbt-adapters>=1.24.1,<2",
        "SQLAlchemy>=2.0,<3",
        "alembic>=1.13",
        "click>=8.1",
        "rich>=13",
        "psycopg[binary]>=3.1",
        # branchspark serve (the Iceberg REST catalog): ASGI app, server, Iceberg models and Avro writers
        "starlette>=0.40",
        "uvicorn>=0.30",
        "httptools>=0.6",  # uvicorn parses HTTP with it when installed: about 0.5 ms less per request than h11
        "pyiceberg>=0.12,<0.13",
        "sqlglot>=30,<31",  # a served view's SQL in Trino's and DuckDB's dialects
        "jinja2>=3.1",  # branchspark ui's server-rendered pages (already there through dbt-core)
    ],
    extras_require={
        "test": ["dbt-tests-adapter>=1.20,<1.21", "pytest>=8,<10", "hypothesis>=6", "pytest-xdist>=3",
                 # Iceberg clients the serve tests read through (extensions load from the packages' files)
                 "duckdb>=1.5,<1.6", "duckdb-extension-iceberg", "duckdb-extension-avro", "duckdb-extension-httpfs",
                 # branchspark ui's browser tests drive Debian's chromium (Playwright's own download is not used)
                 "playwright>=1.50,<2",
                 # an S3-compatible server on 127.0.0.1 for the object-storage tests and bench (issue 51), and
                 # boto3 (which it brings) to make their buckets
                 "moto[server]>=5,<6"],
        # bench/dbt_cli.py: dbt-duckdb on a copy of the sample project, the floor of dbt's own overhead
        "bench": ["dbt-duckdb>=1.11,<1.12"],
    },
    cmdclass={"build_py": BuildWithJar},
    entry_points={"console_scripts": ["branchspark=dbt.adapters.branchspark.cli.main:cli"]},
)
