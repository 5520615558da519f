"""A planned merge written: every table's new files side by side, then one commit (merge/merger.py plans it)."""
from __future__ import annotations

from functools import partial

from ..catalog.schema import history_entry
from ..catalog.state import SegmentKind
from ..catalog.tombstones import first_written_in
from ..context import WriteContext
from ..operations import ObjectKind, Op
from ..storage.writer import side_by_side
from ..transaction import Transaction
from .options import TablePlan
from .rules import TABLE_DML


def write_merge(lakehouse: WriteContext, tx: Transaction, tables: dict[str, TablePlan], full_name) -> str:
    """Write the plans of `tables` (table id -> plan) and commit them in `tx`; the new commit's id.
    `full_name(state)`: a table's `database.table` on dest."""
    ns = tx.ns
    seq = lakehouse.store.allocate_seq()
    written = _write_files(lakehouse, ns, tables, seq)
    for table_id, plan in tables.items():
        state = plan.state
        name = full_name(state) if state.database_id in ns.databases else table_id
        segments, replacements, revived, tombstone = (written.get((table_id, kind))
                                                      for kind in ("rows", "update", "revived", "gone"))
        new_segments, new_tombstones = [], []
        for infos in (segments, replacements, revived):
            if infos:
                ns.add_segments(infos)
                new_segments += [s.id for s in infos]
        touched: list[str] = []
        if tombstone is not None:
            ns.add_tombstone(tombstone)
            new_tombstones = [tombstone.id]
            touched = first_written_in(tombstone)
        final = state.evolve(segments=state.segments + tuple(new_segments),
                             tombstones=state.tombstones + tuple(new_tombstones),
                             schema_history=_schema_history(ns, plan, new_segments, seq))
        ns.put_table(final)
        if plan.data is not None:
            plan.data.release()
        _record_ops(tx, plan, table_id, name, seq, new_segments, new_tombstones, touched)
    return tx.commit().id


def _schema_history(ns, plan: TablePlan, new_segments: list[str], seq: int) -> tuple:
    """Schema versions src wrote rows under stay readable, out of sight; the merged one is shown."""
    state = plan.state
    history = list(state.schema_history)
    listed = {entry["schema_id"] for entry in history}
    for schema_id in sorted((plan.src_schemas | {ns.segment_infos([s])[0].schema_id
                                                for s in new_segments}) - listed - {state.schema_id}):
        history.append(history_entry(schema_id, seq, visible=False))
    if plan.schema_changed:
        history.append(history_entry(state.schema_id, seq))
    return tuple(history)


def _record_ops(tx: Transaction, plan: TablePlan, table_id: str, name: str, seq: int, new_segments: list[str],
                new_tombstones: list[str], touched: list[str]) -> None:
    for op, detail in plan.ops:
        if op in TABLE_DML:
            detail = {**detail, "seq": seq,
                      "segments_added": detail["segments_added"] + new_segments,
                      "tombstones_added": detail["tombstones_added"] + new_tombstones}
            if op == Op.UPDATE and plan.data is not None and plan.data.replacement_rows is not None:
                # Rows decided one by one: record every segment the merge's tombstone touched (src's
                # images among them), so a later merge sees dest's change to them (A1/A3).
                detail["segments_touched"] = sorted(set(detail["segments_touched"]) | set(touched))
        tx.record(ObjectKind.TABLE, table_id, name, op, merged=True, **detail)


def _write_files(lakehouse: WriteContext, ns, tables: dict[str, TablePlan], seq: int) -> dict:
    """Every table's new segments and tombstone, {(table id, "rows" | "update" | "revived" | "gone"): result},
    written side by side."""
    writer, fault = lakehouse.writer, lakehouse.fault
    jobs = {}
    for table_id, plan in tables.items():
        data = plan.data
        if data is None:
            continue
        state, schema = plan.state, ns.schema(plan.state.schema_id)
        if data.new_rows is not None and data.new_rows_count != 0:
            jobs[(table_id, "rows")] = partial(writer.write_segments, state, schema, data.new_rows, seq,
                                               data.new_rows_kind, fault=fault)
        if data.replacement_rows is not None:
            jobs[(table_id, "update")] = partial(writer.write_segments, state, schema, data.replacement_rows, seq,
                                                 SegmentKind.UPDATE, fault=fault)
        if data.revived_rows is not None:
            jobs[(table_id, "revived")] = partial(_written_rows, writer, state, schema, data.revived_rows, seq,
                                                  fault)
        if data.doomed is not None:
            jobs[(table_id, "gone")] = partial(writer.write_tombstone, state, schema, data.doomed, seq,
                                               fault=fault, summary=data.doomed_summary)
    return side_by_side(jobs)


def _written_rows(writer, state, schema, rows, seq: int, fault) -> list:
    """`rows` written as a data segment; none when they were none (counted from the files' footers, so
    knowing costs no Spark job)."""
    segments = writer.write_segments(state, schema, rows, seq, SegmentKind.DATA, fault=fault)
    if writer.row_count(segments):
        return segments
    writer.discard_segments(segments)
    return []
