"""dbt glue for `branch_diff` and `restore`: the run-operation summary, the `{{ branch_diff(...) }}` relation,
and restoring one table to a version as a new commit.

The relation is a Spark temp view over the table's diff (diff/rows.py: `_diff_type`, the columns,
`_diff_changed`), a lazy plan pinned to the versions resolved when the model compiles, registered under a
fresh name so two models never share one.
"""

import re
import uuid
from typing import Optional

from dbt.adapters.branchspark.core.diff import branch_diff
from dbt.adapters.branchspark.core.diff.relation import table_diff_relation, version_text as _version
from dbt.adapters.branchspark.core.diff.report import report

VIEW_PREFIX = "branch_diff__"


def _tables(tables) -> Optional[list]:
    """--args gives a list, one name, or a comma-separated string."""
    if not tables:
        return None
    if isinstance(tables, str):
        return [t.strip() for t in tables.split(",") if t.strip()]
    return [str(t) for t in tables]


def summary(lakehouse, from_version, to, tables=None, mode=None, limit=10, fmt: str = "text") -> str:
    """What run-operation branch_diff prints: per table the counts, schema changes and conflicts, then rows."""
    found = branch_diff(lakehouse, _version(from_version), _version(to), tables=_tables(tables), mode=mode or None)
    return report(found, int(limit)).render(fmt)


def register_view(spark, lakehouse, table: str, from_version, to, mode=None, limit: Optional[int] = None) -> str:
    """A new temp view over `table`'s diff rows from `from_version` to `to`; returns its name."""
    frame = table_diff_relation(lakehouse, table, from_version, to, mode)
    if limit is not None:  # `dbt run --empty`
        frame = frame.limit(int(limit))
    name = f"{VIEW_PREFIX}{re.sub(r'[^a-z0-9_]', '_', table.lower())}__{uuid.uuid4().hex[:12]}"
    frame.createOrReplaceTempView(name)
    return name


def restore(lakehouse, branch: str, table: str, to) -> str:
    """Restore `table` on `branch` to its state at version `to`, as one new commit."""
    commit = lakehouse.restore_table(branch, table, _version(to))
    if commit is None:
        return f"{table} on {branch} already equals its version at {to}: nothing to restore"
    return f"restored {table} on {branch} to its version at {to}: commit {commit.id[:12]}"
