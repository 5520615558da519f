"""The rows of data files `branchspark serve` keeps for the commits after the one that read them
(commit_data.DecodedFiles): within their budget, the least recently used dropped first."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from dbt.adapters.branchspark.iceberg.commit_data import DecodedFiles


def _rows(count: int) -> pa.Table:
    return pa.table({"id": pa.array(np.arange(count), pa.int64())})


def test_decoded_files_stay_within_their_budget_dropping_the_least_recently_used():
    size = _rows(1000).get_total_buffer_size()
    decoded = DecodedFiles(2 * size)
    decoded.put("a", _rows(1000))
    decoded.put("b", _rows(1000))
    assert decoded.get("a") is not None  # now the most recently used
    decoded.put("c", _rows(1000))
    assert decoded.get("b") is None and decoded.get("a") is not None and decoded.get("c") is not None
    assert decoded.held == 2 * size
    decoded.put("huge", _rows(10_000))  # larger than the budget: not kept, nothing dropped for it
    assert decoded.get("huge") is None and decoded.get("a") is not None and decoded.held == 2 * size


def test_no_budget_keeps_nothing():
    decoded = DecodedFiles(0)
    decoded.put("a", _rows(10))
    assert decoded.get("a") is None and decoded.held == 0
