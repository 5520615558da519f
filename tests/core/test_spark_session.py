"""One SparkSession factory with one behaviour (issue 25), on this test process's real session.

A session the process already has is reused as it is: only the runtime settings the caller names change.
Before, the dbt adapter's own factory turned ANSI mode off on every session it reused, asked or not.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dbt.adapters.branchspark.core import jvm_archive, jvm_home
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
    if jvm_home.through_launcher() and not os.environ.get(jvm_archive.ARCHIVE_ENV):
        # without the cache the JVMs would map the class-data archive, and its dump's failure would go unseen
        cache = jvm_archive.aot_cache_path()
        assert cache.is_file(), f"no AOT cache at {cache}: its dump failed (see {cache}.log)"
    archive = jvm_archive.archive_path()
    if not archive.is_file():
        missing(f"no JVM class-data archive at {archive}: `make install` builds it "
                f"(python -m dbt.adapters.branchspark.core.jvm_archive_build)")
    assert str(archive) in _mapped_files(spark), f"the driver JVM was given {archive} but did not map it"


def test_the_driver_jvm_runs_on_the_jdk_make_install_chose(spark):
    """`make install` chooses the newest JDK from 17 to 25 installed (jars/jdk_home.sh); a session branchspark
    starts runs on it, or on the JAVA_HOME the process was given, which stays the caller's."""
    chosen = jvm_home.java_home() or os.environ.get("JAVA_HOME")
    if chosen is None:
        missing(f"no JDK chosen at {jvm_home.choice_path()} and no JAVA_HOME: `make install` writes the choice when "
                f"a JDK from 17 to 25 is installed; Spark then runs on `java` on the PATH")
    running = spark._jvm.java.lang.System.getProperty("java.home")
    jdk = jvm_home.jdk_of(chosen)  # a launcher home (JDK 25 and later) runs the JDK it was made for
    assert os.path.realpath(running) == os.path.realpath(jdk), f"the driver runs on {running}, not {jdk}"


def test_a_chosen_jdk_is_set_only_while_a_jvm_starts_and_a_missing_one_is_not_chosen(tmp_path, monkeypatch):
    jdk = tmp_path / "jdk"
    (jdk / "bin").mkdir(parents=True)
    monkeypatch.setenv(jvm_home.JAVA_HOME_ENV, str(jdk))
    assert jvm_home.java_home() is None  # no bin/java: not a JDK
    (jdk / "bin" / "java").write_text("")
    assert jvm_home.java_home() == str(jdk)
    assert jvm_home.launch_env({"A": "1", "JAVA_HOME": "/elsewhere"}) == {"A": "1", "JAVA_HOME": str(jdk)}
    monkeypatch.setenv("JAVA_HOME", "/the/callers")
    with jvm_home.launching():
        assert os.environ["JAVA_HOME"] == str(jdk)
    assert os.environ["JAVA_HOME"] == "/the/callers"
    monkeypatch.delenv("JAVA_HOME")
    with pytest.raises(RuntimeError):
        with jvm_home.launching():
            raise RuntimeError("the JVM did not start")
    assert "JAVA_HOME" not in os.environ
    # the install's choice, below a JAVA_HOME the caller set
    monkeypatch.delenv(jvm_home.JAVA_HOME_ENV)
    monkeypatch.setattr(jvm_home, "_CHECKOUT_CHOICES", tmp_path / "choices")
    jvm_home.choice_path().parent.mkdir()
    jvm_home.choice_path().write_text(f"{jdk}\n")
    assert jvm_home.java_home() == str(jdk)
    monkeypatch.setenv("JAVA_HOME", "/the/callers")
    assert jvm_home.java_home() is None and jvm_home.launch_env({"JAVA_HOME": "/the/callers"}) == {
        "JAVA_HOME": "/the/callers"}


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
    cache = tmp_path / "spark.aot"
    cache.write_bytes(b"x")
    monkeypatch.setenv(jvm_archive.ARCHIVE_ENV, str(cache))
    options = jvm_archive.session_config({})["spark.driver.extraJavaOptions"]
    assert f"-XX:AOTCache={cache} " in options and options.endswith(jvm_archive.AOT_QUIET)
    training = {"spark.driver.extraJavaOptions": f"-XX:AOTCacheOutput={tmp_path / 'new.aot'}"}
    assert jvm_archive.session_config(training) == training


def test_the_aot_cache_is_mapped_only_through_a_launcher_home(tmp_path, monkeypatch):
    """The AOT cache needs the launcher's JVM (no added module); a JVM started otherwise, on a JAVA_HOME the caller
    set, maps the class-data archive."""
    monkeypatch.delenv(jvm_archive.ARCHIVE_ENV, raising=False)
    monkeypatch.setattr(jvm_archive, "_CHECKOUT_ARCHIVES", tmp_path / "archives")
    (tmp_path / "archives").mkdir()
    jvm_archive.class_archive_path().write_bytes(b"x")
    jvm_archive.aot_cache_path().write_bytes(b"x")
    launcher = tmp_path / "launcher"
    (launcher / "bin").mkdir(parents=True)
    (launcher / "bin" / "java").write_text("")
    (launcher / jvm_home.LAUNCHER_MARK).write_text("/the/jdk\n")
    monkeypatch.setenv(jvm_home.JAVA_HOME_ENV, str(launcher))
    assert jvm_home.through_launcher() and jvm_archive.archive_path() == jvm_archive.aot_cache_path()
    jvm_archive.aot_cache_path().unlink()  # not built: the class-data archive, which any JVM of that JDK maps
    assert jvm_archive.archive_path() == jvm_archive.class_archive_path()
    jvm_archive.aot_cache_path().write_bytes(b"x")
    # a JAVA_HOME that is the launcher home (tests/connect_server.sh, spark_cluster.sh export the choice so)
    monkeypatch.delenv(jvm_home.JAVA_HOME_ENV)
    monkeypatch.setenv("JAVA_HOME", str(launcher))
    assert jvm_home.through_launcher() and jvm_archive.archive_path() == jvm_archive.aot_cache_path()
    (launcher / jvm_home.LAUNCHER_MARK).unlink()  # a JDK home itself
    assert not jvm_home.through_launcher() and jvm_archive.archive_path() == jvm_archive.class_archive_path()
    monkeypatch.setenv(jvm_home.JAVA_HOME_ENV, str(launcher))
    assert not jvm_home.through_launcher() and jvm_archive.archive_path() == jvm_archive.class_archive_path()


def test_the_connect_server_options_on_the_launcher_home_name_the_aot_cache(tmp_path):
    """Regression (2026-12-07): tests/connect_server.sh exports the chosen launcher home as JAVA_HOME, and its
    server's options then named the class-data archive, not the AOT cache: only branchspark's own choice counted
    as a launcher. The script's own step, run twice as it runs it: a fresh process given that JAVA_HOME."""
    jdk = _jdk_with_aot_linking()
    home = jvm_home.java_home()
    if jvm_home.jdk_of(home) == home:
        pytest.skip(f"branchspark's JVMs run on {home} itself, not a launcher home (`make install JDK=...`)")
    if not jvm_archive.aot_cache_path().is_file():
        pytest.skip(f"no AOT cache at {jvm_archive.aot_cache_path()} (`make install` builds it on {jdk})")
    env = {k: v for k, v in os.environ.items() if k not in (jvm_home.JAVA_HOME_ENV, jvm_archive.ARCHIVE_ENV)}
    env["JAVA_HOME"] = home
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "dbt.adapters.branchspark.core.spark_session", "local[2]",
                               "-Xss4m"], env=env, capture_output=True, text=True, timeout=120, check=True)
        assert f"-XX:AOTCache={jvm_archive.aot_cache_path()}" in done.stdout
        assert "SharedArchiveFile" not in done.stdout


def _jdk_with_aot_linking() -> str:
    home = jvm_home.java_home()
    jdk = home and jvm_home.jdk_of(home)
    if not jdk or (jvm_home.major_version(jdk) or 0) < jvm_home.AOT_LINKING_MAJOR:
        runs_on = jdk or "Spark's own choice of JDK"
        pytest.skip(f"branchspark's JVMs run on {runs_on}, not JDK {jvm_home.AOT_LINKING_MAJOR} or later: no "
                    f"launcher home to check (`make install JDK=...`)")
    return jdk


def _java(java, *args, cwd) -> str:
    done = subprocess.run([str(java), *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_the_launcher_home_leaves_out_only_sparks_added_module_so_classes_link_ahead(tmp_path, monkeypatch):
    """Spark's launcher gives every JVM --add-modules=jdk.incubator.vector, with which JDK 25 archives no module
    graph, and so links no class ahead and replays no method profile: the AOT cache then only maps classes, as
    the class-data archive does. The launcher home's java runs the JDK without that one option."""
    jdk = _jdk_with_aot_linking()
    monkeypatch.setattr(jvm_home, "_CHECKOUT_CHOICES", tmp_path / "choices")
    home = jvm_home.launcher_home(jdk)
    assert jvm_home.jdk_of(home) == os.path.realpath(jdk) and (tmp_path / "choices") in Path(home).parents
    java, plain = Path(home) / "bin" / "java", Path(jdk) / "bin" / "java"
    shown = [jvm_home.LEFT_OUT, "-Dkept=a b", "-XshowSettings:properties", "-version"]
    assert "Using incubator modules" in _java(plain, *shown, cwd=tmp_path)
    out = _java(java, *shown, cwd=tmp_path)
    assert "Using incubator modules" not in out and "kept = a b" in out and "java.version = " in out
    # a class of its own in a jar, an AOT cache of it made and used with the option Spark adds
    (tmp_path / "Hello.java").write_text('public class Hello { public static void main(String[] a) { '
                                         'System.out.println("hello"); } }')
    subprocess.run([str(Path(home) / "bin" / "javac"), "Hello.java"], cwd=tmp_path, check=True, timeout=120)
    subprocess.run([str(Path(home) / "bin" / "jar"), "cf", "hello.jar", "Hello.class"], cwd=tmp_path, check=True,
                   timeout=120)
    (tmp_path / "Hello.class").unlink()
    for runner in (java, plain):
        cache = tmp_path / f"{runner.parent.parent.name}.aot"
        _java(runner, f"-XX:AOTCacheOutput={cache}", jvm_home.LEFT_OUT, "-cp", "hello.jar", "Hello", cwd=tmp_path)
        used = _java(runner, f"-XX:AOTCache={cache}", "-Xlog:aot=info", jvm_home.LEFT_OUT, "-cp", "hello.jar",
                     "Hello", cwd=tmp_path)
        linked = "Using AOT-linked classes: true" in used
        assert "hello" in used and linked == (runner == java), used[-2000:]


def test_only_jdk_25_and_later_get_a_launcher_home(tmp_path, monkeypatch):
    monkeypatch.setattr(jvm_home, "_CHECKOUT_CHOICES", tmp_path / "choices")
    jdk = tmp_path / "jdk-17"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "release").write_text('IMPLEMENTOR="x"\nJAVA_VERSION="17.0.15"\n')
    assert jvm_home.major_version(str(jdk)) == 17 and jvm_home.launcher_home(str(jdk)) == str(jdk)
    assert not (tmp_path / "choices").exists()
