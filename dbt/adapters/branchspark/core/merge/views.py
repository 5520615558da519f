"""Views a merge carries on request (SPEC 5): how dbt's merge_branch publishes a project's views.

MERGE BRANCH merges only databases and tables (SPEC 3). A caller that owns views, as a dbt project
owns its view models, names them (`views=` of Lakehouse.merge), and they join the tables in the same
merge commit. A view is its stored SQL, so each named view is decided three-way on its SQL; dest is
seen as the tables' merge left it:

| src          | dest                     | base             | outcome                                       |
|--------------|--------------------------|------------------|-----------------------------------------------|
| no such view | any                      | any              | nothing: there is nothing to publish          |
| view, SQL s  | none                     | none             | added (src's view, with its id)               |
| view, SQL s  | none                     | view, SQL s      | nothing: dest dropped it, src did not change it |
| view, SQL s  | none                     | view, other SQL  | conflict: src changed it, dest dropped it     |
| view, SQL s  | view, SQL s              | any              | nothing: dest has it already                  |
| view, SQL s  | view, SQL b = base's     | view, SQL b      | replaced by src's (dest has the older one)    |
| view, SQL s  | view, SQL d              | view, SQL s      | nothing: only dest changed it                 |
| view, SQL s  | view, SQL d              | other or none    | conflict: both changed it differently         |
| view         | a table of that name     | any              | conflict (3.1)                                |

The base's view is the one with src's view's id, else the one of that name. on_conflict ours or
theirs settles a view's conflict as it does a table's.
"""
from __future__ import annotations

from ..catalog.namespace import Namespace
from ..catalog.state import TableState
from .report import Conflict, Outcome
from .rules import Rule
from ..operations import ObjectKind, Op

VIEW = ObjectKind.VIEW


def _view(ns: Namespace, name: str) -> TableState | None:
    table_id = ns.table_id(name, required=False)
    return ns.table(table_id) if table_id is not None else None


def _base_view(base: Namespace, src_view: TableState, name: str) -> TableState | None:
    state = base.table(src_view.id) if src_view.id in base.tables else _view(base, name)
    return state if state is not None and state.kind == VIEW else None


def plan_views(planner, names) -> None:
    """Carry the views `names` (db.view) from src into the planner's merge, or report their conflicts."""
    for name in sorted({str(n).lower() for n in names}):
        src_view = _view(planner.src, name)
        if src_view is None or src_view.kind != VIEW:
            continue
        base_view = _base_view(planner.base, src_view, name)
        base_sql = base_view.view_sql if base_view else None
        dest = _view(planner.ns, name)
        prefer = planner.options.policy.prefer(name)
        if dest is None:
            if base_sql is None:
                _take(planner, src_view, name, None, "added")
            elif src_view.view_sql != base_sql and not _stands(planner, name, Op.ALTER_VIEW, Op.DROP, Rule.CONFLICT,
                                                               prefer) and prefer == "theirs":
                _take(planner, src_view, name, None, "added (theirs)")
            continue
        if dest.kind != VIEW:
            if not _stands(planner, name, "create view", "create table", Rule.SAME_NAME, prefer) and prefer == "theirs":
                _take(planner, src_view, name, dest, "replaced (theirs)")
            continue
        if dest.view_sql == src_view.view_sql or src_view.view_sql == base_sql:
            continue  # dest has it already, or only dest changed it
        if dest.view_sql == base_sql:
            _take(planner, src_view, name, dest, "replaced")
        elif not _stands(planner, name, Op.ALTER_VIEW, Op.ALTER_VIEW, Rule.VIEW, prefer) and prefer == "theirs":
            _take(planner, src_view, name, dest, "replaced (theirs)")


def _stands(planner, name: str, src_op: str, dest_op: str, rule: str, prefer: str | None) -> bool:
    """Report the view's conflict (True), or note it as settled by on_conflict (False)."""
    return planner._conflict(planner.result, Conflict(VIEW, name, src_op, dest_op, rule), prefer)


def _take(planner, src_view: TableState, name: str, dest: TableState | None, action: str) -> None:
    """Put src's view on dest under `name` (in dest's database of that name), replacing `dest`."""
    ns = planner.ns
    database_id = ns.database_id(name.split(".", 1)[0], required=False)
    if database_id is None:
        planner.result.conflicts.append(Conflict(VIEW, name, "create view", "drop database", Rule.CONFLICT,
                                                 "its database is not on dest"))
        return
    if dest is not None and dest.id != src_view.id:
        ns.remove_table(dest.id)
        planner.tx.record(dest.kind, dest.id, name, Op.DROP)
    state = src_view if src_view.database_id == database_id else src_view.evolve(database_id=database_id)
    if state.version_id is None:
        ns.put_table(state)
    else:
        ns.adopt_table(state)
    created = dest is None or dest.id != src_view.id
    planner.tx.record(VIEW, src_view.id, name, Op.CREATE if created else Op.ALTER_VIEW, merged=True)
    planner.result.outcomes.append(Outcome(VIEW, name, action))
