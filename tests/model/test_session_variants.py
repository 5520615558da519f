"""The session settings a model batch draws (tests/model/session_variants.py) come back afterwards as the test
session had them, not as Spark's defaults: `conf.unset` left a worker on 200 shuffle partitions after the model
test, and every later test in that worker ran 4-8 times its time (2026-12-02)."""
import pytest

from tests.model.session_variants import SessionVariant, varied_session

SETTINGS = ("spark.sql.shuffle.partitions", "spark.sql.files.openCostInBytes")


@pytest.mark.parametrize("read", ["session", "udf", "join"])
def test_a_batch_s_session_settings_come_back_as_the_test_session_had_them(spark, read):
    before = {key: spark.conf.get(key, None) for key in SETTINGS}
    with varied_session(spark, SessionVariant(read, 4, 2, True)) as session:
        assert session.conf.get("spark.sql.shuffle.partitions") == "4"
    assert {key: spark.conf.get(key, None) for key in SETTINGS} == before
