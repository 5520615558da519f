"""Spark settings of the test processes (the pytest workers and the writer processes they start).

Tests run thousands of queries over a few rows each: there, planning adaptively and compiling
whole-stage code or expressions cost seconds per query and gain nothing, so in-process test sessions skip
them (the rows are the same either way: interpreted expressions are Spark's own fallback). The Spark
Connect pass keeps the server's defaults, so the merge tests, the conformance suite and the deletion-vector
reads also run with them on; the modules that check plans made with code generation run with Spark's
defaults in-process too (tests/conftest.py).
"""

FAST_SMALL_QUERIES = {"spark.sql.adaptive.enabled": "false", "spark.sql.codegen.wholeStage": "false",
                      "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
# Test data is a few rows: one partition per shuffle and per local collection means one task and one file
# where two would each hold a row or none (a write's segment, then every read of it, has half the files).
# The same operations took 11-16% less CPU with it (2026-11-26, a keyed and a keyless table, 108 writes).
# Segments of several files are still written by partitioned tables and through the Connect server (2 partitions).
ONE_PARTITION = {"spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1",
                 "spark.sql.adaptive.coalescePartitions.initialPartitionNum": "1"}
# One GC thread leaves the cores to the tests. The client compiler alone: the tests' JVMs compile tens of
# thousands of methods (every test table brings classes of its own): compiling took nearly half a core. It
# needs room for its code: with the 48 MB it gets by default the code cache filled within minutes, HotSpot
# turned its compiler off and everything new ran interpreted (the likely reason it measured 25-30% slower
# over whole profiles on 2026-11-26). With 240 MB, as the full JIT has, and interpreted expressions (above), two
# workers ran four batches of each model kind side by side in 29% (keyed) and 37% (keyless) less time
# (2026-11-27, docs/performance.md).
FAST_TEST_JVM = {"spark.driver.extraJavaOptions":
                 "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"}
