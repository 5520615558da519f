"""One SparkSession per test process (a JVM start costs about 10 s).

`pytest --connect` runs the same tests through Spark Connect: the `spark` fixture and the dbt
targets use the server at $BRANCHSPARK_TEST_CONNECT_URL (started by tests/connect_server.sh).
Without a reachable server the run is skipped with the reason printed, except under CI=true,
where it fails.
"""
import os
import re
import socket
import sys
from urllib.parse import urlparse

import pytest
from xdist.scheduler import LoadScopeScheduling

from tests.depth import DEPTH, LONG
from tests.spark_settings import FAST_SMALL_QUERIES, FAST_TEST_JVM, ONE_PARTITION

# dbt's test fixtures (the conformance suite); pytest wants plugins declared in the top conftest.
pytest_plugins = ["dbt.tests.fixtures.project"]

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

# The object-storage tests (tests/s3/, issue 51) reach the S3 server tests/run.sh starts through the four AWS
# variables alone, as a user would: set before any session is built, so its S3A settings name the endpoint.
if os.environ.get("BRANCHSPARK_TEST_S3_URL"):
    for _name, _value in (("AWS_ENDPOINT_URL", os.environ["BRANCHSPARK_TEST_S3_URL"]), ("AWS_REGION", "us-east-1"),
                          ("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing-secret")):
        os.environ.setdefault(_name, _value)

CONNECT_URL_VARIABLE = "BRANCHSPARK_TEST_CONNECT_URL"
TEST_SPARK_CONFIG = {**ONE_PARTITION, **FAST_SMALL_QUERIES, **FAST_TEST_JVM}
# These check plans made with code generation: they run with Spark's defaults in-process too.
SPARK_DEFAULT_MODULES = {"test_deletion_vectors", "test_generated_code", "test_one_task_plans"}


def pytest_addoption(parser):
    parser.addoption("--connect", action="store_true", default=False,
                     help=f"run through Spark Connect at ${CONNECT_URL_VARIABLE} (tests/connect_server.sh start)")
    parser.addoption("--deep-only", action="store_true", default=False,
                     help="only the tests `make test-long` adds to `make test`: those marked deep and the long-only "
                          "ones (tests/depth.py)")


def connect_url(config) -> str:
    """The Spark Connect URL this run uses, or "" for in-process Spark."""
    return os.environ.get(CONNECT_URL_VARIABLE, "") if config.getoption("--connect") else ""


def _unreachable(url: str) -> str:
    """Why the Connect server cannot be used, or "" when it answers on its port."""
    if not url:
        return f"--connect given but ${CONNECT_URL_VARIABLE} is not set (start one: tests/connect_server.sh start)"
    address = urlparse(url.replace("sc://", "http://", 1))
    try:
        socket.create_connection((address.hostname, address.port or 15002), timeout=3).close()
    except OSError as exc:
        return f"Spark Connect server {url} unreachable ({exc}); start one: tests/connect_server.sh start"
    return ""


# What `make test-long` runs and `make test` leaves out (tests/depth.py), besides the tests marked `long_only`:
# `make test` runs dbt's conformance suites and the sample project on S3 through Spark Connect only (on the
# test cluster: tests/run.sh), and the merge matrix and rules in-process only (on SQLite and PostgreSQL); the
# Connect pass's merge tests check the same rules through another session. Test id prefixes.
LONG_ONLY_IN_PROCESS = ("tests/functional/adapter/",
                        "tests/s3/test_dbt_s3.py::test_sample_project_on_s3_builds_tests_and_merges")
# Through Connect, `make test` runs the keyless feed's reproduction (issue 67) and a count merge in a second
# session (its checkpoints: core/connect.py), `make test-long` the rest of its module too: the tombstones applied
# by the UDF on a cluster's executors, each file a task of its own
_KEYLESS_ON_CONFLICT = "tests/core/test_merge_keyless_on_conflict.py::"
LONG_ONLY_THROUGH_CONNECT = ("tests/core/test_merge_matrix.py", "tests/core/test_merge_rules.py",
                             *(_KEYLESS_ON_CONFLICT + name for name in (
                                 "test_on_conflict", "test_change_feed_across_other_merges",
                                 "test_change_feed_across_a_clean_count_merge",
                                 "test_merge_of_an_overwrite_and_a_delete",
                                 # the second session's case (the UDF's) stays in `make test`
                                 "test_merge_of_an_overwrite_against_an_update_reads_tombstones_without_failing"
                                 "[expression")))


def _long_only(item, through_connect: bool) -> bool:
    return (item.get_closest_marker("long_only") is not None
            or item.nodeid.startswith(LONG_ONLY_THROUGH_CONNECT if through_connect else LONG_ONLY_IN_PROCESS))


def _kept(config, item) -> bool:
    """Whether the run's depth keeps the test: `--deep-only` (make test-long) keeps the deep and long-only ones,
    the short depth all but the long-only ones, the long depth all."""
    through_connect = bool(config.getoption("--connect"))
    if config.getoption("--deep-only"):
        return item.get_closest_marker("deep") is not None or _long_only(item, through_connect)
    return LONG or not _long_only(item, through_connect)


def pytest_configure(config):
    config.addinivalue_line("markers", "deep: sized by the test depth, small in `make test`, full in `make test-long`")
    config.addinivalue_line("markers", "long_only: run by `make test-long` only (tests/depth.py)")
    config.addinivalue_line("markers", "rule(name, ...): the merge rules (SPEC 3, merge/rules.py's Rule) the test "
                                       "exercises; tests/test_rule_coverage.py checks `make test` keeps them all")
    _CONFIG[:] = [config]
    config._connect_skip = ""
    if not config.getoption("--connect"):
        return
    reason = _unreachable(os.environ.get(CONNECT_URL_VARIABLE, ""))
    if reason and os.environ.get("CI") == "true":
        raise pytest.UsageError(f"{reason} (CI=true: the Connect run must not be skipped)")
    config._connect_skip = reason


def pytest_report_header(config):
    header = [f"test depth: {DEPTH} (BRANCHSPARK_TEST_DEPTH; tests/depth.py)"]
    if config.getoption("--connect"):
        return header + [f"spark: Spark Connect {os.environ.get(CONNECT_URL_VARIABLE, '(no URL)')}"
                + (f" -- SKIPPING: {config._connect_skip}" if config._connect_skip else "")]
    return header


_CONFIG = []  # this process's pytest config (pytest_configure), for the report hook below


def pytest_runtest_logreport(report):
    """A failure named the moment it happens (under -q pytest names them only in its final summary, which a run
    stopped early never prints); with xdist this runs in the controller, which sees every worker's reports."""
    if report.failed and _CONFIG:
        reporter = _CONFIG[0].pluginmanager.getplugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(f"FAILED {report.nodeid} ({report.when})", red=True)


def pytest_terminal_summary(terminalreporter, config):
    if config._connect_skip:  # also shown under -q and with xdist (this runs in the controller)
        terminalreporter.write_line(f"Spark Connect run skipped: {config._connect_skip}", yellow=True)


# xdist (tests/run.sh: `-n 2 --dist loadscope --no-loadscope-reorder`) hands out one scope (a module, or a
# class) at a time, in collection order; the suite ends when the busier worker does. So the slowest scopes
# go first (longest first evens out the two workers): those that start JVMs of their own (writer processes,
# engines, dbt processes), then the big parametrized ones; the rest keep their order (update the list
# from `--durations` when a module grows). A catalog module's SQLite and PostgreSQL tests are two scopes (they share no fixture but
# the session's Spark), except the concurrency test's, whose dozen writer JVMs each must not meet the
# other's.
SLOWEST_FIRST = [
    "tests/model/test_engine_against_model.py",
    "tests/core/test_crash_and_gc.py[postgresql]",
    "tests/engine/test_engine.py",
    # Spark 4.1 in a JVM of its own (a Hive metastore, Delta, Iceberg) under a dbt project's whole flow (issue 68),
    # then the Delta and Iceberg tables the import tests (issue 70, the same scope) import
    "tests/core/test_sources_spark41.py",
    "tests/core/test_crash_and_gc.py[sqlite]",
    "tests/core/test_concurrency.py",
    "tests/core/test_merge_exactness.py",
    "tests/core/test_merge_interactive_keyless.py",
    # issue 67's keyless feed across a merge (158 s), and its session JVM of a user's own (92 s) (2026-12-02)
    "tests/core/test_merge_keyless_on_conflict.py",
    "tests/core/test_feed_across_merge_sessions.py",
    "tests/core/test_merge_matrix.py[sqlite]",
    "tests/core/test_merge_matrix.py[postgresql]",
    "tests/core/test_merge_rules.py[sqlite]",
    "tests/core/test_merge_interactive.py",
    # a served catalog, then Spark with Iceberg's runtime in a JVM of its own: 85-115 s alone at load 5-8 (issue 52)
    "tests/core/test_iceberg_serve.py",
    "tests/functional/test_run_landing.py",
    "tests/core/test_merge_rules.py[postgresql]",
    "tests/model/test_compaction_metamorphic.py",
    "tests/functional/test_ci_previews.py",
    "tests/model/test_found_cases.py",
    "tests/functional/test_changes_dbt.py",
    "tests/ui/test_ui.py",  # one catalog, one app and one browser (issue 54)
    "tests/core/test_command_output.py",
    "tests/functional/test_interactive_merge_dbt.py",
    "tests/functional/test_dbt_on_postgres.py",
    "tests/s3/test_dbt_s3.py",  # in the Connect pass, on the cluster: its longest scope (40-50 s, issue 51)
    "tests/s3/test_lakehouse_s3.py",
    "tests/core/test_changes_property.py",
    "tests/functional/adapter/test_basic.py::TestSnapshotCheckColsBranchspark",  # the Connect pass's next (35-55 s)
]
if LONG:  # full size, the metamorphic test's two kinds are the longest scopes after the model test's
    SLOWEST_FIRST.insert(1, SLOWEST_FIRST.pop(SLOWEST_FIRST.index("tests/model/test_compaction_metamorphic.py")))
KEEP_CATALOGS_TOGETHER = {"tests/core/test_concurrency.py"}
# Each test of these is a scope of its own: the model test's two table kinds take 15-30 minutes each, and
# one worker running both would end the suite long after the other.
ONE_SCOPE_PER_TEST = {"tests/model/test_engine_against_model.py", "tests/model/test_compaction_metamorphic.py"}
# Modules that share one scope: the import tests (issue 70) read tables the Spark 4.1 sources flow builds in its
# JVM (tests/spark41_flow.py), so the worker that runs the flow runs them too.
SHARED_SCOPE = {"tests/core/test_import_spark41.py": "tests/core/test_sources_spark41.py"}
_CATALOG_PARAM = re.compile(r"\[(?:[^\]]*-)?(sqlite|postgresql)(?:-[^\]]*)?\]$")


def _scope(nodeid: str) -> str:
    """xdist's scope of a test (its class, else its module), with its catalog kind when it has one."""
    if nodeid.split("::")[0] in ONE_SCOPE_PER_TEST:
        return nodeid
    if nodeid.split("::")[0] in SHARED_SCOPE:
        return SHARED_SCOPE[nodeid.split("::")[0]]
    scope = nodeid.rsplit("::", 1)[0]
    kind = _CATALOG_PARAM.search(nodeid)
    if kind is None or scope.split("::")[0] in KEEP_CATALOGS_TOGETHER:
        return scope
    return f"{scope}[{kind.group(1)}]"


def _rank(nodeid: str) -> int:
    scope = _scope(nodeid)
    for rank, slow in enumerate(SLOWEST_FIRST):
        if scope == slow or scope.split("::")[0] == slow:
            return rank
    return len(SLOWEST_FIRST)


class ScopePerCatalog(LoadScopeScheduling):
    """xdist's loadscope with the scopes of `_scope`."""

    def _split_scope(self, nodeid: str) -> str:
        return _scope(nodeid)


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "loadscope":
        return ScopePerCatalog(config, log)
    return None


@pytest.hookimpl(trylast=True)  # after pytest groups tests by their fixtures' parameters
def pytest_collection_modifyitems(config, items):
    left_out = [item for item in items if not _kept(config, item)]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if _kept(config, item)]
    items.sort(key=lambda item: _rank(item.nodeid))  # stable: each scope keeps its own order
    if config._connect_skip:
        marker = pytest.mark.skip(reason=config._connect_skip)
        for item in items:
            item.add_marker(marker)


@pytest.fixture(scope="session")
def spark_connect_url(pytestconfig) -> str:
    return connect_url(pytestconfig)


@pytest.fixture(scope="session")
def spark(spark_connect_url):
    from dbt.adapters.branchspark.core.spark_session import connect_session, local_session

    if spark_connect_url:
        session = connect_session(spark_connect_url, TEST_SPARK_CONFIG)
        yield session
        session.stop()  # an open Connect client keeps the process from exiting
    else:
        yield local_session("local[2]", TEST_SPARK_CONFIG)


# Spark's own values of FAST_SMALL_QUERIES' settings: the test Connect server of `make test` starts with
# FAST_SMALL_QUERIES (tests/connect_server.sh), so a Connect client asks for these to plan as users' servers do.
SPARK_DEFAULTS = {"spark.sql.adaptive.enabled": "true", "spark.sql.codegen.wholeStage": "true",
                  "spark.sql.codegen.factoryMode": "FALLBACK"}
assert set(SPARK_DEFAULTS) == set(FAST_SMALL_QUERIES)


@pytest.fixture(autouse=True)
def _spark_defaults_for_plan_tests(request, spark_connect_url):
    """The modules of SPARK_DEFAULT_MODULES check plans made with Spark's default settings: in-process they
    are unset for each of their tests, through Connect set to Spark's values (a test may unset one)."""
    if request.module.__name__.rsplit(".", 1)[-1] not in SPARK_DEFAULT_MODULES:
        yield
        return
    session = request.getfixturevalue("spark")
    for key in FAST_SMALL_QUERIES:
        if spark_connect_url:
            session.conf.set(key, SPARK_DEFAULTS[key])
        else:
            session.conf.unset(key)
    yield
    for key, value in FAST_SMALL_QUERIES.items():
        if spark_connect_url:
            session.conf.unset(key)  # the server's
        else:
            session.conf.set(key, value)


@pytest.fixture(scope="session", autouse=True)
def _connect_session_stopped_at_exit(request, spark_connect_url):
    """Under --connect, dbt tests build the client session inside the adapter: stop it at the end."""
    if spark_connect_url:
        request.getfixturevalue("spark")
    yield
