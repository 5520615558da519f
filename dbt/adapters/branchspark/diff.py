"""Public path of the row-level diff (README): `branch_diff` lives in core/diff/."""
from dbt.adapters.branchspark.core.diff import *  # noqa: F401,F403
