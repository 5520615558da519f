"""Keyless tombstones applied as deletion vectors (a test per row position: a compiled Catalyst
expression on sessions branchspark builds, a Java UDF on others such as a Spark Connect server) give
exactly the rows the anti-join gives, in every read shape; without either the reader falls back to the
join."""
import contextlib
import io
import shutil

import pytest
from pyspark.sql import functions as F

from dbt.adapters.branchspark.storage import deletion_vectors
from sorted_rows import rows


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


def uses_vectors(df) -> bool:
    return deletion_vectors.FUNCTION in plan_text(df)


def is_connect(spark) -> bool:
    from dbt.adapters.branchspark.storage.session import is_connect as connect_session
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
    encoded = deletion_vectors.encode([lh.warehouse.uri(t.path) for t in tombstones], 3)
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
def test_a_plain_read_takes_positions_from_the_scan_and_row_ids_from_metadata(lh, events):
    """Without row ids the position is a column of the scan's own schema (no `_metadata` struct per row);
    with row ids (which need the file path too) it comes from `_metadata`. Both read the same rows."""
    plain = lh.read(events)
    plan = plan_text(plain)
    assert deletion_vectors.ROW_INDEX in plan and "_metadata#" not in plan
    with_ids = lh.snapshot("main").read(events, with_row_ids=True)
    assert "_metadata#" in plan_text(with_ids)
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
    vectors = deletion_vectors.encode([lh.warehouse.uri(t.path) for t in tombstones],
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
def test_the_jar_is_built_from_source_and_without_a_jdk_there_is_none(tmp_path, monkeypatch):
    monkeypatch.setenv("BRANCHSPARK_CACHE_DIR", str(tmp_path / "cache"))
    built = deletion_vectors.jar_path.__wrapped__()  # uncached: compiles DeletedRow.java here
    assert built is not None and built.startswith(str(tmp_path / "cache")) and built.endswith(".jar")
    import zipfile
    assert {"branchspark/DeletedRow.class", "branchspark/DeletedRowExpression.class",
            "branchspark/Extensions.class"} <= set(zipfile.ZipFile(built).namelist())
    monkeypatch.setenv("BRANCHSPARK_CACHE_DIR", str(tmp_path / "other"))
    monkeypatch.setattr(deletion_vectors.shutil, "which", lambda _: None)
    assert deletion_vectors.jar_path.__wrapped__() is None  # the reader then joins


@needs_jdk
def test_sessions_branchspark_builds_test_positions_with_the_compiled_expression(lh, spark, events, join_only):
    """In-process, the session extension makes branchspark_deleted_row a Catalyst expression (generated
    code, no boxing per row); its interpreted path (whole-stage code generation off) reads the same rows."""
    if is_connect(spark):
        pytest.skip("a Spark Connect server started without branchspark's extension runs the UDF (checked here)")
    table = lh.read(events)
    plan = plan_text(table)
    assert COMPILED in plan and "branchspark.DeletedRow" not in plan
    compiled = rows(table)
    assert [r[0] for r in rows(table.select("id"))] == expected_ids()
    spark.conf.set("spark.sql.codegen.wholeStage", "false")
    spark.conf.set("spark.sql.codegen.factoryMode", "NO_CODEGEN")
    try:
        assert rows(lh.read(events)) == compiled
    finally:
        spark.conf.unset("spark.sql.codegen.wholeStage")
        spark.conf.unset("spark.sql.codegen.factoryMode")
    join_only()
    assert rows(lh.read(events)) == compiled


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
                      "spark.master": "local[2]"}
    assert deletion_vectors.session_config(config) == config  # no duplicates when applied twice
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
