"""The catalog's schema revisions as branchspark knows them without alembic (core/catalog/store.py) are
alembic's own: the same revisions, oldest first, and the same head. No Spark needed."""
from alembic.script import ScriptDirectory

from dbt.adapters.branchspark.core.catalog import store


def test_known_revisions_are_alembics_from_oldest_to_head():
    scripts = ScriptDirectory(str(store._MIGRATIONS))
    alembic_order = [s.revision for s in reversed(list(scripts.walk_revisions()))]
    assert list(store.KNOWN_REVISIONS) == alembic_order
    assert store.CATALOG_REVISION == scripts.get_current_head()


def test_an_unknown_revision_is_not_known():
    assert store.CatalogStore.is_known_revision("9999") is False
    assert store.CatalogStore.is_known_revision(None) is False
    assert store.CatalogStore.is_known_revision(store.KNOWN_REVISIONS[0]) is True
