"""Spark settings of the test processes (the pytest workers and the writer processes they start).

Tests run thousands of queries over a few rows each: there, planning adaptively and generating code
(whole stages, and each task's expressions) cost seconds per query and gain nothing, so in-process test
sessions skip them (the rows are the same either way), and so does the test Spark Connect server of `make
test` (tests/connect_server.sh: dbt's conformance suites through it took 179 s against 208 s, the server 215 s of
CPU against 267 s, 2026-11-30); `make test-long`'s keeps Spark's defaults, so the merge matrix and rules run
through Connect with them on. The modules that check plans made with code generation ask Spark's defaults for
their tests, in-process and through Connect (tests/conftest.py, SPARK_DEFAULT_MODULES).
"""
from contextlib import contextmanager


# Interpreted expressions too (`factoryMode=NO_CODEGEN`): with whole-stage code generation off, each task still
# compiled its projections and orderings with Janino, a quarter of the task threads' samples in a Java Flight
# Recorder profile of a keyed model batch; interpreted, the batch took 57.7 s against 63-69 s, its JVM 63 s of CPU
# against 71 s (2026-11-29, night). Spark's typed paths cannot decode rows this way (`spark.catalog.listTables()`
# fails): tests list views with SQL (`SHOW TABLES`).
FAST_SMALL_QUERIES = {"spark.sql.adaptive.enabled": "false", "spark.sql.codegen.wholeStage": "false",
                      "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
# Test data is a few rows: one partition per shuffle and per local collection means one task and one file
# where two would each hold a row or none (a write's segment, then every read of it, has half the files).
# The same operations took 11-16% less CPU with it (2026-11-26, a keyed and a keyless table, 108 writes).
# Segments of several files are still written by partitioned tables and through the Connect server (2 partitions).
ONE_PARTITION = {"spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1",
                 "spark.sql.adaptive.coalescePartitions.initialPartitionNum": "1"}
# A test worker's JVM lives for the whole suite: one GC thread leaves the cores to the tests, and C2 pays off for
# its hot code (batches of the model test ran 25-30% faster than with the client compiler only, measured
# 2026-11-26), but only for that (HOT_CODE_ONLY_C2 below). Short-lived writer processes keep the client compiler (tests/core/writer_process.py).
# The default 1 GB heap held 300-600 MB live during a model batch and collected it in full 15 times a minute
# (6 s of a 63 s batch); 3 GB halves the full collections. Two test JVMs and the Connect server fit in 24 GB.
# Spark sizes a task's memory pages (sorts, aggregations, joins) from the heap: megabytes each, allocated straight
# into the old generation, so a keyless batch still collected it in full 17 times (10.7 s); pages of 1 MB die
# young: 3 full collections, the batch 92 s against 99-103 s (bench/model_batch.py, 2026-11-29, night).
# C2, the optimizing JIT, only for code that is really hot: HotSpot's default thresholds (Tier4*: 5,000 calls,
# 15,000 calls and loops, 40,000 back edges) send thousands of a test JVM's methods to C2, whose compiles took
# half the JVM's CPU in a mixed run (128-137 s of 157-188 s per JVM, two pytest processes side by side on 2
# cores: a keyed model batch with test_changes.py beside test_merge_rules.py with test_diff.py). With thresholds
# 25 times the defaults the JIT took 28-33 s, the JVMs 102-130 s, and the pair ran in 162 s against 220 s;
# 10 times: 187 s; 100 times: 192 s (methods then stay in C1's slower profiling code); C1 alone: 168 s
# (2026-12-03, night; the model test alone still gains from C2: bench/model_batch.py).
HOT_CODE_ONLY_C2 = ("-XX:Tier4InvocationThreshold=125000 -XX:Tier4MinInvocationThreshold=12500 "
                    "-XX:Tier4CompileThreshold=250000 -XX:Tier4BackEdgeThreshold=1000000")
FAST_TEST_JVM = {"spark.driver.extraJavaOptions": f"-XX:+UseSerialGC {HOT_CODE_ONLY_C2}", "spark.driver.memory": "3g",
                 "spark.buffer.pageSize": "1m"}


@contextmanager
def session_settings(spark, settings: dict):
    """`settings` on `spark` for a block, then each key's earlier value back. Not `conf.unset`: that falls back to
    Spark's default, not to the value the test session was built with (200 shuffle partitions where the worker
    had 1: every later test in that worker ran 200 tasks a shuffle, 4-8 times its time, 2026-12-02)."""
    earlier = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, str(value))
    try:
        yield spark
    finally:
        for key, value in earlier.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
