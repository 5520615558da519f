"""The catalog as an Iceberg REST server sees it: a branch (or a fixed version of one) per `warehouse`,
its databases as namespaces, its tables with their Iceberg metadata.

A loaded table is kept per (commit, table), as the response body it is sent as: a commit never changes,
so a repeated request for a branch whose head did not move costs one catalog query (on a kept connection)
and no JSON encoding. Walking a branch's history to find a table's earlier versions is memoised per commit
too, so a moved head walks only the new commits.
"""
from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict

from ..core import errors
from ..core.storage import object_store
from ..core.catalog.commits import CommitInfo
from ..core.catalog.namespace import Namespace
from ..core.catalog.state import DatabaseInfo, Root
from ..core.lakehouse import Lakehouse, Snapshot
from ..core.operations import ObjectKind
from .metadata import MetadataBuilder, VersionAt
from .views import ViewMetadataBuilder


class ViewNotFound(errors.NotFound):
    def __init__(self, name: str, branch: str):
        super().__init__(f"view '{name}' does not exist on branch '{branch}': check the name, or whether it was "
                         f"dropped on this branch")


_COMMIT_ID = re.compile(r"^[0-9a-fA-F]{6,32}$")
_LOADED_LIMIT = 256


class CatalogService:
    def __init__(self, lakehouse: Lakehouse, vend_credentials: bool = False, row_cache_mb: int = 1024):
        self.lakehouse = lakehouse
        self.row_cache_bytes = row_cache_mb << 20  # writes' commits keep the data files' rows they read
        # what a client needs to open the files: the object store's endpoint, region, path style (and, when
        # the server was told to, its credentials); empty for a local warehouse
        self.file_io = object_store.client_properties(lakehouse.warehouse.root, vend_credentials)
        store = lakehouse.store
        self.builder = MetadataBuilder(lakehouse.warehouse, Namespace(store, Root({}, {}), "serve"))
        self.view_builder = ViewMetadataBuilder(lakehouse.warehouse)
        self._loaded: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._chains: dict[tuple[str, str], tuple] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------ versions
    def snapshot(self, warehouse: str) -> Snapshot:
        """`main`, `dev`, `dev@<commit id>` or `dev@<ISO time>`."""
        ref = (warehouse or "main").strip()
        if "@" not in ref:
            branch = self.lakehouse.store.find_branch(ref)
            if branch is None:
                raise errors.BranchNotFound(ref)
            return Snapshot(self.lakehouse, self.lakehouse.store.get_commit(branch.head), ref)
        name, at = ref.split("@", 1)
        branch = self.lakehouse.store.get_branch(name)
        commit = self.lakehouse.commit_by_id(at) if _COMMIT_ID.match(at) else None
        if commit is not None:
            if commit.id not in {c.id for c in self.lakehouse.store.ancestors(branch.head)}:
                raise errors.CommitNotFound(f"{at} on branch {name}")
        else:
            commit = self.lakehouse.resolve(name, at)
        return Snapshot(self.lakehouse, commit, ref)

    def databases(self, snapshot: Snapshot) -> list[DatabaseInfo]:
        return snapshot.databases()

    def database(self, snapshot: Snapshot, name: str) -> DatabaseInfo:
        database_id = snapshot.ns.database_id(name)
        return snapshot.ns.database_info(database_id)

    def names(self, snapshot: Snapshot, database: str, kind: str) -> list[str]:
        states = snapshot.ns.load_tables(snapshot.ns.table_ids(snapshot.ns.database_id(database)))
        return sorted(s.name for s in states if s.kind == kind)

    def _kind(self, snapshot: Snapshot, database: str, name: str) -> str:
        return snapshot.state(f"{database}.{name}").kind

    def has(self, snapshot: Snapshot, database: str, name: str, kind: str) -> bool:
        snapshot.ns.database_id(database)
        return snapshot.has_table(f"{database}.{name}") and self._kind(snapshot, database, name) == kind

    # ---------------------------------------------------------------- load
    def load_table(self, snapshot: Snapshot, database: str, name: str) -> bytes:
        """The loadTable response body: {"metadata-location", "metadata", "config"} as JSON."""
        return self._load(snapshot, database, name, ObjectKind.TABLE)

    def load_view(self, snapshot: Snapshot, database: str, name: str) -> bytes:
        """The loadView response body: {"metadata-location", "metadata", "config"} as JSON."""
        return self._load(snapshot, database, name, ObjectKind.VIEW)

    def _load(self, snapshot: Snapshot, database: str, name: str, kind: str) -> bytes:
        full_name = f"{database}.{name}"
        snapshot.ns.database_id(database)
        table_id = snapshot.ns.table_id(full_name, required=False)
        if table_id is None or snapshot.ns.table(table_id).kind != kind:  # a view is no table, nor the reverse
            raise (errors.TableNotFound(full_name, snapshot.ns.label) if kind == ObjectKind.TABLE
                   else ViewNotFound(full_name, snapshot.ns.label))
        key = (snapshot.commit.id, table_id)
        with self._lock:
            hit = self._loaded.get(key)
            if hit is not None:
                self._loaded.move_to_end(key)
                return hit
        chain = self._chain(snapshot.commit, table_id)
        if kind == ObjectKind.TABLE:
            location, metadata = self.builder.metadata(full_name, chain)
        else:
            location, metadata = self.view_builder.metadata(full_name, chain, snapshot.has_table)
        found = json.dumps({"metadata-location": location, "metadata": metadata, "config": self.file_io}).encode()
        with self._lock:
            self._loaded[key] = found
            while len(self._loaded) > _LOADED_LIMIT:
                self._loaded.popitem(last=False)
        return found

    def _chain(self, commit: CommitInfo, table_id: str) -> list[VersionAt]:
        """The table's versions along the first-parent history of `commit`, oldest first, each with the
        commit where it first appeared."""
        store = self.lakehouse.store
        runs: list[tuple[str, CommitInfo]] = []  # newest first: (version id, oldest commit of its run)
        tail: tuple = ()
        for step in store.first_parents(commit.id):
            memo = self._chains.get((step.id, table_id))
            if memo is not None:
                tail = memo
                break
            entry = store.root(step.id).tables.get(table_id)
            if entry is None:
                break
            if runs and runs[-1][0] == entry[0]:
                runs[-1] = (entry[0], step)
            else:
                runs.append((entry[0], step))
        chain = list(tail)
        for version_id, first in reversed(runs):
            if chain and chain[-1][0] == version_id:
                continue  # the memoised tail ends in this run already
            chain.append((version_id, first))
        chain = tuple(chain)
        self._chains[(commit.id, table_id)] = chain
        states = store.tables({v for v, _ in chain})
        return [VersionAt(states[v], c) for v, c in chain]
