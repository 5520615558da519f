"""Replay a write whose branch moved (StaleHead at commit) onto the new head, by the merge rules.

The staged change is first committed as it is on a hidden branch at the head
it was built on (so `gc` sees its files, and the merge core can read it as a
side). Then, with bounded jittered retries (`catalog/retry.py`), the merge
planner (`merge/merger.py`) plans "that commit into the branch" exactly as
MERGE BRANCH would: when nothing conflicts, the result lands as one ordinary
commit on the branch's current head with the writer's message (linear
history: the hidden commit is not a parent); when something conflicts the
write fails with one line and the branch keeps what landed. The hidden
branch is dropped either way; a crashed writer's one is dropped by `gc`.
"""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from . import errors
from .catalog.retry import CommitRetry
from .catalog.state import CommitInfo

if TYPE_CHECKING:
    from .transaction import Transaction

HIDDEN_PREFIX = "@retry/"  # '@' is not allowed in branch names, so these never clash with a user's


def is_hidden_branch(name: str) -> bool:
    return name.startswith(HIDDEN_PREFIX)


def replay_stale_commit(tx: "Transaction", commit_staged, retry: CommitRetry | None = None) -> CommitInfo | None:
    """Land `tx` on its branch's current head. `commit_staged(branch)` commits tx's staged change on `branch`
    (whose head is tx.base_head) and returns that commit."""
    lakehouse, store = tx.lakehouse, tx.store
    fault = lakehouse.fault
    hidden = f"{HIDDEN_PREFIX}{uuid.uuid4().hex}"
    store.create_branch(hidden, tx.base_head, created_from=f"retry of a write on {tx.branch}")
    try:
        staged = commit_staged(hidden)
        if fault:
            fault("retry.after_staged_commit")
        retry = retry or CommitRetry()
        for _ in retry:
            try:
                return _land(tx, staged)
            except errors.StaleHead:
                continue
        raise errors.WriteConflict(
            f"branch '{tx.branch}' kept moving while this write retried ({retry.attempts} attempts): nothing "
            f"was written; run it again when fewer writers share the branch")
    finally:
        try:
            store.drop_branch(hidden)
        except errors.BranchNotFound:
            pass


def _land(tx: "Transaction", staged: CommitInfo) -> CommitInfo | None:
    """One attempt: plan `staged` into the branch's current head and commit the result by compare-and-swap."""
    from .merge.base import merge_base
    from .merge.merger import ConflictPolicy, ThreeWayMerge
    from .merge.report import MergeResult

    lakehouse, store = tx.lakehouse, tx.store
    head = store.get_branch(tx.branch).head
    base = merge_base(store, staged.id, head)
    if base == head:
        # Nothing landed since after all (e.g. the branch was reset back): the staged commit fits as it is.
        store.move_branch(tx.branch, head, staged.id)
        return staged
    planner = ThreeWayMerge(lakehouse, f"a write on {tx.branch}", staged.id, tx.branch, base, ConflictPolicy(),
                            staged.message, staged.author)
    planner.tx.merge_parent = None  # one plain commit, as if written on the new head
    planner.tx.allow_protected = tx.allow_protected
    planner.tx.auto_retry = False  # this loop retries, not the planner's own transaction
    if planner.tx.base_head != head:
        planner.release()
        raise errors.StaleHead(tx.branch, head, planner.tx.base_head)
    result = MergeResult(f"a write on {tx.branch}", tx.branch, base, "merge", "up-to-date")
    planner.plan(result)
    if result.conflicts:
        planner.release()
        first = result.conflicts[0]
        raise errors.WriteConflict(
            f"branch '{tx.branch}' moved while this write ran and the change conflicts with what landed "
            f"({first.object_name}: {first.src_op} here vs {first.dest_op} there, {first.rule}: {first.reason}): "
            f"nothing was written; run the write again on the new head")
    if not planner.tx.operations and not any(plan.ops for plan in planner.tables.values()):
        planner.release()
        return None  # what this write did is already on the branch
    planner.write()
    return planner.tx.commit_info
