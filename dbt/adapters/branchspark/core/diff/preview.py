"""Merge preview: the conflicts a merge of `src` into branch `dest` would stop at, without writing anything.

It runs the merge's own planner (merge/merger.py, as a dry run does) with the default policy (abort),
so the preview is the merge's decision, not a second reading of the rules: the same Conflict list the
merge then raises, and for keyed tables the keys it decided are in conflict (a lazy frame of the key
columns and the rule, and the first `keys_shown` of them in key order). A keyless table's conflicts are per
segment (A1, A3) and listed in the Conflict.

The planner runs as a report (MergeOptions.report_only): what only a write needs is not planned. Tables
one side changed, keyless tables, and schema and operation conflicts are decided from the catalog; rows are
planned only for keyed tables both sides wrote, one Spark job each for its conflicts and first keys.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import errors
from ..merge.base import merge_base
from ..merge.merger import MergeOptions, ThreeWayMerge
from ..merge.report import Conflict, MergeResult, Outcome
from ..storage.reader import quote
from ..context import WriteContext


CONFLICT_RULE = "_conflict_rule"  # the rule column of a keyed table's conflicting keys
RULE = "_bs_rule"  # the merge planner's per-key rule column (merge/keyed_rules.py)


@dataclass
class MergePreview:
    src: str
    dest: str
    status: str  # up-to-date | fast-forward | clean | conflicts | paused (a merge into dest is paused)
    conflicts: list[Conflict] = field(default_factory=list)
    conflicting_keys: dict[str, DataFrame] = field(default_factory=dict)  # keyed table -> keys + CONFLICT_RULE
    note: str = ""
    outcomes: list[Outcome] = field(default_factory=list)  # what the merge would do per object (the planner's)
    shown_keys: dict[str, list] = field(default_factory=dict)  # keyed table -> its first conflicting keys (Rows)

    def for_table(self, name: str) -> list[Conflict]:
        return [c for c in self.conflicts if c.object_name.lower() == name.lower()]


KEYS_SHOWN = 50  # conflicting keys listed per keyed table


def preview_merge(lakehouse: WriteContext, src: str, dest: str, wanted_names: set[str] | None = None,
                  keys_shown: int = KEYS_SHOWN) -> MergePreview:
    """What `lakehouse.merge(src, dest)` would report; `wanted_names`: keep only these tables' conflicts;
    `keys_shown`: how many conflicting keys of a keyed table to list (in key order, with their rule)."""
    store = lakehouse.store
    dest_head = store.get_branch(dest).head
    src_commit = lakehouse.resolve(src)
    base = merge_base(store, src_commit.id, dest_head)
    if base == src_commit.id:
        return MergePreview(src, dest, "up-to-date")
    if base == dest_head:
        return MergePreview(src, dest, "fast-forward")
    try:
        planner = ThreeWayMerge(lakehouse, src, src_commit.id, dest, base,
                                MergeOptions(report_only=max(1, keys_shown)))
    except errors.MergeInProgress as exc:
        return MergePreview(src, dest, "paused", note=str(exc))
    result = MergeResult(src, dest, base, "merge", "dry-run")
    try:
        planner.plan(result)
        keys, shown = {}, {}
        for name, plan in planner.data_plans.items():
            if plan.decided is None:  # keyed tables are decided per key (keyless rows only in paused merges)
                continue
            keys[name.lower()] = (plan.decided.filter(F.col(RULE).isNotNull())
                                  .select(*[F.col(quote(k)) for k in plan.relation_keys],
                                          F.col(RULE).alias(CONFLICT_RULE)))
            shown[name.lower()] = list(plan.shown_keys or [])[:keys_shown]
    finally:
        planner.release()
    conflicts = result.conflicts
    if wanted_names is not None:
        conflicts = [c for c in conflicts if c.object_name.lower() in wanted_names]
        keys = {k: v for k, v in keys.items() if k in wanted_names}
    named = {c.object_name.lower() for c in conflicts}
    return MergePreview(src, dest, "conflicts" if conflicts else "clean", conflicts,
                        {k: v for k, v in keys.items() if k in named}, outcomes=result.outcomes,
                        shown_keys={k: v for k, v in shown.items() if k in keys and k in named})
