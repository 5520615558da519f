"""Where the local engine keeps its state, one directory per user, and who may change it.

    $BRANCHSPARK_ENGINE_HOME (default $XDG_STATE_HOME/branchspark/engine, else
    ~/.local/state/branchspark/engine):
      engine.json   the running engine: pids, port, token, versions, times (written atomically)
      engine.lock   held (flock) while a process starts, replaces or stops the engine
      engine.log    the supervisor's lines and the Spark Connect server's own output
      clients/      one lease file per attached dbt or branchspark process (its pid in the name)
      last-used     touched when a client detaches: the idle time counts from here

The directory is private (0700): engine.json holds the token the server asks every client for.
"""
from __future__ import annotations

import dataclasses
import errno
import fcntl
import json
import os
import re
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from ..core.errors import BranchsparkError

HOME_ENV = "BRANCHSPARK_ENGINE_HOME"
IDLE_ENV = "BRANCHSPARK_ENGINE_IDLE_TIMEOUT"
DEFAULT_IDLE_SECONDS = 30 * 60


class EngineError(BranchsparkError):
    """The local engine could not be started, reached or stopped; the message names its log."""


def engine_home() -> Path:
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV]).expanduser().absolute()
    state_root = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(state_root) / "branchspark" / "engine"


def parse_duration(text: str | float | int) -> float:
    """Seconds from `90`, `90s`, `15m`, `2h`; refuses anything else with one line."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", str(text))
    if not match:
        raise EngineError(f"idle timeout {text!r}: give seconds or a number with s, m or h (e.g. 30m)")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]


def idle_timeout_setting() -> float:
    return parse_duration(os.environ.get(IDLE_ENV, DEFAULT_IDLE_SECONDS))



WARMUP_ENV = "BRANCHSPARK_ENGINE_WARMUP"


def warmup_wanted() -> bool:
    """Whether a new engine warms itself up (engine/warmup.py); BRANCHSPARK_ENGINE_WARMUP=0 says no."""
    return os.environ.get(WARMUP_ENV, "1") != "0"

@dataclasses.dataclass
class EngineState:
    supervisor_pid: int
    pid: int  # the Spark Connect server's JVM
    port: int
    token: str
    identity: dict  # versions the engine was started with (lifecycle.client_identity)
    started_at: float
    idle_timeout: float
    ready_at: Optional[float] = None
    spark_version: str = ""
    memory: str = ""
    master: str = ""
    warmed_at: Optional[float] = None  # when its warm-up (engine/warmup.py) ended; -1: it failed

    @property
    def url(self) -> str:
        # "localhost" (not 127.0.0.1): pyspark sends a token over a plain local channel only to localhost
        return f"sc://localhost:{self.port}/;token={self.token}"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (exited, not yet reaped by its parent) is not alive
    try:
        with open(f"/proc/{pid}/stat") as src:
            return src.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


class EngineHome:
    """The files of one engine home directory."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root else engine_home()
        self.state_file = self.root / "engine.json"
        self.lock_file = self.root / "engine.lock"
        self.log = self.root / "engine.log"
        self.clients = self.root / "clients"
        self.last_used = self.root / "last-used"
        self.warehouse = self.root / "spark-warehouse"

    def ensure(self) -> "EngineHome":
        self.clients.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        return self

    # -- engine.json
    def read(self) -> Optional[EngineState]:
        try:
            data = json.loads(self.state_file.read_text())
            return EngineState(**data)
        except (OSError, ValueError, TypeError):
            return None

    def write(self, state: EngineState) -> None:
        temp = self.state_file.with_name(f".engine.{os.getpid()}.json")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(dataclasses.asdict(state), out)
        os.replace(temp, self.state_file)

    def clear(self, supervisor_pid: int) -> None:
        """Remove engine.json if it still describes the engine of `supervisor_pid` (not a newer one)."""
        state = self.read()
        if state is not None and state.supervisor_pid == supervisor_pid:
            self.state_file.unlink(missing_ok=True)

    # -- the lock
    @contextmanager
    def locked(self, timeout: float, blocking: bool = True) -> Iterator[bool]:
        """Hold engine.lock; yields False (without it) when not `blocking` and another process has it."""
        self.ensure()
        fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as error:
                    if error.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                    if not blocking:
                        yield False
                        return
                    if time.monotonic() > deadline:
                        raise EngineError(f"another process has held the local engine's lock ({self.lock_file}) "
                                          f"for over {timeout:.0f} s; see {self.log}")
                    time.sleep(0.2)
            yield True
        finally:
            os.close(fd)  # closing releases the flock

    # -- client leases
    def add_lease(self, description: str) -> Path:
        self.ensure()
        lease = self.clients / f"{os.getpid()}.{uuid.uuid4().hex[:8]}"
        lease.write_text(json.dumps({"pid": os.getpid(), "since": time.time(), "what": description}))
        return lease

    def drop_lease(self, lease: Path) -> None:
        lease.unlink(missing_ok=True)
        self.touch_last_used()

    def touch_last_used(self) -> None:
        self.last_used.touch()

    def live_leases(self, prune: bool = True) -> list[dict]:
        """Leases of live processes; those of dead ones (killed clients) are removed, and count as use."""
        live = []
        for lease in self.clients.glob("*.*") if self.clients.is_dir() else []:
            try:
                pid = int(lease.name.split(".")[0])
            except ValueError:
                continue
            if pid_alive(pid):
                try:
                    live.append({**json.loads(lease.read_text()), "file": str(lease)})
                except (OSError, ValueError):
                    pass
            elif prune:
                self.drop_lease(lease)
        return live

    def last_activity(self, state: EngineState) -> float:
        """When the engine last served a client: its readiness, or the last detach."""
        try:
            detached = self.last_used.stat().st_mtime
        except OSError:
            detached = 0.0
        return max(detached, state.ready_at or state.started_at)

    def idle_seconds(self, state: EngineState) -> float:
        """0 while a client is attached, else the time since the last one detached."""
        if self.live_leases():
            return 0.0
        return max(0.0, time.time() - self.last_activity(state))
