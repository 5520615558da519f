"""A tombstone: an immutable file of deleted rows (their last values and row ids) over a table's segments.

Rows are never rewritten: a delete, an update's old images and a merge's removed rows are a tombstone
that names, by row id, the rows it hides from the table version that lists it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class TombstoneInfo:
    id: str
    table_id: str
    path: str
    seq: int
    schema_id: str
    row_count: int
    target_segments: tuple[str, ...] = ()
    target_files: tuple[str, ...] = ()  # row-id file names (below the segment root) it deletes rows of
    files: tuple[str, ...] = ()  # its own file names below `path`; () when not recorded (older catalogs)
    file_sizes: tuple[int, ...] = ()  # their bytes, in order
    file_etags: tuple = ()  # their ETags (or None each), in order; () when none was recorded, as SegmentInfo's
    # A keyed table's delete, update, upsert or overwrite: the segments and tombstones of the version it was
    # written over, where its rows are every live row of its keys (written_over); None where not recorded
    # (keyless tables, merges, imports, Iceberg commits, older catalogs). The reader drops such a tombstone's
    # rows by position in the segments it covers (reader.by_position).
    over_segments: frozenset[str] | None = None
    over_tombstones: frozenset[str] | None = None


@dataclass(frozen=True)
class TombstoneSummary:
    """What a tombstone deletes, when the caller already counted it: its rows, and the segments and
    data files (row-id names) they live in. Saves reading the written tombstone back."""

    rows: int
    segments: frozenset[str]
    files: frozenset[str]


def first_written_in(tombstone: TombstoneInfo) -> list[str]:
    """The segment groups the rows a tombstone deletes were first written to (their row-id file names start
    with it): "the same segment" of SPEC 3.3 A1/A3, which compaction does not change."""
    return sorted({name.split("/", 1)[0] for name in tombstone.target_files}) or list(tombstone.target_segments)


# Beyond this many ids (about 20 kB of catalog row), a tombstone records nothing, so that its row does not grow
# with a table that is never compacted: the reader then probes keys, as for one written before the record existed.
_OVER_IDS = 500


def written_over(tombstone: TombstoneInfo | None, segments: tuple[str, ...], tombstones: tuple[str, ...]
                 ) -> TombstoneInfo | None:
    """`tombstone` of a keyed table, recorded as written over the version of `segments` and `tombstones`: the
    caller found its rows among that version's live rows by key (every live row of each key it names)."""
    if tombstone is None or len(segments) + len(tombstones) > _OVER_IDS:
        return tombstone
    return replace(tombstone, over_segments=frozenset(segments), over_tombstones=frozenset(tombstones))
