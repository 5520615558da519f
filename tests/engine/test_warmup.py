"""The engine's warm-up workload (engine/warmup.py) in this process's session: where it writes. The engine
itself, which runs it through Spark Connect after it starts, is tested in test_engine.py."""
import os

import pytest

from dbt.adapters.branchspark.core.catalog.store import CATALOG_URL_ENV
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.engine import warmup


def test_warm_up_leaves_the_catalog_of_the_environment_alone(spark, tmp_path, monkeypatch):
    """Found running the demo on S3 (2026-11-29): with BRANCHSPARK_CATALOG_URL set, as docs/deploy.md has
    users do, `branchspark engine start`'s warm-up opened that catalog, bound it to its scratch warehouse and
    committed its tables there; the user's first dbt command then failed ("warehouse ... is not the warehouse
    of the catalog ... it was bound to .../warmup-.../warehouse")."""
    users_catalog = tmp_path / "users-catalog.db"
    monkeypatch.setenv(CATALOG_URL_ENV, f"sqlite:///{users_catalog}")
    steps = []

    def busy():  # yield after the first commit and branch: enough to open a catalog and write to it
        steps.append(1)
        return True

    with pytest.raises(warmup.Yielded):
        warmup.workload(spark, str(tmp_path / "scratch" / "warehouse"), busy=busy)
    assert steps and not users_catalog.exists(), "the warm-up opened the catalog named by the environment"
    users = Lakehouse(spark, str(tmp_path / "users-warehouse"))  # the user's pair opens, and is new
    assert [b.name for b in users.list_branches()] == ["main"]
    assert os.path.exists(tmp_path / "scratch" / "warehouse" / "catalog.db")  # the warm-up's own catalog
