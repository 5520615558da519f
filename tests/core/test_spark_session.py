"""One SparkSession factory with one behaviour (issue 25), on this test process's real session.

A session the process already has is reused as it is: only the runtime settings the caller names change.
Before, the dbt adapter's own factory turned ANSI mode off on every session it reused, asked or not.
"""
from dbt.adapters.branchspark.core.spark_session import spark_session

ANSI = "spark.sql.ansi.enabled"
ZONE = "spark.sql.session.timeZone"


def test_the_active_session_is_reused_with_only_the_settings_asked_for(spark):
    before, zone = spark.conf.get(ANSI), spark.conf.get(ZONE)
    other = "false" if before == "true" else "true"
    try:
        spark.conf.set(ANSI, other)
        assert spark_session() is spark
        assert spark.conf.get(ANSI) == other  # nothing the caller did not ask for is changed
        asked = "Pacific/Auckland" if zone != "Pacific/Auckland" else "UTC"
        assert spark_session({ANSI: before, ZONE: asked}) is spark
        assert (spark.conf.get(ANSI), spark.conf.get(ZONE)) == (before, asked)
    finally:
        spark.conf.set(ANSI, before)
        spark.conf.set(ZONE, zone)


def test_a_static_setting_on_a_reused_session_is_left_as_it_was(spark):
    catalog = spark.conf.get("spark.sql.catalogImplementation", None)
    assert spark_session({"spark.sql.catalogImplementation": "hive"}) is spark
    assert spark.conf.get("spark.sql.catalogImplementation", None) == catalog
