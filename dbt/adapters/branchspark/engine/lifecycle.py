"""Start, check, replace and stop the local engine: a Spark Connect server from the installed pyspark
with branchspark's jar and session extension, listening on 127.0.0.1 for this user's processes.

Every decision that starts, replaces or stops the engine is taken under the home's lock, so two
invocations starting at once start one engine. An engine is replaced when its processes are gone,
when it does not answer a version request within the probe timeout (hung), or when it was started
by a different pyspark, branchspark (jar) or Python than the client's (it would fail mid-run).
"""
from __future__ import annotations

import getpass
import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from typing import Optional

import grpc
import pyspark
from pyspark.sql.connect.proto import base_pb2, base_pb2_grpc

from ..__version__ import version as branchspark_version
from ..core.storage import deletion_vectors
from .state import EngineError, EngineHome, EngineState, idle_timeout_setting, parse_duration, pid_alive

CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
MEMORY_ENV, MASTER_ENV, PORT_ENV = "BRANCHSPARK_ENGINE_MEMORY", "BRANCHSPARK_ENGINE_MASTER", "BRANCHSPARK_ENGINE_PORT"
START_TIMEOUT_ENV, PROBE_TIMEOUT_ENV = "BRANCHSPARK_ENGINE_START_TIMEOUT", "BRANCHSPARK_ENGINE_PROBE_TIMEOUT"
# How long a client that needs a different engine waits for the running invocations on the old one.
REPLACE_WAIT_ENV = "BRANCHSPARK_ENGINE_REPLACE_WAIT"
LOCK_TIMEOUT = 600.0
LOG_KEEP_BYTES = 20 << 20


def client_identity() -> dict:
    """What must match between a client and the engine it uses: a server built from another pyspark,
    another branchspark jar or run by another Python (its UDF workers) fails at run time, not at connect."""
    jar = deletion_vectors.jar_path() if deletion_vectors.wanted() else None
    return {"pyspark": pyspark.__version__, "branchspark": branchspark_version,
            "jar": _jar_digest(jar) if jar else "", "python": sys.executable}


def _jar_digest(jar: str) -> str:
    """The jar's name and content digest: a rebuilt jar (new sources, same Spark) restarts the engine."""
    with open(jar, "rb") as built:
        return f"{os.path.basename(jar)}:{hashlib.sha256(built.read()).hexdigest()[:16]}"


def _setting(name: str, default: str) -> str:
    return os.environ.get(name) or default


def probe(state: EngineState, timeout: float) -> Optional[str]:
    """The engine's Spark version, or None when it does not answer within `timeout` seconds."""
    credentials = grpc.composite_channel_credentials(grpc.local_channel_credentials(),
                                                     grpc.access_token_call_credentials(state.token))
    user = base_pb2.UserContext(user_id=getpass.getuser())
    session_id = str(uuid.uuid4())
    try:
        with grpc.secure_channel(f"localhost:{state.port}", credentials) as channel:
            stub = base_pb2_grpc.SparkConnectServiceStub(channel)
            reply = stub.AnalyzePlan(base_pb2.AnalyzePlanRequest(
                session_id=session_id, user_context=user, client_type="branchspark-engine-probe",
                spark_version=base_pb2.AnalyzePlanRequest.SparkVersion()), timeout=timeout)
            stub.ReleaseSession(base_pb2.ReleaseSessionRequest(session_id=session_id, user_context=user),
                                timeout=timeout)
            return reply.spark_version.version
    except grpc.RpcError:
        return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def kill(state: EngineState) -> None:
    """End both processes of an engine at once (it is dead, hung or being replaced)."""
    for pid in (state.supervisor_pid, state.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def processes_alive(state: EngineState) -> bool:
    return pid_alive(state.pid) and pid_alive(state.supervisor_pid)


def launch(home: EngineHome, idle_timeout: float, note=print) -> EngineState:
    """Start the supervisor (which starts the JVM) and wait until the engine answers. Call under the lock."""
    home.ensure()
    start_timeout = float(_setting(START_TIMEOUT_ENV, "300"))
    port = int(_setting(PORT_ENV, "0")) or free_port()
    note(f"branchspark: starting the local Spark engine on 127.0.0.1:{port} (log: {home.log})")
    if home.log.exists() and home.log.stat().st_size > LOG_KEEP_BYTES:
        os.replace(home.log, home.log.with_suffix(".log.1"))  # one older log is kept
    with open(home.log, "ab") as log:
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "dbt.adapters.branchspark.engine.supervisor", str(home.root), str(port),
             str(idle_timeout), _setting(MEMORY_ENV, "2g"), _setting(MASTER_ENV, "local[*]")],
            # its own session: a Ctrl-C meant for the client never reaches it; its cwd outlives any project's
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, cwd=home.root)
    state = await_ready(home, supervisor.pid, start_timeout, exited=lambda: supervisor.poll() is not None)
    if state is not None:
        return state
    if supervisor.poll() is not None:
        raise EngineError(f"the local Spark engine failed to start; see its log {home.log}")
    supervisor.kill()
    raise EngineError(f"the local Spark engine did not answer within {start_timeout:.0f} s of its start "
                      f"({START_TIMEOUT_ENV}); see its log {home.log}")


def await_ready(home: EngineHome, supervisor_pid: int, timeout: float, exited) -> Optional[EngineState]:
    """The engine of `supervisor_pid` once it answers; None if its supervisor exits first, or (then killed)
    if it does not answer within `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = home.read()
        if state is not None and state.supervisor_pid == supervisor_pid and state.ready_at:
            return state
        if exited():
            return None
        time.sleep(0.3)
    state = home.read()
    if state is not None and state.supervisor_pid == supervisor_pid:
        kill(state)
        home.clear(supervisor_pid)
    return None


def stop(home: EngineHome, state: EngineState, grace: float = 30.0) -> None:
    """Ask the supervisor to stop the engine, and kill both processes if they are still there after `grace`."""
    try:
        os.kill(state.supervisor_pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and (pid_alive(state.pid) or pid_alive(state.supervisor_pid)):
        time.sleep(0.2)
    kill(state)
    home.clear(state.supervisor_pid)


def _wait_for_other_clients(home: EngineHome, state: EngineState, why: str, note) -> None:
    """Before replacing an engine others are using: let their invocations finish (up to a limit)."""
    wait = parse_duration(_setting(REPLACE_WAIT_ENV, "600"))
    deadline = time.monotonic() + wait
    others = [lease for lease in home.live_leases() if lease["pid"] != os.getpid()]
    if others:
        note(f"branchspark: the local Spark engine must be restarted ({why}); waiting up to {wait:.0f} s "
             f"for {len(others)} running invocation(s) on it to finish")
    while others and time.monotonic() < deadline:
        time.sleep(1)
        others = [lease for lease in home.live_leases() if lease["pid"] != os.getpid()]


def ensure_running(home: EngineHome, idle_timeout: Optional[float] = None, note=print) -> EngineState:
    """The running, answering engine of this home, started or replaced as needed (under the lock)."""
    probe_timeout = float(_setting(PROBE_TIMEOUT_ENV, "30"))
    identity = client_identity()
    with home.locked(LOCK_TIMEOUT):
        state = home.read()
        if state is not None and not state.ready_at and processes_alive(state):
            # still starting (its starter was interrupted): wait for it rather than start a second one
            start_timeout = float(_setting(START_TIMEOUT_ENV, "300"))
            starting = state.supervisor_pid
            state = await_ready(home, starting, max(0.0, start_timeout - (time.time() - state.started_at)),
                                exited=lambda: not pid_alive(starting))
        if state is not None and not (state.ready_at and processes_alive(state)):
            note(f"branchspark: the local Spark engine (pid {state.pid}) is gone; starting a new one "
                 f"(log: {home.log})")
            kill(state)
            home.clear(state.supervisor_pid)
            state = None
        if state is not None and state.identity != identity:
            changed = ", ".join(f"{k} {state.identity.get(k)!r} -> {v!r}" for k, v in identity.items()
                                if state.identity.get(k) != v)
            _wait_for_other_clients(home, state, f"it runs another version: {changed}", note)
            note(f"branchspark: restarting the local Spark engine: this client has {changed}")
            stop(home, state)
            state = None
        if state is not None and probe(state, probe_timeout) is None:
            note(f"branchspark: the local Spark engine (pid {state.pid}) did not answer within {probe_timeout:.0f} s; "
                 f"replacing it (log: {home.log})")
            kill(state)
            home.clear(state.supervisor_pid)
            state = None
        if state is None:
            state = launch(home, idle_timeout if idle_timeout is not None else idle_timeout_setting(), note)
        elif idle_timeout is not None and idle_timeout != state.idle_timeout:
            state.idle_timeout = idle_timeout  # the supervisor reads it on each check
            home.write(state)
        return state


def stop_running(home: EngineHome) -> Optional[EngineState]:
    """Stop the engine of this home, if any; returns what was stopped."""
    with home.locked(LOCK_TIMEOUT):
        state = home.read()
        if state is None:
            return None
        stop(home, state)
        return state
