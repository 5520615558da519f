"""Iceberg view metadata (view spec, format 1) for a view's versions on one branch.

A branchspark view is its SQL and the output schema recorded when it was created or replaced (dbt analyses
the query before it stores it). Each version the branch's first-parent history went through is a view
version, the current one last. Every version carries its SQL in three dialects:
- `spark`: the view's own SQL, with each branch relation (stored as one quoted name, `` `shop.orders` ``)
  written as `` `shop`.`orders` ``, the namespace and table an Iceberg engine resolves in its catalog;
- `trino` and `duckdb`: that SQL translated by sqlglot. A translation is as exact as sqlglot's mapping of
  Spark's functions; a query sqlglot cannot translate has no representation in that dialect. The view's
  property `branchspark.dialects` says which SQL is the view's own.

The metadata file is written once, named by what it describes, below the view version (files.py), so gc
keeps it while a branch reaches that version.
"""
from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable

import sqlglot
from pyiceberg.view.metadata import SQLViewRepresentation, ViewHistoryEntry, ViewMetadata, ViewVersion
from pyspark.sql import types as T
from sqlglot.errors import ErrorLevel, SqlglotError

from . import files
from ..core.catalog.schema import Column, Schema
from ..core.sql_text import QUOTED, quote_identifier, tokens, unquote
from ..core.storage.layout import Warehouse
from .metadata import REVISION, VersionAt, commit_ms
from .schema import FieldIds, Unsupported, iceberg_schema

TRANSLATED_DIALECTS = ("trino", "duckdb")
DIALECTS_PROPERTY = "branchspark.dialects"


def spark_sql(sql: str, is_relation: Callable[[str], bool]) -> str:
    """The view's SQL with every branch relation `` `db.table` `` written `` `db`.`table` ``."""
    out, last = [], 0
    for kind, start, end in tokens(sql):
        name = unquote(sql[start:end])
        if kind == QUOTED and "." in name and is_relation(name.lower()):
            database, table = name.split(".", 1)
            out.append(sql[last:start] + f"{quote_identifier(database)}.{quote_identifier(table)}")
            last = end
    return "".join(out) + sql[last:]


def representations(sql: str) -> list[SQLViewRepresentation]:
    """The Spark SQL, and its translations where sqlglot can make them."""
    found = [SQLViewRepresentation(type="sql", sql=sql, dialect="spark")]
    for dialect in TRANSLATED_DIALECTS:
        try:
            translated = sqlglot.transpile(sql, read="spark", write=dialect, error_level=ErrorLevel.RAISE,
                                          unsupported_level=ErrorLevel.RAISE)
        except SqlglotError:
            continue  # no representation beats a wrong one
        if len(translated) == 1:
            found.append(SQLViewRepresentation(type="sql", sql=translated[0], dialect=dialect))
    return found


def view_schema(schema_json: str, schema_id: int, view_name: str):
    """A recorded output schema (Spark's JSON) as an Iceberg schema: fields numbered from 1 in order."""
    fields = T.StructType.fromJson(json.loads(schema_json)).fields
    columns = tuple(Column(i + 1, f.name, f.dataType.json(), f.nullable) for i, f in enumerate(fields))
    return iceberg_schema(Schema(f"view-{schema_id}", columns), schema_id, view_name, FieldIds(len(columns) + 1))


class ViewMetadataBuilder:
    """Builds (or finds) the metadata of a view's chain of versions; safe to share between threads."""

    def __init__(self, warehouse: Warehouse):
        self.warehouse = warehouse
        self._lock = threading.Lock()

    def metadata(self, view_name: str, chain: list[VersionAt], is_relation: Callable[[str], bool]) -> tuple[str, dict]:
        """(absolute metadata location, metadata JSON) of `chain` (oldest first, the current version last)."""
        head = chain[-1].table
        if head.view_schema_json is None:
            raise Unsupported(f"view {view_name} has no recorded output schema (it was created before branchspark "
                              f"recorded one), which Iceberg clients need: build it again (dbt run on this branch, "
                              f"or create_view) to serve it")
        key = [REVISION, "view", head.id, view_name] + [f"{v.commit.id}:{v.table.version_id}" for v in chain]
        relative = f"{files.version_dir(head.id, head.version_id)}/{files.content_name('v', key, 'metadata.json')}"
        with self._lock:  # small and quick to build: one lock for all views
            if not files.exists(self.warehouse, relative):
                document = _build(self.warehouse, view_name, chain, is_relation)
                files.write_once(self.warehouse, relative, json.dumps(document).encode())
        return files.absolute(self.warehouse, relative), json.loads(files.read(self.warehouse, relative))


def _build(warehouse: Warehouse, view_name: str, chain: list[VersionAt], is_relation) -> dict:
    database = view_name.split(".", 1)[0]
    schema_ids: dict[str, int] = {}
    versions, log = [], []
    for version in chain:
        recorded = version.table.view_schema_json
        if recorded is None:
            continue  # an older version without a recorded schema: not one a client can be given
        schema_id = schema_ids.setdefault(recorded, len(schema_ids))
        version_id = len(versions) + 1
        timestamp = commit_ms(version.commit)
        versions.append(ViewVersion(
            version_id=version_id, schema_id=schema_id, timestamp_ms=timestamp,
            summary={"engine-name": "branchspark", "branchspark.commit": version.commit.id},
            representations=representations(spark_sql(version.table.view_sql, is_relation)),
            default_namespace=[database]))
        log.append(ViewHistoryEntry(timestamp_ms=timestamp, version_id=version_id))
    head = chain[-1].table
    view_id = head.id
    metadata = ViewMetadata(
        view_uuid=str(uuid.UUID(hex=view_id) if len(view_id) == 32 else uuid.uuid5(uuid.NAMESPACE_URL, view_id)),
        format_version=1, location=files.absolute(warehouse, warehouse.table_dir(view_id)),
        schemas=[view_schema(recorded, n, view_name) for recorded, n in schema_ids.items()],
        current_version_id=versions[-1].version_id, versions=versions, version_log=log,
        properties={
            "branchspark.view-id": view_id, "branchspark.version-id": head.version_id,
            "branchspark.commit": chain[-1].commit.id,
            DIALECTS_PROPERTY: "spark is the view's own SQL; " + ", ".join(TRANSLATED_DIALECTS) +
                               " are translated from it by sqlglot (where it could)",
            "branchspark.read-only": "true: write with branchspark (dbt on a branch, or Lakehouse.transaction)",
        })
    return json.loads(metadata.model_dump_json(exclude_none=True))
