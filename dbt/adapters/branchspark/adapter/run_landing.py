"""Every writing dbt invocation lands by merge: one run branch per invocation, one commit on the target.

`dbt run`, `build`, `seed` and `snapshot` against branch B write to a run branch
`dbt/<B>/<command>-<invocation id>`, created from B's head when the invocation
opens its first connection (one catalog row). The run's models read each
other's outputs there, and tests under `dbt build` audit them there. When the
invocation ends (dbt cleans up the adapter's connections, after the on-run-end
hooks), the adapter looks at what dbt reported for every node (its events):

- every node succeeded: the run branch is merged into B as ONE commit whose
  message names the invocation and lists the nodes built, then dropped.
  B has not moved: a landing commit with two parents (B's head, the run
  branch's head) whose catalog is exactly the run branch's (what was audited is
  what is published). B moved (another run landed meanwhile): a three-way merge
  with the rules of SPEC section 3 (views, which merges leave alone, are carried
  over as the run defined them); a conflict fails the invocation with the
  conflict report, and nothing lands.
- a node failed (a model error, a failing test under `dbt build`), or dbt
  stopped with an exception: nothing lands, the run branch is kept and named
  in the error; `dbt retry` continues on it.

Landing copies no data: the merged catalog points at the segments the run wrote.
A target with `landing: per_model` keeps the older behaviour: each model build
commits straight onto B, so partial results stay. Either way each model's commit
records the versions of Spark's tables that model read; the landing commit, the
whole run's (sources.py).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Dict, List, Optional, Tuple

import click
from dbt.adapters.events.logging import AdapterLogger
from dbt.flags import get_flags
from dbt_common.events.event_manager_client import add_callback_to_manager
from dbt_common.exceptions import DbtRuntimeError
from dbt_common.invocation import get_invocation_id

from dbt.adapters.branchspark.adapter.commit_messages import node_of
from dbt.adapters.branchspark.adapter.merge_operations import report_text
from dbt.adapters.branchspark.adapter.target_branch import _author as author
from dbt.adapters.branchspark.core.errors import MergeConflict, MergeInProgress, StaleHead
from dbt.adapters.branchspark.core.merge.base import merge_base
from dbt.adapters.branchspark.core.merge.merger import MergeOptions, ThreeWayMerge
from dbt.adapters.branchspark.core.merge.report import Conflict, MergeResult
from dbt.adapters.branchspark.core.merge.rules import Rule
from dbt.adapters.branchspark.core.operations import ObjectKind, Op
from dbt.adapters.branchspark.core.sql import sources

logger = AdapterLogger("branchspark")

WRITING_COMMANDS = ("run", "build", "seed", "snapshot")
RUN_BRANCH_PREFIX = "dbt"  # run branches are recorded as such: gc can expire kept ones
STATE_FILE = "branchspark_run.json"
# node statuses that stop a run from landing (warn and skipped do not: a skip always follows a failure)
FAILED_STATUSES = {"error", "fail", "runtime error", "partial success"}
LANDING_ATTEMPTS = 5  # another run landing between our plan and our commit: plan again

_runs: Dict[str, "InvocationRun"] = {}
_runs_lock = threading.Lock()
_project = {"root": None, "target_path": None}
_invocation = {"id": None, "command": None}


def adapter_created(project_root: Optional[str], target_path: Optional[str]) -> None:
    """The adapter of a new invocation: note its dbt command and target dir for the connections.

    dbt creates the adapter in the invocation's main thread, where the click context tells the
    command; connections open later in worker threads, which have no click context.
    """
    _project["root"], _project["target_path"] = project_root, target_path
    _invocation["id"], _invocation["command"] = _invocation_id(), _click_command()


def run_branch_name(branch: str, command: str, invocation_id: str) -> str:
    return f"{RUN_BRANCH_PREFIX}/{branch}/{command}-{invocation_id}"


def _invocation_id() -> str:
    return get_invocation_id()


def _click_command() -> Optional[str]:
    """The dbt command running in this thread; None outside a dbt invocation.

    The click context exists only while a dbt command runs (the CLI or dbtRunner), so a library
    use of the adapter (e.g. a test fixture's `run_sql` between invocations) never starts a run.
    """
    try:
        context = click.get_current_context(silent=True)
    except Exception:
        return None
    if context is None:
        return None
    return context.info_name or getattr(context.command, "name", None)


def invocation_command() -> Optional[Tuple[str, bool]]:
    """(command, is retry) of the current dbt invocation; under `dbt retry`, the retried command."""
    if _invocation["id"] != _invocation_id() or not _invocation["command"]:
        return None
    name = _invocation["command"]
    if name == "retry":
        return getattr(get_flags(), "WHICH", None), True  # RetryTask sets the retried command's flags
    return name, False


def session_branch(lakehouse, credentials) -> str:
    """The branch a connection of this invocation reads and writes: its run branch, else the target's."""
    invocation_id = _invocation_id()
    with _runs_lock:
        run = _runs.get(invocation_id)
        if run is not None:
            return credentials.branch if run.finished else run.run_branch
        if getattr(credentials, "landing", "run") != "run":
            return credentials.branch
        command = invocation_command()
        if command is None or command[0] not in WRITING_COMMANDS:
            return credentials.branch
        run = _runs[invocation_id] = InvocationRun.start(lakehouse, credentials.branch, command[0], invocation_id,
                                                         retry=command[1])
        return run.run_branch


def finish_invocation() -> None:
    """Land or keep this invocation's run branch (once; later calls do nothing).

    Called when dbt cleans up the adapter's connections: at the end of a task, after the
    on-run-end hooks, in a `finally` (so an exception that stops dbt is in flight here).
    """
    with _runs_lock:
        run = _runs.get(_invocation_id())
        if run is None or run.finished:
            return
        run.finished = True
    run.finish(sys.exc_info()[1])


class InvocationRun:
    """One invocation's run branch and what dbt reported for its nodes."""

    def __init__(self, lakehouse, branch: str, run_branch: str, command: str, invocation_id: str,
                 continues: Optional[str] = None):
        self.lakehouse = lakehouse
        self.branch = branch
        self.run_branch = run_branch
        self.command = command
        self.invocation_id = invocation_id
        self.continues = continues  # the invocation whose kept run branch a retry continues
        self.failures: List[str] = []
        self.finished = False
        self._lock = threading.Lock()

    @classmethod
    def start(cls, lakehouse, branch: str, command: str, invocation_id: str, retry: bool = False) -> "InvocationRun":
        kept = _kept_run(lakehouse, branch) if retry else None
        if kept is not None:
            run = cls(lakehouse, branch, kept["run_branch"], command, invocation_id, continues=kept["invocation_id"])
            logger.info(f"dbt retry: continuing on run branch {run.run_branch}, kept by invocation "
                        f"{run.continues}; it lands on {branch} when the run succeeds")
        else:
            name = run_branch_name(branch, command, invocation_id)
            created = lakehouse.create_branch(name, source=branch, run_branch=True)
            run = cls(lakehouse, branch, name, command, invocation_id)
            logger.info(f"dbt {command}: writing to run branch {name} (from {branch} at {created.head[:12]}); "
                        f"it lands on {branch} when every node succeeds")
        add_callback_to_manager(run.on_event)
        run.save_state("running")
        return run

    # -- what dbt reports ---------------------------------------------------------------
    def on_event(self, msg) -> None:
        """dbt's event callback: note every node (or run hook) that did not succeed."""
        name = msg.info.name
        if name == "NodeFinished":
            status = str(msg.data.run_result.status)
            node = msg.data.node_info.unique_id
        elif name == "LogHookEndLine":
            status = str(msg.data.status)
            node = msg.data.statement
        else:
            return
        if status in FAILED_STATUSES:
            with self._lock:
                self.failures.append(f"{node} ({status})")

    # -- the end of the invocation --------------------------------------------------------
    def finish(self, exc: Optional[BaseException]) -> None:
        if exc is not None:
            self.keep(f"dbt stopped with {type(exc).__name__}")
        elif self.failures:
            count = len(self.failures)
            self.keep(f"{count} node{'s' if count > 1 else ''} did not succeed: {', '.join(self.failures[:5])}"
                      f"{' ...' if count > 5 else ''}")
        else:
            self.land()

    def keep(self, reason: str) -> None:
        self.save_state("kept")
        logger.error(
            f"nothing landed on branch '{self.branch}': {reason}. The run's writes are kept on run branch "
            f"'{self.run_branch}' for inspection: `dbt retry` continues the run there; "
            f"`dbt run-operation drop_branch --args '{{name: {self.run_branch}, force: true}}'` removes it")

    def land(self) -> None:
        store = self.lakehouse.store
        run_head = store.get_branch(self.run_branch).head
        landed = None
        for _ in range(LANDING_ATTEMPTS):
            head = store.get_branch(self.branch).head
            base = merge_base(store, run_head, head)
            if base == run_head:  # the run wrote nothing B lacks
                break
            message = self.message(run_head, base)
            try:
                read = sources.ledger.recorded()  # the versions of Spark's tables the run read
                if base == head:
                    landed = land_unmoved(self.lakehouse, self.branch, head, self.run_branch, run_head, base,
                                          message, _author(), read)
                else:
                    landed = land_by_merge(self.lakehouse, self.branch, head, self.run_branch, run_head, base,
                                           message, _author(), read)
                break
            except StaleHead:
                continue  # another run landed meanwhile: merge with it
            except MergeConflict as conflict:
                self.save_state("conflict")
                raise DbtRuntimeError(
                    f"{report_text(conflict.report)}\nnothing landed on branch '{self.branch}': {conflict}. "
                    f"The run's writes are kept on run branch '{self.run_branch}'") from None
            except MergeInProgress as paused:  # a merge into the branch paused during the run
                self.save_state("kept")
                raise DbtRuntimeError(f"nothing landed on branch '{self.branch}': {paused}. The run's writes are "
                                      f"kept on run branch '{self.run_branch}': `dbt retry` lands them once that "
                                      f"merge is continued or aborted") from None
        else:
            self.save_state("kept")
            raise DbtRuntimeError(f"nothing landed on branch '{self.branch}': its head kept moving during "
                                  f"{LANDING_ATTEMPTS} attempts; the run is kept on '{self.run_branch}'")
        self.lakehouse.drop_branch(self.run_branch, force=True)  # its writes have landed
        self.save_state("landed")
        if landed is not None:
            logger.info(f"landed on {self.branch} as commit {landed.id[:12]}: {landed.message}")
        else:
            logger.info(f"nothing to land on {self.branch}: the run changed nothing")

    def message(self, run_head: str, base: str) -> str:
        """`dbt run <invocation id>: landed 3 nodes from <run branch>: model.p.a, model.p.b, seed.p.c`."""
        nodes = self.nodes(run_head, base)
        retry = f" (retry of {self.continues})" if self.continues else ""
        listed = ", ".join(nodes) if nodes else "no nodes"
        return (f"dbt {self.command} {self.invocation_id}{retry}: landed {len(nodes)} "
                f"node{'' if len(nodes) == 1 else 's'} from {self.run_branch}: {listed}")

    def nodes(self, run_head: str, base: str) -> List[str]:
        """The nodes that committed on the run branch since `base`, in build order."""
        found: Dict[str, None] = {}
        for commit in reversed(run_commits(self.lakehouse.store, run_head, base)):
            node = node_of(commit.message or "")
            if node:
                found.setdefault(node, None)
        return list(found)

    # -- what `dbt retry` reads -----------------------------------------------------------
    def save_state(self, status: str) -> None:
        path = _state_path()
        if path is None:
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as out:
                json.dump({"invocation_id": self.invocation_id, "command": self.command, "branch": self.branch,
                           "run_branch": self.run_branch, "status": status}, out, indent=2)
        except OSError as exc:  # a read-only target dir only costs `dbt retry` its continuation
            logger.debug(f"could not write {path}: {exc}")


def run_commits(store, run_head: str, base: str):
    """The run branch's commits since `base`, newest first (a run branch is linear)."""
    commits = []
    for commit in store.first_parents(run_head):
        if commit.id == base:
            break
        commits.append(commit)
    return commits


def land_unmoved(lakehouse, branch: str, head: str, run_branch: str, run_head: str, base: str, message: str,
                 author: str, read: Optional[dict] = None):
    """B has not moved since the run forked: one commit on B, parents (B's head, the run's head), whose
    catalog is the run branch's, recording the operations the run made (metadata only)."""
    store = lakehouse.store
    tx = lakehouse.transaction(branch, message=message, author=author)
    if tx.base_head != head:
        raise StaleHead(branch, head, tx.base_head)
    tx.merge_parent = run_head
    tx.sources = read
    root = store.root(run_head)
    tx.ns.databases = {k: list(v) for k, v in root.databases.items()}
    tx.ns.tables = {k: list(v) for k, v in root.tables.items()}
    for commit in reversed(run_commits(store, run_head, base)):
        for op in store.operations(commit.id):
            tx.record(op.object_kind, op.object_id, op.object_name, op.op, **{**(op.detail or {}),
                                                                                "landed_from": run_branch})
    return tx.commit()


def land_by_merge(lakehouse, branch: str, head: str, run_branch: str, run_head: str, base: str, message: str,
                  author: str, read: Optional[dict] = None):
    """B moved: MERGE BRANCH run INTO B (SPEC 3) as one merge commit, with the run's views carried over."""
    planner = ThreeWayMerge(lakehouse, run_branch, run_head, branch, base,
                            MergeOptions(message=message, author=author))

    def after_plan(planner, result) -> None:
        carry_views(planner, result)
        planner.tx.sources = read

    planner.land(MergeResult(run_branch, branch, base, "merge", "merged"), expected_head=head,
                 after_plan=after_plan)
    return planner.tx.commit_info


def carry_views(planner, result) -> None:
    """Views the run created, replaced or dropped, applied to the merge (a view is stored SQL: the run's wins)."""
    base, src, ns = planner.base, planner.src, planner.ns
    for table_id in sorted(set(base.tables) | set(src.tables)):
        before, after = base.tables.get(table_id), src.tables.get(table_id)
        if (before or [None])[0] == (after or [None])[0]:
            continue  # the run left it alone
        old = base.table(table_id) if before else None
        new = src.table(table_id) if after else None
        if not any(s is not None and s.kind == ObjectKind.VIEW for s in (old, new)):
            continue  # tables: the merge's
        if new is None or new.kind != ObjectKind.VIEW:
            if table_id in ns.tables and ns.table(table_id).kind == ObjectKind.VIEW:
                name = ns.full_name(table_id)
                ns.remove_table(table_id)
                planner.tx.record(ObjectKind.VIEW, table_id, name, Op.DROP)
            continue
        if new.database_id not in ns.databases:
            continue  # its database did not merge: that is reported already
        name = f"{ns.databases[new.database_id][1]}.{new.name}"
        clash = ns.table_id(name, required=False)
        if clash is not None and clash != table_id:
            if ns.table(clash).kind != ObjectKind.VIEW:
                result.conflicts.append(Conflict("table", name, "create view", "create table", Rule.SAME_NAME,
                                                 "a table of that name is on dest"))
                continue
            ns.remove_table(clash)
        ns.adopt_table(new)
        planner.tx.record(ObjectKind.VIEW, table_id, name, Op.CREATE if old is None else Op.ALTER_VIEW)


def _state_path(state_dir: Optional[str] = None) -> Optional[str]:
    root, target = _project["root"], state_dir or _project["target_path"]
    if not target:
        return None
    return os.path.join(root or os.getcwd(), target, STATE_FILE)


def _kept_run(lakehouse, branch: str) -> Optional[dict]:
    """The run branch kept by the invocation `dbt retry` retries (its run_results.json), if it is still there."""
    state_dir = getattr(get_flags(), "STATE", None)
    path = _state_path(str(state_dir) if state_dir else None)
    if path is None or not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            state = json.load(f)
        with open(os.path.join(os.path.dirname(path), "run_results.json")) as f:
            previous = json.load(f)["metadata"]["invocation_id"]
    except (OSError, ValueError, KeyError):
        return None
    if state.get("status") != "kept" or state.get("invocation_id") != previous or state.get("branch") != branch:
        return None
    if not lakehouse.branch_exists(state["run_branch"]):
        return None
    return state


def _author() -> str:
    return author()
