"""What a merge is asked to do (strategy, on_conflict, its options) and what it plans for each table."""
from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any

from .. import errors
from ..catalog.state import TableState
from .reads import DataPlan

STRATEGIES = ("merge", "fast_forward", "auto", "interactive", "rebase")
ON_CONFLICT = ("abort", "ours", "theirs", "pause")


@dataclass
class ConflictPolicy:
    default: str = "abort"
    per_table: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def parse(value) -> "ConflictPolicy":
        if value is None:
            return ConflictPolicy()
        if isinstance(value, str):
            value = {"*": value}
        if not isinstance(value, dict):
            raise errors.InvalidArgument(f"on_conflict must be abort, ours, theirs or a mapping of table to one "
                                         f"of them, not {value!r}")
        modes = {str(k).lower(): str(v).lower() for k, v in value.items()}
        wrong = {k: v for k, v in modes.items() if v not in ON_CONFLICT}
        if wrong:
            raise errors.InvalidArgument(f"on_conflict {wrong} is not valid: use abort, ours, theirs (or pause "
                                         f"for the whole merge)")
        return ConflictPolicy(modes.pop("*", "abort"), modes)

    def prefer(self, name: str) -> str | None:
        mode = self.per_table.get(name.lower(), self.default)
        return None if mode == "abort" else mode


@dataclass
class TablePlan:
    state: TableState  # dest's new version (segments and tombstones still to extend with written files)
    data: DataPlan | None
    ops: list[tuple[str, dict]]
    src_schemas: set[str]
    schema_changed: bool


@dataclass(frozen=True)
class MergeOptions:
    """How one merge plans and commits, fixed before it starts: what each path that merges (merge, a paused
    merge, rebase, run landing, commit replay, preview) chooses."""

    policy: ConflictPolicy = field(default_factory=ConflictPolicy)
    message: str | None = None
    author: str | None = None
    drivers: Mapping[str, Any] = field(default_factory=dict)  # table -> merge driver (merge/drivers.py)
    views: tuple[str, ...] = ()  # src's views to carry as well (merge/views.py)
    # A paused merge (merge/interactive.py): the choices made while paused, and what to capture.
    schema_choices: Mapping[str, str] = field(default_factory=dict)  # table -> ours | theirs for its columns
    resolutions: Mapping[str, Any] = field(default_factory=dict)  # table -> its conflict relation
    # True in a paused merge: keyless A1/A3 conflicts are decided row by row, and every keyed table's rows
    # are decided one by one (never shared as they are), so it can show them.
    keyless_rows: bool = False
    plan_data: bool = True  # False: stop each table after its schema (an interactive merge's first pause)
    finishing: str | None = None  # the id of the paused merge this plan belongs to
    # False: the result is one plain commit, as if written on dest's head (commit replay), not a merge commit.
    merge_commit: bool = True
    allow_protected: bool = True  # a merge may write a protected branch; a replayed write only if it could
    # A merge preview (diff/preview.py): plan only what decides the conflicts, and list the first this many
    # conflicting keys of each keyed table; 0: a merge that may write. Rows are planned only for keyed tables
    # both sides wrote: only there can rows conflict without a paused merge, a driver or on_conflict.
    report_only: int = 0
