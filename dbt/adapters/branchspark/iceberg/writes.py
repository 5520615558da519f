"""The Iceberg REST catalog's writes on a branch (SPEC 6, 11; docs/iceberg.md): namespaces, create (also
staged, for CTAS), table commits, multi-table transactions, rename and drop.

Each request is ONE branchspark transaction on the branch the prefix names, committed by compare-and-swap
of the branch head: a table commit's requirements are checked against the served metadata of the head the
transaction started from, so a stale one is a 409 the client's own retry answers by reloading; when another
commit lands on the branch meanwhile, the transaction runs again on the new head, requirements and all.
What a commit's snapshot changed becomes segments and tombstones (commit_data.py), recorded as the
operation it is (insert, delete, update), so merges, branch_changes, diff, the UI and gc treat it as any
other branchspark write.
"""
from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import replace

from pyiceberg.io import load_file_io
from pyiceberg.schema import Schema as IcebergSchema
from pyiceberg.table.metadata import TableMetadataV2
from pyiceberg.table.snapshots import Snapshot as IcebergSnapshot
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

from . import files
from .commit_data import DecodedFiles, ListedEntries, snapshot_changes, write_extracted, write_tombstones
from .metadata import WRITER_OWNED_PROPERTIES
from .schema import PARTITION_FIELD_ID_BASE, FieldIds, iceberg_schema, partition_spec, spark_type
from ..core import errors
from ..core.catalog.namespace import check_name, split_name
from ..core.catalog.schema import Column, Schema, check_widening, history_entry
from ..core.catalog.state import TableState
from ..core.catalog.tombstones import first_written_in
from ..core.lakehouse import Snapshot
from ..core.operations import ObjectKind, Op
from ..core.storage import object_store
from ..core.imports.formats import read_source
from ..core.imports.landing import land_import
from ..core.transaction import Transaction

AUTHOR = "iceberg-rest"
_ATTEMPTS = 20  # runs of one request on a branch other commits keep moving
REQUIREMENTS = ("assert-create", "assert-table-uuid", "assert-ref-snapshot-id", "assert-last-assigned-field-id",
                "assert-current-schema-id", "assert-last-assigned-partition-id", "assert-default-spec-id",
                "assert-default-sort-order-id")
UPDATES = ("assign-uuid", "upgrade-format-version", "add-schema", "set-current-schema", "add-spec",
           "set-default-spec", "add-sort-order", "set-default-sort-order", "add-snapshot", "set-snapshot-ref",
           "remove-snapshot-ref", "set-properties", "remove-properties", "set-location")
# Requirement -> the served metadata's field it compares with.
_COMPARED = {"assert-table-uuid": ("uuid", "table-uuid"),
             "assert-last-assigned-field-id": ("last-assigned-field-id", "last-column-id"),
             "assert-current-schema-id": ("current-schema-id", "current-schema-id"),
             "assert-last-assigned-partition-id": ("last-assigned-partition-id", "last-partition-id"),
             "assert-default-spec-id": ("default-spec-id", "default-spec-id"),
             "assert-default-sort-order-id": ("default-sort-order-id", "default-sort-order-id")}


class CommitFailed(errors.BranchsparkError):
    """A requirement the branch head no longer meets: 409, the client reloads and retries."""


class Forbidden(errors.BranchsparkError):
    """A ref that cannot be written: 403."""


class NamespaceNotEmpty(errors.BranchsparkError):
    """409 NamespaceNotEmptyException."""


class CatalogWrites:
    def __init__(self, service):
        self.service = service
        self.lakehouse = service.lakehouse
        self.warehouse = self.lakehouse.warehouse
        # The server reads what writers wrote (manifests, position deletes) with its own credentials.
        self.io = load_file_io(object_store.client_properties(self.warehouse.root, True), self.warehouse.root)
        self.listed = ListedEntries()  # manifests' entries, read once
        self.decoded = DecodedFiles(service.row_cache_bytes)  # data files' rows, for the next commits

    # ------------------------------------------------------------ branches
    def branch(self, ref: str) -> str:
        """The branch a write on `ref` lands on; fixed versions and protected branches refuse."""
        ref = (ref or "main").strip()
        if "@" in ref:
            name = ref.split("@", 1)[0]
            raise Forbidden(f"warehouse '{ref}' is a fixed version of branch '{name}' and cannot be written: write "
                            f"with warehouse={name} or another branch")
        info = self.lakehouse.store.find_branch(ref)
        if info is None:
            raise errors.BranchNotFound(ref)
        if info.protected:
            raise Forbidden(f"branch '{ref}' is protected and changes only by merge: write on another branch "
                            f"(warehouse=<branch>) and merge into it instead")
        return ref

    def _run(self, ref: str, message: str, apply: Callable[[Transaction], object]):
        """Run `apply` in a transaction on the branch and commit it; on a moved head, run it again there."""
        branch = self.branch(ref)
        for _ in range(_ATTEMPTS):
            txn = Transaction(self.lakehouse, branch, message=message, author=AUTHOR)
            result = apply(txn)
            try:
                return txn.commit(), result
            except errors.StaleHead:
                continue  # another commit landed: check and apply again on the new head
        raise CommitFailed(f"branch '{branch}' kept moving during {_ATTEMPTS} attempts of this commit: retry it")

    def _after(self, ref: str, commit) -> Snapshot:
        if commit is None:
            return self.service.snapshot(ref)
        return Snapshot(self.lakehouse, commit, ref)

    # ---------------------------------------------------------- namespaces
    def create_namespace(self, ref: str, body: dict) -> dict:
        name = _single_level(body.get("namespace"))
        properties = {str(k): str(v) for k, v in (body.get("properties") or {}).items()}
        self._run(ref, f"iceberg: create namespace {name}", lambda t: t.create_database(name, properties))
        return {"namespace": [name], "properties": properties}

    def drop_namespace(self, ref: str, name: str) -> None:
        def drop(txn: Transaction):
            database_id = txn.ns.database_id(name)
            if txn.ns.table_ids(database_id):
                raise NamespaceNotEmpty(f"namespace '{name}' on branch '{txn.branch}' still has tables or views: drop "
                                        f"them first")
            txn.drop_database(name)
        self._run(ref, f"iceberg: drop namespace {name}", drop)

    def update_namespace_properties(self, ref: str, name: str, body: dict) -> dict:
        removals = [str(k) for k in body.get("removals") or []]
        updates = {str(k): str(v) for k, v in (body.get("updates") or {}).items()}
        both = sorted(set(removals) & set(updates))
        if both:
            raise errors.InvalidArgument(f"properties {both} are both removed and updated: name each once")

        def change(txn: Transaction):
            present = txn.ns.database(txn.ns.database_id(name)).properties
            removed = [k for k in removals if k in present]
            if updates:
                txn.set_database_properties(name, updates)
            if removed:
                txn.unset_database_properties(name, removed)
            return removed

        _, removed = self._run(ref, f"iceberg: namespace {name} properties", change)
        return {"updated": sorted(updates), "removed": removed, "missing": [k for k in removals if k not in removed]}

    # -------------------------------------------------------------- tables
    def create_table(self, ref: str, namespace: str, body: dict) -> bytes:
        name = str(body.get("name") or "")
        full = f"{namespace}.{name}"
        check_name("table", name)
        _refuse_layout(full, None, body.get("write-order"))
        if body.get("location"):
            raise errors.InvalidArgument(f"table {full}: branchspark serve places tables in the warehouse itself; "
                                         f"leave the location out")
        properties = _stored_properties(full, body.get("properties") or {})
        schema = IcebergSchema.model_validate(body["schema"])
        columns = self._new_columns(full, schema)
        partition_by = _partition_columns(full, body.get("partition-spec"), {f.field_id: f.name for f in schema.fields})
        if body.get("stage-create"):
            branch = self.branch(ref)
            snapshot = self.service.snapshot(branch)
            snapshot.ns.database_id(namespace)
            if snapshot.has_table(full):
                raise errors.AlreadyExists("table", full, branch)
            return json.dumps({"metadata": self._staged_metadata(uuid.uuid4().hex, full, columns, properties,
                                                                 partition_by),
                               "config": self.service.file_io}).encode()

        def create(txn: Transaction):
            self._create(txn, full, uuid.uuid4().hex, columns, properties, partition_by)
        commit, _ = self._run(ref, f"iceberg: create table {full}", create)
        return self.service.load_table(self._after(ref, commit), namespace, name)

    def register_table(self, ref: str, namespace: str, body: dict) -> bytes:
        """Iceberg's register: a branch table of the Iceberg table whose metadata file the client names, made as
        `branchspark import` makes it (docs/import.md): its files borrowed where they lie, its position deletes
        tombstones, one commit, no data file written."""
        name = str(body.get("name") or "")
        full = f"{namespace}.{name}"
        check_name("table", name)
        location = str(body.get("metadata-location") or "")
        if not location.endswith(".metadata.json"):
            raise errors.InvalidArgument(f"register table {full}: give metadata-location, the table's "
                                         f"<n>.metadata.json file (got '{location}')")
        if body.get("overwrite"):
            raise errors.InvalidArgument(f"register table {full}: overwrite is not supported; drop the table first, "
                                         f"or register it under another name")
        self.branch(ref)  # a fixed version or a protected branch refuses before the source is read
        source = read_source(location, "iceberg")

        def register(txn: Transaction):
            txn.ns.database_id(namespace)  # a missing namespace is refused, as create table refuses it
            land_import(txn, source, full, [])
        commit, _ = self._run(ref, f"iceberg: register table {full} from {location}", register)
        return self.service.load_table(self._after(ref, commit), namespace, name)

    def _new_columns(self, full: str, schema: IcebergSchema) -> list[Column]:
        ids = self.lakehouse.store.allocate_seqs(len(schema.fields)) if schema.fields else []
        return [self._column(full, column_id, field) for column_id, field in zip(ids, schema.fields)]

    @staticmethod
    def _column(full: str, column_id: int, field) -> Column:
        check_name("column", field.name)
        return Column(column_id, field.name, spark_type(field, full).json(), not field.required)

    def _staged_metadata(self, table_id: str, full: str, columns: list[Column], properties: dict,
                         partition_by: list[str]) -> dict:
        """The metadata of a table not created yet (stage-create): its column ids are the ones the commit
        that creates it will carry, and its write.data.path a segment directory of that table."""
        staged = Schema("staged", tuple(columns))
        ids = FieldIds(first=10**12)  # a new table: its own columns' ids, nested fields far above them
        schema = iceberg_schema(staged, 0, full, ids)
        seq = self.lakehouse.store.allocate_seq()
        # the spec loadTable will serve for it: identity fields numbered from PARTITION_FIELD_ID_BASE
        field_ids = {staged.column(n).id: PARTITION_FIELD_ID_BASE + i for i, n in enumerate(partition_by)}
        spec = partition_spec(staged, partition_by, 0, field_ids, ids)
        metadata = TableMetadataV2(
            location=files.absolute(self.warehouse, self.warehouse.table_dir(table_id)),
            table_uuid=uuid.UUID(hex=table_id), last_updated_ms=int(time.time() * 1000),
            last_column_id=max([c.id for c in columns] or [0]), schemas=[schema], current_schema_id=0,
            partition_specs=[spec], default_spec_id=0,
            last_partition_id=max(field_ids.values(), default=PARTITION_FIELD_ID_BASE - 1),
            properties={**files.ICEBERG_TABLE_DEFAULTS, **properties, "write.object-storage.enabled": "false",
                        "write.data.path": files.absolute(self.warehouse, files.writers_segment_dir(
                            self.warehouse, table_id, seq, f"staged-{table_id}"))},
            sort_orders=[UNSORTED_SORT_ORDER], default_sort_order_id=UNSORTED_SORT_ORDER.order_id)
        return json.loads(metadata.model_dump_json(exclude_none=True))

    def _create(self, txn: Transaction, full: str, table_id: str, columns: list[Column], properties: dict,
                partition_by: list[str]) -> None:
        db_name, table_name = split_name(full)
        database_id = txn.ns.database_id(db_name)
        if txn.ns.table_id(full, required=False) is not None:
            raise errors.AlreadyExists("table", full, txn.branch)
        names = [c.name.lower() for c in columns]
        if len(set(names)) != len(names):
            raise errors.InvalidArgument(f"table {full}: a column name appears twice in its schema")
        schema = Schema(uuid.uuid4().hex, tuple(columns))
        seq = txn._seq()
        state = TableState(None, table_id, database_id, table_name, ObjectKind.TABLE, dict(properties),
                           tuple(partition_by), (), schema.id, (history_entry(schema.id, seq),))
        txn.ns.add_schema(schema, table_id)
        txn.ns.put_table(state)
        txn.record(ObjectKind.TABLE, table_id, full, Op.CREATE, columns=[c.name for c in columns],
                   partition_by=list(partition_by),
                   primary_key=[])

    def drop_table(self, ref: str, namespace: str, name: str) -> None:
        full = f"{namespace}.{name}"
        self._run(ref, f"iceberg: drop table {full}", lambda t: (t.ns.database_id(namespace), t.drop_table(full)))

    def rename_table(self, ref: str, body: dict) -> None:
        source, destination = _identifier(body.get("source")), _identifier(body.get("destination"))
        self._run(ref, f"iceberg: rename table {source} to {destination}",
                  lambda t: t.rename_table(source, destination))

    # ------------------------------------------------------------- commits
    def commit_table(self, ref: str, namespace: str, name: str, body: dict) -> bytes:
        full = f"{namespace}.{name}"
        change = {"identifier": {"namespace": [namespace], "name": name}, **body}
        commit, _ = self._run(ref, self._message([change]), lambda t: self._apply(t, full, change))
        return self.service.load_table(self._after(ref, commit), namespace, name)

    def commit_transaction(self, ref: str, body: dict) -> None:
        changes = body.get("table-changes")
        if not isinstance(changes, list) or not changes:
            raise errors.InvalidArgument("a transaction commit needs table-changes: a list of table commits")
        named = [(_identifier(c.get("identifier")), c) for c in changes]
        fulls = [n for n, _ in named]
        if len(set(fulls)) != len(fulls):
            raise errors.InvalidArgument(f"a transaction names a table twice ({fulls}): one change per table")

        def apply(txn: Transaction):
            for full, change in named:
                self._apply(txn, full, change)
        self._run(ref, self._message(changes), apply)

    @staticmethod
    def _message(changes: list[dict]) -> str:
        parts = []
        for change in changes:
            identifier = change.get("identifier") or {}
            ops = [u.get("snapshot", {}).get("summary", {}).get("operation") for u in change.get("updates") or []
                   if u.get("action") == "add-snapshot"]
            parts.append(f"{'.'.join(identifier.get('namespace') or [])}.{identifier.get('name')}"
                         + (f" ({', '.join(o for o in ops if o)})" if any(ops) else ""))
        return "iceberg: commit " + "; ".join(parts)

    def _apply(self, txn: Transaction, full: str, change: dict) -> None:
        requirements = change.get("requirements") or []
        updates = change.get("updates") or []
        unknown = sorted({r.get("type") for r in requirements if r.get("type") not in REQUIREMENTS} |
                         {u.get("action") for u in updates if u.get("action") not in UPDATES}, key=str)
        if unknown:
            raise errors.InvalidArgument(f"table {full}: branchspark serve does not support {unknown} in a commit "
                                         f"(it takes requirements {list(REQUIREMENTS)} and updates {list(UPDATES)})")
        db_name, _ = split_name(full)
        txn.ns.database_id(db_name)
        if any(r.get("type") == "assert-create" for r in requirements):
            if txn.ns.table_id(full, required=False) is not None:
                raise CommitFailed(f"table {full} already exists on branch '{txn.branch}' (assert-create failed)")
            self._create_from_updates(txn, full, updates)
            return
        state = txn._writable_table(full)
        _refuse_shape(full, state)
        current = self._served(txn, full)
        for requirement in requirements:
            _check(full, txn.branch, requirement, current)
        self._apply_updates(txn, full, current, updates)

    def _served(self, txn: Transaction, full: str) -> dict:
        """The metadata clients read of `full` at the head the transaction started from."""
        db_name, table_name = split_name(full)
        head = Snapshot(self.lakehouse, self.lakehouse.store.get_commit(txn.base_head), txn.branch)
        return json.loads(self.service.load_table(head, db_name, table_name))["metadata"]

    def _create_from_updates(self, txn: Transaction, full: str, updates: list[dict]) -> None:
        """A staged table's create commit (CTAS): the updates describe the table as stage-create answered it."""
        table_id, schema, properties, snapshots, spec = None, None, {}, {}, None
        for update in updates:
            action = update["action"]
            if action == "assign-uuid":
                table_id = uuid.UUID(update["uuid"]).hex
            elif action == "add-schema":
                schema = IcebergSchema.model_validate(update["schema"])
            elif action == "add-spec":
                spec = update.get("spec")
            elif action == "add-sort-order":
                _refuse_layout(full, None, update.get("sort-order"))
            elif action == "set-properties":  # stage-create's answer, with the served ones of its own
                given = {k: v for k, v in (update.get("updates") or {}).items()
                         if k not in WRITER_OWNED_PROPERTIES and not _computed(k)}
                properties.update(_stored_properties(full, given))
            elif action == "remove-properties":
                for key in update.get("removals") or []:
                    properties.pop(key, None)
            elif action == "upgrade-format-version":
                _format_version(full, update)
            elif action == "add-snapshot":
                snapshots[update["snapshot"]["snapshot-id"]] = update["snapshot"]
        if table_id is None or schema is None:
            raise errors.InvalidArgument(f"table {full}: a create commit needs assign-uuid and add-schema")
        columns = [self._column(full, field.field_id, field) for field in schema.fields]
        partition_by = _partition_columns(full, spec, {f.field_id: f.name for f in schema.fields})
        self._create(txn, full, table_id, columns, properties, partition_by)
        published = []
        for update in updates:
            if update["action"] == "set-location" and update["location"].rstrip("/") != files.absolute(
                    self.warehouse, self.warehouse.table_dir(table_id)):
                raise errors.InvalidArgument(f"table {full}: branchspark serve places tables itself; keep the "
                                             f"location stage-create answered")
            if update["action"] == "set-snapshot-ref":
                published.append(self._set_main(full, update, snapshots, None))
        self._land(txn, full, published, snapshots)

    def _apply_updates(self, txn: Transaction, full: str, current: dict, updates: list[dict]) -> None:
        added_schemas: list[IcebergSchema] = []
        snapshots: dict[int, dict] = {}
        new_columns = False
        published = []
        replaced = False  # a replace (RTAS, CREATE OR REPLACE): the table's rows are what its snapshot holds
        added_specs: set[int] = set()
        for update in updates:
            action = update["action"]
            if action == "assign-uuid" and update["uuid"] != current["table-uuid"]:
                raise errors.InvalidArgument(f"table {full} has uuid {current['table-uuid']}; it cannot change")
            elif action == "upgrade-format-version":
                _format_version(full, update)
            elif action == "add-schema":
                added_schemas.append(IcebergSchema.model_validate(update["schema"]))
            elif action == "set-current-schema":
                wanted = update["schema-id"]
                if wanted == -1 and added_schemas:
                    chosen = added_schemas[-1]
                else:
                    chosen = next((s for s in added_schemas if s.schema_id == wanted), None) or next(
                        (IcebergSchema.model_validate(s) for s in current["schemas"] if s["schema-id"] == wanted), None)
                if chosen is None:
                    raise errors.InvalidArgument(f"table {full}: set-current-schema names schema {wanted}, which "
                                                 f"neither the table nor this commit has")
                new_columns |= self._evolve(txn, full, chosen)
            elif action == "add-spec":  # a replace names the spec again: it must be the table's partitioning
                state = txn._writable_table(full)
                schema, ids = txn._schema(state), _served_ids(txn, state)
                wanted = _partition_columns(full, update.get("spec"), {ids.column(c): c.name for c in schema.columns})
                have = list(txn._writable_table(full).partition_by)
                if wanted != have:
                    raise errors.InvalidArgument(f"table {full} is partitioned by {have or 'nothing'}: branchspark "
                                                 f"serve does not change a table's partitioning through Iceberg "
                                                 f"(asked: {wanted or 'unpartitioned'}); use branchspark's "
                                                 f"set_partitioning")
                added_specs.add(update["spec"].get("spec-id", 0))
            elif action == "add-sort-order":
                _refuse_layout(full, None, update.get("sort-order"))
            elif action in ("set-default-spec", "set-default-sort-order"):
                chosen = update.get("spec-id", update.get("sort-order-id"))
                if chosen not in (-1, 0) and not (action == "set-default-spec" and chosen in added_specs):
                    raise errors.InvalidArgument(f"table {full}: {action} {chosen}: branchspark serve keeps a table's "
                                                 f"partitioning and leaves tables unsorted through Iceberg writes")
            elif action == "set-properties":
                given = {k: v for k, v in (update.get("updates") or {}).items() if not _computed(k)
                         and not (k in WRITER_OWNED_PROPERTIES and current["properties"].get(k) == v)}
                wanted = _stored_properties(full, given)
                have = txn.ns.table(txn.ns.table_id(full)).properties
                changed = {k: v for k, v in wanted.items() if have.get(k) != v}
                if changed:
                    txn.set_table_properties(full, changed)
            elif action == "remove-properties":
                have = txn.ns.table(txn.ns.table_id(full)).properties
                present = [k for k in update.get("removals") or [] if k in have]
                if present:
                    txn.unset_table_properties(full, present)
            elif action == "set-location":
                if update["location"].rstrip("/") != current["location"].rstrip("/"):
                    raise errors.InvalidArgument(f"table {full} lives at {current['location']}: branchspark serve "
                                                 f"does not move tables")
            elif action == "add-snapshot":
                snapshots[update["snapshot"]["snapshot-id"]] = update["snapshot"]
            elif action == "remove-snapshot-ref":
                if update.get("ref-name") != "main":
                    raise errors.InvalidArgument(f"table {full}: ref '{update.get('ref-name')}': branchspark serve "
                                                 f"writes the table's main ref only")
                replaced = True
            elif action == "set-snapshot-ref":
                if snapshots and new_columns:
                    raise errors.InvalidArgument(f"table {full}: a commit that adds columns and data files at once "
                                                 f"is not supported; add the columns in a commit of their own first")
                published.append(self._set_main(full, update, snapshots, current))
        dangling = set(snapshots) - set(published)
        if dangling:
            raise errors.InvalidArgument(f"table {full}: snapshot(s) {sorted(dangling)} added but not set as ref main; "
                                         f"branchspark serve keeps no unpublished snapshots (the warehouse is the "
                                         f"branch: write-audit-publish on a branchspark branch)")
        self._land(txn, full, published, snapshots, replaced)

    def _land(self, txn: Transaction, full: str, published: list, snapshots: dict, replaced: bool = False) -> None:
        """Land what the commit's last published snapshot holds against the head, as one change: a client's
        snapshots within one commit (PyIceberg's overwrite: a delete, then an append) build on each other as
        the client sees them, so only the last one's files, with the delete files any of them added, say
        what the commit changed."""
        final = published[-1] if published else None
        if final in snapshots:
            self._land_snapshot(txn, full, IcebergSnapshot.model_validate(snapshots[final]), set(snapshots), replaced)
        elif replaced:  # replaced by nothing (an RTAS of no rows)
            self._land_snapshot(txn, full, None, set(snapshots), replaced)

    @staticmethod
    def _set_main(full: str, update: dict, snapshots: dict, current: dict | None):
        ref_name, snapshot_id = update.get("ref-name"), update.get("snapshot-id")
        if ref_name != "main":
            raise errors.InvalidArgument(f"table {full}: ref '{ref_name}': branchspark serve writes the table's main "
                                         f"ref only; the warehouse names the branch (warehouse=<branch>)")
        if snapshot_id not in snapshots:
            if current is not None and snapshot_id == current.get("current-snapshot-id"):
                return snapshot_id
            raise errors.InvalidArgument(f"table {full}: set-snapshot-ref to snapshot {snapshot_id}, which this commit "
                                         f"does not add; to go back to an older version use branchspark restore")
        return snapshot_id

    def _land_snapshot(self, txn: Transaction, full: str, snapshot: IcebergSnapshot | None, added: set[int],
                       replaced: bool = False) -> None:
        """The snapshot's data changes as segments and tombstones, recorded as insert / delete / update
        (`added`: the snapshot ids this commit adds); a replace as an overwrite by rows (SPEC 3.3, 4: what
        it removed and added relative to the table it replaced; rows it rewrote as they were are no change)."""
        state = txn._writable_table(full)
        changes = snapshot_changes(self.warehouse, self.io, snapshot, state, txn.ns,
                                   self.service.builder.deletes_memo, full, added, self.listed,
                                   self.decoded)
        if changes.empty:
            return
        seq = txn._seq()
        tombstones = write_tombstones(self.warehouse, state, txn.ns.schema, changes.deleted, seq, changes.rows)
        # the new files' copies of rows a rewrite did not change: deleted at once, the old rows stay
        copies = write_tombstones(self.warehouse, state, txn.ns.schema, changes.carried, seq, changes.rows)
        segments = changes.added + write_extracted(self.warehouse, state, changes.extract, seq, changes.rows)
        txn.ns.add_segments(segments)
        for tombstone in tombstones + copies:
            txn.ns.add_tombstone(tombstone)
        txn.ns.put_table(state.evolve(segments=state.segments + tuple(s.id for s in segments),
                                      tombstones=state.tombstones + tuple(t.id for t in tombstones + copies)))
        origin = {"iceberg_snapshot": snapshot.snapshot_id if snapshot else None,
                  "iceberg_operation": str(snapshot.summary.operation.value) if snapshot and snapshot.summary else None}
        if replaced:
            txn.record(ObjectKind.TABLE, state.id, full, Op.OVERWRITE, seq=seq, difference=True,
                       segments_added=[s.id for s in segments],
                       tombstones_added=[t.id for t in tombstones + copies],
                       overwrite_tombstones=[t.id for t in tombstones],
                       segments_touched=sorted({g for t in tombstones for g in first_written_in(t)}),
                       rows=sum(t.row_count for t in tombstones), **origin)
            return
        added = {"segments_added": [s.id for s in segments], "tombstones_added": [t.id for t in copies]}
        if tombstones:
            # rows a copy-on-write rewrite or a position delete removed; with new rows, those replace them
            touched = sorted({g for t in tombstones for g in first_written_in(t)})
            kept = {} if changes.new_rows else added  # new files holding only copies: a delete that carries them
            txn.record(ObjectKind.TABLE, state.id, full, Op.UPDATE if changes.new_rows else Op.DELETE, seq=seq,
                       segments_touched=touched, rows=sum(t.row_count for t in tombstones), **origin,
                       **{**kept, "tombstones_added": [t.id for t in tombstones] + kept.get("tombstones_added", [])})
        if segments and (changes.new_rows or not tombstones):
            # the copies' tombstone goes with the segments it applies to (a merge carries both)
            txn.record(ObjectKind.TABLE, state.id, full, Op.INSERT, seq=seq, **added, **origin)

    def _evolve(self, txn: Transaction, full: str, chosen: IcebergSchema) -> bool:
        """Make the table's columns `chosen`'s (SPEC 2's alter column: add, drop, rename, widen, nullability),
        matched by their served field ids (iceberg/schema.py's FieldIds). True when it added columns."""
        state = txn._writable_table(full)
        schema, ids = txn._schema(state), _served_ids(txn, state)
        wanted = {f.field_id: f for f in chosen.fields}
        added = False
        for column in schema.columns:
            if ids.column(column) not in wanted:
                txn.drop_column(full, column.name)
        for field in chosen.fields:
            new_type = spark_type(field, full)
            state = txn._writable_table(full)
            schema = txn._schema(state)
            old = ids.find(schema, field.field_id)
            if old is None:
                if field.required:
                    raise errors.InvalidSchemaChange(f"table {full}: cannot add required column '{field.name}' "
                                                     f"through Iceberg; add it as optional")
                check_name("column", field.name)
                if schema.column(field.name) is not None:
                    raise errors.AlreadyExists("column", f"{full}.{field.name}", txn.branch)
                new = Column(txn._seq(), field.name, new_type.json(), True, None)
                txn._new_schema(full, state, list(schema.columns) + [new], action="add", column=field.name,
                                column_id=new.id, type=new_type.simpleString(), nullable=True, default=None)
                added = True
                continue
            if old.name != field.name:
                txn.rename_column(full, old.name, field.name)
                state = txn._writable_table(full)
                schema = txn._schema(state)
                old = ids.find(schema, field.field_id)
            if new_type.json() != old.type_json:
                check_widening(full, old.name, old.data_type, new_type)
                txn._new_schema(full, state, [replace(c, type_json=new_type.json())
                                              if c.id == old.id else c for c in schema.columns],
                                action="type", column=old.name, column_id=old.id, old_type=old.type,
                                type=new_type.simpleString())
                state = txn._writable_table(full)
                schema = txn._schema(state)
                old = ids.find(schema, field.field_id)
            if old.nullable == field.required:
                if field.required:
                    raise errors.InvalidSchemaChange(f"table {full}: making column '{old.name}' required is not "
                                                     f"supported through Iceberg; use branchspark's set_nullable")
                txn._new_schema(full, state, [replace(c, nullable=True)
                                              if c.id == old.id else c for c in schema.columns],
                                action="nullability", column=old.name, column_id=old.id, nullable=True)
        return added


def _served_ids(txn: Transaction, state: TableState) -> FieldIds:
    """The field ids the table's columns are served under (a client's schema names them)."""
    return FieldIds.of_table([txn._schema(state)], [txn.ns.schema(e["schema_id"]) for e in state.schema_history])


def _check(full: str, branch: str, requirement: dict, current: dict) -> None:
    kind = requirement["type"]
    if kind == "assert-ref-snapshot-id":
        ref = requirement.get("ref")
        expected = requirement.get("snapshot-id")
        actual = (current.get("refs") or {}).get(ref, {}).get("snapshot-id")
    else:
        field, served = _COMPARED[kind]
        expected, actual = requirement.get(field), current.get(served)
    if expected != actual:
        raise CommitFailed(f"table {full} changed on branch '{branch}' since it was read ({kind}: expected "
                           f"{expected}, the branch head has {actual}): reload the table and retry")


def _refuse_shape(full: str, state: TableState) -> None:
    if state.primary_key:
        raise errors.InvalidArgument(f"table {full} has a primary key {list(state.primary_key)}: branchspark serve "
                                     f"does not take Iceberg writes to keyed tables yet; write it with branchspark")


def _partition_columns(full: str, spec: dict | None, names: dict[int, str]) -> list[str]:
    """The columns a new table is partitioned by: identity partitions of top-level columns only (what
    branchspark's partitions are)."""
    columns = []
    for field in (spec or {}).get("fields") or []:
        if field.get("transform") != "identity" or field.get("source-id") not in names:
            raise errors.InvalidArgument(f"table {full}: partition field {field.get('name')} ({field.get('transform')}) "
                                         f"is not supported: branchspark partitions by identity of top-level columns "
                                         f"(PARTITIONED BY (col, ...))")
        columns.append(names[field["source-id"]])
    return columns


def _refuse_layout(full: str, spec: dict | None, order: dict | None) -> None:
    if spec and spec.get("fields"):
        raise errors.InvalidArgument(f"table {full}: partitioned tables cannot be created or repartitioned through "
                                     f"branchspark serve yet; leave PARTITIONED BY out (or create it with branchspark)")
    if order and order.get("fields"):
        raise errors.InvalidArgument(f"table {full}: sort orders are not kept by branchspark serve; leave the write "
                                     f"order out")


def _format_version(full: str, update: dict) -> None:
    if int(update.get("format-version", 2)) > 2:
        raise errors.InvalidArgument(f"table {full}: branchspark serve serves Iceberg format version 2; "
                                     f"format-version {update['format-version']} is not supported")


def _computed(key: str) -> bool:
    """A property the server computes for every version (clients echo it back, Iceberg's schema updates
    rewrite the name mapping): never stored."""
    return key == "schema.name-mapping.default" or key.startswith("branchspark.")


def _stored_properties(full: str, properties: dict) -> dict:
    owned = sorted(k for k in properties if k in WRITER_OWNED_PROPERTIES)
    if owned:
        raise errors.InvalidArgument(f"table {full}: properties {owned} are branchspark serve's own (where writers "
                                     f"write); leave them out")
    version = properties.get("format-version")
    if version is not None and int(version) > 2:
        raise errors.InvalidArgument(f"table {full}: branchspark serve serves Iceberg format version 2; "
                                     f"format-version {version} is not supported")
    return {str(k): str(v) for k, v in properties.items() if k != "format-version"}


def _single_level(namespace) -> str:
    if not isinstance(namespace, list) or len(namespace) != 1 or not isinstance(namespace[0], str):
        raise errors.InvalidArgument(f"namespace {namespace!r}: this catalog has one namespace level (databases); "
                                     f"name it as a list of one name")
    check_name("database", namespace[0])
    return namespace[0]


def _identifier(identifier) -> str:
    if not isinstance(identifier, dict):
        raise errors.InvalidArgument(f"table identifier {identifier!r}: give {{\"namespace\": [db], \"name\": t}}")
    name = identifier.get("name")
    if not isinstance(name, str) or not name:
        raise errors.InvalidArgument(f"table identifier {identifier!r} has no name")
    return f"{_single_level(identifier.get('namespace'))}.{name}"
