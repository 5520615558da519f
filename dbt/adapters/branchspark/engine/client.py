"""A dbt or branchspark process using the local engine: attach (start it if needed), detach at exit.

Each process opens its own Spark Connect session on the engine, so temp views, runtime settings,
registered functions and uploaded classes stay per invocation; the lease file it holds while
attached keeps the engine from stopping for idleness under a running invocation.
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Optional

import grpc
from pyspark.errors.exceptions.connect import SparkConnectGrpcException
from pyspark.sql import SparkSession
from pyspark.sql.connect.client.retries import DefaultPolicy

from .lifecycle import ensure_running
from .state import EngineError, EngineHome, pid_alive

_attached: dict[str, str] = {}
_owned: set[int] = set()  # sessions already set up by own_session
_lock = threading.Lock()


def _note(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def attach(description: str = "") -> str:
    """The Spark Connect URL of this user's running engine (started or replaced first if needed); this
    process counts as one of its clients until it exits."""
    home = EngineHome()
    with _lock:
        if str(home.root) in _attached:
            return _attached[str(home.root)]
        try:
            state = ensure_running(home, note=_note)
        except EngineError:
            raise
        except Exception as error:  # anything unforeseen still ends as one line naming the log
            raise EngineError(f"the local Spark engine could not be used ({type(error).__name__}: "
                              f"{str(error).splitlines()[0] if str(error) else ''}); see its log {home.log}") from error
        lease = home.add_lease(f"{description or os.path.basename(sys.argv[0])} in {os.getcwd()}")
        atexit.register(home.drop_lease, lease)
        _attached[str(home.root)] = state.url
        return state.url


def own_session(session: SparkSession, release_timeout: float = 10.0) -> None:
    """Make `session` this process's session on the engine: a lost engine fails its calls within seconds
    (a remote server's default is to retry for 10 minutes), and the session is released when the process
    exits (its temp views go with it; an open Connect session also keeps a process from exiting). A dead
    engine must not hold the exit up: the release gets `release_timeout` seconds."""
    if id(session) in _owned:
        return
    _owned.add(id(session))
    session.client.set_retry_policies([DefaultPolicy(max_retries=5, max_backoff=2000)])

    def release() -> None:
        worker = threading.Thread(target=_quietly_stop, args=(session,), daemon=True)
        worker.start()
        worker.join(release_timeout)

    atexit.register(release)


def failure_line(error: BaseException) -> Optional[str]:
    """One line for an error that came from losing this process's engine (it died or was stopped), or
    None when the engine still runs (then the error is the query's own)."""
    if not _attached or not isinstance(error, (SparkConnectGrpcException, grpc.RpcError)):
        return None
    home = EngineHome()
    state = home.read()
    if state is not None and state.url in _attached.values() and pid_alive(state.pid):
        return None
    return (f"the local Spark engine stopped while this invocation was using it; see its log {home.log} "
            f"(the next invocation starts a new one)")


def _quietly_stop(session: SparkSession) -> None:
    try:
        session.stop()
    except Exception:  # the engine is gone: nothing left to release
        pass
