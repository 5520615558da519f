"""The warm local engine's lifecycle (dbt/adapters/branchspark/engine/), with real engines: a Spark
Connect server JVM started by the supervisor, and real `dbt` and `python` processes as its clients.

Every engine start costs a JVM (10-30 s here), so the tests share one engine home and run in file
order: the first start is the concurrent one; isolation and Ctrl-C reuse that engine; version
mismatch, a hung engine and kill -9 each replace it (3 more starts); the idle stop ends the last one.
The engine gets 1 GB of driver memory and local[2].
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dbt.adapters.branchspark.engine.state import EngineError, EngineHome, parse_duration, pid_alive

BIN = Path(sys.executable).parent
ATTACH = "from dbt.adapters.branchspark.engine.client import attach; print(attach('test'), flush=True)"


# ------------------------------------------------------------------ without Spark
def test_parse_duration():
    assert parse_duration("90") == 90 and parse_duration("2m") == 120 and parse_duration("1.5h") == 5400
    with pytest.raises(EngineError, match="give seconds"):
        parse_duration("soon")


def test_lock_is_exclusive_between_processes(tmp_path):
    home = EngineHome(tmp_path / "home")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from pathlib import Path
        from dbt.adapters.branchspark.engine.state import EngineHome
        with EngineHome(Path({str(home.root)!r})).locked(10):
            print("held", flush=True)
            time.sleep(3)
        """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    with home.locked(10, blocking=False) as held:
        assert not held
    with pytest.raises(EngineError, match="lock"):
        with home.locked(0.5):
            pass
    waited = time.monotonic()
    with home.locked(10) as held:  # waits for the holder to let go (it sleeps 3 s holding it)
        assert held and time.monotonic() - waited > 1
    holder.wait(10)


def test_leases_of_dead_clients_are_dropped_and_count_as_use(tmp_path):
    home = EngineHome(tmp_path / "home").ensure()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (home.clients / f"{dead.stdout.strip()}.abcd").write_text(json.dumps({"pid": int(dead.stdout), "since": 0}))
    mine = home.add_lease("me")
    assert [lease["pid"] for lease in home.live_leases()] == [os.getpid()]
    assert not (home.clients / f"{dead.stdout.strip()}.abcd").exists()
    home.drop_lease(mine)
    assert home.live_leases() == [] and time.time() - home.last_used.stat().st_mtime < 5


def test_profile_chooses_the_engine_with_one_line():
    from dbt.adapters.branchspark.adapter.credentials import BranchSparkCredentials
    from dbt_common.exceptions import DbtRuntimeError

    assert BranchSparkCredentials(method="local", schema="shop").method == "local"
    with pytest.raises(DbtRuntimeError, match="`local` \\(a warm local Spark engine\\)"):
        BranchSparkCredentials(method="daemon", schema="shop")


def test_a_failing_start_is_one_line_naming_the_log(tmp_path):
    """No Java for the server: the client gets one line with the log, no traceback."""
    env = {**os.environ, "BRANCHSPARK_ENGINE_HOME": str(tmp_path / "home"), "JAVA_HOME": str(tmp_path / "nojava"),
           "PATH": f"{BIN}:/usr/bin:/bin"}
    done = subprocess.run([str(BIN / "branchspark"), "engine", "start"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1
    assert done.stdout.strip() == f"error: the local Spark engine failed to start; see its log {tmp_path}/home/engine.log"
    assert "Traceback" not in done.stdout + done.stderr
    assert "JAVA_HOME" in (tmp_path / "home" / "engine.log").read_text() or "java" in (tmp_path / "home" / "engine.log").read_text()
    assert not (tmp_path / "home" / "engine.json").exists()


# ------------------------------------------------------------------ with engines
@pytest.fixture(scope="module")
def engine_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("engine")
    env = {**os.environ, "BRANCHSPARK_ENGINE_HOME": str(root / "home"), "BRANCHSPARK_ENGINE_MEMORY": "1g",
           "BRANCHSPARK_ENGINE_MASTER": "local[2]", "BRANCHSPARK_ENGINE_CHECK_INTERVAL": "0.5",
           "PYSPARK_PYTHON": sys.executable, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DO_NOT_TRACK": "1",
           "PYTHONUNBUFFERED": "1",
           "BRANCHSPARK_ENGINE_WARMUP": "0"}  # a warm-up costs CPU: only the first engine runs one, to check it
    env.pop("SPARK_REMOTE", None)
    yield env
    home = EngineHome(Path(env["BRANCHSPARK_ENGINE_HOME"]))
    state = home.read()
    if state is not None:  # a failed test left it running
        for pid in (state.supervisor_pid, state.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def home_of(env) -> EngineHome:
    return EngineHome(Path(env["BRANCHSPARK_ENGINE_HOME"]))


def running_engine(env, warm_up: bool = False):
    """The module's engine: the one a test before started, else one started here. `make test-long` runs this
    module's long-only tests without the others (`--deep-only`), so none of them may count on an earlier test's
    engine. `warm_up`: a new engine runs its warm-up (the module's env turns it off)."""
    state = home_of(env).read()
    if state is None or not pid_alive(state.pid):
        attach({**env, "BRANCHSPARK_ENGINE_WARMUP": "1"} if warm_up else env)
        state = home_of(env).read()
    assert state is not None and pid_alive(state.pid), "an attach left no engine running"
    return state


def attach(env, **extra) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-c", ATTACH], env={**env, **extra}, capture_output=True, text=True,
                          timeout=400)
    assert done.returncode == 0, done.stderr
    return done


def make_project(root: Path, name: str, warehouse: Path, timezone: str, amounts: list[int]) -> Path:
    project = root / name
    (project / "models").mkdir(parents=True)
    (project / "seeds").mkdir()
    (project / "dbt_project.yml").write_text(textwrap.dedent(f"""
        name: {name}
        version: "1.0"
        config-version: 2
        profile: {name}
        models:
          {name}:
            +materialized: table
        """))
    (project / "profiles.yml").write_text(textwrap.dedent(f"""
        {name}:
          target: dev
          outputs:
            dev:
              type: branchspark
              method: local
              branch: main
              schema: shop
              warehouse: {warehouse}
              threads: 1
              spark_config:
                spark.sql.session.timeZone: {timezone}
        """))
    (project / "seeds" / "orders.csv").write_text("id,amount\n" + "".join(f"{i},{a}\n" for i, a in enumerate(amounts)))
    # reads the seed through this session's temp view `shop.orders`: another session's would give another sum
    (project / "models" / "summary.sql").write_text(
        "select count(*) as orders, sum(amount) as amount, current_timezone() as tz from {{ ref('orders') }}")
    # long enough to be interrupted: billions of hashes on local[2]
    (project / "models" / "slow.sql").write_text(
        "{{ config(tags=['slow']) }}\nselect sum(hash(id)) as h from range(0, 40000000000)")
    return project


def dbt(env, project: Path, *args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([str(BIN / "dbt"), *args, "--project-dir", str(project), "--profiles-dir", str(project)],
                            env=env, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)


def finished(process: subprocess.Popen, timeout: float = 300) -> str:
    output, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, output
    return output


def table_rows(env, warehouse: Path, table: str) -> list[tuple]:
    """Read a table through a session of its own on the engine (no JVM in the test process)."""
    script = textwrap.dedent(f"""
        import json
        from dbt.adapters.branchspark.engine.client import attach, own_session
        from dbt.adapters.branchspark.core.lakehouse import Lakehouse
        from dbt.adapters.branchspark.core.spark_session import connect_session
        spark = connect_session(attach("read"))
        own_session(spark)
        print(json.dumps([list(r) for r in Lakehouse(spark, {str(warehouse)!r}).snapshot("main").read({table!r}).collect()]))
        """)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return [tuple(row) for row in json.loads(done.stdout.strip().splitlines()[-1])]


def test_concurrent_first_use_starts_one_engine(engine_env):
    warming = {**engine_env, "BRANCHSPARK_ENGINE_WARMUP": "1"}  # the engine's default, checked below
    clients = [subprocess.Popen([sys.executable, "-c", ATTACH], env=warming, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outputs = [client.communicate(timeout=400) for client in clients]
    assert all(client.returncode == 0 for client in clients), outputs
    urls = {out.strip() for out, _ in outputs}
    assert len(urls) == 1, urls
    state = home_of(engine_env).read()
    assert state is not None and pid_alive(state.pid) and state.url in urls
    log = home_of(engine_env).log.read_text()
    assert log.count(" starting: ") == 1 and log.count(" ready: Spark ") == 1, log[-3000:]
    assert sum("starting the local Spark engine" in err for _, err in outputs) == 1
    status = subprocess.run([str(BIN / "branchspark"), "engine", "status"], env=engine_env, capture_output=True,
                            text=True)
    assert status.returncode == 0 and f"127.0.0.1:{state.port}" in status.stdout and str(state.pid) in status.stdout
    assert "Spark:" in status.stdout and state.spark_version in status.stdout and "sessions:" in status.stdout


@pytest.mark.long_only  # engines are JVMs of their own: `make test` starts few (tests/depth.py)
def test_a_new_engine_warms_itself_up_and_leaves_nothing_behind(engine_env):
    """The engine started above runs its warm-up (engine/warmup.py) once it answers: a branchspark workload
    on a scratch warehouse in its home, removed after; status and the log say when it ended."""
    running_engine(engine_env, warm_up=True)
    home = home_of(engine_env)
    deadline = time.monotonic() + 300
    while (state := home.read()) is not None and state.warmed_at is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert state is not None and state.warmed_at is not None and state.warmed_at > state.ready_at, state
    log = home.log.read_text()
    assert log.count(": warming up") == 1 and log.count("]: done in ") == 1, log[-3000:]
    assert list(home.root.glob("warmup-*")) == []  # its scratch warehouse is gone
    status = subprocess.run([str(BIN / "branchspark"), "engine", "status"], env=engine_env, capture_output=True,
                            text=True)
    assert status.returncode == 0 and "warm-up:" in status.stdout and "after the start" in status.stdout


@pytest.mark.long_only  # engines are JVMs of their own: `make test` starts few (tests/depth.py)
def test_two_projects_at_once_stay_isolated(engine_env, tmp_path):
    pid = running_engine(engine_env).pid
    a = make_project(tmp_path, "project_a", tmp_path / "wh_a", "UTC", [1, 2, 3])
    b = make_project(tmp_path, "project_b", tmp_path / "wh_b", "Asia/Tokyo", [100, 200])
    for project in (a, b):
        finished(dbt(engine_env, project, "seed"))
    runs = [dbt(engine_env, project, "run", "--exclude", "tag:slow") for project in (a, b)]  # at once
    for run in runs:
        finished(run)
    assert table_rows(engine_env, tmp_path / "wh_a", "shop.summary") == [(3, 6, "UTC")]
    assert table_rows(engine_env, tmp_path / "wh_b", "shop.summary") == [(2, 300, "Asia/Tokyo")]
    # the command line shares the engine too
    show = subprocess.run([str(BIN / "branchspark"), "--warehouse", str(tmp_path / "wh_b"), "show", "shop.orders"],
                          env={**engine_env, "BRANCHSPARK_SPARK": "local"}, capture_output=True, text=True, timeout=300)
    assert show.returncode == 0 and "rows: 2" in show.stdout, show.stdout + show.stderr
    assert "starting the local Spark engine" not in show.stderr
    assert home_of(engine_env).read().pid == pid  # one engine served both


def test_ctrl_c_of_dbt_run_lands_nothing_and_engine_serves_the_next_run(engine_env, tmp_path):
    from dbt.adapters.branchspark.core.lakehouse import Lakehouse

    project = make_project(tmp_path, "project_c", tmp_path / "wh_c", "UTC", [5, 6])
    finished(dbt(engine_env, project, "seed"))
    pid = home_of(engine_env).read().pid
    catalog = Lakehouse(None, str(tmp_path / "wh_c"))
    head = catalog.get_branch("main").head
    # a shell's Ctrl-C: SIGINT handled by Python (a background parent may have left it ignored)
    run = dbt(engine_env, project, "run", "--select", "slow",
              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = ""
    for line in run.stdout:
        seen += line
        if "START sql table model" in line and "slow" in line:
            break
    time.sleep(4)  # the Spark job is running on the engine
    started = time.monotonic()
    run.send_signal(signal.SIGINT)
    output, _ = run.communicate(timeout=120)
    assert run.returncode != 0, seen + output
    assert time.monotonic() - started < 60, "dbt did not stop promptly: the job was not cancelled"
    assert Lakehouse(None, str(tmp_path / "wh_c")).get_branch("main").head == head  # nothing landed
    state = home_of(engine_env).read()
    assert state is not None and state.pid == pid and pid_alive(pid)
    finished(dbt(engine_env, project, "run", "--exclude", "tag:slow"))
    assert table_rows(engine_env, tmp_path / "wh_c", "shop.summary") == [(2, 11, "UTC")]
    assert "shop.slow" not in {t.full_name for t in Lakehouse(None, str(tmp_path / "wh_c")).snapshot("main").tables()}


@pytest.mark.long_only  # another way an engine is replaced: make test kills one (below)
def test_version_mismatch_restarts_the_engine(engine_env):
    home = home_of(engine_env)
    old = running_engine(engine_env)
    old.identity = {**old.identity, "pyspark": "3.5.0"}  # as if started by another pyspark
    home.write(old)
    done = attach(engine_env)
    assert "restarting the local Spark engine: this client has pyspark '3.5.0' -> " in done.stderr
    new = home.read()
    assert new.pid != old.pid and not pid_alive(old.pid) and pid_alive(new.pid)
    assert new.identity["pyspark"] != "3.5.0"


@pytest.mark.long_only  # another way an engine is replaced: make test kills one (below)
def test_hung_engine_is_replaced(engine_env):
    old = running_engine(engine_env)
    os.kill(old.pid, signal.SIGSTOP)  # listening, never answering
    try:
        done = attach(engine_env, BRANCHSPARK_ENGINE_PROBE_TIMEOUT="5")
    finally:
        if pid_alive(old.pid):
            os.kill(old.pid, signal.SIGKILL)
    assert "did not answer within 5 s; replacing it" in done.stderr
    new = home_of(engine_env).read()
    assert new.pid != old.pid and pid_alive(new.pid)


def test_killed_engine_is_recovered_by_the_next_invocation(engine_env, tmp_path):
    old = home_of(engine_env).read()
    os.kill(old.pid, signal.SIGKILL)
    project = make_project(tmp_path, "project_d", tmp_path / "wh_d", "UTC", [7])
    finished(dbt(engine_env, project, "seed"))
    new = home_of(engine_env).read()
    assert new.pid != old.pid and pid_alive(new.pid)
    assert not pid_alive(old.supervisor_pid)


def test_engine_stops_when_idle_but_not_under_a_client(engine_env):
    home = home_of(engine_env)
    state = running_engine(engine_env)
    # the client stays attached until told to go (its stdin closed), not for a fixed time
    holder = subprocess.Popen([sys.executable, "-c", ATTACH + "; import sys; sys.stdin.read()"], env=engine_env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == state.url
    start = subprocess.run([str(BIN / "branchspark"), "engine", "start", "--idle-timeout", "2s"], env=engine_env,
                           capture_output=True, text=True)
    assert start.returncode == 0 and "stops after 2s idle" in start.stdout, start.stdout + start.stderr
    time.sleep(4)
    assert pid_alive(state.pid) and home.read() is not None  # the attached client keeps it
    holder.stdin.close()
    holder.wait(40)
    deadline = time.time() + 30
    while (pid_alive(state.pid) or pid_alive(state.supervisor_pid)) and time.time() < deadline:
        time.sleep(0.5)
    assert not pid_alive(state.pid) and not pid_alive(state.supervisor_pid)
    assert home.read() is None and "stopped: idle for 2 s" in home.log.read_text()
    status = subprocess.run([str(BIN / "branchspark"), "engine", "status"], env=engine_env, capture_output=True,
                            text=True)
    assert status.returncode == 1 and "engine not running" in status.stdout
