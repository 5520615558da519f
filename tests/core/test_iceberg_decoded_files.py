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
    decoded.put(("a", 1), _rows(1000))
    decoded.put(("b", 1), _rows(1000))
    assert decoded.get(("a", 1)) is not None  # now the most recently used
    decoded.put(("c", 1), _rows(1000))
    assert decoded.get(("b", 1)) is None and decoded.get(("a", 1)) is not None and decoded.get(("c", 1)) is not None
    assert decoded.held == 2 * size
    decoded.put(("huge", 1), _rows(10_000))  # larger than the budget: not kept, nothing dropped for it
    assert decoded.get(("huge", 1)) is None and decoded.get(("a", 1)) is not None and decoded.held == 2 * size


def test_no_budget_keeps_nothing():
    decoded = DecodedFiles(0)
    decoded.put(("a", 1), _rows(10))
    assert decoded.get(("a", 1)) is None and decoded.held == 0


def test_a_file_rewritten_in_place_is_read_again(tmp_path):
    """Keyed by location and footer: a borrowed file someone rewrote under the same name (branchspark's own
    files never are) is read afresh, not answered from the rows kept for its old content."""
    import pyarrow.parquet as pq

    from dbt.adapters.branchspark.core.storage.layout import Warehouse
    from dbt.adapters.branchspark.iceberg.commit_data import FileRows

    warehouse, decoded = Warehouse(str(tmp_path)), DecodedFiles(1 << 20)
    pq.write_table(_rows(10), tmp_path / "f.parquet")
    assert FileRows(warehouse, decoded).table("f.parquet").num_rows == 10
    assert decoded.held > 0
    pq.write_table(_rows(12), tmp_path / "f.parquet")
    assert FileRows(warehouse, decoded).table("f.parquet").num_rows == 12
