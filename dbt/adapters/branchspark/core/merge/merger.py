"""MERGE BRANCH src [TO dest] (SPEC section 3): plan every object, then write one merge commit.

The plan compares what each side did since the merge base (commit metadata),
checks the conflict matrices, merges schemas and, for tables both sides
changed, plans the row-level merge in Spark (over one `TableReads` a table:
merge/reads.py, handed to merge/keyed.py or merge/keyless.py). Nothing is
written until the whole plan is free of conflicts (or they are settled by
`on_conflict`); then merge/merge_write.py writes the new files and one commit
with two parents moves dest's head by compare-and-swap. A dry run stops after
the plan.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial

import uuid

from .. import errors
from ..catalog.namespace import Namespace
from ..catalog.schema import Schema
from ..catalog.state import TableState
from ..context import WriteContext
from ..operations import ObjectKind, Op
from ..storage.reader import TableReader
from ..transaction import Transaction
from .base import merge_base
from .conflict_tables import schema_row
from .contested import contested_segments
from .attributes import merge_properties, three_way
from .databases import plan_databases
from .drivers import drivers_for
from .keyed import merge_keyed, src_rows_come_back, src_rows_may_come_back
from .keyless import merge_keyless
from .merge_write import write_merge
from .options import ON_CONFLICT, STRATEGIES, ConflictPolicy, MergeOptions, TablePlan  # noqa: F401 (their home for callers)
from .reads import DataPlan, TableInputs, TableReads
from .report import Conflict, MergeResult, Outcome, conflict_message
from .rules import TABLE_DML, Rule, matrix_ops, table_cell
from .schema import merge_schemas
from .sides import ObjectChanges, rows_merge_by_count, side_since
from .views import plan_views

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
        plan_databases(self)
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
        primary_key = three_way(base.primary_key, src.primary_key, dest.primary_key)
        keyed = bool(primary_key)
        driver = drivers_for(self.options.drivers, name)
        # A keyless table's A1/A3 conflicts are decided row by row where a paused merge can show them or a
        # driver can settle them; after a whole overwrite on src there are no rows of the base left to pair.
        # on_conflict settles only the rows that conflict, so it too decides them one by one.
        by_row = (not keyed and (self.options.keyless_rows or driver is not None or prefer is not None)
                  and not src_changes.whole_overwrite)
        by_count = not keyed and rows_merge_by_count(src_changes, dest_changes)
        contested = contested_segments(src_changes, dest_changes) if by_row and not by_count else {}
        conflicts = _pair_conflicts(base, src, dest, src_changes, dest_changes, name, keyed, by_row or by_count)
        schemas = tuple(self.ns.schema(s.schema_id) for s in (base, src, dest))
        schema = self._merge_schema(name, schemas, src_changes, dest_changes, conflicts, prefer)
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
        merged_schema = self._merged_schema(schema.columns, schemas[1], schemas[2], dest.id)
        state = dest.evolve(name=three_way(base.name, src.name, dest.name),
                            database_id=three_way(base.database_id, src.database_id, dest.database_id),
                            properties=merge_properties(base.properties, src.properties, dest.properties, keep_dest),
                            partition_by=three_way(base.partition_by, src.partition_by, dest.partition_by, keep_dest),
                            primary_key=primary_key, schema_id=merged_schema.id)
        ops = self._attribute_ops(dest, state, merged_schema.id != dest.schema_id)
        inputs = TableInputs(name, base, src, dest, src_changes, dest_changes, merged_schema, primary_key)
        self._plan_rows(inputs, state, ops, schemas, prefer, driver, contested, by_count)

    def _merge_schema(self, name: str, schemas: tuple, src_changes: ObjectChanges, dest_changes: ObjectChanges,
                      conflicts: list[Conflict], prefer: str | None):
        """SPEC 3.5 and A6: the table's merged columns (merge/schema.py), noted for a paused merge's view."""
        base_schema, src_schema, dest_schema = schemas
        src_wrote = bool(src_changes.ops & {Op.INSERT, Op.UPDATE, Op.OVERWRITE})
        dest_wrote = bool(dest_changes.ops & {Op.INSERT, Op.UPDATE, Op.OVERWRITE})
        schema = merge_schemas(name, base_schema, src_schema, dest_schema, src_wrote, dest_wrote,
                               self.options.schema_choices.get(name.lower(), prefer))
        if conflicts or schema.conflicts or len({base_schema.id, src_schema.id, dest_schema.id}) > 1:
            self.schema_rows.append(schema_row(name, base_schema, dest_schema, src_schema, schema.columns,
                                               conflicts + schema.conflicts))
        return schema

    def _attribute_ops(self, dest: TableState, state: TableState, columns_merged: bool) -> list[tuple[str, dict]]:
        """The operations that turn dest's attributes into the merged `state`'s."""
        ops: list[tuple[str, dict]] = []
        if state.name != dest.name or state.database_id != dest.database_id:
            ops.append((Op.ALTER_NAME, {"old_name": self._full_name(self.dest, dest)}))
        if state.properties != dest.properties:
            ops.append((Op.ALTER_PROPERTIES, {"set": state.properties}))
        if state.primary_key != dest.primary_key:
            ops.append((Op.ALTER_PROPERTIES, {"primary_key": list(state.primary_key)}))
        if state.partition_by != dest.partition_by:
            ops.append((Op.ALTER_PARTITION, {"partition_by": list(state.partition_by)}))
        if columns_merged:
            ops.append((Op.ALTER_COLUMN, {"action": "merge"}))
        return ops

    def _plan_rows(self, inputs: TableInputs, state: TableState, ops: list, schemas: tuple, prefer: str | None,
                   driver, contested: dict, by_count: bool) -> None:
        """The table's rows: src's version as it is where only src wrote, else merged (merge/keyed.py,
        merge/keyless.py); then the table's plan, with the DML operations it records."""
        result, name, src, dest = self.result, inputs.name, inputs.src, inputs.dest
        src_changes, dest_changes = inputs.src_changes, inputs.dest_changes
        keyed = bool(inputs.primary_key)
        data = None
        src_dml = src_changes.ops & set(TABLE_DML)
        # src's records are against another version than the base (a merge that kept dest's table over the
        # base's rows, merged back) and list no row change, yet its rows are not the base's: dest changed
        # nothing, so src's rows are the merge's, recorded as the overwrite they are from dest's side.
        src_taken = not src_dml and src_changes.off_base and dest.version_id == inputs.base.version_id \
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
        reads = TableReads(TableReader(self.lakehouse.spark, self.lakehouse.warehouse, self.ns), self.ns, inputs)
        # A count merge keeps src's rows out of the merge commit where they equal the base's in the merged columns;
        # counted from records made against another version than the base (merging back) it would go wrong, and
        # dest having changed nothing, src's version is the merge's.
        as_src = not (by_count and not src_changes.off_base
                      or keyed and src_rows_may_come_back(src_changes, schemas[0], schemas[1], inputs.schema)
                      and src_rows_come_back(reads))
        if src_taken:
            src_dml = {Op.OVERWRITE}
            state = state.evolve(segments=src.segments, tombstones=src.tombstones)
        elif src_dml and not dest_changes.ops & set(TABLE_DML) and as_src:
            state = state.evolve(segments=src.segments, tombstones=src.tombstones)
        elif src_dml:
            data = self._merge_rows(reads, prefer, driver, contested)
            if data is None:
                return  # its conflicts stand
            state = state.evolve(segments=tuple(data.keep_segments) + tuple(data.add_segments),
                                 tombstones=tuple(data.tombstones))
        ops += [(op, _row_op_detail(op, state, dest, src_changes)) for op in sorted(src_dml)]
        self.tables[dest.id] = TablePlan(state, data, ops, self._src_schemas(state, dest),
                                         state.schema_id != dest.schema_id)
        result.outcomes.append(Outcome("table", name, "merged", note=", ".join(o for o, _ in ops)))

    def _merge_rows(self, reads: TableReads, prefer: str | None, driver, contested: dict) -> DataPlan | None:
        """The rows of a table both sides wrote, merged; None when conflicts stand (then reported)."""
        name, result = reads.inputs.name, self.result
        if reads.inputs.primary_key:
            data = merge_keyed(reads, prefer, driver, self.options.resolutions.get(name),
                               share=not self.options.keyless_rows, report_only=self.options.report_only)
        else:
            data = merge_keyless(reads, contested, prefer, driver, self.options.resolutions.get(name))
        if data.decided is not None:
            self.data_plans[name] = data
        if data.conflicts and prefer is None:
            result.conflicts += data.conflicts
            return None
        result.resolved += data.conflicts
        return data

    def _src_schemas(self, state: TableState, dest: TableState) -> set[str]:
        """The schema versions of the segments and tombstones the merge brings dest."""
        src_schemas = {s.schema_id for s in self.ns.segment_infos([s for s in state.segments
                                                                   if s not in dest.segments])}
        src_schemas |= {t.schema_id for t in self.ns.tombstone_infos([t for t in state.tombstones
                                                                      if t not in dest.tombstones])}
        return src_schemas

    def _take_src_table(self, base: TableState, src: TableState, dest: TableState, name: str) -> None:
        """A6.3 settled by theirs: the table becomes src's version, schema and rows, as a whole overwrite of dest's
        (its name, properties and partitioning still merge three-way)."""
        state = dest.evolve(name=three_way(base.name, src.name, dest.name),
                            database_id=three_way(base.database_id, src.database_id, dest.database_id),
                            properties=merge_properties(base.properties, src.properties, dest.properties),
                            partition_by=three_way(base.partition_by, src.partition_by, dest.partition_by),
                            schema_id=src.schema_id, segments=src.segments, tombstones=src.tombstones)
        ops = self._attribute_ops(dest, state, True)
        ops.append((Op.OVERWRITE, {"segments_added": [s for s in src.segments if s not in dest.segments],
                                  "segments_removed": [s for s in dest.segments if s not in src.segments],
                                  "tombstones_added": [t for t in src.tombstones if t not in dest.tombstones],
                                  "tombstones_removed": [t for t in dest.tombstones if t not in src.tombstones]}))
        self.tables[dest.id] = TablePlan(state, None, ops, self._src_schemas(state, dest), True)
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

    def write(self) -> str:
        return write_merge(self.lakehouse, self.tx, self.tables, partial(self._full_name, self.ns))


def _pair_conflicts(base: TableState, src: TableState, dest: TableState, src_changes: ObjectChanges,
                    dest_changes: ObjectChanges, name: str, keyed: bool, by_rows: bool) -> list[Conflict]:
    """The conflicts of the operation pairs (SPEC 3.3): a keyed table's DML pairs are decided per key
    instead, and A1/A3 per row or by count where `by_rows`."""
    conflicts: list[Conflict] = []
    for src_op in sorted(matrix_ops(src_changes.ops)):
        for dest_op in sorted(matrix_ops(dest_changes.ops)):
            if keyed and src_op in TABLE_DML and dest_op in TABLE_DML:
                continue  # decided per key
            rule, involved = table_cell(src_op, dest_op, base, src, dest, src_changes, dest_changes)
            if rule in (Rule.A1, Rule.A3) and by_rows:
                continue  # decided per row, or no segment is shared across an overwrite
            if rule:
                conflicts.append(Conflict("table", name, src_op, dest_op, rule, involved))
    return conflicts


def _row_op_detail(op: str, state: TableState, dest: TableState, src_changes: ObjectChanges) -> dict:
    """What a DML operation the merge records on dest changed: the segments and tombstones it brings."""
    detail = {"segments_added": [s for s in state.segments if s not in dest.segments],
              "segments_removed": [s for s in dest.segments if s not in state.segments],
              "tombstones_added": [t for t in state.tombstones if t not in dest.tombstones],
              "segments_touched": sorted(src_changes.touched.get(op, ()))}
    if op == Op.OVERWRITE and not detail["segments_removed"] and not src_changes.whole_overwrite:
        # src's overwrites were recorded by difference: so is their merge, with their tombstones.
        detail.update(difference=True, overwrite_tombstones=[
            t for t in src_changes.overwrite_tombstones if t in state.tombstones])
    return detail
