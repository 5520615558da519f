from setuptools import find_namespace_packages, setup

setup(
    name="dbt-branchspark",
    version="0.1.0",
    description="Git-like branches and row-level merge for a Spark lakehouse, as a dbt adapter",
    python_requires=">=3.11",
    packages=find_namespace_packages(include=["dbt", "dbt.*"]),
    include_package_data=True,
    package_data={
        "dbt.include.branchspark": ["dbt_project.yml", "profile_template.yml", "macros/**/*.sql"],
        "dbt.adapters.branchspark.core.catalog": ["migrations/*.py", "migrations/versions/*.py", "alembic.ini"],
        # compiled on first use by storage/deletion_vectors.py (javac against pyspark's jars)
        "dbt.adapters.branchspark.core.storage": ["jvm/*.java"],
    },
    install_requires=[
        "pyspark[connect]>=4.0,<5",
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
        "pyiceberg>=0.12,<0.13",
    ],
    extras_require={
        "test": ["dbt-tests-adapter>=1.20,<1.21", "pytest>=8,<10", "hypothesis>=6", "pytest-xdist>=3",
                 # Iceberg clients the serve tests read through (extensions load from the packages' files)
                 "duckdb>=1.5,<1.6", "duckdb-extension-iceberg", "duckdb-extension-avro", "duckdb-extension-httpfs"],
        # bench/dbt_cli.py: dbt-duckdb on a copy of the sample project, the floor of dbt's own overhead
        "bench": ["dbt-duckdb>=1.11,<1.12"],
    },
    entry_points={"console_scripts": ["branchspark=dbt.adapters.branchspark.cli.main:cli"]},
)
