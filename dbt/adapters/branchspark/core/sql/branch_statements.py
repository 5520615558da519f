"""The branch statements (statements.py) run: each calls the Lakehouse operation it names and returns its
report as a result set.

Nothing here merges, logs or resolves by itself: MERGE BRANCH is `Lakehouse.merge` (with its conflict
report, protected branches and one merge commit), SHOW LOG is `Lakehouse.log`, the paused-merge statements
are `merge/interactive.py`'s. A missing destination is the session's current branch (`home`): a dbt
target's branch, or the branch a `Lakehouse.sql` session or the shell is on.
"""
from __future__ import annotations

from collections.abc import Callable

from .. import errors
from ..merge import interactive
from ..merge.report import MergeResult
from .results import RoutedResult, rows_frame
from .statements import (
    AbortMerge,
    BranchStatement,
    ContinueMerge,
    CreateBranch,
    DropBranch,
    MergeBranch,
    ResolveConflicts,
    ShowBranches,
    ShowLog,
    ShowMergeStatus,
    UseBranch,
)

MERGE_SCHEMA = ("src string, dest string, status string, commit string, object string, kind string, "
                "action string, rule string, rows_added bigint, rows_deleted bigint, detail string")
BRANCHES_SCHEMA = ("branch string, head string, head_time timestamp, message string, protected boolean, "
                   "created_from string, current boolean")
LOG_SCHEMA = "commit string, time timestamp, author string, message string, parents string, operations string"
STATUS_SCHEMA = ("dest string, phase string, src string, table string, kind string, open_conflicts bigint, "
                 "rows bigint, rule string, view string")


class BranchStatements:
    """Runs branch statements for one SQL session.

    `session`: the BranchSession whose branch the session reads and writes (in dbt, the run branch);
    `home`: the branch a statement without ON / TO means; `switch`: changes the session's branch
    (USE BRANCH), or None where the branch is fixed (dbt: the target names it); `merge_settings(dest)`:
    what else a merge into dest takes where the session has it (dbt: the project's views and merge drivers,
    as run-operation merge_branch passes them), a dict of `Lakehouse.merge` arguments."""

    def __init__(self, session, home: Callable[[], str], switch: Callable[[str], None] | None,
                 merge_settings: Callable[[str], dict] | None = None):
        self.session = session
        self.lakehouse = session.lakehouse
        self.spark = session.spark
        self.home = home
        self.switch = switch
        self.merge_settings = merge_settings or (lambda dest: {})

    def run(self, statement: BranchStatement) -> RoutedResult:
        return getattr(self, f"_{type(statement).__name__}")(statement)

    # -- merging
    def _MergeBranch(self, st: MergeBranch) -> RoutedResult:
        dest = st.dest or self.home()
        options = st.options
        result = self.lakehouse.merge(st.src, dest, strategy=options.get("strategy", "merge"),
                                      on_conflict=options.get("on_conflict", "abort"),
                                      dry_run=bool(options.get("dry_run", False)), message=options.get("message"),
                                      author=self.session.author, count_rows=True,
                                      **self.merge_settings(dest))
        return self._merged(result, dest)

    def _ContinueMerge(self, st: ContinueMerge) -> RoutedResult:
        dest = st.dest or self.home()
        settings = {k: v for k, v in self.merge_settings(dest).items() if k == "drivers"}  # views came at the start
        return self._merged(self.lakehouse.merge(None, dest, continue_=True, author=self.session.author,
                                                 count_rows=True, **settings),
                            dest)

    def _merged(self, result: MergeResult, dest: str) -> RoutedResult:
        if dest == self.session.branch and result.status not in ("dry-run", "conflicts"):
            self.session.expose_branch()  # the session now reads the merged branch
        if result.status == "paused":
            interactive.register_views(self.lakehouse, dest)  # its conflict relations, for SELECT and UPDATE
        return RoutedResult(df=merge_frame(self.spark, result), message=result.summary())

    # -- a paused merge
    def _ShowMergeStatus(self, st: ShowMergeStatus) -> RoutedResult:
        return self._status(st.dest or self.home())

    def _ResolveConflicts(self, st: ResolveConflicts) -> RoutedResult:
        self.lakehouse.resolve_conflicts(st.dest, st.table, take=st.take)
        return self._status(st.dest)

    def _AbortMerge(self, st: AbortMerge) -> RoutedResult:
        dest = st.dest or self.home()
        self.lakehouse.abort_merge(dest)
        return RoutedResult(message=f"ABORT MERGE: the merge into {dest} is aborted, {dest} is as it was")

    def _status(self, dest: str) -> RoutedResult:
        state = interactive.status(self.lakehouse, dest)
        if state["phase"] not in ("not started", "finished", "rebasing"):
            interactive.register_views(self.lakehouse, dest)  # this session can now select from them
        return RoutedResult(df=status_frame(self.spark, state), message=interactive.status_title(state))

    # -- branches
    def _CreateBranch(self, st: CreateBranch) -> RoutedResult:
        if st.if_not_exists and self.lakehouse.branch_exists(st.name):
            return RoutedResult(message=f"CREATE BRANCH: {st.name} exists, left as it is")
        info = self.lakehouse.create_branch(st.name, st.source or self.home(), st.at_time)
        return RoutedResult(message=f"CREATE BRANCH {st.name} at {info.head[:12]} (from {info.created_from})")

    def _DropBranch(self, st: DropBranch) -> RoutedResult:
        if st.if_exists and not self.lakehouse.branch_exists(st.name):
            return RoutedResult(message=f"DROP BRANCH: no branch {st.name}, nothing dropped")
        if st.name in (self.session.branch, self.home()):
            raise errors.InvalidArgument(f"branch '{st.name}' is this session's branch: USE BRANCH another one "
                                         f"before dropping it")
        self.lakehouse.drop_branch(st.name, force=st.force)
        return RoutedResult(message=f"DROP BRANCH {st.name}")

    def _UseBranch(self, st: UseBranch) -> RoutedResult:
        if self.switch is None:
            raise errors.InvalidArgument("USE BRANCH switches a SQL session's branch; in dbt the target's `branch` "
                                         "names it: run with a target on that branch instead")
        self.lakehouse.get_branch(st.name)  # BranchNotFound before anything changes
        self.switch(st.name)
        return RoutedResult(message=f"USE BRANCH {st.name}")

    def _ShowBranches(self, st: ShowBranches) -> RoutedResult:
        branches = self.lakehouse.list_branches()
        heads = self.lakehouse.store.commits([b.head for b in branches])
        home = self.home()
        rows = [(b.name, b.head[:12], heads[b.head].ts, heads[b.head].message, bool(b.protected),
                 b.created_from, b.name == home) for b in branches]
        return RoutedResult(df=rows_frame(self.spark, BRANCHES_SCHEMA, rows), message=f"{len(rows)} branch(es)")

    def _ShowLog(self, st: ShowLog) -> RoutedResult:
        commits = self.lakehouse.log(st.ref or self.home(), limit=st.limit)
        rows = [(c.id[:12], c.ts, c.author, c.message, " ".join(p[:12] for p in c.parents),
                 ", ".join(f"{op.op} {op.object_name}" for op in (c.operations or []))) for c in commits]
        return RoutedResult(df=rows_frame(self.spark, LOG_SCHEMA, rows), message=f"{len(rows)} commit(s)")


def merge_frame(spark, result: MergeResult):
    """A merge's report as rows: one per merged object, per conflict settled by on_conflict, per conflict
    left (a dry run's, a paused merge's, or the report of MergeConflict); a merge with none has one row."""
    head = (result.src, result.dest, result.status, result.commit_id[:12] if result.commit_id else None)
    rows = [head + (o.object_name, o.object_kind, o.action, None, o.rows_added, o.rows_deleted, o.note or None)
            for o in result.outcomes]
    rows += [head + (c.object_name, c.object_kind, "settled by on_conflict", str(c.rule), None, None,
                     _conflict_detail(c)) for c in result.resolved]
    rows += [head + (c.object_name, c.object_kind, "conflict", str(c.rule), None, None, _conflict_detail(c))
             for c in result.conflicts]
    return rows_frame(spark, MERGE_SCHEMA, rows or [head + (None,) * 7])


def _conflict_detail(conflict) -> str:
    involved = f"; {conflict.involved}" if conflict.involved else ""
    return f"{conflict.src_op} on src vs {conflict.dest_op} on dest: {conflict.reason}{involved}"


def status_frame(spark, state: dict):
    head = (state["dest"], state["phase"], state.get("src"))
    rows = [head + (t["table"], t["kind"], int(t["open conflicts"] or 0), int(t["rows"]) if t["rows"] != "" else None,
                    t["rule"] or None, t["view"] or None) for t in state["tables"]]
    return rows_frame(spark, STATUS_SCHEMA, rows or [head + (None,) * 6])
