"""The state of a paused merge or rebase, kept in the catalog (one per destination branch).

A paused merge is the plan of merger.py stopped before its commit: what it
merges (src's and dest's heads, the base) and what the user decided so far
(schema choices, per-table takes, where each conflict relation is stored).
It survives the process: any later process reads it back from the catalog.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from .. import errors
from ..catalog.store import CatalogStore, utcnow

# The phases of SPEC 3.6, in order; "inspecting" phases happen only in an interactive merge.
NOT_STARTED = "not started"
INSPECTING_SCHEMA = "inspecting schema"
RESOLVING_SCHEMA = "resolving schema"
INSPECTING_DATA = "inspecting data"
RESOLVING_DATA = "resolving data"
REBASING = "rebasing"  # a rebase stopped at one of src's commits
FINISHED = "finished"


@dataclass
class PausedMerge:
    dest: str
    kind: str  # merge | rebase
    src: str
    src_head: str
    dest_head: str
    base: str
    phase: str
    state: dict = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created_at: datetime | None = None

    @property
    def interactive(self) -> bool:
        return bool(self.state.get("interactive"))

    @property
    def open(self) -> bool:
        return self.phase not in (NOT_STARTED, FINISHED)

    # Conflict relations: table name -> {"path": ..., "keys": [...], "values": [...]}
    @property
    def relations(self) -> dict:
        return self.state.setdefault("relations", {})

    @property
    def schema_rows(self) -> list[dict]:
        return self.state.setdefault("schema_rows", [])

    @property
    def takes(self) -> dict:
        """Per-table choices from resolve_conflicts take: table -> ours | theirs."""
        return self.state.setdefault("takes", {})


def load(store: CatalogStore, dest: str) -> PausedMerge | None:
    row = store.paused_merge_row(dest)
    if row is None:
        return None
    return PausedMerge(row.dest, row.kind, row.src, row.src_head, row.dest_head, row.base, row.phase,
                       dict(row.state or {}), row.id, row.created_at)


def open_merges(store: CatalogStore) -> list[PausedMerge]:
    """Every paused merge or rebase, one per destination branch."""
    return [p for p in (load(store, d) for d in store.paused_merge_dests()) if p is not None and p.open]


def require_open(store: CatalogStore, dest: str) -> PausedMerge:
    paused = load(store, dest)
    if paused is None or not paused.open:
        raise errors.InvalidArgument(f"no merge into '{dest}' is paused: start one with on_conflict pause or "
                                     f"strategy interactive (see `branchspark merge-status {dest}`)")
    return paused


def save(store: CatalogStore, paused: PausedMerge) -> None:
    """Insert or replace the row of `paused.dest` (a finished or new merge replaces the old row)."""
    store.save_paused_merge(paused.dest, {
        "id": paused.id, "kind": paused.kind, "src": paused.src, "src_head": paused.src_head,
        "dest_head": paused.dest_head, "base": paused.base, "phase": paused.phase, "state": paused.state,
        "updated_at": utcnow()})


def remove(store: CatalogStore, dest: str) -> None:
    store.remove_paused_merge(dest)
