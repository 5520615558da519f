"""MERGE BRANCH src [TO dest] with a strategy: which merge path runs (SPEC 3, 3.6).

`merge` and `auto`/`fast_forward` run the three-way merge (merger.py); `interactive`, or
`on_conflict="pause"`, start a paused merge instead (interactive.py); `rebase` replays src's commits
on dest (rebase.py); `continue_` finishes a paused merge or resumes a stopped rebase. The paths
import the merge engine; the engine imports none of them.
"""
from __future__ import annotations

from .. import errors
from ..context import WriteContext
from . import interactive, paused, rebase
from .merger import STRATEGIES, ConflictPolicy, three_way_merge
from .report import MergeResult


def merge_branch(lakehouse: WriteContext, src: str | None, dest: str = "main", *, strategy: str = "merge",
                 on_conflict="abort", dry_run: bool = False, message: str | None = None,
                 author: str | None = None, drivers=None, continue_: bool = False, views=()) -> MergeResult:
    """Merge `src` (a branch or commit) into branch `dest`. Raises MergeConflict (nothing written) when
    conflicts remain; a dry run returns them instead. `on_conflict="pause"` or `strategy="interactive"`
    pause instead (merge/interactive.py); `strategy="rebase"` replays src on dest (merge/rebase.py);
    `continue_` finishes a paused merge or resumes a stopped rebase. `drivers`: table -> merge driver.
    `views`: names of src's views to carry in the merge commit as well (merge/views.py); none by default."""
    if strategy not in STRATEGIES:
        raise errors.InvalidArgument(f"unknown merge strategy '{strategy}': use one of {', '.join(STRATEGIES)}")
    if continue_:
        current = paused.require_open(lakehouse.store, dest)
        if current.kind == "rebase":
            return rebase.resume(lakehouse, dest, on_conflict, drivers)
        return interactive.continue_merge(lakehouse, dest, drivers)
    # A paused merge holds dest until it is continued or aborted: any other merge, even a dry run, is refused.
    lakehouse.store.refuse_if_paused(dest)
    if strategy == "rebase":
        return rebase.rebase(lakehouse, src, dest, on_conflict=on_conflict, drivers=drivers)
    pausing = strategy == "interactive" or on_conflict == "pause"
    policy = ConflictPolicy.parse("abort" if pausing else on_conflict)
    return three_way_merge(lakehouse, src, dest, policy, strategy=strategy, dry_run=dry_run, message=message,
                           author=author, drivers=drivers, views=views,
                           pause=interactive.start if pausing else None)
