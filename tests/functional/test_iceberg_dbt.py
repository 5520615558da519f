"""A dbt project built on a branch by dbt, then read by DuckDB through `branchspark serve` (issue 21): its
tables, and its view model through the view's served SQL."""
import pytest
from pyspark.sql import SparkSession

from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.tests.util import run_dbt, write_file
from tests.functional.test_dbt_branches import CITY_SCORES, PEOPLE_LATEST, SEED_A, SEED_B, STG_PEOPLE, _profile
from pyiceberg.catalog.rest import RestCatalog

from tests.iceberg_clients import duckdb_attach, duckdb_connection, served


class TestDbtBranchReadByDuckDB:
    @pytest.fixture(scope="class")
    def profiles_config_update(self, unique_schema, warehouse_dir, dbt_profile_target):
        return _profile(unique_schema, warehouse_dir, dbt_profile_target["spark_config"])

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"people.csv": SEED_A}

    @pytest.fixture(scope="class")
    def models(self):
        return {"stg_people.sql": STG_PEOPLE, "city_scores.sql": CITY_SCORES, "people_latest.sql": PEOPLE_LATEST}

    def test_duckdb_reads_the_branch_dbt_built(self, project, warehouse_dir):
        run_dbt(["seed", "--target", "branch_a"])
        run_dbt(["run", "--target", "branch_a"])
        write_file(SEED_B.replace("Paris,12", "Lyon,15"), project.project_root, "seeds", "people.csv")
        run_dbt(["seed", "--target", "branch_a"])
        run_dbt(["run", "--target", "branch_a", "--select", "people_latest"])  # incremental: updates rows
        lakehouse = Lakehouse(SparkSession.getActiveSession(), warehouse=warehouse_dir)
        schema = project.test_schema
        with served(warehouse_dir) as url:
            con = duckdb_connection()
            duckdb_attach(con, url, "feature_a", "lake")
            for table in ("people", "city_scores", "people_latest"):
                rows = lakehouse.read(f"{schema}.{table}", at="feature_a").collect()
                expected = sorted((tuple(r) for r in rows), key=repr)
                got = sorted(con.execute(f"SELECT * FROM lake.{schema}.{table}").fetchall(), key=repr)
                assert got == expected and got, table
            assert (1, "Ada", "Lyon", 15, "feature_a") in con.execute(
                f"SELECT * FROM lake.{schema}.people_latest").fetchall()
            # the view model: its schema, and its SQL as DuckDB runs it over the served tables
            view = RestCatalog("bs", uri=url, warehouse="feature_a").load_view((schema, "stg_people")).metadata
            version = next(v for v in view.versions if v.version_id == view.current_version_id)
            fields = next(s for s in view.schemas if s.schema_id == version.schema_id).fields
            assert [f.name for f in fields] == ["id", "name", "city", "score"]
            duckdb_sql = next(r.root.sql for r in version.representations if r.root.dialect == "duckdb")
            con.execute(f"USE lake.{schema}")
            expected = sorted((tuple(r) for r in lakehouse.read(f"{schema}.stg_people", at="feature_a").collect()),
                              key=repr)
            assert sorted(con.execute(duckdb_sql).fetchall(), key=repr) == expected and expected
            con.execute("USE memory")
            duckdb_attach(con, url, "main", "main_lake")  # main never got the branch's tables
            on_main = con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'main_lake' "
                                  f"AND schema_name = '{schema}'").fetchall()
            assert not {("people",), ("city_scores",), ("people_latest",)} & set(on_main)
        lakehouse.store.dispose()
