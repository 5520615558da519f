"""The engine's supervisor: starts the Spark Connect server's JVM, records it in engine.json once it
answers, and stops it after the idle timeout or on SIGTERM (`branchspark engine stop`).

    python -m dbt.adapters.branchspark.engine.supervisor HOME PORT IDLE_SECONDS MEMORY MASTER

Started detached by lifecycle.launch, its output (and the JVM's) goes to HOME/engine.log.
"""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyspark

from ..core import jvm_archive, jvm_home
from ..core.storage import deletion_vectors, local_files, object_store
from .lifecycle import CONNECT_SERVER_CLASS, client_identity, probe
from .state import EngineHome, EngineState, warmup_wanted

CHECK_EVERY = float(os.environ.get("BRANCHSPARK_ENGINE_CHECK_INTERVAL", "2"))


def log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} supervisor[{os.getpid()}]: {message}", flush=True)


def server_command(home: EngineHome, port: int, memory: str, master: str) -> list[str]:
    spark_home = Path(pyspark.__file__).parent
    conf = {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        # tables live in branchspark's catalog; Spark's own catalog only holds each session's temp views
        "spark.sql.catalogImplementation": "in-memory",
        "spark.sql.warehouse.dir": str(home.warehouse),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": "WARN",  # engine.log keeps warnings and errors, not every task of every invocation
        "spark.sql.ansi.enabled": "false",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={home.root}",
        # classes a client uploads (addArtifacts) stay in its own session
        "spark.sql.artifact.isolation.enabled": "true",
        # two invocations' jobs share the cores rather than queue behind each other
        "spark.scheduler.mode": "FAIR",
    }
    conf = deletion_vectors.session_config(conf)  # branchspark's jar and session extension
    conf = local_files.session_config(conf, master)  # and its local file system, which forks no chmod
    conf = object_store.session_config(conf)  # the S3A connector and committers, when installed
    conf = jvm_archive.session_config(conf)  # the classes dumped at install: the engine starts sooner
    command = [str(spark_home / "bin" / "spark-submit"), "--class", CONNECT_SERVER_CLASS,
               "--name", "branchspark-engine", "--master", master, "--driver-memory", memory]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return command


def main(root: str, port: int, idle_timeout: float, memory: str, master: str) -> int:
    home = EngineHome(Path(root)).ensure()
    token = secrets.token_hex(16)
    env = {**os.environ, "SPARK_CONNECT_AUTHENTICATE_TOKEN": token,  # env, not argv: ps shows argv
           "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("SPARK_REMOTE", None)
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    command = server_command(home, port, memory, master)
    log(f"starting: {' '.join(command)}")
    # on the JDK the install chose (jvm_home.py); spark-submit execs the JVM: same pid
    jvm = subprocess.Popen(command, env=jvm_home.launch_env(env), stdin=subprocess.DEVNULL)
    state = EngineState(supervisor_pid=os.getpid(), pid=jvm.pid, port=port, token=token,
                        identity=client_identity(), started_at=time.time(), idle_timeout=idle_timeout,
                        memory=memory, master=master)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append("stop requested"))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    home.write(state)

    while not stopping and jvm.poll() is None and not state.ready_at:
        version = probe(state, timeout=5)
        if version:
            state.ready_at, state.spark_version = time.time(), version
            home.touch_last_used()
            home.write(state)
            log(f"ready: Spark {version} on 127.0.0.1:{port}, pid {jvm.pid}, idle timeout {idle_timeout:.0f} s")
        else:
            time.sleep(0.5)

    warmup = _start_warmup(home, env) if state.ready_at and warmup_wanted() else None
    reason = ""
    while not stopping and jvm.poll() is None:
        time.sleep(CHECK_EVERY)
        current = home.read()
        if current is None or current.supervisor_pid != os.getpid():
            reason = "engine.json no longer names this engine"
            break
        if warmup is not None and warmup.poll() is not None:
            _record_warmup(home, warmup.returncode == 0)
            warmup = None
        if home.idle_seconds(current) < current.idle_timeout:
            continue
        # stop only under the lock, so that no client attaches while the engine goes down
        with home.locked(timeout=0, blocking=False) as held:
            if held and home.idle_seconds(current) >= current.idle_timeout:
                reason = f"idle for {current.idle_timeout:.0f} s"
                _end(jvm)
                home.clear(os.getpid())
    if warmup is not None and warmup.poll() is None:
        warmup.kill()
        warmup.wait()
    if jvm.poll() is not None and not reason:
        reason = f"the JVM exited with code {jvm.returncode}"
    elif not reason:
        reason = stopping[0]
    _end(jvm)
    home.clear(os.getpid())
    log(f"stopped: {reason}")
    return 0 if state.ready_at else 1


def _start_warmup(home: EngineHome, env: dict) -> subprocess.Popen:
    """engine/warmup.py in its own process (its output goes to the engine's log, as this one's does)."""
    log("warming up (BRANCHSPARK_ENGINE_WARMUP=0 turns this off)")
    client_env = {k: v for k, v in env.items() if k != "SPARK_CONNECT_AUTHENTICATE_TOKEN"}
    return subprocess.Popen([sys.executable, "-m", "dbt.adapters.branchspark.engine.warmup", str(home.root)],
                            env=client_env, stdin=subprocess.DEVNULL, cwd=home.root)


def _record_warmup(home: EngineHome, done: bool) -> None:
    """engine.json notes when the warm-up ended (`branchspark engine status` shows it)."""
    try:
        with home.locked(timeout=10):
            current = home.read()
            if current is not None and current.supervisor_pid == os.getpid():
                current.warmed_at = time.time() if done else -1.0
                home.write(current)
    except Exception as error:  # only the status line misses it
        log(f"could not record the warm-up's end: {error}")


def _end(jvm: subprocess.Popen) -> None:
    if jvm.poll() is None:
        jvm.terminate()  # the server's shutdown hook stops the SparkContext
        try:
            jvm.wait(20)
        except subprocess.TimeoutExpired:
            jvm.kill()
            jvm.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]))
