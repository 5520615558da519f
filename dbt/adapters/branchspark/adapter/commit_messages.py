"""Commit messages that say which dbt invocation and which node wrote a commit."""

import re
from typing import Any, Optional


def _invocation() -> str:
    """`<command> <invocation id>`, e.g. `run 0f3c...`."""
    try:
        from dbt_common.invocation import get_invocation_id

        invocation_id = get_invocation_id()
    except Exception:
        invocation_id = "?"
    try:
        from dbt.flags import get_flags

        command = getattr(get_flags(), "WHICH", None) or "run"
    except Exception:
        command = "run"
    return f"{command} {invocation_id}"


def model_message(unique_id: str, batch_id: Optional[Any] = None) -> str:
    """`dbt run <invocation id>: model.pkg.orders` (plus the batch of a microbatch model)."""
    suffix = f" batch {batch_id}" if batch_id else ""
    return f"dbt {_invocation()}: {unique_id}{suffix}"


def statement_message(what: str) -> str:
    """A statement outside a model build (hook, operation, test SQL): `dbt run <id>: sql insert db.t`."""
    return f"dbt {_invocation()}: sql {what}"


def node_of(message: str) -> Optional[str]:
    """The node a model build's commit message names (`dbt run <id>: model.pkg.x [batch b]`), else None."""
    if not message.startswith("dbt ") or ": " not in message:
        return None
    node = message.split(": ", 1)[1]
    if node.startswith("sql ") or " " in node.split(" batch ", 1)[0]:
        return None
    return node.split(" batch ", 1)[0] or None


_LANDED = re.compile(r"^(dbt \S+ .*?: landed \d+ nodes? from \S+): .+$", re.S)


def landing_summary(message: str) -> str:
    """A run landing's message without its list of nodes (run_landing.py writes
    `dbt run <id>: landed 3 nodes from <run branch>: model.p.a, ...`); any other message as it is."""
    found = _LANDED.match(message or "")
    return found.group(1) if found else (message or "")
