"""A request for a table's changes as users give it (dbt's `branch_changes`, SQL's `branch_changes(...)`):
versions as text or numbers, the session's branch as the default."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from pyspark.sql import DataFrame

from . import table_changes


@dataclass(frozen=True)
class ChangesRequest:
    """What a user asked for (dbt's branch_changes, SQL's table function), with the defaults filled in."""

    table: str  # catalog name `database.table`
    from_version: Any  # None / 0 / "": snapshot mode
    to: Any  # None: the head of `branch`
    branch: Optional[str]  # the branch times are read on (None: the branch `to` names)
    net: bool

    def frame(self, lakehouse) -> DataFrame:
        return table_changes(lakehouse, self.table, self.from_version, self.to, branch=self.branch, net=self.net)


def make_request(lakehouse, table: str, from_version, to, branch, net, target_branch: str) -> ChangesRequest:
    """Defaults for a session: `to` is the head of `branch`, and `branch` the session's (a dbt target's) branch.

    When `to` names a branch and no `branch` is given, times are read on that branch (as in the core).
    """
    from_version, to = _version_arg(from_version), _version_arg(to)
    if to in ("", 0):
        to = None
    if not branch:
        branch = None if isinstance(to, str) and lakehouse.branch_exists(to) else target_branch
    if isinstance(net, str):  # --args '{net: "true"}'
        net = net.strip().lower() in ("true", "yes", "1")
    return ChangesRequest(table.lower(), from_version, to, branch, bool(net))


def _version_arg(value):
    """Strings stripped; a number other than 0 is a commit id prefix that YAML (--args) read as a number."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool) and value != 0:
        return str(value)
    return value
