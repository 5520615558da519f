"""branchspark: git-like branches for a Spark lakehouse, and a dbt adapter on top.

The core (lakehouse, catalog, storage, ...) must import from plain PySpark, so
this package imports nothing from dbt eagerly: dbt loads the adapter through
`dbt.adapters.branchspark.Plugin`, which is resolved lazily here.
"""

from dbt.adapters.branchspark.__version__ import version as __version__  # noqa: F401


def __getattr__(name):
    if name == "Plugin":
        from dbt.adapters.branchspark.adapter.plugin import Plugin

        return Plugin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
