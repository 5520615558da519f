"""Keyless tombstones applied as deletion vectors (a test per row position: a compiled Catalyst
expression on sessions branchspark builds, a Java UDF on others such as a Spark Connect server) give
exactly the rows the anti-join gives, in every read shape; without either the reader falls back to the
join."""
import contextlib
import io
import re
import shutil

import pytest
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core.storage import deletion_vectors
from sorted_rows import rows

from tests.sessions import make_active
from tests.spark_settings import session_settings


# Deletion vectors need a JDK to compile their UDF; without one the reader joins (tested below too).
needs_jdk = pytest.mark.skipif(shutil.which("javac") is None or shutil.which("jar") is None,
                               reason="no JDK (javac, jar) on PATH: deletion vectors fall back to the join")


@pytest.fixture
def join_only(monkeypatch):
    """Reads built inside this context apply tombstones by the anti-join."""
    def use_join():
        monkeypatch.setenv("BRANCHSPARK_DELETION_VECTORS", "off")
    return use_join


def plan_text(df) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.explain()
    return out.getvalue()


# SegmentParquetFormat's name in a plan: the scan that leaves deleted rows out as it reads.
LIVE_ROWS = "Parquet (branchspark segments)"


def uses_vectors(df) -> bool:
    plan = plan_text(df)
    return deletion_vectors.FUNCTION in plan or LIVE_ROWS in plan


def is_connect(spark) -> bool:
    from dbt.adapters.branchspark.core.spark_session import is_connect as connect_session
    return connect_session(spark)


# The expression's plan text names the size of its vectors instead of printing their bytes.
COMPILED = "bytes of deletion vectors>"


@pytest.fixture
def events(lh, spark):
    """A keyless table in two segments of several files each, with deletes and updates on both."""
    name = "shop.events"
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as(name, spark.range(0, 3000, numPartitions=3).select(
            F.col("id"), (F.col("id") % 7).alias("bucket"), F.concat(F.lit("e"), F.col("id").cast("string")).alias("label")))
    lh.branch("main").insert(name, spark.range(3000, 4000, numPartitions=2).select(
        F.col("id"), (F.col("id") % 7).alias("bucket"), F.concat(F.lit("e"), F.col("id").cast("string")).alias("label")))
    lh.branch("main").delete(name, "id % 10 = 0")  # dense: a bitmap per file
    lh.branch("main").delete(name, "id in (5, 2995, 3999)")  # sparse, on top
    lh.branch("main").update(name, "id % 97 = 1", {"label": "'changed'"})
    return name


def expected_ids():
    return sorted(i for i in range(4000) if i % 10 != 0 and i not in (5, 2995, 3999))


@needs_jdk
def test_vectors_and_join_read_the_same_rows(lh, events, join_only):
    with_vectors = lh.read(events)
    assert uses_vectors(with_vectors), "a keyless table with tombstones reads through deletion vectors"
    assert [r[0] for r in rows(with_vectors.select("id"))] == expected_ids()
    assert rows(with_vectors.where("label = 'changed'").select("id")) == [
        (i,) for i in expected_ids() if i % 97 == 1]
    join_only()
    joined = lh.read(events)
    assert not uses_vectors(joined)
    assert rows(with_vectors) == rows(joined)


@needs_jdk
@pytest.mark.parametrize("with_row_ids", [False, True], ids=["rows", "row_ids"])
@pytest.mark.parametrize("mode", ["session", "udf"])
def test_a_task_that_reads_several_scan_partitions_applies_each_files_own_vector(lh, spark, events, mode,
                                                                                   with_row_ids, monkeypatch):
    """Issue 67: Spark replaces the per-task holder of the current input file when a partition of files ends,
    so a test that kept the holder of the first row read every later partition's rows against the first
    file's vector. A coalesce (as the change feed's comparison of small inputs makes) reads several scan
    partitions in one task: rows the tombstones delete at other positions came back. The session's own way
    (the compiled expression in-process, the UDF through Connect) and the UDF of a session without the
    extension (a user's own session) must both hold."""
    reader = lh
    if mode == "udf":
        if is_connect(spark):
            pytest.skip("through Spark Connect the session's own way is the UDF (the `session` case)")
        # the test session has the extension, whose function shadows a UDF of its name: register another name
        monkeypatch.setattr(deletion_vectors, "FUNCTION", "branchspark_deleted_row_as_udf")
        from dbt.adapters.branchspark.core.lakehouse import Lakehouse
        reader = Lakehouse(spark.newSession(), lh.warehouse.root, lh.catalog_url)
        assert deletion_vectors.enabled(reader.spark)
    # each file a scan partition of its own (a file's open cost counts as a whole partition's bytes), as where
    # several cores share a segment's files: test sessions otherwise pack a scan's few small files into one
    try:
        with session_settings(reader.spark, {"spark.sql.files.openCostInBytes": 128 << 20}):
            table = reader.snapshot("main").read(events, with_row_ids=with_row_ids)
            if not is_connect(spark):
                assert table.rdd.getNumPartitions() > 1, "the check needs files in several scan partitions"
            assert uses_vectors(table)
            assert [r[0] for r in rows(table.coalesce(1).select("id"))] == expected_ids()
    finally:
        if reader is not lh:
            reader.store.dispose()
            make_active(spark)


def test_row_ids_and_older_versions_match_the_join(lh, events, join_only):
    snapshot = lh.snapshot("main")
    before_updates = lh.log("main")[1].id  # after both deletes, before the update
    with_vectors = rows(snapshot.read(events, with_row_ids=True))
    older = rows(lh.read(events, at=before_updates))
    assert len(older) == len(expected_ids())
    join_only()
    assert rows(snapshot.read(events, with_row_ids=True)) == with_vectors
    assert rows(lh.read(events, at=before_updates)) == older


def test_vectors_hold_under_joins_filters_and_python_udfs(lh, spark, events):
    table = lh.read(events)
    plus_one = F.udf(lambda v: v + 1, "bigint")  # a Python UDF: rows cross to a worker thread and back
    shaped = (table.where(plus_one(F.col("id")) % 2 == 0)
              .join(spark.range(0, 4000).withColumnRenamed("id", "other"), F.col("id") == F.col("other"))
              .groupBy("bucket").count())
    expected = {}
    for i in expected_ids():
        if (i + 1) % 2 == 0:
            expected[i % 7] = expected.get(i % 7, 0) + 1
    assert dict(rows(shaped)) == expected


@needs_jdk
def test_sparse_vectors_in_long_files(lh, spark):
    """Few deletions in a long file travel as sorted positions, not a bitmap."""
    with lh.transaction("main") as tx:
        tx.create_database("big")
        tx.create_table_as("big.t", spark.range(0, 200_000, numPartitions=1))
    lh.branch("main").delete("big.t", "id in (3, 150000, 199999)")
    snapshot = lh.snapshot("main")
    tombstones = snapshot.ns.tombstone_infos(snapshot.state("big.t").tombstones)
    encoded = deletion_vectors.encode([(lh.warehouse.uri(t.path), ()) for t in tombstones], 3)
    assert encoded is not None and len(encoded) < 200  # three sorted longs, not a 25 KB bitmap
    table = lh.read("big.t")
    assert uses_vectors(table)
    assert table.count() == 199_997
    assert rows(table.where("id in (2, 3, 4, 149999, 150000, 199998, 199999)")) == [
        (2,), (4,), (149999,), (199998,)]


@needs_jdk
def test_the_udf_refuses_rows_outside_a_segment_scan(spark, lh):
    assert deletion_vectors.enabled(spark)
    with pytest.raises(Exception, match="not a branchspark segment file"):
        spark.range(3).where(~F.call_function(deletion_vectors.FUNCTION, F.col("id"), F.lit(b""))).collect()


@needs_jdk
def test_a_plain_read_takes_positions_from_the_scan_and_row_ids_from_metadata(lh, spark, events):
    """Without row ids the scan itself gives the positions: in-process our Parquet source leaves the
    deleted rows out as it reads; elsewhere (the UDF) the position is a column of the scan's own schema,
    with no `_metadata` struct per row. With row ids (which need the file path too) it comes from
    `_metadata`. Both read the same rows."""
    plain = lh.read(events)
    plan = plan_text(plain)
    if deletion_vectors.scan_leaves_out_deleted(spark, []):
        assert LIVE_ROWS in plan and deletion_vectors.ROW_INDEX not in plan
    else:
        assert deletion_vectors.ROW_INDEX in plan
    assert "_metadata#" not in plan
    with_ids = lh.snapshot("main").read(events, with_row_ids=True)
    assert "_metadata#" in plan_text(with_ids) and LIVE_ROWS not in plan_text(with_ids)
    assert rows(plain) == rows(with_ids.select(*plain.columns))
    # Spark fills that column with each row's index in its file.
    ids = with_ids.select("_bs_file", "_bs_pos")
    assert ids.distinct().count() == ids.count() == len(expected_ids())


@needs_jdk
def test_the_udf_refuses_a_scan_without_positions(lh, spark, events):
    """A segment scan whose position column is empty fails loudly instead of keeping deleted rows."""
    snapshot = lh.snapshot("main")
    state = snapshot.state(events)
    segments = snapshot.ns.segment_infos(state.segments)
    tombstones = snapshot.ns.tombstone_infos(state.tombstones)
    vectors = deletion_vectors.encode([(lh.warehouse.uri(t.path), ()) for t in tombstones],
                                      sum(t.row_count for t in tombstones))
    files = [lh.warehouse.uri(f"{s.path}/{name}") for s in segments for name in s.files]
    scan = spark.read.schema("id long, missing long").parquet(*files)
    with pytest.raises(Exception, match="no row position"):
        deletion_vectors.without_deleted(scan, F.col("missing"), vectors).collect()


def test_too_many_positions_fall_back_to_the_join(lh, events, monkeypatch):
    monkeypatch.setattr(deletion_vectors, "MAX_POSITIONS", 10)
    table = lh.read(events)
    assert not uses_vectors(table)
    assert [r[0] for r in rows(table.select("id"))] == expected_ids()


@needs_jdk
def test_the_jar_is_built_at_install_for_the_installed_spark_and_never_at_run_time(tmp_path, monkeypatch, caplog):
    """jvm_build compiles every class the reader uses into jvm/branchspark-spark<version>.jar (make install and
    setup.py run it); jar_path only looks for that file: without it, one warning naming the command to build
    it, and reads join."""
    import zipfile

    import pyspark

    from dbt.adapters.branchspark.core.storage import jvm_build

    built = jvm_build.build(tmp_path)
    assert built == tmp_path / f"branchspark-spark{pyspark.__version__}.jar"
    assert {"branchspark/DeletedRow.class", "branchspark/DeletedRowExpression.class", "branchspark/Extensions.class",
            "branchspark/SegmentParquetFormat.class", "branchspark/LiveRows.class",
            "branchspark/PosixLocalFileSystem.class", "branchspark/PosixLocalFileSystem$Raw.class"
            } <= set(zipfile.ZipFile(built).namelist())
    assert deletion_vectors.jar_path() == str(jvm_build.SOURCES / built.name)  # what make install built

    monkeypatch.setattr(jvm_build, "SOURCES", tmp_path / "elsewhere")
    monkeypatch.setattr(deletion_vectors.jvm_build.shutil, "which", lambda _: pytest.fail("compiled at run time"))
    with caplog.at_level("WARNING", logger=deletion_vectors.__name__):
        assert deletion_vectors.jar_path.__wrapped__() is None  # the reader then joins
    assert f"{built.name} is not built" in caplog.text and "jvm_build" in caplog.text


def test_without_a_jdk_the_build_says_what_is_missing(tmp_path, monkeypatch):
    from dbt.adapters.branchspark.core.storage import jvm_build

    monkeypatch.setattr(jvm_build.shutil, "which", lambda _: None)
    with pytest.raises(RuntimeError, match="no JDK"):
        jvm_build.build(tmp_path)
    assert not list(tmp_path.iterdir())


@needs_jdk
def test_sessions_branchspark_builds_test_positions_with_the_compiled_expression(lh, spark, events, join_only):
    """In-process, the session extension makes branchspark_deleted_row a Catalyst expression (generated
    code, no boxing per row), which reads with row ids use; its interpreted path (whole-stage code
    generation off) reads the same rows."""
    if is_connect(spark):
        pytest.skip("a Spark Connect server started without branchspark's extension runs the UDF (checked here)")
    table = lh.snapshot("main").read(events, with_row_ids=True)
    plan = plan_text(table)
    assert COMPILED in plan and "branchspark.DeletedRow" not in plan
    compiled = rows(table)
    assert sorted(r[0] for r in rows(table.select("id"))) == expected_ids()
    with session_settings(spark, {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}):
        assert rows(lh.snapshot("main").read(events, with_row_ids=True)) == compiled
    join_only()
    assert rows(lh.snapshot("main").read(events, with_row_ids=True)) == compiled


@pytest.fixture
def live_rows_scan(spark):
    if not deletion_vectors.scan_leaves_out_deleted(spark, []):
        pytest.skip("this session has no branchspark jar on its class path (a Spark Connect server started "
                    "without it): reads filter by the UDF, checked above")


@needs_jdk
def test_a_plain_read_leaves_deleted_rows_out_as_it_scans(lh, events, join_only, live_rows_scan):
    """No position column and no filter after the scan: the scan gives the live rows only."""
    table = lh.read(events)
    plan = plan_text(table)
    assert LIVE_ROWS in plan and deletion_vectors.FUNCTION not in plan
    assert not re.search(r"\bFilter\b", plan)  # no Filter node (the scan's DataFilters etc. are other words)
    assert table.count() == len(expected_ids())  # a read of no column: the rows are still counted right
    assert [r[0] for r in rows(table.select("id"))] == expected_ids()
    live = rows(table)
    join_only()
    assert rows(lh.read(events)) == live


@pytest.fixture
def long_files(lh, spark):
    """A keyless table whose two files have many small row groups, with dense and sparse deletions."""
    with session_settings(spark, {"parquet.block.size": 16384}):  # row groups of a few hundred rows
        with lh.transaction("main") as tx:
            tx.create_database("long")
            tx.create_table_as("long.t", spark.range(0, 40_000, numPartitions=2).select(
                F.col("id"), F.concat(F.lit("row-"), F.col("id").cast("string")).alias("label")))
    lh.branch("main").delete("long.t", "id % 13 = 0")
    lh.branch("main").delete("long.t", "id in (1, 19999, 20000, 39999)")
    return "long.t"


def long_ids():
    return [i for i in range(40_000) if i % 13 != 0 and i not in (1, 19999, 20000, 39999)]


SHAPES = {
    # Splits that start inside a file: positions come from Spark's row index, not counted.
    "split files": {"spark.sql.files.maxPartitionBytes": "65536", "spark.sql.files.openCostInBytes": "0"},
    # A filter pushed into Parquet may skip row groups: Spark's row index again.
    "pushed filter": {},
    # Row by row, by Spark's vectorized reader (a schema too wide for batches) or by parquet-mr.
    "rows, vectorized": {"spark.sql.codegen.maxFields": "1"},
    "rows, parquet-mr": {"spark.sql.parquet.enableVectorizedReader": "false"},
    "code generation off": {"spark.sql.codegen.wholeStage": "false"},
}


@needs_jdk
@pytest.mark.parametrize("shape", SHAPES)
def test_live_rows_in_every_read_shape(lh, spark, long_files, shape, live_rows_scan):
    with session_settings(spark, SHAPES[shape]):
        table = lh.read(long_files)
        plan = plan_text(table)
        assert LIVE_ROWS in plan
        assert ("Batched: false" if shape.startswith("rows") or shape == "code generation off" else "Batched: true") in plan
        if shape == "split files":
            assert table.select(F.spark_partition_id()).distinct().count() > 2  # more splits than files
        if shape == "pushed filter":
            table = table.where("id >= 15000")
            assert "GreaterThanOrEqual(id,15000)" in plan_text(table)  # pushed into Parquet
            assert [r[0] for r in rows(table.select("id"))] == [i for i in long_ids() if i >= 15000]
        else:
            assert [r[0] for r in rows(table.select("id"))] == long_ids()
            assert rows(table.where("label = 'row-20001'")) == [(20001, "row-20001")]
            assert table.count() == len(long_ids())


@needs_jdk
def test_live_rows_of_a_partitioned_table(lh, spark, join_only, live_rows_scan):
    with lh.transaction("main") as tx:
        tx.create_database("part")
        tx.create_table_as("part.t", spark.range(0, 5000, numPartitions=2).select(
            F.col("id"), (F.col("id") % 3).cast("string").alias("region")), partition_by=["region"])
    lh.branch("main").delete("part.t", "id % 11 = 0 or id = 4999")
    table = lh.read("part.t")
    assert LIVE_ROWS in plan_text(table)
    expected = [(i, str(i % 3)) for i in range(5000) if i % 11 != 0 and i != 4999]
    assert rows(table.select("id", "region")) == expected
    assert rows(table.where("region = '1'").select("id", "region")) == [r for r in expected if r[1] == "1"]
    join_only()
    assert rows(lh.read("part.t").select("id", "region")) == expected


def test_a_connect_session_without_the_extension_runs_the_udf(lh, spark, events):
    if not is_connect(spark):
        pytest.skip("in-process sessions have the compiled expression (checked above)")
    if not deletion_vectors.enabled(spark):
        pytest.skip("this Spark Connect server refused the UDF's jar: the reader joins (checked elsewhere)")
    assert COMPILED not in plan_text(lh.read(events))
    assert [r[0] for r in rows(lh.read(events).select("id"))] == expected_ids()


def test_session_config_adds_the_jar_and_the_extension_to_what_the_user_set(monkeypatch):
    monkeypatch.setattr(deletion_vectors, "jar_path", lambda: "/cache/branchspark-udf.jar")
    config = deletion_vectors.session_config({"spark.jars": "/opt/other.jar",
                                              "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
                                              "spark.master": "local[2]"})
    assert config == {"spark.jars": "/opt/other.jar,/cache/branchspark-udf.jar",
                      "spark.sql.extensions": f"io.delta.sql.DeltaSparkSessionExtension,{deletion_vectors.EXTENSIONS}",
                      "spark.master": "local[2]",
                      # and the jar's commit protocol for branchspark's own writes (direct_writes.py)
                      "spark.sql.sources.commitProtocolClass": "branchspark.DirectCommitProtocol"}
    assert deletion_vectors.session_config(config) == config  # no duplicates when applied twice
    own = {"spark.sql.sources.commitProtocolClass": "com.example.TheirProtocol"}
    assert deletion_vectors.session_config(own)["spark.sql.sources.commitProtocolClass"] == \
        "com.example.TheirProtocol", "a protocol the user set stays theirs"
    monkeypatch.setenv("BRANCHSPARK_DELETION_VECTORS", "off")
    assert deletion_vectors.session_config({"spark.master": "local[2]"}) == {"spark.master": "local[2]"}
    monkeypatch.setenv("BRANCHSPARK_DELETION_VECTORS", "on")
    monkeypatch.setattr(deletion_vectors, "jar_path", lambda: None)  # no JDK
    assert deletion_vectors.session_config({"spark.master": "local[2]"}) == {"spark.master": "local[2]"}


def test_a_plain_read_scans_the_files_without_the_segment_column(lh, events):
    """Without row ids a read names the data files only: no `_bs_seg` partition column per row, so a
    compacted table's read is a plain Parquet scan of its files. Row ids bring the column back."""
    lh.branch("main").compact(events)
    for table in (lh.read(events), lh.read(events, at=lh.log("main")[1].id)):  # compacted, and tombstoned
        assert "_bs_seg#" not in plan_text(table)
        assert [r[0] for r in rows(table.select("id"))] == expected_ids()
    with_ids = lh.snapshot("main").read(events, with_row_ids=True)
    assert "_bs_seg#" in plan_text(with_ids)
    assert rows(with_ids.select("id")) == rows(lh.read(events).select("id"))


FLAT_COLUMNS = """
    id,
    id % 2 = 0 AS flag,
    CAST(id % 100 AS TINYINT) AS tiny,
    CAST(id AS SMALLINT) AS small,
    CAST(id * 3 AS INT) AS whole,
    CAST(id / 7 AS FLOAT) AS real,
    id / 9 AS ratio,
    DATE_ADD(DATE'2020-01-01', CAST(id AS INT)) AS day,
    TIMESTAMP'2020-01-01 00:00:00' + MAKE_INTERVAL(0, 0, 0, 0, 0, 0, id) AS at,
    TIMESTAMP_NTZ'2020-01-01 00:00:00' + MAKE_INTERVAL(0, 0, 0, 0, 0, id, 0) AS local_at,
    CAST(id / 4 AS DECIMAL(5, 2)) AS price,
    CAST(id * 1000.5 AS DECIMAL(15, 3)) AS amount,
    CAST(id AS DECIMAL(30, 4)) * 1000000000000 AS big,
    CONCAT('s', CAST(id AS STRING)) AS label,
    CAST(CONCAT('b', CAST(id % 50 AS STRING)) AS BINARY) AS bytes,
    MAKE_DT_INTERVAL(0, 0, 0, id) AS span,
    MAKE_YM_INTERVAL(0, CAST(id % 24 AS INT)) AS months
"""


@needs_jdk
@pytest.mark.parametrize("dictionary", ["dictionary", "plain"])
def test_live_rows_of_every_flat_type_with_nulls(lh, spark, join_only, live_rows_scan, dictionary):
    """Every column type the scan moves in place, with NULLs, dictionary-encoded or not, reads exactly
    the join's rows."""
    columns = [c.strip() for c in FLAT_COLUMNS.strip().split(",\n")]
    # Every fifth row NULL in every column but id (rows move with their NULL flags).
    data = spark.range(0, 3000, numPartitions=2).selectExpr(
        "id", *[f"IF(id % 5 = 1, NULL, {c.rsplit(' AS ', 1)[0]}) AS {c.rsplit(' AS ', 1)[1]}" for c in columns[1:]])
    with session_settings(spark, {"parquet.enable.dictionary": str(dictionary == "dictionary").lower()}):
        with lh.transaction("main") as tx:
            tx.create_database("flat")
            tx.create_table_as("flat.t", data)
    lh.branch("main").delete("flat.t", "id % 3 = 0 or id in (1, 1499, 2999)")
    table = lh.read("flat.t")
    assert LIVE_ROWS in plan_text(table) and "Batched: true" in plan_text(table)
    live = rows(comparable(table))
    assert [r[0] for r in live] == [i for i in range(3000) if i % 3 != 0 and i not in (1, 1499, 2999)]
    assert sum(1 for r in live if r[1] is None) == sum(1 for r in live if r[0] % 5 == 1)
    join_only()
    assert rows(comparable(lh.read("flat.t"))) == live


def comparable(table):
    return table.withColumn("months", F.col("months").cast("string"))  # Python has no year-month interval


@needs_jdk
def test_columns_of_nested_types_take_the_filter(lh, spark, join_only):
    """Arrays, maps and structs are not moved in place: their reads test positions in a filter."""
    with lh.transaction("main") as tx:
        tx.create_database("nest")
        tx.create_table_as("nest.t", spark.range(0, 2000, numPartitions=2).selectExpr(
            "id", "ARRAY(id, id + 1) AS pair", "NAMED_STRUCT('a', id, 'b', CAST(id AS STRING)) AS detail"))
    lh.branch("main").delete("nest.t", "id % 4 = 0")
    table = lh.read("nest.t")
    assert uses_vectors(table) and LIVE_ROWS not in plan_text(table)
    live = rows(table.selectExpr("id", "pair[1]", "detail.b"))
    assert live == [(i, i + 1, str(i)) for i in range(2000) if i % 4 != 0]
    join_only()
    assert rows(lh.read("nest.t").selectExpr("id", "pair[1]", "detail.b")) == live
