"""Commit messages that say which dbt invocation and which node wrote a commit."""

from typing import Any, Optional

from dbt_common.invocation import get_invocation_id
from dbt.flags import get_flags


def _invocation() -> str:
    """`<command> <invocation id>`, e.g. `run 0f3c...`."""
    try:
        invocation_id = get_invocation_id()
    except Exception:
        invocation_id = "?"
    try:
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
