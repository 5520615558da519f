"""`dbt run-operation merge_branch`: the core's merge, reported as the tables dbt prints.

Kept apart from impl.py so the adapter class stays a thin list of what macros can call.
A conflict is a dbt error whose text is the conflict table and the core's one-line reason.
"""
from __future__ import annotations

from typing import Optional

from dbt_common.exceptions import DbtRuntimeError

from ..core.errors import MergeConflict
from ..core.merge.drivers import side_sql, sql_driver
from ..core.merge.interactive import open_rows, register_views, status, status_rows, status_title
from ..core.merge.report import MergeResult
from .text_tables import table_text, text_table


def _text(rows: list[dict]) -> str:
    return table_text(text_table(list(rows[0]), [list(r.values()) for r in rows]))


def report_text(result: MergeResult) -> str:
    parts = [result.summary()]
    if result.outcomes:
        parts.append(_text(result.outcome_rows()))
    if result.resolved:
        parts += ["conflicts settled by on_conflict:", _text([c.as_row() for c in result.resolved])]
    if result.conflicts:
        parts += ["conflicts:", _text(result.conflict_rows())]
    return "\n".join(parts)


def project_drivers(expressions) -> dict:
    """The dbt macros' merge drivers (table -> SQL per column, rendered in Jinja) as core drivers."""
    return {table: sql_driver(sql) for table, sql in (expressions or {}).items() if sql}


def run_merge(lakehouse, src: str, dest: str, strategy: str, on_conflict, dry_run: bool,
              message: Optional[str], author: str, drivers=None, continue_: bool = False, views=()) -> str:
    """`views`: the project's views, carried with the tables (SPEC 5; the core alone merges tables only)."""
    try:
        result = lakehouse.merge(src, dest, strategy=strategy, on_conflict=on_conflict, dry_run=bool(dry_run),
                                 message=message, author=author, drivers=project_drivers(drivers),
                                 continue_=bool(continue_), views=views, count_rows=True)
    except MergeConflict as conflict:
        raise DbtRuntimeError(f"{report_text(conflict.report)}\n{conflict}") from None
    text = report_text(result)
    if result.status == "paused":
        text += "\n" + status_text(lakehouse, dest)
    return text


def status_text(lakehouse, dest: str, limit: int = 20) -> str:
    """merge_status as dbt prints it: the phase, open conflicts per table, the first open conflict rows."""
    state = status(lakehouse, dest)
    parts = [status_title(state)]
    if state["tables"]:
        parts.append(_text(status_rows(state)))
    if state["phase"] not in ("not started", "finished", "rebasing"):
        register_views(lakehouse, dest)  # this session can now select from them
        for table, rows in open_rows(lakehouse, dest, limit).items():
            parts += [f"open conflicts: {table}", _text([{k: ("" if v is None else v) for k, v in r.items()}
                                                         for r in rows])]
    return "\n".join(parts)


def paused_operation(lakehouse, operation: str, dest: str, table=None, take=None, where=None, assignments=None):
    """The run-operations over a paused merge; each returns the text dbt prints (sides: a dict)."""
    if operation == "merge_status":
        return status_text(lakehouse, dest)
    if operation == "resolve_conflicts":
        lakehouse.resolve_conflicts(dest, table or None, take=take or None, where=where or None,
                                    set=dict(assignments) if assignments else None)
        return status_text(lakehouse, dest)
    if operation == "abort_merge":
        lakehouse.abort_merge(dest)
        return f"aborted the merge into {dest}: {dest} is as it was"
    if operation == "conflict_view":
        views = register_views(lakehouse, dest)
        wanted = str(table or "schema").lower()
        if wanted not in {k.lower() for k in views}:
            raise DbtRuntimeError(f"the merge into '{dest}' has no conflict relation for '{table}': "
                                  f"see merge_status {dest}")
        return {k.lower(): v for k, v in views.items()}[wanted]
    if operation == "merge_driver_sides":
        return driver_sides(lakehouse, dest, table)
    raise DbtRuntimeError(f"unknown paused-merge operation '{operation}'")


def driver_sides(lakehouse, dest: str, table: str):
    """{base, ours, theirs}: SQL text of each value column of `table` on `dest` (every column of a keyless
    table, whose rows are paired by identity), for a driver macro; None when the table is not on dest."""
    snapshot = lakehouse.snapshot(dest)
    if not snapshot.has_table(table):
        return None
    state = snapshot.state(table)
    values = [c.name for c in snapshot.ns.schema(state.schema_id).columns if c.name not in state.primary_key]
    return {side: side_sql(side, values) for side in ("base", "ours", "theirs")}
