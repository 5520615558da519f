"""A streaming handle over a table's changes, in batches a consumer can apply without holding the range.

    with open_changes(lh, "shop.orders", from_=last_commit, to="main") as changes:
        for data, tombstones, hint in changes:
            ...

`next()` returns `(data, tombstones, hint)`: two pyarrow RecordBatches with the feed's
columns minus `_change_type` (data: inserted rows, tombstones: deleted row images; either
may be empty, never None), and a Hint. Together they hold about `batch_rows` to
`2 * batch_rows` rows (8,192 to 16,384 by default; the last batch may be smaller). At the
end `next()` returns None; iterating stops there (StopIteration).

Hints (the consumer contract, as in the seed design):
- SNAPSHOT: `from` was empty: only data, the rows of `to`; consume directly.
- TAIL_WIP: the batch ends inside a commit, so a later batch holds more changes of the same
  commit timestamp: buffer it.
- TAIL_DONE: the batch ends at a commit boundary; no later batch holds a change at or
  before its timestamps: consume everything buffered, in order of `_commit_seq`, at one
  commit the tombstones before the data.

A batch closes at the first commit boundary after `batch_rows` rows, or, inside a commit
larger than the window, at `2 * batch_rows` rows (TAIL_WIP). So a consumer that follows the
hints holds at most one commit plus one batch, never the whole range.

Rows stream from Spark partition by partition (`toLocalIterator`), each partition turned
into Arrow IPC on the executors, so types (timestamps, decimals, nested) arrive exactly
as Spark has them.
"""
from __future__ import annotations

import enum
from collections.abc import Iterator

import pyarrow
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from .. import errors
from .feed import CHANGE_TYPE, COMMIT_SEQ, DELETE, INSERT

DEFAULT_BATCH_ROWS = 8192
_IPC_COLUMN = "_bs_ipc"


class Hint(enum.Enum):
    SNAPSHOT = "snapshot"
    TAIL_WIP = "tail_wip"
    TAIL_DONE = "tail_done"


class ChangesHandle:
    def __init__(self, frame: DataFrame, snapshot: bool, batch_rows: int = DEFAULT_BATCH_ROWS):
        if batch_rows < 1:
            raise errors.InvalidArgument(f"batch_rows must be at least 1, got {batch_rows}")
        self.batch_rows = batch_rows
        self.snapshot = snapshot
        self._spark_schema = frame.schema
        self._chunks: Iterator[pa.RecordBatch] | None = _arrow_chunks(frame)
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._exhausted = False
        self._last_seq: int | None = None

    # ------------------------------------------------------------- protocol
    def __enter__(self) -> "ChangesHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __iter__(self) -> "ChangesHandle":
        return self

    def __next__(self):
        batch = self.next()
        if batch is None:
            raise StopIteration
        return batch

    def close(self) -> None:
        if self._chunks is not None:
            close = getattr(self._chunks, "close", None)
            if close:
                close()
        self._chunks, self._pending, self._pending_rows, self._exhausted = None, [], 0, True

    def next(self) -> tuple[pa.RecordBatch, pa.RecordBatch, Hint] | None:
        """The next (data, tombstones, hint), or None at the end (and after close)."""
        while True:
            cut = self._cut()
            if cut is not None:
                return self._emit(*cut)
            if self._exhausted:
                return None
            self._pull()

    # ------------------------------------------------------------ batching
    def _pull(self) -> None:
        chunk = next(self._chunks, None) if self._chunks is not None else None
        if chunk is None:
            self._exhausted = True
            return
        if chunk.num_rows:
            self._check_order(chunk)
            self._pending.append(chunk)
            self._pending_rows += chunk.num_rows

    def _cut(self) -> tuple[int, Hint] | None:
        """How many pending rows to emit now, with their hint; None: read more first."""
        rows, window = self._pending_rows, self.batch_rows
        if rows == 0 or (rows < window and not self._exhausted):
            return None
        if self.snapshot:
            return min(rows, window), Hint.SNAPSHOT
        if rows < window:  # the end of the stream: a commit boundary
            return rows, Hint.TAIL_DONE
        seqs = self._pending_table().column(COMMIT_SEQ).to_numpy()
        # A cut at position p is a commit boundary when the row at p starts another commit.
        limit = min(rows - 1, 2 * window)
        boundaries = (seqs[window:limit + 1] != seqs[window - 1:limit]).nonzero()[0]
        if len(boundaries):
            return window + int(boundaries[0]), Hint.TAIL_DONE
        if self._exhausted and rows <= 2 * window:
            return rows, Hint.TAIL_DONE
        if rows > 2 * window:
            return 2 * window, Hint.TAIL_WIP
        return None

    def _emit(self, count: int, hint: Hint):
        table = self._pending_table()
        head, rest = table.slice(0, count), table.slice(count)
        self._pending = rest.to_batches() if rest.num_rows else []
        self._pending_rows = rest.num_rows
        head = head.combine_chunks()
        kinds = head.column(CHANGE_TYPE)
        data = head.filter(pc.equal(kinds, INSERT)).drop_columns([CHANGE_TYPE])
        tombstones = head.filter(pc.equal(kinds, DELETE)).drop_columns([CHANGE_TYPE])
        return _one_batch(data), _one_batch(tombstones), hint

    def _pending_table(self) -> pa.Table:
        table = pa.Table.from_batches(self._pending, schema=self._pending[0].schema).combine_chunks()
        self._pending = table.to_batches()
        return table

    def _check_order(self, chunk: pa.RecordBatch) -> None:
        """The feed relies on Spark keeping a union's partition order; fail loudly if it did not."""
        seqs = chunk.column(COMMIT_SEQ).to_numpy()
        if len(seqs) and ((self._last_seq is not None and seqs[0] < self._last_seq) or (seqs[1:] < seqs[:-1]).any()):
            raise errors.BranchsparkError("the change stream arrived out of commit order: report this as a bug; "
                                          "read the changes with table_changes(...) meanwhile")
        if len(seqs):
            self._last_seq = int(seqs[-1])


def _one_batch(table: pa.Table) -> pa.RecordBatch:
    batches = table.combine_chunks().to_batches()
    if batches:
        return batches[0]
    return pa.RecordBatch.from_pylist([], schema=table.schema)


def _arrow_chunks(frame: DataFrame) -> Iterator[pa.RecordBatch]:
    """Arrow record batches of `frame`, in partition order, one Spark partition at a time."""
    encoded = frame.mapInArrow(_ipc_encoder(), f"{_IPC_COLUMN} binary")
    for row in encoded.toLocalIterator(prefetchPartitions=True):
        reader = pa.ipc.open_stream(row[_IPC_COLUMN])
        yield from reader


def _ipc_encoder():
    """A function for mapInArrow that wraps each Arrow batch as one binary value (Arrow IPC).

    Defined inside a function so that it is shipped to the executors by value and they never
    import this package (which would import dbt)."""

    def encode(batches, column=_IPC_COLUMN):
        for batch in batches:
            sink = pyarrow.BufferOutputStream()
            with pyarrow.ipc.new_stream(sink, batch.schema) as writer:
                writer.write_batch(batch)
            yield pyarrow.RecordBatch.from_arrays([pyarrow.array([sink.getvalue().to_pybytes()], pyarrow.binary())],
                                                  names=[column])

    return encode
