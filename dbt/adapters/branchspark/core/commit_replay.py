"""Land a write whose branch head moved while it ran (StaleHead at the compare-and-swap): serializably.

The concurrency guarantee: writers on one branch are serializable, the result is
as if their writes ran one after another, in the order they landed. On a moved
head, a write is never settled by comparing values (two equal new values of
`n = n + 1` are not agreement); instead, with bounded jittered retries
(`catalog/retry.py`), each attempt asks what the commits that landed meanwhile
changed (`write_dependencies.py`):

- nothing the write read or wrote (other tables, or only tables the write
  appended given rows to without reading them): its result is the same on the
  new head, so it lands there. The staged change is committed as it is on a
  hidden branch at the head it was built on (so `gc` sees its files, and the
  merge core can read it as a side); the merge planner (`merge/merger.py`)
  then plans "that commit into the branch" and the result lands as one ordinary
  commit on the checked head with the writer's message (linear history: the
  hidden commit is not a parent);
- something it depended on, and the write is one replayable operation
  (`Transaction.replayable`: an update, delete, insert... with its predicate and
  expressions as text, and input rows that do not read what changed): it runs
  again on the new head, its predicates and expressions evaluated against the
  rows now there, and commits by compare-and-swap;
- otherwise (a multi-operation transaction whose code cannot be re-run, or input
  rows read from a table that changed): it fails with one WriteConflict line,
  nothing written, saying to run it again.

The hidden branch is dropped either way; a crashed writer's one is dropped by `gc`.
"""
from __future__ import annotations

import uuid
from functools import partial

from . import errors
from .catalog.commits import CommitInfo
from .catalog.retry import CommitRetry
from .merge.base import merge_base
from .merge.merger import MergeOptions, ThreeWayMerge
from .merge.report import MergeResult
from .transaction import Transaction
from .write_dependencies import changed_tables, overlap, tables_read_by

HIDDEN_PREFIX = "@retry/"  # '@' is not allowed in branch names, so these never clash with a user's


def is_hidden_branch(name: str) -> bool:
    return name.startswith(HIDDEN_PREFIX)


def land_on_moved_head(tx: "Transaction", retry: CommitRetry | None = None) -> CommitInfo | None:
    """Land `tx` (committed once, StaleHead) on its branch's current head, or raise WriteConflict.
    When it ran again, `tx.result` is what the operation returned on the head it landed on."""
    store, fault = tx.store, tx.lakehouse.fault
    writer = tx  # the transaction whose change is tried: tx, or its latest re-execution
    hidden = staged = staged_writer = None
    retry = retry or CommitRetry()
    try:
        for _ in retry:
            head = store.get_branch(tx.branch).head
            before, after = store.root(writer.base_head), store.root(head)
            clashes = overlap(writer.depends, writer.operations, before, after)
            if clashes:
                _refuse_rerun(tx, writer, clashes, changed_tables(before, after))
                if fault:
                    fault("retry.before_rerun")
                again = tx.lakehouse.transaction(tx.branch, message=tx.message, author=tx.author,
                                                 allow_protected=tx.allow_protected)
                again.auto_retry = False  # this loop retries
                tx.result = again.replayable(tx.rerun)
                try:
                    return again.commit()
                except errors.StaleHead:
                    writer = again
                    continue
            if staged is None or staged_writer is not writer:
                _drop(store, hidden)
                hidden = f"{HIDDEN_PREFIX}{uuid.uuid4().hex}"
                store.create_branch(hidden, writer.base_head, created_from=f"retry of a write on {tx.branch}")
                staged, staged_writer = writer.commit_on(hidden), writer
                if fault:
                    fault("retry.after_staged_commit")
            try:
                return _land(writer, staged, head)
            except errors.StaleHead:
                continue
        raise errors.WriteConflict(
            f"branch '{tx.branch}' kept moving while this write retried ({retry.attempts} attempts): nothing "
            f"was written; run it again when fewer writers share the branch")
    finally:
        _drop(store, hidden)


def _refuse_rerun(tx: "Transaction", writer: "Transaction", clashes: list[str], changed: set[str]) -> None:
    """WriteConflict unless `tx` can run again on the new head with the same meaning."""
    what = ", ".join(clashes[:3]) + (f" (+{len(clashes) - 3} more)" if len(clashes) > 3 else "")
    if not tx.rerunnable:
        raise errors.WriteConflict(
            f"branch '{tx.branch}' moved while this transaction ran, and the commits that landed changed what it "
            f"read or wrote ({what}): nothing was written; run the transaction again on the new head")
    stale = tables_read_by(writer.depends.inputs, changed)
    if stale:
        raise errors.WriteConflict(
            f"branch '{tx.branch}' moved while this write ran, and the rows it writes were read from tables that "
            f"changed meanwhile ({what}): nothing was written; run the write again on the new head")


def _drop(store, hidden: str | None) -> None:
    if hidden is None:
        return
    try:
        store.drop_branch(hidden)
    except errors.BranchNotFound:
        pass


def _land(tx: "Transaction", staged: CommitInfo, head: str) -> CommitInfo | None:
    """One attempt: plan `staged` into the branch at `head` and commit the result by compare-and-swap."""
    lakehouse, store = tx.lakehouse, tx.store
    base = merge_base(store, staged.id, head)
    if base == head:
        # Nothing landed since after all (e.g. the branch was reset back): the staged commit fits as it is.
        store.move_branch(tx.branch, head, staged.id)
        return staged
    planner = ThreeWayMerge(lakehouse, f"a write on {tx.branch}", staged.id, tx.branch, base,
                            MergeOptions(message=staged.message, author=staged.author, merge_commit=False,
                                         allow_protected=tx.allow_protected))
    result = MergeResult(f"a write on {tx.branch}", tx.branch, base, "merge", "up-to-date")
    if planner.land(result, partial(_write_conflict, tx.branch), expected_head=head) is None:
        return None  # what this write did is already on the branch
    return planner.tx.commit_info


def _write_conflict(branch: str, result: MergeResult) -> errors.WriteConflict:
    first = result.conflicts[0]
    return errors.WriteConflict(
        f"branch '{branch}' moved while this write ran and the change conflicts with what landed "
        f"({first.object_name}: {first.src_op} here vs {first.dest_op} there, {first.rule}: {first.reason}): "
        f"nothing was written; run the write again on the new head")
