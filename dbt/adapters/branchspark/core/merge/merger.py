"""MERGE BRANCH src [TO dest] (SPEC section 3): plan every object, then write one merge commit.

The plan compares what each side did since the merge base (commit metadata),
checks the conflict matrices, merges schemas and, for tables both sides
changed, plans the row-level merge in Spark. Nothing is written until the
whole plan is free of conflicts (or they are settled by `on_conflict`); then
the new files are written and one commit with two parents moves dest's head
by compare-and-swap. A dry run stops after the plan.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from functools import partial
from collections.abc import Callable, Mapping
from typing import Any

from .. import errors
from ..catalog.namespace import Namespace
from ..catalog.schema import Schema, history_entry
from ..catalog.state import SegmentKind, TableState
from ..catalog.tombstones import first_written_in
from ..context import WriteContext
from ..operations import ObjectKind, Op
from ..storage.reader import TableReader
from ..storage.writer import side_by_side
from ..transaction import Transaction
from .base import merge_base
from .conflict_tables import schema_row
from .contested import contested_segments
from .data import DataMerger, DataPlan, TableInputs, src_rows_may_come_back
from .drivers import drivers_for
from .report import Conflict, MergeResult, Outcome, conflict_message
from .rules import TABLE_DML, Rule, database_cell, matrix_ops, table_cell
from .schema import merge_schemas
from .sides import ObjectChanges, rows_merge_by_count, side_since
from .views import plan_views

STRATEGIES = ("merge", "fast_forward", "auto", "interactive", "rebase")
ON_CONFLICT = ("abort", "ours", "theirs", "pause")


def three_way_merge(lakehouse: WriteContext, src: str | None, dest: str, policy: "ConflictPolicy", *,
                    strategy: str = "merge", dry_run: bool = False, message: str | None = None,
                    author: str | None = None, drivers=None, views=(), pause: Callable | None = None) -> MergeResult:
    """Merge `src` (a branch or commit) into branch `dest` by the rules of SPEC 3 (or fast-forward, as
    `strategy` allows). Raises MergeConflict (nothing written) when conflicts remain; a dry run returns them
    instead. `pause`: what takes the merge over instead of writing it (merge/interactive.py's `start`, handed
    in by merge/strategies.py). `drivers`: table -> merge driver. `views`: names of src's views to carry in
    the merge commit as well (merge/views.py); none by default."""
    store = lakehouse.store
    dest_info = store.get_branch(dest)
    src_commit = lakehouse.resolve(src)
    if src == dest:
        raise errors.InvalidArgument(f"cannot merge branch '{src}' into itself: name another branch as src")
    base = merge_base(store, src_commit.id, dest_info.head)
    if base is None:
        raise errors.InvalidArgument(f"'{src}' and '{dest}' share no commit, so there is no merge base")
    result = MergeResult(src, dest, base, strategy, "up-to-date")
    if base == src_commit.id:
        return result
    if base == dest_info.head and strategy in ("fast_forward", "auto"):
        result.status = "dry-run" if dry_run else "fast-forward"
        if not dry_run:
            store.move_branch(dest, dest_info.head, src_commit.id)
            result.commit_id = src_commit.id
        return result
    if pause is not None and not dry_run:
        return pause(lakehouse, src, src_commit.id, dest, dest_info.head, base,
                     interactive=strategy == "interactive", message=message, author=author,
                     drivers=drivers, views=views)
    if strategy == "fast_forward":
        ahead = len(side_since(store, dest_info.head, base).commits)
        raise errors.InvalidArgument(f"cannot fast-forward '{dest}' to '{src}': '{dest}' has {ahead} commit(s) "
                                     f"since their merge base that '{src}' lacks; use strategy merge or auto")
    planner = ThreeWayMerge(lakehouse, src, src_commit.id, dest, base,
                            MergeOptions(policy, message, author, drivers or {}, tuple(views or ())))
    result.commit_id = planner.land(result, dry_run=dry_run)
    result.status = "dry-run" if dry_run else "merged"
    return result


def merge_conflict(result: MergeResult) -> errors.MergeConflict:
    """The error of a merge whose conflicts stand, with its report."""
    result.status = "conflicts"
    return errors.MergeConflict(conflict_message(result), report=result)


@dataclass
class ConflictPolicy:
    default: str = "abort"
    per_table: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def parse(value) -> "ConflictPolicy":
        if value is None:
            return ConflictPolicy()
        if isinstance(value, str):
            value = {"*": value}
        if not isinstance(value, dict):
            raise errors.InvalidArgument(f"on_conflict must be abort, ours, theirs or a mapping of table to one "
                                         f"of them, not {value!r}")
        modes = {str(k).lower(): str(v).lower() for k, v in value.items()}
        wrong = {k: v for k, v in modes.items() if v not in ON_CONFLICT}
        if wrong:
            raise errors.InvalidArgument(f"on_conflict {wrong} is not valid: use abort, ours, theirs (or pause "
                                         f"for the whole merge)")
        return ConflictPolicy(modes.pop("*", "abort"), modes)

    def prefer(self, name: str) -> str | None:
        mode = self.per_table.get(name.lower(), self.default)
        return None if mode == "abort" else mode


@dataclass
class TablePlan:
    state: TableState  # dest's new version (segments and tombstones still to extend with written files)
    data: DataPlan | None
    ops: list[tuple[str, dict]]
    src_schemas: set[str]
    schema_changed: bool


@dataclass(frozen=True)
class MergeOptions:
    """How one merge plans and commits, fixed before it starts: what each path that merges (merge, a paused
    merge, rebase, run landing, commit replay, preview) chooses."""

    policy: ConflictPolicy = field(default_factory=ConflictPolicy)
    message: str | None = None
    author: str | None = None
    drivers: Mapping[str, Any] = field(default_factory=dict)  # table -> merge driver (merge/drivers.py)
    views: tuple[str, ...] = ()  # src's views to carry as well (merge/views.py)
    # A paused merge (merge/interactive.py): the choices made while paused, and what to capture.
    schema_choices: Mapping[str, str] = field(default_factory=dict)  # table -> ours | theirs for its columns
    resolutions: Mapping[str, Any] = field(default_factory=dict)  # table -> its conflict relation
    # True in a paused merge: keyless A1/A3 conflicts are decided row by row, and every keyed table's rows
    # are decided one by one (never shared as they are), so it can show them.
    keyless_rows: bool = False
    plan_data: bool = True  # False: stop each table after its schema (an interactive merge's first pause)
    finishing: str | None = None  # the id of the paused merge this plan belongs to
    # False: the result is one plain commit, as if written on dest's head (commit replay), not a merge commit.
    merge_commit: bool = True
    allow_protected: bool = True  # a merge may write a protected branch; a replayed write only if it could
    # A merge preview (diff/preview.py): plan only what decides the conflicts, and list the first this many
    # conflicting keys of each keyed table; 0: a merge that may write. Rows are planned only for keyed tables
    # both sides wrote: only there can rows conflict without a paused merge, a driver or on_conflict.
    report_only: int = 0


class ThreeWayMerge:
    def __init__(self, lakehouse: WriteContext, src_label: str, src_head: str, dest: str, base: str,
                 options: MergeOptions = MergeOptions()):
        self.lakehouse = lakehouse
        self.options = options
        store = lakehouse.store
        self.tx = Transaction(lakehouse, dest, options.message or f"merge {src_label} into {dest}", options.author,
                              allow_protected=options.allow_protected, finishing=options.finishing)
        if options.merge_commit:
            self.tx.merge_parent = src_head
        else:
            self.tx.auto_retry = False  # the replay loop retries, not this transaction
        self.ns = self.tx.ns
        self.base = Namespace(store, store.root(base), f"merge base {base[:12]}")
        self.src = Namespace(store, store.root(src_head), src_label)
        self.dest = Namespace(store, store.root(self.tx.base_head), dest)
        self.src_side = side_since(store, src_head, base)
        self.dest_side = side_since(store, self.tx.base_head, base)
        self.schema_rows: list[dict] = []  # base/ours/theirs/merged schema of each table both sides changed
        self.data_plans: dict[str, DataPlan] = {}  # table -> its plan of rows decided one by one
        self.tables: dict[str, TablePlan] = {}
        self.drop_databases: list[str] = []
        self.result: MergeResult | None = None

    # ---------------------------------------------------- plan, check, write
    def land(self, result: MergeResult, conflicts: Callable[[MergeResult], Exception] | None = None, *,
             expected_head: str | None = None,
             after_plan: Callable[["ThreeWayMerge", MergeResult], None] | None = None,
             dry_run: bool = False) -> str | None:
        """Plan, check, write: the path every merge that lands takes (a merge and rebase's steps, a paused
        merge's last step, a run landing by merge, a write replayed on a moved head). Returns the new commit's
        id; None when it wrote nothing (a dry run, or a replay whose changes dest holds already).

        `expected_head`: dest's head the caller planned against (StaleHead if it moved). `after_plan`: what the
        caller adds to the plan (a run's views) or where it stops (raising). Conflicts that stand raise
        `conflicts(result)` (by default a MergeConflict with the report); nothing is written then."""
        try:
            if expected_head is not None and self.tx.base_head != expected_head:
                raise errors.StaleHead(self.tx.branch, expected_head, self.tx.base_head)
            self.plan(result)
            if after_plan is not None:
                after_plan(self, result)
            if dry_run:
                return None
            if result.conflicts:
                raise (conflicts or merge_conflict)(result)
            if not self.options.merge_commit and not self.tx.operations and not any(
                    plan.ops for plan in self.tables.values()):
                return None  # a replayed write whose changes dest holds already
            return self.write()
        finally:
            self.release()  # the plan's cached frames (unpersisting twice is harmless)

    # --------------------------------------------------------------- plan
    def plan(self, result: MergeResult) -> None:
        self.result = result
        self._plan_databases()
        self._plan_tables()
        plan_views(self, self.options.views)
        for database_id in self.drop_databases:
            if any(db == database_id for _, db, _ in self.ns.tables.values()):
                self._conflict(result, Conflict("database", self.dest.databases[database_id][1], Op.DROP,
                                                "create table", Rule.CONFLICT, "dest created tables in it"), None)
            elif database_id in self.ns.databases:
                self.ns.remove_database(database_id)
                self.tx.record(ObjectKind.DATABASE, database_id, self.dest.databases[database_id][1], Op.DROP)

    def _conflict(self, result: MergeResult, conflict: Conflict, prefer: str | None) -> bool:
        """Report a conflict, or note it as settled; True when it stands (the object is left alone)."""
        if prefer is None:
            result.conflicts.append(conflict)
            return True
        result.resolved.append(conflict)
        return False

    @staticmethod
    def _state(ns: Namespace, kind: ObjectKind, object_id: str):
        if kind == ObjectKind.DATABASE:
            return ns.database(object_id) if object_id in ns.databases else None
        return ns.table(object_id) if object_id in ns.tables else None

    def _plan_databases(self) -> None:
        result = self.result
        ids = sorted(set(self.base.databases) | set(self.src.databases) | set(self.dest.databases))
        for database_id in ids:
            base, src, dest = (self._state(ns, ObjectKind.DATABASE, database_id)
                               for ns in (self.base, self.src, self.dest))
            prefer = self.options.policy.prefer(src.name if src else dest.name if dest else "")
            if base is None:
                if src is None or dest is not None:
                    continue
                clash = self.ns.database_id(src.name, required=False)
                if clash is not None:
                    if self._conflict(result, Conflict("database", src.name, Op.CREATE, Op.CREATE, Rule.SAME_NAME,
                                                       "same name, different id"), prefer) or prefer == "ours":
                        continue
                self.ns.adopt_database(src)
                self.tx.record(ObjectKind.DATABASE, database_id, src.name, Op.CREATE, merged=True)
                result.outcomes.append(Outcome("database", src.name, "added"))
                continue
            src_ops = matrix_ops(self.src_side.database(database_id).ops)
            dest_ops = matrix_ops(self.dest_side.database(database_id).ops)
            if not src_ops:
                continue
            clashes = [(src_op, dest_op, *found) for src_op in sorted(src_ops) for dest_op in sorted(dest_ops)
                       if (found := database_cell(src_op, dest_op, base, src, dest))[0] is not None]
            name = (src or dest or base).name
            stands = [self._conflict(result, Conflict("database", name, s, d, rule, involved), prefer)
                      for s, d, rule, involved in clashes]
            if any(stands) or (clashes and prefer == "ours"):
                continue
            if src is None:
                if dest is not None:
                    self.drop_databases.append(database_id)
                    result.outcomes.append(Outcome("database", name, "dropped"))
                continue
            if dest is None:
                continue
            merged = dest.evolve(name=_three_way(base.name, src.name, dest.name),
                                 properties=_merge_properties(base.properties, src.properties, dest.properties))
            if (merged.name, merged.properties) != (dest.name, dest.properties):
                self.ns.put_database(merged)
                if merged.name != dest.name:
                    self.tx.record(ObjectKind.DATABASE, database_id, merged.name, Op.MODIFY_NAME, old_name=dest.name)
                if merged.properties != dest.properties:
                    self.tx.record(ObjectKind.DATABASE, database_id, merged.name, Op.SET_PROPERTIES,
                                    properties=dict(merged.properties))
                result.outcomes.append(Outcome("database", merged.name, "merged"))

    def _full_name(self, ns: Namespace, state: TableState) -> str:
        database = ns.databases.get(state.database_id)
        return f"{database[1] if database else '?'}.{state.name}"

    def _plan_tables(self) -> None:
        result = self.result
        ids = sorted(set(self.base.tables) | set(self.src.tables) | set(self.dest.tables))
        for table_id in ids:
            base, src, dest = (self._state(ns, ObjectKind.TABLE, table_id) for ns in (self.base, self.src, self.dest))
            if any(s is not None and s.kind != ObjectKind.TABLE for s in (base, src, dest)):
                continue  # only databases and tables merge (SPEC 3)
            name = (self._full_name(self.src, src) if src else self._full_name(self.dest, dest) if dest
                    else self._full_name(self.base, base))
            prefer = self.options.policy.prefer(name)
            if base is None:
                if src is not None and dest is None:
                    self._add_new_table(src, name, prefer)
                continue
            src_changes, dest_changes = self.src_side.table(table_id), self.dest_side.table(table_id)
            if src is not None and src.version_id == base.version_id:
                continue  # src left it alone
            if src is None:
                if dest is not None:
                    self.ns.remove_table(table_id)
                    self.tx.record(ObjectKind.TABLE, table_id, name, Op.DROP)
                    result.outcomes.append(Outcome("table", name, "dropped"))
                continue
            if dest is None:
                dest_name = self._full_name(self.base, base)
                for op in sorted(matrix_ops(src_changes.ops) - {Op.DROP}):
                    self._conflict(result, Conflict("table", dest_name, op, Op.DROP, Rule.CONFLICT), None)
                continue
            if dest.version_id == base.version_id:
                dest_changes = ObjectChanges()
            self._plan_table(base, src, dest, src_changes, dest_changes, name, prefer)

    def _add_new_table(self, src: TableState, name: str, prefer: str | None) -> None:
        result = self.result
        if src.database_id not in self.ns.databases:
            self._conflict(result, Conflict("table", name, Op.CREATE, "drop database", Rule.CONFLICT,
                                            "its database is not on dest"), None)
            return
        clash = self.ns.table_id(f"{self.ns.databases[src.database_id][1]}.{src.name}", required=False)
        if clash is not None:
            if self._conflict(result, Conflict("table", name, Op.CREATE, Op.CREATE, Rule.SAME_NAME,
                                               "same name, different id"), prefer) or prefer == "ours":
                return
            self.ns.remove_table(clash)  # theirs: src's table replaces dest's
            self.tx.record(ObjectKind.TABLE, clash, name, Op.DROP)
        self.ns.adopt_table(src)
        self.tx.record(ObjectKind.TABLE, src.id, name, Op.CREATE, merged=True)
        if src.segments:
            self.tx.record(ObjectKind.TABLE, src.id, name, Op.INSERT, segments_added=list(src.segments),
                            tombstones_added=list(src.tombstones))
        result.outcomes.append(Outcome("table", name, "added"))

    def _plan_table(self, base: TableState, src: TableState, dest: TableState, src_changes: ObjectChanges,
                    dest_changes: ObjectChanges, name: str, prefer: str | None) -> None:
        result = self.result
        primary_key = _three_way(base.primary_key, src.primary_key, dest.primary_key)
        keyed = bool(primary_key)
        driver = drivers_for(self.options.drivers, name)
        # A keyless table's A1/A3 conflicts are decided row by row where a paused merge can show them or a
        # driver can settle them; after a whole overwrite on src there are no rows of the base left to pair.
        # on_conflict settles only the rows that conflict, so it too decides them one by one.
        by_row = (not keyed and (self.options.keyless_rows or driver is not None or prefer is not None)
                  and not src_changes.whole_overwrite)
        by_count = not keyed and rows_merge_by_count(src_changes, dest_changes)
        contested = contested_segments(src_changes, dest_changes) if by_row and not by_count else {}
        conflicts: list[Conflict] = []
        for src_op in sorted(matrix_ops(src_changes.ops)):
            for dest_op in sorted(matrix_ops(dest_changes.ops)):
                if keyed and src_op in TABLE_DML and dest_op in TABLE_DML:
                    continue  # decided per key below
                rule, involved = table_cell(src_op, dest_op, base, src, dest, src_changes, dest_changes)
                if rule in (Rule.A1, Rule.A3) and (by_row or by_count):
                    continue  # decided per row below, or no segment is shared across an overwrite
                if rule:
                    conflicts.append(Conflict("table", name, src_op, dest_op, rule, involved))
        src_wrote = bool(src_changes.ops & {Op.INSERT, Op.UPDATE, Op.OVERWRITE})
        dest_wrote = bool(dest_changes.ops & {Op.INSERT, Op.UPDATE, Op.OVERWRITE})
        base_schema, src_schema, dest_schema = (self.ns.schema(s.schema_id) for s in (base, src, dest))
        schema = merge_schemas(name, base_schema, src_schema, dest_schema, src_wrote, dest_wrote,
                               self.options.schema_choices.get(name.lower(), prefer))
        if conflicts or schema.conflicts or len({base_schema.id, src_schema.id, dest_schema.id}) > 1:
            self.schema_rows.append(schema_row(name, base_schema, dest_schema, src_schema, schema.columns,
                                               conflicts + schema.conflicts))
        if not schema.columns:
            # A6.3: no column is left to compare rows by, so no row is contested (A1, A3): the table as a whole is.
            conflicts = [c for c in conflicts if c.rule not in (Rule.A1, Rule.A3)]
        conflicts += schema.conflicts
        if prefer is None and conflicts:
            result.conflicts += conflicts
            return
        result.resolved += conflicts
        if name.lower() not in self.options.schema_choices:  # a paused merge's own choices are not on_conflict's
            result.resolved += schema.settled
        if not self.options.plan_data:
            return
        if not schema.columns:
            if self.options.schema_choices.get(name.lower(), prefer) == "theirs":
                self._take_src_table(base, src, dest, name)
            return  # ours: dest's table stays as it is
        # Attributes: a side's change wins over the base; where both changed, src's is replayed last, unless
        # `ours` settled that clash (a property or the partitioning changed differently: Rule.PROPS, PARTITION).
        keep_dest = prefer == "ours"
        props = _merge_properties(base.properties, src.properties, dest.properties, keep_dest)
        partition_by = _three_way(base.partition_by, src.partition_by, dest.partition_by, keep_dest)
        merged_schema = self._merged_schema(schema.columns, src_schema, dest_schema, dest.id)
        state = dest.evolve(name=_three_way(base.name, src.name, dest.name),
                            database_id=_three_way(base.database_id, src.database_id, dest.database_id),
                            properties=props, partition_by=partition_by, primary_key=primary_key,
                            schema_id=merged_schema.id)
        ops: list[tuple[str, dict]] = []
        if state.name != dest.name or state.database_id != dest.database_id:
            ops.append((Op.ALTER_NAME, {"old_name": self._full_name(self.dest, dest)}))
        if props != dest.properties:
            ops.append((Op.ALTER_PROPERTIES, {"set": props}))
        if primary_key != dest.primary_key:
            ops.append((Op.ALTER_PROPERTIES, {"primary_key": list(primary_key)}))
        if partition_by != dest.partition_by:
            ops.append((Op.ALTER_PARTITION, {"partition_by": list(partition_by)}))
        if merged_schema.id != dest.schema_id:
            ops.append((Op.ALTER_COLUMN, {"action": "merge"}))
        data = None
        src_dml = src_changes.ops & set(TABLE_DML)
        # src's records are against another version than the base (a merge that kept dest's table over the
        # base's rows, merged back) and list no row change, yet its rows are not the base's: dest changed
        # nothing, so src's rows are the merge's, recorded as the overwrite they are from dest's side.
        src_taken = not src_dml and src_changes.off_base and dest.version_id == base.version_id \
            and (src.segments, src.tombstones) != (dest.segments, dest.tombstones)
        if self.options.report_only and not contested and not (keyed and src_dml and dest_changes.ops & set(TABLE_DML)):
            # A preview: no row of this table can conflict. Keyless rows conflict only when decided one by one
            # (a paused merge, a driver, on_conflict: `contested`); a keyed table's only where both sides wrote.
            ops += [(op, {}) for op in sorted({Op.OVERWRITE} if src_taken else src_dml)]
            result.outcomes.append(Outcome("table", name, "merged", note=", ".join(o for o, _ in ops)))
            return
        # An operation-pair conflict (no row contested) settled by ours or theirs: the rows merge by the rules.
        # dest's rows are the base's: src's version of the data is the merged one, shared as it is unless a
        # row src changed is the same in the merged columns (then it must not be listed as changed).
        inputs = TableInputs(name, base, src, dest, src_changes, dest_changes, merged_schema, primary_key)
        merger = DataMerger(TableReader(self.lakehouse.spark, self.lakehouse.warehouse, self.ns), self.ns)
        # A count merge keeps src's rows out of the merge commit where they equal the base's in the merged columns;
        # counted from records made against another version than the base (merging back) it would go wrong, and
        # dest having changed nothing, src's version is the merge's.
        as_src = not (by_count and not src_changes.off_base
                      or keyed and src_rows_may_come_back(src_changes, base_schema, src_schema, merged_schema)
                      and merger.src_rows_come_back(inputs))
        if src_taken:
            src_dml = {Op.OVERWRITE}
            state = state.evolve(segments=src.segments, tombstones=src.tombstones)
        elif src_dml and not dest_changes.ops & set(TABLE_DML) and as_src:
            state = state.evolve(segments=src.segments, tombstones=src.tombstones)
        elif src_dml:
            if keyed:
                data = merger.keyed(inputs, prefer, driver, self.options.resolutions.get(name),
                                    share=not self.options.keyless_rows, report_only=self.options.report_only)
            else:
                data = merger.keyless(inputs, contested, prefer, driver, self.options.resolutions.get(name))
            if data.decided is not None:
                self.data_plans[name] = data
            if data.conflicts and prefer is None:
                result.conflicts += data.conflicts
                return
            result.resolved += data.conflicts
            state = state.evolve(segments=tuple(data.keep_segments) + tuple(data.add_segments),
                                 tombstones=tuple(data.tombstones))
        if src_dml:
            for op in sorted(src_dml):
                detail = {"segments_added": [s for s in state.segments if s not in dest.segments],
                          "segments_removed": [s for s in dest.segments if s not in state.segments],
                          "tombstones_added": [t for t in state.tombstones if t not in dest.tombstones],
                          "segments_touched": sorted(src_changes.touched.get(op, ()))}
                if op == Op.OVERWRITE and not detail["segments_removed"] and not src_changes.whole_overwrite:
                    # src's overwrites were recorded by difference: so is their merge, with their tombstones.
                    detail.update(difference=True, overwrite_tombstones=[
                        t for t in src_changes.overwrite_tombstones if t in state.tombstones])
                ops.append((op, detail))
        src_schemas = {s.schema_id for s in self.ns.segment_infos([s for s in state.segments
                                                                   if s not in dest.segments])}
        src_schemas |= {t.schema_id for t in self.ns.tombstone_infos([t for t in state.tombstones
                                                                      if t not in dest.tombstones])}
        self.tables[dest.id] = TablePlan(state, data, ops, src_schemas, merged_schema.id != dest.schema_id)
        result.outcomes.append(Outcome("table", name, "merged", note=", ".join(o for o, _ in ops)))

    def _take_src_table(self, base: TableState, src: TableState, dest: TableState, name: str) -> None:
        """A6.3 settled by theirs: the table becomes src's version, schema and rows, as a whole overwrite of dest's
        (its name, properties and partitioning still merge three-way)."""
        state = dest.evolve(name=_three_way(base.name, src.name, dest.name),
                            database_id=_three_way(base.database_id, src.database_id, dest.database_id),
                            properties=_merge_properties(base.properties, src.properties, dest.properties),
                            partition_by=_three_way(base.partition_by, src.partition_by, dest.partition_by),
                            schema_id=src.schema_id, segments=src.segments, tombstones=src.tombstones)
        ops: list[tuple[str, dict]] = []
        if state.name != dest.name or state.database_id != dest.database_id:
            ops.append((Op.ALTER_NAME, {"old_name": self._full_name(self.dest, dest)}))
        if state.properties != dest.properties:
            ops.append((Op.ALTER_PROPERTIES, {"set": state.properties}))
        if state.partition_by != dest.partition_by:
            ops.append((Op.ALTER_PARTITION, {"partition_by": list(state.partition_by)}))
        ops.append((Op.ALTER_COLUMN, {"action": "merge"}))
        ops.append((Op.OVERWRITE, {"segments_added": [s for s in src.segments if s not in dest.segments],
                                  "segments_removed": [s for s in dest.segments if s not in src.segments],
                                  "tombstones_added": [t for t in src.tombstones if t not in dest.tombstones],
                                  "tombstones_removed": [t for t in dest.tombstones if t not in src.tombstones]}))
        src_schemas = {s.schema_id for s in self.ns.segment_infos([s for s in src.segments
                                                                   if s not in dest.segments])}
        src_schemas |= {t.schema_id for t in self.ns.tombstone_infos([t for t in src.tombstones
                                                                      if t not in dest.tombstones])}
        self.tables[dest.id] = TablePlan(state, None, ops, src_schemas, True)
        self.result.outcomes.append(Outcome("table", name, "merged", note="src's version (A6.3, theirs)"))

    def _merged_schema(self, columns, src_schema: Schema, dest_schema: Schema, table_id: str) -> Schema:
        for existing in (dest_schema, src_schema):
            if tuple(columns) == existing.columns:
                return existing
        schema = Schema(uuid.uuid4().hex, tuple(columns))
        self.ns.add_schema(schema, table_id)
        return schema

    def release(self) -> None:
        for plan in self.tables.values():
            if plan.data is not None:
                plan.data.release()
        for data in self.data_plans.values():
            data.release()

    # -------------------------------------------------------------- write
    def write(self) -> str:
        seq = self.lakehouse.store.allocate_seq()
        written = self._write_files(seq)
        for table_id, plan in self.tables.items():
            state = plan.state
            name = self._full_name(self.ns, state) if state.database_id in self.ns.databases else table_id
            segments, replacements, revived, tombstone = (written.get((table_id, kind))
                                                          for kind in ("rows", "update", "revived", "gone"))
            new_segments, new_tombstones = [], []
            for infos in (segments, replacements, revived):
                if infos:
                    self.ns.add_segments(infos)
                    new_segments += [s.id for s in infos]
            touched: list[str] = []
            if tombstone is not None:
                self.ns.add_tombstone(tombstone)
                new_tombstones = [tombstone.id]
                touched = first_written_in(tombstone)
            history = list(state.schema_history)
            listed = {entry["schema_id"] for entry in history}
            # Schema versions src wrote rows under stay readable, out of sight; the merged one is shown.
            for schema_id in sorted((plan.src_schemas | {self.ns.segment_infos([s])[0].schema_id
                                                        for s in new_segments}) - listed - {state.schema_id}):
                history.append(history_entry(schema_id, seq, visible=False))
            if plan.schema_changed:
                history.append(history_entry(state.schema_id, seq))
            final = state.evolve(segments=state.segments + tuple(new_segments),
                                 tombstones=state.tombstones + tuple(new_tombstones), schema_history=tuple(history))
            self.ns.put_table(final)
            if plan.data is not None:
                plan.data.release()
            for op, detail in plan.ops:
                if op in TABLE_DML:
                    detail = {**detail, "seq": seq,
                              "segments_added": detail["segments_added"] + new_segments,
                              "tombstones_added": detail["tombstones_added"] + new_tombstones}
                    if op == Op.UPDATE and plan.data is not None and plan.data.replacement_rows is not None:
                        # Rows decided one by one: record every segment the merge's tombstone touched (src's
                        # images among them), so a later merge sees dest's change to them (A1/A3).
                        detail["segments_touched"] = sorted(set(detail["segments_touched"]) | set(touched))
                self.tx.record(ObjectKind.TABLE, table_id, name, op, merged=True, **detail)
        return self.tx.commit().id

    def _write_files(self, seq: int) -> dict:
        """Every table's new segments and tombstone, {(table id, "rows" | "update" | "revived" | "gone"): result},
        written side by side."""
        writer, fault = self.lakehouse.writer, self.lakehouse.fault
        jobs = {}
        for table_id, plan in self.tables.items():
            data = plan.data
            if data is None:
                continue
            state, schema = plan.state, self.ns.schema(plan.state.schema_id)
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


def _three_way(base, src, dest, keep_dest: bool = False):
    """src's value if src changed it, else dest's; dest's where both changed it and `keep_dest` (ours)."""
    if src == base or (keep_dest and dest != base):
        return dest
    return src


def _merge_properties(base: dict, src: dict, dest: dict, keep_dest: bool = False) -> dict:
    """dest's properties with src's changes replayed; with `keep_dest` (ours), not those dest changed too."""
    merged = dict(dest)
    for key in set(base) | set(src):
        if src.get(key) == base.get(key) or (keep_dest and dest.get(key) != base.get(key)):
            continue
        if key in src:
            merged[key] = src[key]
        else:
            merged.pop(key, None)
    return merged


