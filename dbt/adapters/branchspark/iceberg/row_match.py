"""Which rows a copy-on-write rewrite copied: the rows its removed files still held and its new files' rows,
matched as multisets of identical values (commit_data.py).

A writer rewrites a file by streaming its rows into the new file in their order (Spark and Iceberg cluster
a rewrite by file and position), so each removed file's rows mostly reappear as one run of the new rows,
the changed ones in between. Runs are found first: a removed file's next row is looked up among the new rows
(where the previous run ended, else by value), then its following rows are compared with the new rows
after it, column by column in arrow: the equal ones pair, the run ends after its last equal row, and the
rest of the file is looked up again. Whatever no run paired is then matched exactly as multisets (each
column dictionary-encoded over both sides, rows sorted by their codes: each row pairs with one identical row
at most). A pair is always two identical rows, and no identical pair is left unpaired, whatever the order a
writer wrote in: the order only decides how much is left to the exact match, which costs a sort of it.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_TRIES = 4  # rows of a removed file tried in turn as the start of its next run
_MISSES = 6  # lookups in a row that found no run, or a short one, before the rest is left to the exact match
_SHORT_RUN = 32  # rows
_STEPS = 4096  # runs looked for per removed file
# Lookups by value, each a pass over the new rows, in all: a few per removed file and some more, then the
# rest is left to the exact match (rows rewritten in short runs would otherwise cost a pass per run).
_LOOKUPS_BASE, _LOOKUPS_PER_FILE = 16, 2
_WINDOW = 1024  # rows first compared after a run's start
_NEAR = 8  # rows either side of where a row is expected, looked at before a lookup by value


def copies(old_parts: list[pa.Table], new_parts: list[pa.Table]) -> tuple[np.ndarray, np.ndarray]:
    """(old rows with an identical new row, new rows identical to an old one): masks over the old parts'
    rows one after the other (one part per removed file, its rows in order) and the new parts' likewise,
    each pair counted once. All parts have the same columns."""
    old_rows = sum(p.num_rows for p in old_parts)
    new = pa.concat_tables(new_parts) if new_parts else None
    keep_old = np.zeros(old_rows, dtype=bool)
    dead_new = np.zeros(new.num_rows if new is not None else 0, dtype=bool)
    if not old_rows or not len(dead_new):
        return keep_old, dead_new
    if all(_comparable(t) for t in new.schema.types):
        at, hint, lookups = 0, 0, [_LOOKUPS_BASE + _LOOKUPS_PER_FILE * len(old_parts)]
        # a writer mostly rewrites files in the order they are listed: each is expected where the last one ended
        for part in old_parts:
            hint = _runs(part, new_parts, new, keep_old[at:at + part.num_rows], dead_new, lookups, hint)
            at += part.num_rows
    rest_old, rest_new = np.flatnonzero(~keep_old), np.flatnonzero(~dead_new)
    if len(rest_old) and len(rest_new):
        both = pa.concat_tables([take_rows(old_parts, rest_old), take_rows(new_parts, rest_new)])
        kept, dead = _pair(_exact_key(both), len(rest_old))
        keep_old[rest_old[kept]] = True
        dead_new[rest_new[dead]] = True
    return keep_old, dead_new


def _comparable(kind: pa.DataType) -> bool:
    """Whether arrow compares values of the type element by element (not nested ones)."""
    return not pa.types.is_nested(kind) and not pa.types.is_dictionary(kind)


def _runs(part: pa.Table, new_parts: list[pa.Table], new: pa.Table, kept: np.ndarray, used: np.ndarray,
          lookups: list[int], hint: int) -> int:
    """Pair `part`'s rows (one removed file) with identical unused rows of `new` in runs: `kept` and `used`
    marked in place; the new row after its last run is returned (where the next file's rows would follow).
    Its first row is looked for near `hint` first. Rows it finds no run for are left to the exact match; so
    is the rest of the file once lookups keep finding nothing or only short runs, or `lookups` (what is left
    of them, counted down in place) is spent: rows in no order, a lookup costs a pass over `new`."""
    start, skip, misses, end = 0, _TRIES, 0, hint
    for _ in range(_STEPS):
        if start >= part.num_rows or misses >= _MISSES:
            return end
        found, row = None, start
        for by_value in (False, True):  # near where they are expected first: a changed row costs no lookup
            for row in range(start, min(start + _TRIES, part.num_rows)):
                found = _find(part, row, new_parts, new, used, hint + (row - start), lookups, by_value)
                if found is not None:
                    break
            if found is not None:
                break
        if found is None:  # a stretch of changed rows: look further on, further each time
            hint += row + 1 + skip - start  # where those rows would be, had they stayed
            start, skip, misses = row + 1 + skip, skip * 2, misses + 1
            continue
        same = _run(part, row, new, found, used)
        kept[row:row + len(same)] |= same
        used[found:found + len(same)] |= same
        misses = 0 if abs(found - hint - (row - start)) <= _NEAR or len(same) >= _SHORT_RUN else misses + 1
        start, hint, skip = row + len(same), found + len(same), _TRIES
        end = hint
    return end


def _run(part: pa.Table, row: int, new: pa.Table, found: int, used: np.ndarray) -> np.ndarray:
    """Whether each row of `part` from `row` on is identical to the unused row of `new` as far from `found`,
    up to the run's last equal row: compared in windows that double while equal rows go on to their end."""
    limit = min(part.num_rows - row, new.num_rows - found)
    pieces, at, window = [], 0, _WINDOW
    while at < limit:
        size = min(window, limit - at)
        same = _same(part.slice(row + at, size), new.slice(found + at, size)) & ~used[found + at:found + at + size]
        pieces.append(same)
        at, window = at + size, window * 2
        if not same[-(size // 8 + 1):].any():  # no equal row near the window's end: the run ended in it
            break
    same = np.concatenate(pieces)
    return same[:int(np.flatnonzero(same)[-1]) + 1]  # its first row is equal: it was found so


def _find(part: pa.Table, row: int, new_parts: list[pa.Table], new: pa.Table, used: np.ndarray, hint: int,
          lookups: list[int], by_value: bool) -> int | None:
    """An unused row of `new` identical to `part`'s row `row`: the nearest to `hint` within _NEAR rows (a
    row deleted or inserted just before shifts the rest); `by_value`: the first after `hint`, else the first
    one at all (None: no such row, or no lookup left)."""
    one = part.slice(row, 1)
    if not by_value:
        low, high = max(min(hint, new.num_rows) - _NEAR, 0), min(hint + _NEAR + 1, new.num_rows)
        if low >= high:
            return None
        near = low + np.flatnonzero(_same(one.take(pa.array(np.zeros(high - low, np.int64))), new.slice(low, high - low))
                                    & ~used[low:high])
        return int(near[np.argmin(np.abs(near - hint))]) if len(near) else None
    if lookups[0] <= 0:
        return None
    lookups[0] -= 1
    first = one.column(0)[0]
    column = new.column(0)
    hits = pc.is_null(column) if not first.is_valid else pc.fill_null(pc.equal(column, first), False)
    candidates = np.flatnonzero(hits.to_numpy(zero_copy_only=False) & ~used)
    if len(candidates) and new.num_columns > 1:  # the other columns too
        candidates = candidates[_same(one.take(pa.array(np.zeros(len(candidates), np.int64))),
                                      take_rows(new_parts, candidates))]
    if not len(candidates):
        return None
    after = candidates[candidates >= hint]
    return int(after[0] if len(after) else candidates[0])


def take_rows(parts: list[pa.Table], rows: np.ndarray) -> pa.Table:
    """The rows at ascending positions `rows` of the parts one after the other, taken batch by batch (a
    take from a column of many chunks first copies them all into one)."""
    batches = [b for part in parts for b in part.to_batches() if b.num_rows]
    if len(rows) == sum(b.num_rows for b in batches):  # every row (they are distinct): no copy
        return pa.Table.from_batches(batches, schema=parts[0].schema)
    bounds = np.cumsum([0] + [b.num_rows for b in batches])
    cuts = np.searchsorted(rows, bounds)
    return pa.Table.from_batches([batch.take(pa.array(rows[cuts[i]:cuts[i + 1]] - bounds[i]))
                                  for i, batch in enumerate(batches) if cuts[i + 1] > cuts[i]],
                                 schema=parts[0].schema)


def _same(left: pa.Table, right: pa.Table) -> np.ndarray:
    """Row by row, whether two tables of the same columns and length hold identical values (nulls equal,
    floating point values by their bits)."""
    same = None
    for a, b in zip(left.columns, right.columns):
        if pa.types.is_floating(a.type):  # by their bits: NaN is NaN, -0.0 is not 0.0
            bits = {16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[a.type.bit_width]
            a, b = _view(a, bits), _view(b, bits)
        equal = pc.equal(a, b)
        if a.null_count or b.null_count:
            equal = pc.or_(pc.fill_null(equal, False), pc.and_(pc.is_null(a), pc.is_null(b)))
        same = equal if same is None else pc.and_(same, equal)
    return same.to_numpy(zero_copy_only=False).astype(bool, copy=False) if same is not None \
        else np.ones(left.num_rows, dtype=bool)


def _view(values: pa.ChunkedArray | pa.Array, kind: pa.DataType) -> pa.ChunkedArray | pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return pa.chunked_array([c.view(kind) for c in values.chunks], kind)
    return values.view(kind)


def _pair(key: np.ndarray, old_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """(keep_old, dead_new) from each row's exact key (old rows first): rows sorted by key once; in each run
    of one key the k-th old row pairs with the k-th new row, while both sides have one."""
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    is_old = order < old_rows
    first = np.empty(len(order), dtype=bool)  # the first row of a run of one key
    first[0], first[1:] = True, ordered[1:] != ordered[:-1]
    starts, run = np.flatnonzero(first), np.cumsum(first) - 1
    olds_before = np.cumsum(is_old) - is_old  # old rows before each row, in sorted order
    news_before = np.arange(len(order)) - olds_before
    olds_in_run = np.add.reduceat(is_old.astype(np.int64), starts)
    news_in_run = np.diff(np.append(starts, len(order))) - olds_in_run
    keep = is_old & (olds_before - olds_before[starts][run] < news_in_run[run])
    dead = ~is_old & (news_before - news_before[starts][run] < olds_in_run[run])
    keep_old = np.zeros(old_rows, dtype=bool)
    keep_old[order[keep]] = True
    dead_new = np.zeros(len(order) - old_rows, dtype=bool)
    dead_new[order[dead] - old_rows] = True
    return keep_old, dead_new


def _exact_key(both: pa.Table) -> np.ndarray:
    """Exact dense codes of each row's values: each column dictionary-encoded over both sides (a nested
    value by its text, in Python: slow, and rare), a row's codes as digits of one number, renumbered densely
    (a sort) only where the next column's codes would overflow."""
    key, span = np.zeros(both.num_rows, dtype=np.int64), 1
    for column in both.columns:
        values = column.combine_chunks()
        if not _comparable(values.type):  # nested: arrow encodes no such values; their text does, exactly
            values = pa.array([repr(v) for v in values.to_pylist()], pa.string())
        codes = pc.dictionary_encode(values, null_encoding="encode").indices.to_numpy(False)
        size = int(codes.max(initial=0)) + 1
        if span * size >= 1 << 62:
            key = np.unique(key, return_inverse=True)[1].astype(np.int64).reshape(-1)
            span = int(key.max(initial=0)) + 1
        key, span = key * size + codes, span * size
    return key
