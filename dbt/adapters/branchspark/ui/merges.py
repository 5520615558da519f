"""What the merge pages show and do, through the core's merge: a preview of `src` into `dest` (the merge's own
planner, writing nothing: core/diff/preview.py), a paused merge's state and open conflicts
(core/merge/interactive.py), and the write actions (merge, resolve per table, continue, abort)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core.diff import preview_merge
from ..core.diff.preview import MergePreview
from ..core.lakehouse import Lakehouse
from ..core.merge import interactive
from ..core.merge import paused as P
from ..core.merge.conflict_tables import SCHEMA_TABLE
from .cells import cell_text

NOT_STARTED = P.NOT_STARTED
KEYS_SHOWN = 50  # conflicting keys shown per table
ROWS_SHOWN = 20  # open conflict rows shown per table of a paused merge


@dataclass
class ConflictingKeys:
    table: str
    columns: list[str]
    rows: list[list[str]]


@dataclass
class Preview:
    merge: MergePreview
    keys: list[ConflictingKeys] = field(default_factory=list)


def preview(lakehouse: Lakehouse, src: str, dest: str) -> Preview:
    """What merging `src` into `dest` would do and where it would stop; for keyed tables the first keys in
    conflict with the rule that decided each (cut in Spark)."""
    found = preview_merge(lakehouse, src, dest, keys_shown=KEYS_SHOWN)
    keys = []
    for table, frame in sorted(found.conflicting_keys.items()):
        # the key columns, then CONFLICT_RULE: the planner's first keys hold the same values in that order
        keys.append(ConflictingKeys(table, frame.columns, [[cell_text(v) for v in row]
                                                           for row in found.shown_keys.get(table, [])]))
    return Preview(found, keys)


@dataclass
class PausedTable:
    table: str
    kind: str  # data | schema | rebase
    open: int
    rows: int | str
    rule: str
    columns: list[str] = field(default_factory=list)
    shown: list[list[str]] = field(default_factory=list)  # the first open conflicts


def paused(lakehouse: Lakehouse, dest: str) -> tuple[dict, list[PausedTable]]:
    """The state of the merge paused on `dest` (phase, src, heads) and its conflicts per table."""
    state = lakehouse.merge_status(dest)
    open_rows = {}
    if state["phase"] not in (P.NOT_STARTED, P.FINISHED, P.REBASING):
        open_rows = interactive.open_rows(lakehouse, dest, ROWS_SHOWN)
    tables = []
    for entry in state["tables"]:
        shown = open_rows.get(entry["table"], []) if entry["kind"] != "schema" else \
            open_rows.get(SCHEMA_TABLE, [])
        columns = list(shown[0]) if shown else []
        tables.append(PausedTable(entry["table"], entry["kind"], entry["open conflicts"], entry["rows"],
                                  entry.get("rule") or "", columns,
                                  [[cell_text(r.get(c)) for c in columns] for r in shown]))
    return state, tables


def merge(lakehouse: Lakehouse, src: str, dest: str, on_conflict: str):
    return lakehouse.merge(src, dest, on_conflict=on_conflict)


def resolve(lakehouse: Lakehouse, dest: str, table: str, take: str) -> dict:
    return lakehouse.resolve_conflicts(dest, table, take=take)


def finish(lakehouse: Lakehouse, dest: str):
    return lakehouse.merge(None, dest, continue_=True)


def abort(lakehouse: Lakehouse, dest: str) -> dict:
    return lakehouse.abort_merge(dest)
