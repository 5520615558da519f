"""One SparkSession factory with one behaviour (issue 25), on this test process's real session.

A session the process already has is reused as it is: only the runtime settings the caller names change.
Before, the dbt adapter's own factory turned ANSI mode off on every session it reused, asked or not.
"""
from dbt.adapters.branchspark.core import jvm_archive
from dbt.adapters.branchspark.core.spark_session import spark_session
from tests.missing import missing
from tests.sessions import make_active

ANSI = "spark.sql.ansi.enabled"
ZONE = "spark.sql.session.timeZone"


def test_the_active_session_is_reused_with_only_the_settings_asked_for(spark):
    make_active(spark)  # the premise: the suite's session is the active one
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
    make_active(spark)
    catalog = spark.conf.get("spark.sql.catalogImplementation", None)
    assert spark_session({"spark.sql.catalogImplementation": "hive"}) is spark
    assert spark.conf.get("spark.sql.catalogImplementation", None) == catalog


def _mapped_files(spark) -> str:
    """/proc's list of the files this session's JVM has mapped into memory."""
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    with open(f"/proc/{pid}/maps") as maps:
        return maps.read()


def test_the_driver_jvm_maps_the_class_archive_make_install_built(spark):
    """A JVM that refuses its archive (another class path, another JDK) says nothing and starts slowly: only its
    mapped files show whether the classes dumped at install are in use (docs/performance.md, "Starting a JVM")."""
    archive = jvm_archive.archive_path()
    if not archive.is_file():
        missing(f"no JVM class-data archive at {archive}: `make install` builds it "
                f"(python -m dbt.adapters.branchspark.core.jvm_archive_build)")
    assert str(archive) in _mapped_files(spark), f"the driver JVM was given {archive} but did not map it"


def test_only_a_built_archive_is_named_and_never_over_the_callers_own(tmp_path, monkeypatch):
    monkeypatch.setenv(jvm_archive.ARCHIVE_ENV, str(tmp_path / "none.jsa"))
    assert jvm_archive.session_config({"spark.driver.extraJavaOptions": "-Xss4m"}) == {
        "spark.driver.extraJavaOptions": "-Xss4m"}
    archive = tmp_path / "in a folder" / "spark.jsa"
    archive.parent.mkdir()
    archive.write_bytes(b"x")
    monkeypatch.setenv(jvm_archive.ARCHIVE_ENV, str(archive))
    options = jvm_archive.session_config({"spark.driver.extraJavaOptions": "-Xss4m"})["spark.driver.extraJavaOptions"]
    assert options.startswith("-Xss4m ") and f'"-XX:SharedArchiveFile={archive}"' in options
    dumping = {"spark.driver.extraJavaOptions": f"-XX:ArchiveClassesAtExit={tmp_path / 'new.jsa'}"}
    assert jvm_archive.session_config(dumping) == dumping
