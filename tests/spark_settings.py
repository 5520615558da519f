"""Spark settings of the test processes (the pytest workers and the writer processes they start).

Tests run thousands of queries over a few rows each: there, planning adaptively and compiling
whole-stage code cost seconds per query and gain nothing, so in-process test sessions skip both (the
rows are the same either way). The Spark Connect pass keeps the server's defaults, so the merge tests,
the conformance suite and the deletion-vector reads also run with both on; the modules that check
plans made with code generation run with Spark's defaults in-process too (tests/conftest.py).
"""

FAST_SMALL_QUERIES = {"spark.sql.adaptive.enabled": "false", "spark.sql.codegen.wholeStage": "false"}
# A short-lived test JVM: the client compiler only and one GC thread leave the cores to the tests.
FAST_TEST_JVM = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
