"""A test whose outside part (a server, a browser, another Spark) is missing: skipped locally with the reason,
failed under CI, where `.ci/run` installs and starts every part, so a missing one is a broken run."""
import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(reason: str) -> None:
    """Skip (locally) or fail (in CI) with `reason`, which says how to get the part."""
    if in_ci():
        pytest.fail(reason)
    pytest.skip(reason)
