"""Tables as the text dbt prints for run-operations: every cell text, every column shown."""
import io
from datetime import datetime
from typing import List

from dbt_common.clients.agate_helper import table_from_rows


def text_table(columns: List[str], rows: List[list]):
    """An agate table of text: left to infer types, agate reads a commit id such as '2e51e0771d9b' as a
    number (and overflows on one like '1234e5678901')."""
    return table_from_rows(rows, columns, text_only_columns=columns)


def table_text(table, max_column_width: int = 80) -> str:
    """An agate table as the Markdown-like text dbt prints."""
    out = io.StringIO()
    table.print_table(max_rows=None, max_columns=None, max_column_width=max_column_width, output=out)
    return out.getvalue().rstrip("\n")


def time_text(value) -> str:
    """A commit time to the second, as the tables show it; a date as it is; None as nothing."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return value.isoformat() if hasattr(value, "isoformat") else str(value)
