"""Rebuilds and incremental runs that leave rows as they were change nothing (issue 24): a table model
rebuilt after 6 of 99 source rows changed reports 6 deletes and 6 inserts, and an incremental model
re-upserting the same keys leaves no tombstones and no changes."""

import pytest
from pyspark.sql import SparkSession

from dbt.adapters.branchspark.core.changes import CHANGE_TYPE, DELETE, INSERT, table_changes
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.tests.util import run_dbt

BRANCH = "churn"
CHANGED = (7, 19, 33, 50, 71, 98)

SOURCES = """
version: 2
sources:
  - name: shop
    schema: "{{ target.schema }}"
    tables:
      - name: orders
"""

ORDERS_TABLE = """
{{ config(materialized='table') }}
select id, status from {{ source('shop', 'orders') }}
"""

ORDERS_INCREMENTAL = """
{{ config(materialized='incremental', unique_key='id', incremental_strategy='merge') }}
select id, status from {{ source('shop', 'orders') }}
"""


class TestNoChurn:
    @pytest.fixture(scope="class")
    def profiles_config_update(self, unique_schema, warehouse_dir, dbt_profile_target):
        target = {"type": "branchspark", "method": "session", "branch": BRANCH, "create_branch_from": "main",
                  "schema": unique_schema, "warehouse": warehouse_dir, "threads": 1,
                  "spark_config": dict(dbt_profile_target["spark_config"])}
        return {"test": {"outputs": {"default": target}, "target": "default"}}

    @pytest.fixture(scope="class")
    def models(self):
        return {"sources.yml": SOURCES, "orders_table.sql": ORDERS_TABLE,
                "orders_incremental.sql": ORDERS_INCREMENTAL}

    def changes(self, lakehouse, table, since):
        feed = table_changes(lakehouse, table, since, BRANCH).collect()
        return (sorted((r["id"], r["status"]) for r in feed if r[CHANGE_TYPE] == DELETE),
                sorted((r["id"], r["status"]) for r in feed if r[CHANGE_TYPE] == INSERT))

    def test_rebuilds_and_reupserts_change_only_changed_rows(self, project, warehouse_dir):
        lakehouse = Lakehouse(SparkSession.getActiveSession(), warehouse=warehouse_dir)
        schema = project.test_schema
        source = f"{schema}.orders"
        spark = lakehouse.spark
        if not lakehouse.branch_exists(BRANCH):
            lakehouse.create_branch(BRANCH)
        with lakehouse.transaction(BRANCH, message="load orders") as tx:
            tx.create_database(schema, if_not_exists=True)
            tx.create_table_as(source, spark.createDataFrame([(i, "placed") for i in range(1, 100)],
                                                             "id bigint, status string"))
        run_dbt(["run"])
        built = lakehouse.get_branch(BRANCH).head
        run_dbt(["run"])
        run_dbt(["run"])
        incremental = lakehouse.snapshot(BRANCH).state(f"{schema}.orders_incremental")
        assert incremental.tombstones == ()
        for model in ("orders_table", "orders_incremental"):
            assert self.changes(lakehouse, f"{schema}.{model}", built) == ([], [])

        ids = ", ".join(str(i) for i in CHANGED)
        lakehouse.branch(BRANCH).update(source, f"id in ({ids})", {"status": "'shipped'"})
        before = lakehouse.get_branch(BRANCH).head
        run_dbt(["run"])
        expected = ([(i, "placed") for i in CHANGED], [(i, "shipped") for i in CHANGED])
        for model in ("orders_table", "orders_incremental"):
            assert self.changes(lakehouse, f"{schema}.{model}", before) == expected
