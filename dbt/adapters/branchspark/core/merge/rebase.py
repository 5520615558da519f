"""`strategy: rebase` (SPEC 3.6, the rebase seed): replay src's commits one by one on dest's head.

Each of src's commits since the merge base is merged, in order, into a scratch
branch that starts at dest's head (the three-way merge of merger.py, with the
conflict handler as its on_conflict: skip keeps what is there, replace takes
the replayed commit's change, a driver merges per key, abort stops). Then the
replayed states are recommitted as a linear chain on dest's head (same
catalog roots, one parent each, the original messages) and src moves to its
tip by compare-and-swap, so dest can fast-forward to src.

A conflict stops the rebase in a resumable state (a paused merge of kind
rebase on dest, merge/paused.py): `continue` resumes at the commit that
stopped, usually with another handler; `abort` drops the scratch branch and
leaves src and dest as they were.
"""
from __future__ import annotations

from . import paused as P
from .. import errors
from ..catalog.commits import OpInfo
from ..context import WriteContext
from .base import merge_base
from .merger import ConflictPolicy, three_way_merge
from .report import Conflict, MergeResult

HANDLERS = {"abort": "abort", "skip": "ours", "replace": "theirs", "ours": "ours", "theirs": "theirs"}


def rebase(lakehouse: WriteContext, src: str, dest: str, *, on_conflict="abort", drivers=None) -> MergeResult:
    store = lakehouse.store
    src_info = store.find_branch(src) if src else None
    if src_info is None:
        raise errors.InvalidArgument(f"rebase rewrites src's history, so src must be a branch, not '{src}'")
    if src == dest:
        raise errors.InvalidArgument(f"cannot rebase branch '{src}' onto itself: name another branch as dest")
    _handler(on_conflict)
    dest_info = store.get_branch(dest)
    store.refuse_if_paused(dest)
    base = merge_base(store, src_info.head, dest_info.head)
    if base is None:
        raise errors.InvalidArgument(f"'{src}' and '{dest}' share no commit, so there is no merge base")
    result = MergeResult(src, dest, base, "rebase", "up-to-date")
    if base in (src_info.head, dest_info.head):
        return result  # src is in dest already, or already sits on dest's head: nothing to replay
    behind = {c.id for c in store.ancestors(base)}
    commits = []
    for commit in store.first_parents(src_info.head):
        if commit.id in behind:
            break
        commits.append(commit.id)
    commits.reverse()
    paused = P.PausedMerge(dest, "rebase", src, src_info.head, dest_info.head, base, P.REBASING,
                           {"rebase": {"scratch": f"{src}~rebase", "commits": commits, "done": 0, "replayed": []}})
    store.create_branch(paused.state["rebase"]["scratch"], dest_info.head, created_from=f"rebase of {src}")
    P.save(store, paused)
    return _replay(lakehouse, paused, on_conflict, drivers)


def resume(lakehouse: WriteContext, dest: str, on_conflict="abort", drivers=None) -> MergeResult:
    paused = P.require_open(lakehouse.store, dest)
    _handler(on_conflict)
    for branch, head in ((dest, paused.dest_head), (paused.src, paused.src_head)):
        if lakehouse.store.get_branch(branch).head != head:
            raise errors.InvalidArgument(f"'{branch}' moved since the rebase stopped: abort it (abort_merge "
                                         f"{dest}) and rebase again")
    return _replay(lakehouse, paused, on_conflict, drivers)


def _handler(on_conflict) -> str:
    mode = "abort" if on_conflict in (None, "pause") else str(on_conflict).lower()
    if mode not in HANDLERS:
        raise errors.InvalidArgument(f"rebase conflict handler '{on_conflict}' is not valid: use abort, skip "
                                     f"(keep what is on dest) or replace (take src's change), or a merge driver")
    return HANDLERS[mode]


def _replay(lakehouse: WriteContext, paused: P.PausedMerge, on_conflict, drivers) -> MergeResult:
    store = lakehouse.store
    progress = paused.state["rebase"]
    commits = progress["commits"]
    for index in range(progress["done"], len(commits)):
        original = store.get_commit(commits[index])
        try:
            step = three_way_merge(lakehouse, original.id, progress["scratch"],
                                   ConflictPolicy.parse(_handler(on_conflict)), drivers=drivers,
                                   message=original.message, author=original.author)
        except errors.MergeConflict as stopped:
            progress["conflicts"] = [c.as_row() for c in stopped.report.conflicts]
            progress["stopped_at"] = original.id
            P.save(store, paused)
            raise errors.MergeConflict(
                f"rebase of '{paused.src}' onto '{paused.dest}' stopped at commit {original.short_id} "
                f"({index + 1} of {len(commits)}) with {len(stopped.report.conflicts)} conflict(s); src and dest "
                f"are unchanged: resume with continue (on_conflict skip or replace, or a merge driver) or "
                f"abort_merge {paused.dest}", report=_report(paused, stopped.report.conflicts)) from None
        progress["replayed"].append([original.id, step.commit_id])
        progress["done"] = index + 1
        progress.pop("conflicts", None)
        paused.state["pinned"] = [c for _, c in progress["replayed"] if c]
        P.save(store, paused)
    tip = _linearize(lakehouse, paused)
    store.move_branch(paused.src, paused.src_head, tip)
    drop_scratch(lakehouse, paused)
    paused.phase = P.FINISHED
    paused.state = {"commit": tip}
    P.save(store, paused)
    result = MergeResult(paused.src, paused.dest, paused.base, "rebase", "rebased", commit_id=tip)
    return result


def _linearize(lakehouse: WriteContext, paused: P.PausedMerge) -> str:
    """One single-parent commit per replayed commit, on dest's head, with the replayed catalog states."""
    store = lakehouse.store
    progress = paused.state["rebase"]
    scratch = progress["scratch"]
    store.move_branch(scratch, store.get_branch(scratch).head, paused.dest_head)
    head = paused.dest_head
    for original_id, merged_id in progress["replayed"]:
        if merged_id is None:
            continue  # the commit was in dest already
        original = store.get_commit(original_id)
        operations = [OpInfo(o.object_kind, o.object_id, o.object_name, o.op,
                             {k: v for k, v in (o.detail or {}).items() if k != "merged"})
                      for o in store.operations(merged_id)]
        head = store.commit(scratch, head, store.root(merged_id), operations=operations,
                            message=original.message, author=original.author).id
    return head


def drop_scratch(lakehouse: WriteContext, paused: P.PausedMerge) -> None:
    scratch = paused.state.get("rebase", {}).get("scratch")
    if scratch and lakehouse.store.find_branch(scratch) is not None:
        lakehouse.store.drop_branch(scratch)


def _report(paused: P.PausedMerge, conflicts: list[Conflict]) -> MergeResult:
    result = MergeResult(paused.src, paused.dest, paused.base, "rebase", "paused", conflicts=list(conflicts))
    result.phase = P.REBASING
    return result
