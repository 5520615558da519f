"""What the write path and the merge engine use of a Lakehouse: a narrow context, typed here.

Transactions (transaction.py), the replay of a write on a moved head (commit_replay.py) and the merge
engine (merge/) take this context, not the Lakehouse: they see its catalog store, warehouse, Spark,
segment writer, fault hook, how a ref resolves and how a transaction opens, and nothing else. The
Lakehouse is the one that satisfies it, so none of them imports the front door above them.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from pyspark.sql import SparkSession

from .catalog.commits import CommitInfo
from .catalog.store import CatalogStore
from .storage.layout import Warehouse
from .storage.writer import SegmentWriter


class WriteContext(Protocol):
    store: CatalogStore
    warehouse: Warehouse
    fault: Callable[[str], None] | None  # named fault points, for crash tests (BRANCHSPARK_FAULT)

    @property
    def spark(self) -> SparkSession: ...

    @property
    def spark_started(self) -> bool: ...

    @property
    def writer(self) -> SegmentWriter: ...

    def resolve(self, ref: str, as_of=None) -> CommitInfo: ...

    def commit_by_id(self, ref: str) -> CommitInfo | None: ...

    def transaction(self, branch: str, message: str = "", author: str | None = None,
                    allow_protected: bool = False) -> Any: ...
