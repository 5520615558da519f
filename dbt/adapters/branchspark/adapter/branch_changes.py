"""dbt glue for `branch_changes`: the changes of a table as a session relation, a build watermark, a summary.

A model's `{{ branch_changes(ref('x'), from, to) }}` becomes a Spark temp view over
`table_changes(...)` (a lazy plan pinned to the versions resolved when the model compiles),
registered in the adapter's session under a fresh name, so two models (or two threads) never
share one. `run-operation branch_changes` prints `summarize(...)`: counts per commit and the
first rows, the only rows brought to the driver.
"""

import re
import uuid
from dataclasses import dataclass
from typing import List, Optional

from pyspark.sql import functions as F

from dbt.adapters.branchspark.core.changes import CHANGE_TYPE, COMMIT_ID, COMMIT_SEQ, COMMIT_TS, DELETE, INSERT, plan_range
from dbt.adapters.branchspark.core.changes.request import ChangesRequest, make_request  # impl.py asks here
from dbt.adapters.branchspark.core.changes.feed import ORDER
from dbt.adapters.branchspark.adapter.text_tables import table_text, text_table, time_text
from dbt.adapters.branchspark.core.sql_text import quote_identifier

VIEW_PREFIX = "branch_changes__"
MAX_COMMITS_SHOWN = 20  # per-commit lines printed by the summary; totals always cover the whole range


def register_view(spark, lakehouse, request: ChangesRequest, limit: Optional[int] = None) -> str:
    """A new temp view over the changes; returns its name (letters, digits and underscores only)."""
    frame = request.frame(lakehouse)
    if limit is not None:  # `dbt run --empty`: ref() asks for no rows
        frame = frame.limit(int(limit))
    name = f"{VIEW_PREFIX}{re.sub(r'[^a-z0-9_]', '_', request.table)}__{uuid.uuid4().hex[:12]}"
    frame.createOrReplaceTempView(name)
    return name


def last_change_commit(lakehouse, branch: str, table: str) -> Optional[str]:
    """The commit that last changed `table` on `branch` (for a dbt model: its last build), or None.

    Walks back from the head while the table keeps the version it has at the head, so the cost
    grows with the commits made since then, not with the branch's history.
    """
    store = lakehouse.store
    head = lakehouse.snapshot(branch)
    table_id = head.ns.table_id(table, required=False)
    if table_id is None:
        return None
    version = store.root(head.commit_id).tables[table_id][0]
    last = None
    for commit in store.first_parents(head.commit_id):
        entry = store.root(commit.id).tables.get(table_id)
        if entry is None or entry[0] != version:
            break
        last = commit
    return last.id if last else None


COMMIT_COLUMNS = ["commit", "time", "deleted", "inserted", "message"]


@dataclass
class ChangesSummary:
    title: str
    commit_rows: List[List[str]]  # COMMIT_COLUMNS
    commits_total: int
    preview_columns: List[str]
    preview_rows: List[List[str]]
    changes_total: int

    def text(self) -> str:
        """What run-operation prints: the title, a table of commits, a table of the first changes."""
        if self.changes_total == 0:
            return f"{self.title}\nno changes"
        lines = [self.title, _table_text(COMMIT_COLUMNS, self.commit_rows)]
        if self.commits_total > len(self.commit_rows):
            lines.append(f"... and {self.commits_total - len(self.commit_rows)} more commit(s)")
        lines.append(f"first {len(self.preview_rows)} of {self.changes_total} changes "
                     f"(by commit; deletes before inserts within a commit):")
        if self.preview_rows:
            lines.append(_table_text(self.preview_columns, self.preview_rows))
        return "\n".join(lines)


def _table_text(columns: List[str], rows: List[List[str]]) -> str:
    return table_text(text_table(columns, rows))


def summarize(lakehouse, request: ChangesRequest, limit: int) -> ChangesSummary:
    """Counts per commit (and in total) and the first `limit` changes, for run-operation output."""
    plan = plan_range(lakehouse, request.table, request.from_version, request.to, request.branch)
    frame = request.frame(lakehouse)

    is_delete = (F.col(CHANGE_TYPE) == DELETE).cast("long")
    is_insert = (F.col(CHANGE_TYPE) == INSERT).cast("long")
    per_commit = (frame.groupBy(COMMIT_SEQ, COMMIT_ID)
                  .agg(F.sum(is_delete).alias("deleted"), F.sum(is_insert).alias("inserted"))
                  .orderBy(COMMIT_SEQ)
                  .collect())  # one row per commit that changed the table: catalog-sized, not table-sized
    commits = lakehouse.store.commits([r[COMMIT_ID] for r in per_commit])
    deleted = sum(r["deleted"] for r in per_commit)
    inserted = sum(r["inserted"] for r in per_commit)
    commit_rows = [
        [r[COMMIT_ID][:12], time_text(commits[r[COMMIT_ID]].ts), str(r["deleted"]), str(r["inserted"]),
         _shorten(commits[r[COMMIT_ID]].message or "", 72)]
        for r in per_commit[:MAX_COMMITS_SHOWN]
    ]

    # within one commit and change type rows have no order: show them by primary key, when there is one
    order = [F.col(c) for c in ORDER] + [F.col(quote_identifier(c)) for c in plan.state.primary_key]
    data_columns = [c for c in frame.columns if c not in (COMMIT_TS, COMMIT_SEQ)]
    preview = (frame.orderBy(*order).select(*[F.col(quote_identifier(c)) for c in data_columns])
               .limit(max(int(limit), 0)).collect())
    preview_rows = [[_cell(value, short=(column == COMMIT_ID)) for column, value in zip(data_columns, row)]
                    for row in preview]

    start = "snapshot" if plan.snapshot else f"from {_version_label(request.from_version, plan.from_commit)}"
    end = _version_label(request.to if request.to is not None else request.branch, plan.to_commit)
    title = (f"changes of {request.table}, {start} to {end}{' (net per key)' if request.net else ''}: "
             f"{deleted} deleted, {inserted} inserted in {len(per_commit)} commit(s)")
    return ChangesSummary(title, commit_rows, len(per_commit), data_columns, preview_rows, deleted + inserted)


def _version_label(value, commit) -> str:
    """A commit id as its short id; a branch name or a time with the commit it resolved to."""
    text = time_text(value) if hasattr(value, "isoformat") else str(value)
    return commit.short_id if commit.id.startswith(text.lower()) else f"{text} ({commit.short_id})"


def _cell(value, short: bool = False) -> str:
    if value is None:
        return "null"
    text = time_text(value) if hasattr(value, "isoformat") else str(value)
    return text[:12] if short else text


def _shorten(text: str, width: int) -> str:
    """One line of at most `width` characters, keeping both ends (a dbt message ends with the node)."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    head = (width - 3) // 3
    return text[:head] + "..." + text[len(text) - (width - 3 - head):]
