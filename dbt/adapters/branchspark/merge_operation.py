"""`dbt run-operation merge_branch`: the core's merge, reported as the tables dbt prints.

Kept apart from impl.py so the adapter class stays a thin list of what macros can call.
A conflict is a dbt error whose text is the conflict table and the core's one-line reason.
"""
from __future__ import annotations

import io
from typing import Optional

from dbt_common.clients.agate_helper import table_from_rows
from dbt_common.exceptions import DbtRuntimeError

from .merge.report import MergeResult


def _text(rows: list[dict]) -> str:
    table = table_from_rows([list(r.values()) for r in rows], list(rows[0]))
    out = io.StringIO()
    table.print_table(max_rows=None, max_column_width=80, output=out)
    return out.getvalue().rstrip("\n")


def report_text(result: MergeResult) -> str:
    parts = [result.summary()]
    if result.outcomes:
        parts.append(_text(result.outcome_rows()))
    if result.resolved:
        parts += ["conflicts settled by on_conflict:", _text([c.as_row() for c in result.resolved])]
    if result.conflicts:
        parts += ["conflicts:", _text(result.conflict_rows())]
    return "\n".join(parts)


def run_merge(lakehouse, src: str, dest: str, strategy: str, on_conflict, dry_run: bool,
              message: Optional[str], author: str) -> str:
    from .errors import MergeConflict

    try:
        result = lakehouse.merge(src, dest, strategy=strategy, on_conflict=on_conflict, dry_run=bool(dry_run),
                                 message=message, author=author)
    except MergeConflict as conflict:
        raise DbtRuntimeError(f"{report_text(conflict.report)}\n{conflict}") from None
    return report_text(result)
