"""A transaction's row writes (SPEC 2 DML): insert, delete, update, upsert, overwrite (whole or by
partition) and compaction. Each writes segment and tombstone files, checks the new rows (from the written
files, or from a cache of them for an upsert) before anything is staged in the catalog (a failed check leaves
no version and no files), and records what it changed: an overwrite or upsert only the rows that differ
(SPEC 3.3, 4)."""
from __future__ import annotations

import functools
import itertools
import os
import uuid
from dataclasses import replace

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from . import errors, spark_errors
from .catalog.schema import Column, Schema, history_entry
from .catalog.state import SegmentKind, TableState
from .catalog.tombstones import first_written_in, written_over
from .key_predicates import key_bounds
from .operations import ObjectKind, Op
from .storage.difference import (KEY_NEW_ROWS, NEW, OLD, SIDE, change_counts, difference, differs, fits_one_task,
                                 observed_changes)
from .storage.layout import SEGMENT_COLUMN
from .storage.reader import PREV_FILE, PREV_POS, ROW_FILE, ROW_POS, quote
from .storage.writer import RANGED_KEY_TYPES

# An upsert finds its keys' range (one small query) to skip files only when the table has at least this many files
# with a recorded key range: below it, reading every file costs about what the query does. The environment
# variable sets another (the model tests draw 1 as a session variant: tests/model/session_variants.py).
UPSERT_RANGE_FILES_ENV = "BRANCHSPARK_UPSERT_RANGE_FILES"
_PRUNED_FILES = 8
# Nor when the table's files add up to at most this many bytes: one task reads them all in about the query's time
# (at 100k rows, 2.3 MB: the upsert took 0.59 s without the query against 0.72 s with it, in a fresh process).
# On an object store every file read costs requests, which the query saves at any size: no floor there. The
# environment variable sets another (0: any size; the model tests' variant and the pruning tests use it).
UPSERT_RANGE_BYTES_ENV = "BRANCHSPARK_UPSERT_RANGE_BYTES"
_PRUNED_BYTES = 8 << 20
# what _check_rows finds, the worst (highest) reported
_HELD, _REPEATS, _HAS_NULLS = 1, 2, 3


class RowWrites:
    """Part of `Transaction` (transaction.py): it uses the transaction's namespace, reader, record and helpers."""

    # ----------------------------------------------------------------- DML
    def conform(self, name: str, state: TableState, df: DataFrame) -> DataFrame:
        """`df` as rows of the table: columns matched by name, cast to the table's types, missing ones
        filled with their default or NULL."""
        self.depends.inputs.append(df)  # it may read tables: checked if the head moves (commit_replay.py)
        schema = self._schema(state)
        incoming = {f.name.lower(): f for f in df.schema.fields}
        unknown = [f.name for f in df.schema.fields if schema.column(f.name) is None]
        if unknown:
            raise errors.InvalidArgument(f"the data has column(s) {unknown} that table '{name}' lacks on branch "
                                         f"'{self.branch}': add them with add_column, or leave them out")
        columns = []
        for column in schema.columns:
            field = incoming.get(column.name.lower())
            if field is None:
                value = F.expr(column.default) if column.default is not None else F.lit(None)
                columns.append(value.cast(column.data_type).alias(column.name))
            elif field.dataType.json() == column.type_json and field.name == column.name:
                columns.append(F.col(quote(field.name)))
            else:
                columns.append(F.col(quote(field.name)).cast(column.data_type).alias(column.name))
        return df.select(*columns)

    def _write_checked(self, name: str, state: TableState, rows: DataFrame, seq: int, kind: SegmentKind,
                       key: list[str] | tuple = (), key_word: str = "primary key",
                       against_table: bool = False, key_checked: bool = False) -> tuple[list, DataFrame]:
        """Write `rows` (conformed) as new segments, then check them by reading the written files back:
        NOT NULL columns, no repeated `key` (unless key_checked: the caller did), and (against_table)
        no key the table already holds.

        The query behind `rows` runs once, for the write; the checks and whatever the caller derives
        from the new rows (returned as a scan of the new files) read the small new segment instead.
        If a check fails, the new files are deleted and nothing is staged."""
        schema = self._schema(state)
        writer = self.lakehouse.writer
        segments = writer.write_segments(state, schema, rows, seq, kind, fault=self.lakehouse.fault)
        try:
            written = self.reader.read_segments(state, schema, segments)
            self._check_rows(name, state, schema, written, list(key), key_word, against_table, key_checked,
                             key_range=_key_range(segments))
        except BaseException:
            writer.discard_segments(segments)
            raise
        return segments, written

    def _check_rows(self, name: str, state: TableState, schema: Schema, rows: DataFrame, key: list[str],
                    key_word: str, against_table: bool, key_checked: bool = False, key_range: tuple | None = None
                    ) -> None:
        """NOT NULL columns, no repeated key and (against_table) no key the table holds, asked in one query:
        each check yields the rank of the problem it finds (the worst one is reported), and the checks' stages
        run side by side rather than one query after another. key_range: (column id, low, high) of the new rows'
        first key column, when known: the table's files whose recorded range misses it are not read."""
        required = [quote(c.name) for c in _required_columns(schema, key, key_checked)]
        null_flag = " OR ".join(f"{c} IS NULL" for c in required)
        keys = [quote(k) for k in key]
        found = []
        if key and not key_checked:
            # one aggregation per key answers both: NULLs in the row of a key rank above a repeated key
            nulls = f"max(CAST({null_flag} AS INT))" if required else "0"
            found.append(rows.groupBy(*keys).agg(F.expr("count(1) AS _bs_n"), F.expr(f"{nulls} AS _bs_nulls"))
                         .where("_bs_n > 1 OR _bs_nulls = 1")
                         .selectExpr(f"IF(_bs_nulls = 1, {_HAS_NULLS}, {_REPEATS}) AS _bs_problem"))
        elif required:
            found.append(rows.where(null_flag).selectExpr(f"{_HAS_NULLS} AS _bs_problem"))
        if against_table and key and state.segments:
            existing = self.reader.read(state, key_range=key_range).select(*keys)
            if key_range is not None:  # and the row groups of the files read, by their statistics
                existing = existing.where(F.col(keys[0]).between(F.lit(key_range[1]), F.lit(key_range[2])))
            found.append(rows.select(*keys).join(existing, list(key), "left_semi")
                         .selectExpr(f"{_HELD} AS _bs_problem"))
        if not found:
            return
        problems = functools.reduce(lambda a, b: a.unionAll(b), found)
        first = problems.orderBy(F.desc("_bs_problem")).limit(1).collect()
        self._refuse(name, schema, key, key_word, first[0][0] if first else None)

    def _refuse(self, name: str, schema: Schema, key: list[str], key_word: str, worst: int | None) -> None:
        """Raise the error for the worst problem a check of new rows found (None: none)."""
        if worst == _HAS_NULLS:
            raise errors.InvalidArgument(f"the data has NULL in NOT NULL column(s) "
                                         f"{[c.name for c in schema.columns if not c.nullable]} of '{name}': "
                                         f"nothing was written")
        if worst == _REPEATS:
            raise errors.InvalidArgument(f"the data repeats {key_word} {key} values of '{name}': each key may "
                                         f"appear once; nothing was written")
        if worst == _HELD:
            raise errors.InvalidArgument(f"the data has primary keys that '{name}' already holds on branch "
                                         f"'{self.branch}': use upsert (merge on the key) or delete them first")

    def insert(self, name: str, df: DataFrame, key_checked: bool = False) -> None:
        """Append `df`'s rows. key_checked: as in create_table_as."""
        state = self._writable_table(name)
        rows = self.conform(name, state, df)
        seq = self._seq()
        segments, _ = self._write_checked(name, state, rows, seq, SegmentKind.DATA, key=state.primary_key,
                                          against_table=True, key_checked=key_checked)
        self.ns.add_segments(segments)
        self.ns.put_table(state.evolve(segments=state.segments + tuple(s.id for s in segments)))
        self.record(ObjectKind.TABLE, state.id, name, Op.INSERT, seq=seq, segments_added=[s.id for s in segments])

    def _filtered(self, name: str, state: TableState, predicate: str | None) -> DataFrame:
        """The rows (with row ids) matching `predicate`, read only from the files whose recorded key range can hold
        one when the predicate bounds the first key column (_predicate_key_range)."""
        rows = self.reader.read(state, with_row_ids=True, key_range=self._predicate_key_range(state, predicate))
        if predicate is None:
            return rows
        try:
            return rows.filter(F.expr(predicate))
        except PySparkException as exc:
            raise errors.InvalidArgument(f"predicate '{predicate}' is not valid on '{name}': "
                                         f"{spark_errors.first_line(exc)}") from None

    def _predicate_key_range(self, state: TableState, predicate: str | None) -> tuple | None:
        """(column id, low, high) that `predicate` confines the table's first key column to (core/key_predicates.py),
        when the table's files record ranges of it (a key of a ranged type, not a partition column); else None."""
        if not predicate or not state.primary_key or state.primary_key[0] in state.partition_by:
            return None
        column = self._schema(state).column(state.primary_key[0])
        if column is None or not isinstance(column.data_type, RANGED_KEY_TYPES):
            return None
        bounds = key_bounds(predicate, column.name, column.data_type)
        return None if bounds is None else (column.id, *bounds)

    def _tombstone(self, name: str, state: TableState, doomed: DataFrame, seq: int):
        tombstone = self.lakehouse.writer.write_tombstone(state, self._schema(state), doomed, seq,
                                                          fault=self.lakehouse.fault)
        return self._add_tombstone(state, tombstone)

    def _add_tombstone(self, state: TableState, tombstone):
        """Stage a tombstone of rows read from `state`. On a keyed table each of these writes reads the live rows
        of the keys it deletes from `state`, all of them (keys are unique), so it records that version: a read
        can then drop those rows by position (reader.by_position)."""
        if tombstone is None:
            return None
        if state.primary_key:
            tombstone = written_over(tombstone, state.segments, state.tombstones)
        self.ns.add_tombstone(tombstone)
        return tombstone

    def delete(self, name: str, predicate: str) -> int:
        """Delete the rows matching a Spark SQL predicate; returns how many."""
        state = self._writable_table(name)
        doomed = self._filtered(name, state, predicate)
        seq = self._seq()
        tombstone = self._tombstone(name, state, doomed, seq)
        if tombstone is None:
            return 0
        self.ns.put_table(state.evolve(tombstones=state.tombstones + (tombstone.id,)))
        self.record(ObjectKind.TABLE, state.id, name, Op.DELETE, seq=seq, predicate=predicate,
                     tombstones_added=[tombstone.id], segments_touched=first_written_in(tombstone),
                     rows=tombstone.row_count)
        return tombstone.row_count

    def update(self, name: str, predicate: str | None, assignments: dict[str, str]) -> int:
        """Set columns to Spark SQL expressions on the rows matching `predicate`; returns how many."""
        state = self._writable_table(name)
        schema = self._schema(state)
        resolved = {self._column(name, schema, column).name: expression for column, expression in assignments.items()}
        images = [(F.expr(resolved[c.name]) if c.name in resolved else F.col(quote(c.name)))
                  .cast(c.data_type).alias(c.name) for c in schema.columns]
        try:
            # A row the update leaves as it was is not changed: no tombstone, no new image (SPEC 4).
            matched = self._filtered(name, state, predicate).filter(
                differs([(F.expr(resolved[c.name]).cast(c.data_type), F.col(quote(c.name)), c.data_type)
                          for c in schema.columns if c.name in resolved]))
            new_rows = matched.select(*images, F.col(ROW_FILE).alias(PREV_FILE), F.col(ROW_POS).alias(PREV_POS))
        except PySparkException as exc:
            raise errors.InvalidArgument(f"update of '{name}' is not valid: {spark_errors.first_line(exc)}") from None
        seq = self._seq()
        # The matched rows are read once, by the tombstone's write, into a cache (the size of the change) that the
        # new images' write reads: the table is scanned once (on S3 half the GETs), and both writes see the same
        # rows even where the predicate or an assignment is nondeterministic.
        matched.cache()
        try:
            tombstone = self._tombstone(name, state, matched, seq)
            if tombstone is None:
                return 0
            segments = self.lakehouse.writer.write_segments(state, schema, new_rows, seq, SegmentKind.UPDATE,
                                                            fault=self.lakehouse.fault)
        finally:
            matched.unpersist()
        self.ns.add_segments(segments)
        self.ns.put_table(state.evolve(segments=state.segments + tuple(s.id for s in segments),
                                       tombstones=state.tombstones + (tombstone.id,)))
        self.record(ObjectKind.TABLE, state.id, name, Op.UPDATE, seq=seq, predicate=predicate, set=dict(resolved),
                     tombstones_added=[tombstone.id], segments_added=[s.id for s in segments],
                     segments_touched=first_written_in(tombstone), rows=tombstone.row_count)
        return tombstone.row_count

    def upsert(self, name: str, df: DataFrame, key: list[str] | None = None) -> None:
        """Merge `df` on `key` (default: the primary key): matching rows are replaced, the rest inserted."""
        state = self._writable_table(name)
        schema = self._schema(state)
        key = list(key or state.primary_key)
        if not key:
            raise errors.InvalidArgument(f"upsert into '{name}' needs a key: give key=[...] or declare a primary key")
        resolved = self._resolve_columns(name, schema, key)
        rows = self.conform(name, state, df)
        seq = self._seq()
        # The query runs once, into a cache that the key checks, the comparison and the writes read: nothing is
        # written before the checks pass, and new rows equal to the rows they replace are never written.
        new = rows.cache()
        try:
            segments, tombstone = self._upsert_cached(name, state, schema, new, resolved, seq)
        finally:
            new.unpersist()
        self.ns.add_segments(segments)
        tombstones = state.tombstones + ((tombstone.id,) if tombstone else ())
        self.ns.put_table(state.evolve(segments=state.segments + tuple(s.id for s in segments),
                                       tombstones=tombstones))
        if tombstone is not None:
            self.record(ObjectKind.TABLE, state.id, name, Op.UPDATE, seq=seq, key=resolved,
                        tombstones_added=[tombstone.id], segments_touched=first_written_in(tombstone),
                        rows=tombstone.row_count)
        if segments:
            self.record(ObjectKind.TABLE, state.id, name, Op.INSERT, seq=seq, segments_added=[s.id for s in segments])

    def _upsert_cached(self, name: str, state: TableState, schema: Schema, new: DataFrame, key: list[str], seq: int):
        """Check and stage an upsert of the cached conformed rows `new`; returns (segments, tombstone or None).
        On the primary key of a table without partitions the comparison's one write checks the new rows
        too (_write_difference): no query of its own for the checks."""
        writer, fault = self.lakehouse.writer, self.lakehouse.fault
        checks = (name, key) if state.segments and self._checked_by_difference(state, key) else None
        if checks is None:
            self._check_rows(name, state, schema, new, key, "key", against_table=False)
        if not state.segments:
            return writer.write_segments(state, schema, new, seq, SegmentKind.DATA, fault=fault), None
        # Only the keys it writes: their current rows, compared by value with the new ones.
        current = self.reader.read(state, with_row_ids=True, key_range=self._upsert_key_range(state, new, key))
        keys = new.select(*[quote(k) for k in key])
        one_task = fits_one_task(current, new, new)  # the comparison's inputs: the current rows, new's keys, new
        if one_task:
            # Compared in one task and planned at once (difference.py), without adaptive execution, which would
            # have chosen this broadcast from the cached new rows' size once they were computed.
            keys = F.broadcast(keys)
        matched = current.join(keys, key, "left_semi")
        changed = self._write_difference(state, matched, new, seq, checks=checks, one_task=one_task)
        if changed is None:  # values that cannot be compared: every matched row is replaced
            if checks:
                self._check_rows(name, state, schema, new, key, "key", against_table=False)
            segments = writer.write_segments(state, schema, new, seq, SegmentKind.DATA, fault=fault)
            changed = segments, self._discarding(segments, lambda: self._tombstone(name, state, matched, seq))
        return changed

    def _upsert_key_range(self, state: TableState, new: DataFrame, key: list[str]) -> tuple | None:
        """(column id, low, high) of the upsert's keys on the table's first key column, when the table has enough
        files with a recorded range of it (_PRUNED_FILES), and enough bytes (_PRUNED_BYTES), for reading only
        those that can hold the keys to pay for the query that finds the range (on the cached new rows, which it
        fills); else None: every file is read."""
        if not state.primary_key or key[0].lower() != state.primary_key[0].lower():
            return None
        column = self._schema(state).column(key[0])
        segments = self.reader.lookup.segment_infos(state.segments)
        ranged = sum(len(s.key_ranges) for s in segments if s.key_column == column.id)
        if ranged < int(os.environ.get(UPSERT_RANGE_FILES_ENV) or _PRUNED_FILES):
            return None
        small = os.environ.get(UPSERT_RANGE_BYTES_ENV)
        floor = (0 if self.lakehouse.warehouse.on_object_store else _PRUNED_BYTES) if small is None else int(small)
        if all(s.file_sizes for s in segments) and sum(sum(s.file_sizes) for s in segments) <= floor:
            return None
        # Observed as the rows fill their cache (a write to Spark's no-op sink): one job of the new rows'
        # tasks, where an aggregate's first() runs three (its shuffle's stage, the result, and AQE's re-plan).
        observed = Observation()
        (new.observe(observed, F.min(quote(column.name)).alias("low"), F.max(quote(column.name)).alias("high"))
         .write.format("noop").mode("overwrite").save())
        low, high = observed.get["low"], observed.get["high"]
        return None if low is None else (column.id, low, high)

    @staticmethod
    def _checked_by_difference(state: TableState, key: list[str]) -> bool:
        """Whether an upsert's comparison can check its new rows as it writes them: one write (no partitions),
        on the primary key, which the table holds once at most (so a repeated new key stays unpaired)."""
        return not state.partition_by and [k.lower() for k in key] == [k.lower() for k in state.primary_key]

    def _discarding(self, staged: list, action):
        """Run `action`; if it fails, delete the files of `staged` (segments no commit will reference)."""
        try:
            return action()
        except BaseException:
            self.lakehouse.writer.discard_segments(staged)
            raise

    def _write_difference(self, state: TableState, old: DataFrame, new: DataFrame, seq: int, staged: list = (),
                          checks: tuple[str, list[str]] | None = None, one_task: bool | None = None):
        """Stage only what replacing `old` (rows with ids) by `new` (conformed rows) changes: a tombstone of
        the old rows without an identical new row, a segment of the new rows without an identical old row.
        Rows both hold stay as they are: no tombstone, no new row, no change in the feed. `staged`: segments
        already holding `new`'s rows, kept when every new row is added and discarded otherwise. Returns
        (segments, tombstone or None), or None, with nothing staged, when the rows cannot be compared by
        value. With nothing staged and no partitions, one write makes both (writer.write_difference);
        otherwise the tombstone's write fills a cache of the difference that the segment's write reads.
        `checks`, (table name, primary key), only with that one write: the write also counts the new rows
        with a NULL where none may be and the keys they repeat, and refuses them after it (its files deleted)
        as _check_rows would. `one_task`: whether the comparison fits one task, when the caller knows
        (difference.fits_one_task)."""
        schema = self._schema(state)
        writer, fault = self.lakehouse.writer, self.lakehouse.fault
        assert not (checks and (staged or state.partition_by)), "only the one write checks new rows"

        def stage():
            changed = difference(old, new, [c.name for c in schema.columns], key=checks[1] if checks else None,
                                 one_task=one_task)
            if changed is None:
                return None
            if not staged and not state.partition_by:  # both sides in one write
                observed = Observation()
                metrics = change_counts() + (self._check_counts(schema, checks[1]) if checks else [])

                def counts():
                    if checks:
                        self._refuse_counted(checks[0], schema, checks[1], observed.get)
                    return observed_changes(observed)

                segments, tombstone = writer.write_difference(
                    state, schema, changed.observe(observed, *metrics), seq, counts, fault=fault)
                return segments, self._add_tombstone(state, tombstone)
            # Change-sized and read by both writes: the tombstone's write computes it, fills the cache and
            # counts it (observed metrics); the segment's write reads the cache.
            changed = changed.cache()
            try:
                observed = Observation()
                tombstone = writer.write_tombstone(
                    state, schema, changed.observe(observed, *change_counts()).where(f"{SIDE} = {OLD}"), seq,
                    fault=fault, summary=lambda: observed_changes(observed)[0])
                added = observed_changes(observed)[1]
                tombstone = self._add_tombstone(state, tombstone)
                if bool(staged) and added and added == writer.row_count(staged):  # every new row is added
                    return list(staged), tombstone
                segments = []
                if added:
                    new_rows = changed.where(f"{SIDE} = {NEW}").selectExpr(*[quote(c.name) for c in schema.columns])
                    segments = writer.write_segments(state, schema, new_rows, seq, SegmentKind.DATA, fault=fault)
                if staged:
                    writer.discard_segments(staged)
                return segments, tombstone
            finally:
                changed.unpersist()

        return self._discarding(list(staged), stage)

    @staticmethod
    def _check_counts(schema: Schema, key: list[str]) -> list:
        """Metrics of a difference (keyed, difference.KEY_NEW_ROWS) that find what _check_rows finds in its new
        rows: one with a NULL in a key or NOT NULL column, and a key two new rows share. Such a new row never
        pairs with an old one (old rows have no NULL there, and one old row pairs with one new row at most)."""
        required = [quote(c.name) for c in _required_columns(schema, key, False)]
        nulls = " OR ".join(f"{c} IS NULL" for c in required) or "false"
        return [F.expr(f"count(CASE WHEN {SIDE} = {NEW} AND ({nulls}) THEN 1 END) AS _bs_null_rows"),
                F.expr(f"max({KEY_NEW_ROWS}) AS _bs_key_rows")]

    def _refuse_counted(self, name: str, schema: Schema, key: list[str], metrics: dict) -> None:
        if metrics.get("_bs_null_rows"):
            self._refuse(name, schema, key, "key", _HAS_NULLS)
        if (metrics.get("_bs_key_rows") or 0) > 1:
            self._refuse(name, schema, key, "key", _REPEATS)

    def overwrite(self, name: str, df: DataFrame, partitions=None, key_checked: bool = False) -> None:
        """Replace the whole table, or only some partitions (a {column: [values]} mapping, or "dynamic":
        the partitions present in `df`). key_checked: as in create_table_as."""
        state = self._writable_table(name)
        rows = self.conform(name, state, df)
        if partitions is None:
            self._overwrite_whole(name, state, rows, key_checked)
        else:
            self._overwrite_partitions(name, state, rows, partitions, key_checked)

    def _overwrite_whole(self, name: str, state: TableState, rows: DataFrame, key_checked: bool) -> None:
        """Replace every row, recorded as what the overwrite changed (SPEC 3.3, 4): a tombstone of the rows it
        removed and a segment of the rows it added, as multisets against the table it replaced. A rebuild that
        reproduces most rows changes only the others.

        When the new rows need no check (no NOT NULL column, no key or one the caller checked), as a dbt
        table model's rebuild, the query's rows go straight into the comparison, unstaged: the job that
        compares them also computes them, and only the difference is written."""
        seq = self._seq()
        if state.segments and not self._needs_row_checks(state, state.primary_key, key_checked):
            changed = self._write_difference(state, self.reader.read(state, with_row_ids=True), rows, seq)
            if changed is not None:
                self._commit_overwrite(name, state, seq, *changed)
                return
        staged, written = self._write_checked(name, state, rows, seq, SegmentKind.DATA, key=state.primary_key,
                                              key_checked=key_checked)
        if state.segments:
            changed = self._write_difference(state, self.reader.read(state, with_row_ids=True), written, seq, staged)
        else:  # an empty table: every new row is added
            changed = staged, None
        if changed is None:  # values that cannot be compared: the new rows replace the table's segments
            self.ns.add_segments(staged)
            self.ns.put_table(state.evolve(segments=tuple(s.id for s in staged), tombstones=()))
            self.record(ObjectKind.TABLE, state.id, name, Op.OVERWRITE, seq=seq, segments_added=[s.id for s in staged],
                         segments_removed=list(state.segments), tombstones_removed=list(state.tombstones))
            return
        self._commit_overwrite(name, state, seq, *changed)

    def _needs_row_checks(self, state: TableState, key, key_checked: bool) -> bool:
        """Whether new rows must be checked (_check_rows) before they are staged: a NOT NULL column or a key
        the caller has not checked."""
        return bool(_required_columns(self._schema(state), key, key_checked)) or bool(key) and not key_checked

    def _commit_overwrite(self, name: str, state: TableState, seq: int, segments: list, tombstone, **detail) -> None:
        """Add an overwrite's difference (new segments, a tombstone of removed rows) to the table; nothing
        when it changed no row."""
        if not segments and tombstone is None:
            return  # the same rows: nothing changed
        self.ns.add_segments(segments)
        self.ns.put_table(state.evolve(segments=state.segments + tuple(s.id for s in segments),
                                       tombstones=state.tombstones + ((tombstone.id,) if tombstone else ())))
        self.record(ObjectKind.TABLE, state.id, name, Op.OVERWRITE, seq=seq, difference=True, **detail,
                     segments_added=[s.id for s in segments],
                     tombstones_added=[tombstone.id] if tombstone else [],
                     segments_touched=first_written_in(tombstone) if tombstone else [],
                     rows=tombstone.row_count if tombstone else 0)

    def _replace_rows(self, name: str, state: TableState, rows: DataFrame, kind: SegmentKind, op: Op,
                      check: bool = False, key_checked: bool = False) -> None:
        """Make `rows` the table's only segments (no tombstones): overwrite and compaction."""
        seq = self._seq()
        if check:
            segments, _ = self._write_checked(name, state, rows, seq, kind, key=state.primary_key,
                                              key_checked=key_checked)
        else:
            segments = self.lakehouse.writer.write_segments(state, self._schema(state), rows, seq, kind,
                                                            fault=self.lakehouse.fault)
        self.ns.add_segments(segments)
        self.ns.put_table(state.evolve(segments=tuple(s.id for s in segments), tombstones=()))
        self.record(ObjectKind.TABLE, state.id, name, op, seq=seq, segments_added=[s.id for s in segments],
                     segments_removed=list(state.segments), tombstones_removed=list(state.tombstones))

    def _overwrite_partitions(self, name: str, state: TableState, rows: DataFrame, partitions,
                              key_checked: bool) -> None:
        """Replace the rows of some partitions, recorded as what that changed (SPEC 2, 3.3, 4), as a whole
        overwrite is: only the rows of those partitions are compared, so the cost follows the partitions."""
        seq = self._seq()
        staged, written = self._write_checked(name, state, rows, seq, SegmentKind.DATA, key=state.primary_key,
                                              key_checked=key_checked)
        # The staged segments (one per partition directory) name the partitions the rows fall in: metadata.
        columns, wanted = self._discarding(staged, lambda: self._wanted_partitions(name, state, staged, partitions))
        if not wanted:
            self.lakehouse.writer.discard_segments(staged)
            return  # no partition named and no row: nothing changed
        segments = self.ns.segment_infos(state.segments)
        wanted_set = set(wanted)
        inside = [s for s in segments if tuple(s.partition_by[:len(columns)]) == tuple(columns)
                  and tuple(s.partition_values.get(c) for c in columns) in wanted_set]
        inside_ids = {s.id for s in inside}
        # Segments written before the table was partitioned this way hold rows of any partition.
        mixed = [s for s in segments if s.id not in inside_ids and tuple(s.partition_by) != tuple(state.partition_by)]
        old = self.reader.read(state.evolve(segments=tuple(s.id for s in inside)), with_row_ids=True)
        if mixed:
            old = old.unionByName(self.reader.read(state.evolve(segments=tuple(s.id for s in mixed)),
                                                   with_row_ids=True).filter(_in_partitions(columns, wanted)))
        changed = self._write_difference(state, old, written, seq, staged) if inside or mixed else (staged, None)
        if changed is None:  # values that cannot be compared: the old rows are deleted, the new ones added
            changed = staged, self._discarding(staged, lambda: self._tombstone(name, state, old, seq))
        self._commit_overwrite(name, state, seq, *changed, partitions=[list(w) for w in wanted],
                               partition_columns=columns)

    @staticmethod
    def _wanted_partitions(name: str, state: TableState, staged: list, partitions):
        """(partition columns, the partitions to replace as tuples of their values as strings): those the
        `staged` rows fall in ("dynamic"), or those named, which must hold every staged row."""
        if not state.partition_by:
            raise errors.InvalidArgument(f"table '{name}' is not partitioned: overwrite it whole, or set its "
                                         f"partitioning first")
        columns = list(state.partition_by)
        if partitions == "dynamic":
            return columns, sorted({_partition_value(s.partition_values, columns) for s in staged},
                                   key=lambda value: [(v is None, v or "") for v in value])
        unknown = [c for c in partitions if c not in columns]
        if unknown or len(partitions) != 1 and set(partitions) != set(columns):
            raise errors.InvalidArgument(f"partitions {partitions} do not match the partitioning {columns} "
                                         f"of '{name}'")
        keys = [c for c in columns if c in partitions]
        wanted = [tuple(str(v) if v is not None else None for v in combo)
                  for combo in itertools.product(*[partitions[c] for c in keys])]
        if any(_partition_value(s.partition_values, keys) not in set(wanted) for s in staged):
            raise errors.InvalidArgument(f"the data has rows outside partitions {partitions} of '{name}': "
                                         f"nothing was written")
        return keys, wanted

    def compact(self, name: str) -> None:
        """Rewrite live rows into fresh segments and fold tombstones in; reads return the same rows.

        The values of columns the table dropped are kept, out of sight (a hidden schema version): a merge that
        settles a conflict for the side that kept such a column reads them back, and compaction must not
        change a merge's outcome (SPEC 3.3)."""
        state = self._writable_table(name)
        if not state.segments:
            return
        kept = self._with_dropped_columns(state)
        rows = self.reader.read(kept, with_row_ids=True).drop(SEGMENT_COLUMN)
        self._replace_rows(name, kept, rows, SegmentKind.COMPACTION, Op.COMPACTION)
        if kept is not state:
            self.ns.put_table(self.ns.table(state.id).evolve(schema_id=state.schema_id))

    def _with_dropped_columns(self, state: TableState) -> TableState:
        """`state` read and written in its schema plus every column its earlier schema versions had and it
        dropped, under hidden names (`_bs_dropped_<id>`; columns are matched by id), listed as a hidden entry
        of its schema history; `state` itself when it dropped none."""
        current = self._schema(state)
        dropped: dict[int, Column] = {}
        for entry in state.schema_history:
            for column in self.ns.schema(entry["schema_id"]).columns:
                if not any(c.known_as(column.id) or column.known_as(c.id) for c in current.columns):
                    dropped[column.id] = replace(column, name=f"_bs_dropped_{column.id}", nullable=True,
                                                 default=None)
        if not dropped:
            return state
        wide = Schema(uuid.uuid4().hex, current.columns + tuple(dropped[i] for i in sorted(dropped)))
        self.ns.add_schema(wide, state.id)
        history = state.schema_history + (history_entry(wide.id, self._seq(), visible=False),)
        return state.evolve(schema_id=wide.id, schema_history=history)


def _key_range(segments) -> tuple | None:
    """(column id, low, high) of the first key column over new segments' files, when every file recorded its
    range of that column."""
    ranges = [r for s in segments for r in (s.key_ranges if len(s.key_ranges) == len(s.files) else (None,))]
    columns = {s.key_column for s in segments}
    if not ranges or any(r is None for r in ranges) or len(columns) != 1:
        return None
    return columns.pop(), min(r[0] for r in ranges), max(r[1] for r in ranges)


def _required_columns(schema: Schema, key, key_checked: bool) -> list[Column]:
    """The NOT NULL columns whose values a write checks (a key the caller checked aside)."""
    checked = {k.lower() for k in key} if key_checked else set()
    return [c for c in schema.columns if not c.nullable and c.name.lower() not in checked]


def _partition_value(values: dict, columns: list[str]) -> tuple:
    return tuple(values.get(c) for c in columns)


def _in_partitions(columns: list[str], wanted: list[tuple]):
    """Rows whose partition columns, as strings, are one of `wanted`."""
    condition = F.lit(False)
    for value in wanted:
        match = F.lit(True)
        for column, v in zip(columns, value):
            cell = F.col(quote(column))
            match = match & (cell.isNull() if v is None else cell.cast("string") == F.lit(v))
        condition = condition | match
    return condition
