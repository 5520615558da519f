"""Which commits a changes request covers, and the table's state before and after each.

`from` and `to` are commit ids (or unique prefixes), branch names, `branch@time`, or times
(datetimes or ISO strings, resolved on `branch`: the last commit at or before that time).
`from` empty, None or 0 asks for a snapshot. Otherwise `from` must lie on the first-parent
history of `to`: the changes are those of the commits after `from` up to `to`, one step per
commit, each comparing the table at the commit's first parent with the table at the commit.

The table is followed by id, so a rename inside the range keeps its history; a drop ends it
(the drop itself changes no rows), and a restore after a drop continues from the state the
table had before the drop.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .. import errors
from ..catalog.commits import CommitInfo, OpInfo
from ..catalog.namespace import Namespace
from ..catalog.schema import Schema
from ..catalog.state import Root, TableState
from ..catalog.store import MAIN
from ..context import WriteContext
from ..times import parse_time
from ..operations import ObjectKind


@dataclass(frozen=True)
class Step:
    """One commit of the range and the table around it (None: the table did not exist)."""

    commit: CommitInfo
    before: TableState | None
    after: TableState | None
    operations: tuple[OpInfo, ...]  # the commit's operations on this table


@dataclass(frozen=True)
class ChangeRange:
    table: str  # the name the caller gave
    table_id: str
    to_commit: CommitInfo
    from_commit: CommitInfo | None  # None: snapshot mode
    state: TableState  # the table at `to` (or its last state, if dropped before `to`)
    schema: Schema  # the output columns: the table's schema at `to`
    steps: tuple[Step, ...]  # oldest first; only commits that changed this table

    @property
    def snapshot(self) -> bool:
        return self.from_commit is None


def is_snapshot_request(from_) -> bool:
    return from_ is None or from_ == 0 or (isinstance(from_, str) and from_.strip() in ("", "0"))


def default_branch(lakehouse: WriteContext, to, branch: str | None) -> str:
    """Times are read on `branch`; without one, on `to` when it is a branch name, else on main."""
    if branch:
        lakehouse.store.get_branch(branch)  # one clear error for a missing branch
        return branch
    if isinstance(to, str) and lakehouse.store.find_branch(to) is not None:
        return to
    return MAIN


def resolve_version(lakehouse: WriteContext, value, branch: str) -> CommitInfo:
    """A commit from a commit id, a branch name, `branch@time` or a time on `branch`."""
    if isinstance(value, datetime):
        return lakehouse.resolve(branch, as_of=value)
    if not isinstance(value, str) or not value.strip():
        raise errors.InvalidArgument(f"version '{value}' is not a commit id, a branch name or a time: "
                                     f"see `branchspark log {branch}`")
    text = value.strip()
    if lakehouse.store.find_branch(text) is not None or "@" in text:
        return lakehouse.resolve(text)
    commit = lakehouse.commit_by_id(text)
    if commit is not None:
        return commit
    try:
        moment = parse_time(text)
    except errors.InvalidArgument:
        raise errors.CommitNotFound(text) from None
    return lakehouse.resolve(branch, as_of=moment)


def plan_range(lakehouse: WriteContext, table: str, from_, to, branch: str | None = None) -> ChangeRange:
    store = lakehouse.store
    branch = default_branch(lakehouse, to, branch)
    to_commit = resolve_version(lakehouse, branch if to is None or to == "" else to, branch)
    from_commit = None if is_snapshot_request(from_) else resolve_version(lakehouse, from_, branch)
    chain = _chain(lakehouse, from_commit, to_commit, from_, branch if to is None or to == "" else to)
    table_id, state = _find_table(lakehouse, table, chain + ([from_commit] if from_commit else []), to_commit)
    if state.kind != ObjectKind.TABLE:
        raise errors.InvalidArgument(f"'{table}' is a view: changes exist only for tables; ask for the tables "
                                     f"it reads")
    schema = store.schemas([state.schema_id])[state.schema_id]
    steps = () if from_commit is None else tuple(_steps(lakehouse, table_id, from_commit, chain))
    return ChangeRange(table, table_id, to_commit, from_commit, state, schema, steps)


def _chain(lakehouse: WriteContext, from_commit: CommitInfo | None, to_commit: CommitInfo, from_, to) -> list[CommitInfo]:
    """Commits after `from` up to `to` on `to`'s first-parent history, newest first."""
    if from_commit is None:
        return [to_commit]
    chain = []
    for commit in lakehouse.store.first_parents(to_commit.id):
        if commit.id == from_commit.id:
            return chain
        if commit.seq < from_commit.seq:  # sequences grow along history: `from` cannot come any more
            break
        chain.append(commit)
    raise errors.InvalidArgument(
        f"version '{from_}' ({from_commit.short_id}) is not on the first-parent history of '{to}' "
        f"({to_commit.short_id}): give a from version that is an earlier commit of the same branch")


def _find_table(lakehouse: WriteContext, name: str, chain: list[CommitInfo], to_commit: CommitInfo):
    """The table's id and its state at `to`, or at the newest commit of the range that still had it."""
    for commit in chain or [to_commit]:
        ns = Namespace(lakehouse.store, lakehouse.store.root(commit.id), commit.short_id)
        table_id = ns.table_id(name, required=False)
        if table_id is not None:
            return table_id, ns.table(table_id)
    raise errors.TableNotFound(name, to_commit.short_id)


def _steps(lakehouse: WriteContext, table_id: str, from_commit: CommitInfo, chain: list[CommitInfo]):
    store = lakehouse.store
    previous: Root = store.root(from_commit.id)
    last_seen = _version(previous, table_id)  # survives a drop, so a later restore diffs against it
    for commit in reversed(chain):
        root = store.root(commit.id)
        before, after = _version(previous, table_id), _version(root, table_id)
        previous = root
        if before == after:
            continue
        if after is None:  # dropped: no row changes, and the range's history of the table ends here
            continue
        base = before or last_seen
        states = store.tables([v for v in (base, after) if v])
        operations = tuple(o for o in store.operations(commit.id) if o.object_id == table_id)
        yield Step(commit, states[base] if base else None, states[after], operations)
        last_seen = after


def _version(root: Root, table_id: str) -> str | None:
    entry = root.tables.get(table_id)
    return entry[0] if entry else None
