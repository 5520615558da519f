"""Public path of the core's typed errors (README): they live in core/errors.py."""
from dbt.adapters.branchspark.core.errors import *  # noqa: F401,F403
