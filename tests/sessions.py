"""The test process shares one SparkSession; a test that needs a second one (a user's own session, without the
suite's extension) gives the first its place back."""
from pyspark.sql import SparkSession

from dbt.adapters.branchspark.core.connect import is_connect


def make_active(spark) -> None:
    """Make `spark` this thread's active session again. In-process, `newSession()` and every frame another
    session creates take that place, and `spark_session()` reuses whichever session is active: a later test
    would run on the other session (and test_spark_session's identity checks fail). A Connect client's new
    sessions never take it."""
    if is_connect(spark):
        return
    SparkSession._activeSession = spark  # pyspark has no public setter; these are the two its builder sets
    spark._jvm.SparkSession.setActiveSession(spark._jsparkSession)
