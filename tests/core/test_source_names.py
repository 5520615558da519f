"""How relations that are not the branch's are named and recognised (issue 68), without Spark: the dbt relation's
rendering (a Spark name; a catalog from a source's `database:`; a path from `meta.external_location`), the names a
query reads from Spark's catalogs, and the one-line errors made of Spark's messages. The same paths run end to
end on Spark 4.1 in tests/core/test_sources_spark41.py."""
from types import SimpleNamespace

from dbt.adapters.branchspark.adapter.relation import BranchSparkRelation
from dbt.adapters.branchspark.core.sql import sources
from dbt.adapters.branchspark.core.sql.router import StatementRouter
from dbt.adapters.branchspark.core.sql_text import qualify_branch_relations


def test_a_relation_renders_as_the_name_spark_resolves_and_the_router_makes_branch_relations_temp_views():
    relation = BranchSparkRelation.create(schema="raw", identifier="customers")
    assert relation.render() == "`raw`.`customers`" and relation.core_name == "raw.customers"
    sql = f"select * from {relation} join `raw`.`payments` p"
    # raw.customers is the branch's: its temp view; raw.payments is not: left to Spark's catalogs
    assert qualify_branch_relations(sql, lambda s, t: (s, t) == ("raw", "customers")) == \
        "select * from `raw.customers` join `raw`.`payments` p"


def test_a_source_with_database_names_its_catalog_and_is_no_branch_relation():
    relation = BranchSparkRelation.create(database="lake", schema="raw", identifier="orders")
    assert relation.render() == "`lake`.`raw`.`orders`" and relation.core_name is None
    assert StatementRouter._branch_name("lake.raw.orders") is None  # a write there is Spark's, not the branch's
    assert StatementRouter._branch_name("spark_catalog.raw.orders") == "raw.orders"


def test_a_source_with_external_location_renders_its_path():
    node = SimpleNamespace(resource_type="source", name="customers", identifier="customers", schema="files",
                           database=None, meta={"external_location": "delta.`s3a://lake/raw/{name}`"},
                           source_meta={}, config=SimpleNamespace(meta={}), quoting_dict={}, catalog_name=None)
    quoting = SimpleNamespace(quoting={})
    relation = BranchSparkRelation.create_from(quoting, node)
    assert relation.render() == "delta.`s3a://lake/raw/customers`" and relation.core_name is None


def test_the_tables_a_query_reads_of_sparks_catalogs():
    sql = ("select o.id, c.name from `lake`.`raw`.`orders` o join raw.customers c on c.id = o.customer_id "
           "left join `analytics.regions` r on true join delta.`/lake/raw/x` d on true "
           "join (select 1) s on true join session.v on true")
    assert [sources.canonical_name(name) for _, _, name in sources.read_names(sql)] == \
        ["lake.raw.orders", "raw.customers", "delta.`/lake/raw/x`"]


def test_spark_errors_become_one_line_naming_the_catalogs_and_settings():
    line = sources.error_line(None, "[TABLE_OR_VIEW_NOT_FOUND] The table or view `raw`.`nope` cannot be found.")
    assert line.startswith("table raw.nope is found in no catalog") and "spark.sql.catalog.<name>" in line
    assert sources.error_line(None, "[TABLE_OR_VIEW_NOT_FOUND] The table or view `cte` cannot be found.") is None
    line = sources.error_line(None, "[CATALOG_PLUGIN_CLASS_NOT_FOUND] Cannot find catalog plugin class for catalog "
                                    "'lake': org.apache.iceberg.spark.SparkCatalog. SQLSTATE: 42K0E")
    assert line == ("catalog lake: its class org.apache.iceberg.spark.SparkCatalog is not on Spark's class path: "
                    "add the jar that has it to spark.jars in the profile's spark_config")
