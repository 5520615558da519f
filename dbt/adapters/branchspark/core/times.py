"""Times as users write them (ISO 8601, with or without a zone) as the catalog keeps them: naive UTC."""
from __future__ import annotations

from datetime import datetime, timezone

from . import errors


def parse_time(value) -> datetime:
    """A datetime (UTC, naive) from a datetime or an ISO-8601 string."""
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            raise errors.InvalidArgument(f"'{value}' is not a time: write it as ISO 8601, e.g. "
                                         f"2026-11-21T10:00:00") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment
