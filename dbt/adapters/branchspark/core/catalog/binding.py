"""Which catalog belongs to which warehouse, decided before anything is read, written or deleted.

A catalog holds an id (table `bs_catalog`); the warehouse it belongs to holds the
same id in a marker file at its root, `_branchspark_catalog.json`. Both are made
together, by `branchspark init` (`Lakehouse.init` in Python) or when a catalog is
opened on an empty warehouse with nothing at its URL. Every other open checks
that the two ids agree, so a forgotten catalog URL, a deleted catalog file or a
mistyped warehouse path is refused with one line instead of becoming a new, empty
catalog that `gc` would then use to delete the warehouse's data.
"""
from __future__ import annotations

import json
from enum import Enum

from .. import errors
from ..storage.layout import Warehouse
from .store import CATALOG_URL_ENV, CatalogStore, redact_url, utcnow

MARKER = "_branchspark_catalog.json"
TABLES = "tables"


class Opening(Enum):
    """What opening a catalog may do besides checking it."""

    EXISTING = "existing"  # nothing: the catalog and its warehouse must be there and belong together
    CREATE_IF_EMPTY = "create if empty"  # create both when the URL holds nothing and the warehouse is empty
    INIT = "init"  # as CREATE_IF_EMPTY; also bind a catalog whose creation stopped before its marker
    UPGRADE = "upgrade"  # migrate an older catalog, then bind it to its warehouse


def open_catalog(url: str, warehouse: Warehouse, opening: Opening) -> CatalogStore:
    """The catalog at `url`, checked against `warehouse` (CatalogMismatch / CatalogVersionMismatch when they
    do not belong together), created or upgraded only as `opening` allows."""
    store = CatalogStore(url)
    status = store.status()
    if not status.exists and read_marker(warehouse) is not None:
        status = store.status()  # another process may have just created the pair: look once more
    shown = redact_url(store.url)
    if status.kind == "foreign":
        raise errors.CatalogMismatch(
            f"the database at {shown} holds other tables and no branchspark catalog: point the catalog URL at "
            f"a branchspark catalog or at an empty database")
    if status.exists:
        _check_revision(status, shown, opening)
        if opening is Opening.UPGRADE and status.revision != status.head:
            store.upgrade()
            store.upgraded_from = status.revision
        _check_marker(store, warehouse, shown, opening)
        return store
    _refuse_new_catalog(warehouse, shown, opening)
    warehouse.check_reachable()
    store.create()
    _bind(store, warehouse)
    return store


def _check_revision(status, shown: str, opening: Opening) -> None:
    if status.revision == status.head:
        return
    if not CatalogStore.is_known_revision(status.revision):
        raise errors.CatalogVersionMismatch(
            f"the catalog at {shown} was written by a newer branchspark (catalog revision {status.revision}; this "
            f"version knows up to {status.head}): upgrade branchspark (pip install -U dbt-branchspark)")
    if opening is not Opening.UPGRADE:
        raise errors.CatalogVersionMismatch(
            f"the catalog at {shown} was written by an older branchspark (catalog revision {status.revision}, now "
            f"{status.head}): run `branchspark upgrade` (with the same --catalog/--warehouse) to upgrade it in place")


def _check_marker(store: CatalogStore, warehouse: Warehouse, shown: str, opening: Opening) -> None:
    catalog_id, bound_to = store.identity()
    marker = read_marker(warehouse)
    if marker is None:
        # an upgraded catalog's warehouse predates markers; an init may finish a creation that stopped early
        # (bound_to is None: the catalog's creation stopped before it wrote its warehouse's marker)
        if opening is Opening.UPGRADE or (opening is Opening.INIT and bound_to is None
                                          and not warehouse.holds_files(TABLES)):
            _bind(store, warehouse)
            return
        where = f" (it was bound to {bound_to})" if bound_to else ""
        raise errors.CatalogMismatch(
            f"warehouse {warehouse.root} is not the warehouse of the catalog at {shown}{where}: it has no "
            f"{MARKER} naming catalog {catalog_id[:12]}; check --warehouse (or the profile's `warehouse:`)")
    if marker.get("catalog_id") != catalog_id:
        raise errors.CatalogMismatch(
            f"warehouse {warehouse.root} belongs to catalog {str(marker.get('catalog_id'))[:12]} (created with "
            f"{marker.get('catalog_url', 'an unknown URL')}), not to the catalog at {shown} "
            f"({catalog_id[:12]}): give the warehouse's own catalog URL, or the catalog's own warehouse")


def _refuse_new_catalog(warehouse: Warehouse, shown: str, opening: Opening) -> None:
    """Why no catalog may be created here, if there is a reason."""
    if opening is Opening.UPGRADE:
        raise errors.CatalogMismatch(f"there is no branchspark catalog at {shown} to upgrade: check the catalog "
                                     f"URL (--catalog or {CATALOG_URL_ENV})")
    marker = read_marker(warehouse)
    if marker is not None:
        raise errors.CatalogMismatch(
            f"warehouse {warehouse.root} belongs to catalog {str(marker.get('catalog_id'))[:12]} (created with "
            f"{marker.get('catalog_url', 'an unknown URL')}), and there is no catalog at {shown}: give that "
            f"catalog's URL (--catalog, the profile's `catalog:` or {CATALOG_URL_ENV})")
    if warehouse.holds_files(TABLES):
        raise errors.CatalogMismatch(
            f"warehouse {warehouse.root} holds table data but there is no catalog at {shown}: give the catalog "
            f"URL it was written with (--catalog, the profile's `catalog:` or {CATALOG_URL_ENV})")
    if opening is Opening.EXISTING:
        raise errors.CatalogMismatch(
            f"there is no branchspark catalog at {shown} and warehouse {warehouse.root} holds no data: check --warehouse "
            f"and --catalog, or create both with `branchspark init`")


def _bind(store: CatalogStore, warehouse: Warehouse) -> None:
    catalog_id, _ = store.identity()
    marker = read_marker(warehouse)
    if marker is not None and marker.get("catalog_id") != catalog_id:
        _check_marker(store, warehouse, redact_url(store.url), Opening.EXISTING)  # raises the mismatch line
    if marker is None:
        warehouse.write_text(MARKER, json.dumps({
            "catalog_id": catalog_id, "catalog_url": redact_url(store.url),
            "created_at": utcnow().isoformat(timespec="seconds")}, indent=2) + "\n")
    store.record_warehouse(warehouse.root)


def read_marker(warehouse: Warehouse) -> dict | None:
    text = warehouse.read_text(MARKER)
    if text is None:
        return None
    try:
        marker = json.loads(text)
    except ValueError:
        marker = None
    if not isinstance(marker, dict) or "catalog_id" not in marker:
        raise errors.CatalogMismatch(
            f"{warehouse.uri(MARKER)} is damaged (not the JSON branchspark writes): restore it, or write "
            f'{{"catalog_id": "<id from the bs_catalog table of its catalog>"}} into it')
    return marker
