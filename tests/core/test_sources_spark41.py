"""The lakehouse a team already has, on the Spark it runs (issue 68; SPEC 11, "Sources" and "Spark versions").

branchspark on pyspark 4.1 with Delta 4.4 and Iceberg 1.12 (`make spark41`): sources in a Hive metastore (a Delta
and a Parquet table) and in an Iceberg catalog named with `database:`, read by a dbt project on a branch that
merges into protected main, then by `Lakehouse.sql` and `branchspark sql -e` beside the branch's tables; the bad
inputs as one line each. The whole flow runs in one process of .venv-peers (tests/spark41_sources.py, one JVM; tests/spark41_flow.py),
since this suite's own pyspark (4.3) has neither Delta's nor Iceberg's runtime; the tests here assert what it saw.
"""
from __future__ import annotations

import pytest

from tests.spark41_flow import spark41_flow


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    return spark41_flow(tmp_path_factory)


def _said(step: dict) -> str:
    return "\n".join(step["messages"])


def test_branchspark_runs_on_spark_41_with_its_own_jar(flow):
    assert flow["pyspark"].startswith("4.1.")
    assert flow["jar"] == [f"branchspark-spark{flow['pyspark']}.jar"]


def test_dbt_project_over_metastore_and_iceberg_sources_merges_into_protected_main(flow):
    for step in ("seed", "run", "test", "merge"):
        assert flow[step]["success"], (step, _said(flow[step])[-3000:])
    assert flow["main_protected"]
    # orders (Iceberg, database: lake) joined to customers (Delta, Hive), payments (Parquet, Hive), a seed
    first = [[100, 1, "ada", "north", 5.0], [101, 2, "bo", "south", 7.5]]
    assert flow["first"]["dev"] == first and flow["first"]["main"] == first
    assert flow["first"]["view"] == [[100, 1], [101, 2]]  # a view model over the Iceberg source
    assert flow["first"]["reader"] == [[100], [101]]  # and a table model over that view


@pytest.mark.long_only
def test_names_in_model_sql_and_a_path_source_resolve_as_sources_do(flow):
    # names in the model's SQL (raw.customers, lake.raw.orders), not sources, resolve the same way
    assert flow["first"]["counts"] == [[1, 1], [2, 1], [3, 0]]
    # a path table through meta.external_location (created, then written once), recorded at its version
    assert flow["first"]["path"] == [[1, "ada"], [2, "bo"], [3, "cy"]]
    assert flow["first_sources"][flow["path_key"]] == {"format": "delta", "version": 1}
    assert flow["run"]["success"], _said(flow["run"])[-3000:]
    said = _said(flow["branch_log"])  # the record, shown by `dbt run-operation branch_log`
    assert f"raw.customers (delta version {flow['versions_second']['delta']})" in said, said[-3000:]


def test_branch_relation_shadows_metastore_table_and_warns_once(flow):
    # analytics.all_orders is also a Hive table holding two NULL order ids: `dbt test`'s not_null passed,
    # so the branch's table was read, and the run named the one it hid
    said = _said(flow["test"])
    assert said.count("spark_catalog.analytics.all_orders") == 1, said[-3000:]


def test_next_run_sees_ingested_rows_while_main_keeps_its_merge(flow):
    assert flow["rerun"]["success"], _said(flow["rerun"])[-3000:]
    assert [102, 4, "di", "south", None] in flow["second"]["dev"]
    assert len(flow["second"]["dev"]) == 3
    assert flow["second"]["main"] == flow["first"]["main"]
    assert flow["second"]["view"] == [[100, 1], [101, 2], [102, 4]]
    assert flow["second"]["reader"] == [[100], [101], [102]]


def test_lakehouse_sql_and_cli_read_metastore_iceberg_and_branch_in_one_query(flow):
    assert flow["lakehouse_sql"] == [[100, "ada", 1], [101, "bo", 2], [102, "di", 4]]
    cli = flow["cli_sql"]
    assert cli["code"] == 0 and cli["exception"] is None, cli
    lines = [line for line in cli["output"].splitlines() if "│" in line or "|" in line]
    assert any("100" in line and "ada" in line for line in lines), cli["output"]
    assert "(3 rows)" in cli["output"]


def test_source_in_no_catalog_is_one_line_from_dbt_and_the_command_line(flow):
    for said in (_said(flow["dbt_missing"]), flow["cli_missing"]["output"]):
        line = next(line for line in said.splitlines() if "found in no catalog" in line)
        assert "raw.nope" in line and "spark_catalog (hive" in line and "lake (SparkCatalog)" in line, line
        assert "spark.sql.catalog.<name>" in line and "spark.sql.catalogImplementation=hive" in line
        assert "Traceback" not in said
    assert not flow["dbt_missing"]["success"] and flow["cli_missing"]["code"] == 1
    assert flow["dev_unchanged"]


def test_catalog_class_not_on_class_path_is_one_line_from_dbt_and_the_command_line(flow):
    for said in (_said(flow["dbt_class"]), flow["cli_class"]["output"]):
        line = next(line for line in said.splitlines() if "org.example.MissingCatalog" in line)
        assert "catalog broken" in line and "spark.jars" in line, line
        assert "Traceback" not in said
    assert not flow["dbt_class"]["success"] and flow["cli_class"]["code"] == 1


def test_each_run_commit_records_the_versions_it_read(flow):
    first, second = flow["versions_first"], flow["versions_second"]
    assert {name: entry for name, entry in flow["first_sources"].items() if name != flow["path_key"]} == {
        "lake.raw.orders": {"format": "iceberg", "version": first["iceberg"]},
        "raw.customers": {"format": "delta", "version": first["delta"]},
        "raw.payments": {"format": "parquet", "version": "unversioned"},
    }
    assert second["delta"] == first["delta"] + 1 and second["iceberg"] != first["iceberg"]
    assert flow["second_sources"]["raw.customers"] == {"format": "delta", "version": second["delta"]}
    assert flow["second_sources"]["lake.raw.orders"] == {"format": "iceberg", "version": second["iceberg"]}
    # shown by `branchspark log -v` (and `dbt run-operation branch_log`, in make test-long)
    log = flow["cli_log"]["output"]
    assert f"lake.raw.orders (iceberg snapshot {second['iceberg']})" in log, log
    assert f"raw.customers (delta version {second['delta']})" in log and "raw.payments (parquet, unversioned)" in log


def test_sources_as_of_rebuilds_at_the_recorded_versions(flow):
    assert flow["as_of"]["success"], _said(flow["as_of"])[-3000:]
    assert flow["as_of_rows"] == flow["first"]["dev"]  # ingestion's new order and customer are not read
    first = flow["versions_first"]
    assert flow["as_of_sources"]["raw.customers"] == {"format": "delta", "version": first["delta"]}
    assert flow["as_of_sources"]["lake.raw.orders"] == {"format": "iceberg", "version": first["iceberg"]}
    # a model over a view an earlier run built (the rerun, after ingestion): the view reads the recorded snapshot
    # too, and the model's own commit records it
    assert flow["as_of_reader"] == flow["first"]["reader"]
    assert flow["as_of_reader_sources"] == {"lake.raw.orders": {"format": "iceberg", "version": first["iceberg"]}}


@pytest.mark.long_only
def test_a_view_rebuilt_under_sources_as_of_keeps_the_recorded_snapshot(flow):
    assert flow["as_of_view_run"]["success"], _said(flow["as_of_view_run"])[-3000:]
    # its stored SQL reads the recorded snapshot, and its own commit records it
    assert flow["as_of_view"] == flow["first"]["view"]
    first = flow["versions_first"]
    assert flow["as_of_view_sources"] == {"lake.raw.orders": {"format": "iceberg", "version": first["iceberg"]}}


def test_sources_as_of_a_commit_without_the_source_is_one_line(flow):
    step = flow["dbt_as_of_missing"]
    assert not step["success"]
    said = _said(step)
    line = next(line for line in said.splitlines() if "recorded no version" in line)
    assert f"sources_as_of {flow['first_commit']}" in line and "lake.raw.events" in line, line
    assert flow["first_commit"][:12] in line and "Traceback" not in said
