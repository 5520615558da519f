"""A copy-on-write rewrite's copies (iceberg/row_match.py) against a model: for every distinct row, the pairs
are as many as its fewer copies on either side, and each pair is two identical rows. Random rewrites in the
orders writers use (a file's rows in order, files in any order, changed rows in place, rows deleted and
inserted) and in no order at all, with duplicates, nulls, NaNs and nested values."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from dbt.adapters.branchspark.iceberg import row_match


def _rows(table: pa.Table) -> list[tuple]:
    return [tuple(repr(v) for v in row.values()) for row in table.to_pylist()]  # repr: NaN equals NaN


def _check(old_parts: list[pa.Table], new_parts: list[pa.Table]) -> tuple[int, int]:
    keep_old, dead_new = row_match.copies(old_parts, new_parts)
    old = _rows(pa.concat_tables(old_parts)) if old_parts else []
    new = _rows(pa.concat_tables(new_parts)) if new_parts else []
    assert len(keep_old) == len(old) and len(dead_new) == len(new)
    kept = Counter(r for r, k in zip(old, keep_old) if k)
    dead = Counter(r for r, d in zip(new, dead_new) if d)
    assert kept == dead, "each pair is two identical rows"
    olds, news = Counter(old), Counter(new)
    assert kept == {r: min(olds[r], news[r]) for r in olds if news[r]}, "no identical pair left unpaired"
    return sum(kept.values()), len(old)


def _table(rng: np.random.Generator, rows: int, nested: bool) -> pa.Table:
    ids = rng.integers(0, max(rows // 3, 1), rows)  # duplicates of whole rows too
    names = [None if i % 7 == 0 else f"n{i % 11}" + "x" * int(i % 5) * 9 for i in ids]
    qty = [float("nan") if i % 13 == 0 else float(i % 4) for i in ids]
    columns = {"c1": pa.array(ids, pa.int64()), "c2": pa.array(names, pa.string()), "c3": pa.array(qty, pa.float64())}
    if nested:
        columns["c4"] = pa.array([{"a": int(i % 3)} for i in ids], pa.struct([("a", pa.int64())]))
    return pa.table(columns)


def _rewrite(rng: np.random.Generator, old: list[pa.Table], ordered: bool) -> list[pa.Table]:
    """What a writer might write for `old`: rows deleted, changed in place, inserted; files in any order."""
    pieces = []
    for index in rng.permutation(len(old)):
        table = old[index]
        keep = rng.random(table.num_rows) > 0.05
        table = table.filter(pa.array(keep))
        changed = np.asarray(table.column("c1")).copy()
        touched = rng.random(len(changed)) < 0.1
        changed[touched] += 1_000
        table = table.set_column(0, "c1", pa.array(changed, pa.int64()))
        if not ordered:
            table = table.take(pa.array(rng.permutation(table.num_rows)))
        pieces.append(table)
    pieces.append(_table(rng, int(rng.integers(0, 20)), "c4" in old[0].column_names))  # inserted rows
    whole = pa.concat_tables(pieces)
    cuts = sorted(rng.choice(np.arange(1, max(whole.num_rows, 2)), size=min(2, max(whole.num_rows - 1, 0)),
                             replace=False).tolist()) if whole.num_rows > 2 else []
    bounds = [0] + cuts + [whole.num_rows]
    return [whole.slice(a, b - a) for a, b in zip(bounds, bounds[1:]) if b > a]


@pytest.mark.parametrize("seed", range(40))
def test_copies_pair_every_identical_row_once_whatever_the_writers_order(seed):
    rng = np.random.default_rng(seed)
    nested = seed % 5 == 4
    old = [_table(rng, int(rng.integers(1, 400)), nested) for _ in range(int(rng.integers(1, 4)))]
    _check(old, _rewrite(rng, old, ordered=seed % 3 != 0))


def test_copies_of_files_rewritten_in_order_pair_the_unchanged_rows_in_runs():
    """What a copy-on-write MERGE writes: the files' rows in order (the files in another), a few deleted, a few
    changed in place, a few inserted. The runs alone pair nearly every unchanged row; the model check holds."""
    rng = np.random.default_rng(7)
    old = []
    for first, rows in ((0, 5_000), (5_000, 3_000)):
        table = _table(rng, rows, False)
        old.append(table.set_column(0, "c1", pa.array(np.arange(first, first + rows), pa.int64())))
    pieces = []
    for table in reversed(old):
        table = table.filter(pa.array(rng.random(table.num_rows) > 0.01))
        changed = np.asarray(table.column("c1")).copy()
        changed[rng.random(len(changed)) < 0.01] += 100_000
        pieces.append(table.set_column(0, "c1", pa.array(changed, pa.int64())))
    whole = pa.concat_tables(pieces + [_table(rng, 30, False)])
    new = [whole.slice(0, 4_000), whole.slice(4_000)]
    paired, rows = _check(old, new)
    assert paired > rows * 0.95  # about 98% kept unchanged
    in_runs, spent = _in_runs(old, new)
    assert in_runs >= paired * 0.99 and spent <= 2 + 4  # a lookup for each file's start, a few where rows changed
    # files rewritten in the order they are listed: each goes on from the last, no lookup by value at all
    in_runs, spent = _in_runs(old, [pa.concat_tables(list(reversed(pieces)))])
    assert in_runs >= paired * 0.99 and spent == 0


def _in_runs(old: list[pa.Table], new: list[pa.Table]) -> tuple[int, int]:
    """(old rows the runs alone pair, lookups by value they spent)."""
    whole, lookups = pa.concat_tables(new), [64]
    used, hint, kept = np.zeros(whole.num_rows, dtype=bool), 0, [np.zeros(part.num_rows, dtype=bool) for part in old]
    for part, marks in zip(old, kept):
        hint = row_match._runs(part, new, whole, marks, used, lookups, hint)
    in_runs = sum(int(k.sum()) for k in kept)
    assert used.sum() == in_runs
    return in_runs, 64 - lookups[0]


def test_copies_with_no_rows_on_a_side():
    rng = np.random.default_rng(3)
    table = _table(rng, 10, False)
    assert _check([table], []) == (0, 10)
    assert _check([], [table]) == (0, 0)
    assert _check([table.slice(0, 0)], [table]) == (0, 0)
