"""A value as a page shows it: NULL as `null`, times in ISO form, structs and lists written out."""
from __future__ import annotations

from datetime import date, datetime

from pyspark.sql import Row


def cell_text(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, Row):
        return "{" + ", ".join(f"{k}: {cell_text(v)}" for k, v in value.asDict().items()) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{cell_text(k)}: {cell_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(cell_text(v) for v in value) + "]"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date):
        return value.isoformat()
    return str(value)
