"""Public path of the core's entry point (README): the Lakehouse lives in core/lakehouse.py."""
from dbt.adapters.branchspark.core.lakehouse import Lakehouse, Snapshot  # noqa: F401
