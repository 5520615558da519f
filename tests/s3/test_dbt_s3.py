"""The sample project with dbt on an S3 warehouse (moto), reached through the four AWS variables alone: seed,
run, test on dev, merge into protected main, each table equal to dev's; and a bucket that does not exist is
one line from dbt that creates nothing. `make test` runs the flow through Spark Connect on the test cluster (a
master, two worker JVMs: tests/run.sh), `make test-long` in-process too (tests/conftest.py)."""
from __future__ import annotations

import os

import yaml

from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from tests.functional.test_merge_dbt import dbt, sample, tables  # noqa: F401  (sample: a copy of sample_project)
from tests.s3_store import keys


def _on_s3(project, warehouse: str, catalog: str, connect_url: str = "") -> None:
    profiles = yaml.safe_load((project / "profiles.yml").read_text())
    for output in profiles["branchspark_sample"]["outputs"].values():
        output.update(warehouse=warehouse, catalog=catalog)  # no S3 setting: the AWS variables say where
        if connect_url:
            output.update(method="connect", host=connect_url)
    (project / "profiles.yml").write_text(yaml.safe_dump(profiles))


def test_sample_project_on_s3_builds_tests_and_merges(sample, spark, spark_connect_url, s3_warehouse, s3_catalog,
                                                       bucket, capsys):
    if spark_connect_url and os.environ.get("BRANCHSPARK_TEST_CLUSTER"):  # tests/run.sh's cluster runs the flow
        assert spark.conf.get("spark.master") == os.environ["BRANCHSPARK_TEST_CLUSTER"]
    # s3:// is the same place as s3a://
    _on_s3(sample, s3_warehouse.replace("s3a://", "s3://"), s3_catalog, spark_connect_url)
    assert dbt(sample, "seed", "--target", "dev").success
    assert dbt(sample, "run", "--target", "dev").success
    assert dbt(sample, "test", "--target", "dev").success
    assert dbt(sample, "run-operation", "merge_branch", "--args", "{src: dev}", "--target", "main").success
    lakehouse = Lakehouse(spark, s3_warehouse, s3_catalog)
    on_dev, on_main = tables(lakehouse, "dev"), tables(lakehouse, "main")
    assert {"shop.raw_orders", "shop.fct_orders", "shop.dim_customers"} <= set(on_main) and on_main == on_dev
    assert any(key.endswith(".parquet") for key in keys(bucket, "lake/tables/"))


def test_dbt_on_a_missing_bucket_is_one_line_and_creates_nothing(sample, tmp_path, capsys):
    _on_s3(sample, "s3a://no-such-bucket-51-dbt/lake", f"sqlite:///{tmp_path}/catalog.db")
    capsys.readouterr()
    assert not dbt(sample, "seed", "--target", "dev").success
    out = capsys.readouterr().out
    assert "bucket no-such-bucket-51-dbt does not exist" in out and "Traceback" not in out, out
    assert not (tmp_path / "catalog.db").exists()
