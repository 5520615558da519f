"""The scratch workloads branchspark runs on its own, in this process's session: the engine's warm-up
(engine/warmup.py, which the engine runs through Spark Connect after it starts; the engine itself is tested in
test_engine.py) and the training run of the class-data archive at install (core/jvm_archive_build.py)."""
import os

import pytest

from dbt.adapters.branchspark.core import jvm_archive_build
from dbt.adapters.branchspark.core.catalog.store import CATALOG_URL_ENV
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.engine import warmup


def _warm_up_until_its_first_commit(spark, warehouse: str) -> None:
    with pytest.raises(warmup.Yielded):  # yields at its first step: its catalog opened and written by then
        warmup.workload(spark, warehouse, busy=lambda: True)


@pytest.mark.parametrize("workload", [_warm_up_until_its_first_commit, jvm_archive_build._branch_work],
                         ids=["engine warm-up", "class-data archive's training run"])
def test_scratch_workloads_leave_the_catalog_of_the_environment_alone(spark, tmp_path, monkeypatch, workload):
    """Found running the demo on S3 (2026-11-29): with BRANCHSPARK_CATALOG_URL set, as docs/deploy.md has
    users do, `branchspark engine start`'s warm-up opened that catalog, bound it to its scratch warehouse and
    committed its tables there; the user's first dbt command then failed ("warehouse ... is not the warehouse
    of the catalog ... it was bound to .../warmup-.../warehouse"). `make install`'s training run did the same."""
    users_catalog = tmp_path / "users-catalog.db"
    monkeypatch.setenv(CATALOG_URL_ENV, f"sqlite:///{users_catalog}")
    scratch = tmp_path / "scratch" / "warehouse"
    workload(spark, str(scratch))
    assert not users_catalog.exists(), "the workload opened the catalog named by the environment"
    assert os.path.exists(scratch / "catalog.db")  # its own catalog, removed with its scratch warehouse
    users = Lakehouse(spark, str(tmp_path / "users-warehouse"))  # the user's pair opens, and is new
    assert [b.name for b in users.list_branches()] == ["main"]
