"""Public path of the change feed (README): `table_changes` and `open_changes` live in core/changes/."""
from dbt.adapters.branchspark.core.changes import *  # noqa: F401,F403
