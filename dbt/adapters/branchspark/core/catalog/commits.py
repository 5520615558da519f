"""A commit: its id, parents, message and the operations it records (SPEC 2), as the catalog stores them."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class OpInfo:
    object_kind: str
    object_id: str
    object_name: str
    op: str
    detail: dict = field(default_factory=dict)


@dataclass(frozen=True)
class CommitInfo:
    id: str
    seq: int
    ts: datetime
    parents: tuple[str, ...]
    message: str
    author: str | None
    operations: tuple[OpInfo, ...] = ()
    # the external tables a dbt run read (core/sql/sources.py): name -> {"format", "version"}; None: none recorded
    sources: dict | None = None

    @property
    def short_id(self) -> str:
        return self.id[:12]


def default_message(operations: list[OpInfo]) -> str:
    """A commit's message when its writer gave none: its first five operations."""
    parts = [f"{o.op} {o.object_name}" for o in operations[:5]]
    more = f" (+{len(operations) - 5} more)" if len(operations) > 5 else ""
    return "; ".join(parts) + more


def sources_summary(sources: dict | None) -> str:
    """A run's recorded reads of Spark's tables, one line: `lake.raw.orders (iceberg snapshot 5501...),
    raw.customers (delta version 3), raw.payments (parquet, unversioned)`; "" when none were recorded."""
    parts = []
    for name, entry in sorted((sources or {}).items()):
        fmt, version = entry.get("format", "?"), entry.get("version")
        if fmt == "delta":
            parts.append(f"{name} (delta version {version})")
        elif fmt == "iceberg":
            parts.append(f"{name} (iceberg snapshot {version})")
        else:
            parts.append(f"{name} ({fmt}, unversioned)")
    return ", ".join(parts)
