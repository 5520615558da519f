"""`branchspark engine start | stop | status`: this user's warm local Spark engine (engine/).

Registered on the `cli` group in main.py. dbt targets with `method: local` start the engine on first
use; these commands start it ahead of time, stop it, or show it.
"""
from __future__ import annotations

import sys
import time

import click

from ..engine.lifecycle import ensure_running, stop_running
from ..engine.state import IDLE_ENV, EngineHome, parse_duration, warmup_wanted
from .output import console


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


@click.group("engine")
def engine():
    """The warm local Spark engine used by `method: local` (one per user, stops when idle)."""


@engine.command("start")
@click.option("--idle-timeout", default=None, envvar=IDLE_ENV,
              help="Stop after this long without clients (e.g. 90s, 30m, 2h) [default: 30m]; "
                   "given to a running engine, changes its timeout.")
def engine_start(idle_timeout):
    """Start the engine (or keep the running one) and print where it listens."""
    state = ensure_running(EngineHome(), parse_duration(idle_timeout) if idle_timeout else None,
                           note=lambda line: click.echo(line, err=True))
    console.print(f"engine running on {state.address} (pid {state.pid}, Spark {state.spark_version}); "
                  f"stops after {_duration(state.idle_timeout)} idle")


@engine.command("stop")
def engine_stop():
    """Stop the engine (running invocations on it fail)."""
    state = stop_running(EngineHome())
    console.print(f"engine stopped (pid {state.pid})" if state else "engine not running")


def _warmup_line(state) -> str:
    if state.warmed_at is None:
        if not warmup_wanted():
            return "off (BRANCHSPARK_ENGINE_WARMUP=0)"
        return "running" if state.ready_at else "after the start"
    if state.warmed_at < 0:
        return "failed (see the log)"
    return f"done {_duration(state.warmed_at - (state.ready_at or state.started_at))} after the start"


@engine.command("status")
def engine_status():
    """Address, pid, Spark version, uptime, idle time and sessions; exits 1 when not running."""
    home = EngineHome()
    state = home.read()
    if state is None:
        console.print(f"engine not running (log: {home.log})")
        sys.exit(1)
    now = time.time()
    leases = home.live_leases(prune=False)
    idle = "in use" if leases else _duration(now - home.last_activity(state))
    lines = [
        ("state", "running" if state.ready_at else "starting"),
        ("address", state.address),
        ("pid", f"{state.pid} (supervisor {state.supervisor_pid})"),
        ("Spark", state.spark_version or "?"),
        ("uptime", _duration(now - state.started_at)),
        ("idle", f"{idle} (stops after {_duration(state.idle_timeout)})"),
        ("sessions", str(len(leases)) + "".join(f"\n  pid {lease['pid']}: {lease.get('what', '')}, since "
                                                f"{time.strftime('%H:%M:%S', time.localtime(lease['since']))}"
                                                for lease in leases)),
        ("warm-up", _warmup_line(state)),
        ("memory, master", f"{state.memory}, {state.master}"),
        ("versions", ", ".join(f"{k} {v}" for k, v in state.identity.items())),
        ("log", str(home.log)),
    ]
    for name, value in lines:
        console.print(f"{name + ':':<16}{value}")
