"""Catalog URLs: parsing them with one clear error, and showing them without a password.

Whatever a URL looks like (well-formed, a missing colon, a non-numeric port), what
is printed, raised or logged shows `***` where a password was, and never the value
of BRANCHSPARK_CATALOG_PASSWORD.
"""
from __future__ import annotations

import os
import re

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from .. import errors

CATALOG_URL_ENV = "BRANCHSPARK_CATALOG_URL"  # the catalog when neither the caller nor the profile names one
CATALOG_PASSWORD_ENV = "BRANCHSPARK_CATALOG_PASSWORD"  # fills in a catalog URL given without its password

# `user:secret@` anywhere, with or without a scheme before it (`postgresql+psycopg//u:p@h/db` too)
_USER_PASSWORD = re.compile(r"([^\s/:@]+):(?!/)([^\s@]*)@")
_PORT = re.compile(r"@[^/:?\s\[]*:([^/?\s]*)")


def redact_url(url: str) -> str:
    """The URL as it may be shown: any password replaced by ***."""
    try:
        shown = make_url(url).render_as_string(hide_password=True)
    except Exception:  # not parseable: blank out whatever sits between user: and @
        shown = _USER_PASSWORD.sub(r"\1:***@", url)
    return redact_text(shown)


def redact_text(text: str, url: str | None = None) -> str:
    """`text` without the password of `url`, without BRANCHSPARK_CATALOG_PASSWORD, and without any
    `user:password@` it holds."""
    secrets = {os.environ.get(CATALOG_PASSWORD_ENV) or ""}
    if url:
        secrets |= {m.group(2) for m in _USER_PASSWORD.finditer(url)}
        try:
            secrets.add(make_url(url).password or "")
        except Exception:
            pass
    for secret in sorted((s for s in secrets if s and s != "***"), key=len, reverse=True):
        text = text.replace(secret, "***")
    return _USER_PASSWORD.sub(r"\1:***@", text)


def parse_catalog_url(url: str) -> URL:
    """The parsed URL, or InvalidArgument naming what is wrong with it (without its password)."""
    port = _PORT.search(url)
    if "://" in url and port and port.group(1) and not port.group(1).isdigit():
        raise errors.InvalidArgument(
            f"catalog URL {redact_url(url)} has the port '{port.group(1)}', which is not a number: write it as "
            f"dialect+driver://user@host:5432/database")
    try:
        return make_url(url)
    except (ArgumentError, ValueError):
        raise errors.InvalidArgument(
            f"catalog URL {redact_url(url)} is not a SQLAlchemy URL: write it as dialect+driver://user@host:port/"
            f"database (e.g. postgresql+psycopg://lake@db:5432/lake) or sqlite:////path/catalog.db") from None


def with_env_password(url: str) -> str:
    """`url`, with the password from BRANCHSPARK_CATALOG_PASSWORD when it names a user but no password."""
    password = os.environ.get(CATALOG_PASSWORD_ENV)
    parsed = parse_catalog_url(url)
    if not password or url.startswith("sqlite"):
        return url
    if parsed.username and parsed.password is None:
        return parsed.set(password=password).render_as_string(hide_password=False)
    return url
