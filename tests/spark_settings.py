"""Spark settings of the test processes (the pytest workers and the writer processes they start).

Tests run thousands of queries over a few rows each: there, planning adaptively and compiling
whole-stage code cost seconds per query and gain nothing, so in-process test sessions skip both (the
rows are the same either way). The Spark Connect pass keeps the server's defaults, so the merge tests,
the conformance suite and the deletion-vector reads also run with both on; the modules that check
plans made with code generation run with Spark's defaults in-process too (tests/conftest.py).
"""

# Interpreting every expression (`spark.sql.codegen.factoryMode=NO_CODEGEN`) made a keyed model batch 12% faster
# but breaks Spark's own typed paths: `spark.catalog.listTables()` fails to decode its rows (2026-11-29).
FAST_SMALL_QUERIES = {"spark.sql.adaptive.enabled": "false", "spark.sql.codegen.wholeStage": "false"}
# Test data is a few rows: one partition per shuffle and per local collection means one task and one file
# where two would each hold a row or none (a write's segment, then every read of it, has half the files).
# The same operations took 11-16% less CPU with it (2026-11-26, a keyed and a keyless table, 108 writes).
# Segments of several files are still written by partitioned tables and through the Connect server (2 partitions).
ONE_PARTITION = {"spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1",
                 "spark.sql.adaptive.coalescePartitions.initialPartitionNum": "1"}
# A test worker's JVM lives for the whole suite: one GC thread leaves the cores to the tests, and the full JIT
# pays off (batches of the model test ran 25-30% faster with it than with the client compiler only, measured
# 2026-11-26). Short-lived writer processes keep the client compiler (tests/core/writer_process.py).
FAST_TEST_JVM = {"spark.driver.extraJavaOptions": "-XX:+UseSerialGC"}
