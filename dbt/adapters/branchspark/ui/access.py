"""Who may read and who may write through `branchspark ui` (SPEC 10).

- Reads: open on a loopback address; when `branchspark ui`/`serve` was given a token (which any other address
  needs), every page needs it too.
- Writes (merge, resolve, continue, abort): always need the token, and are refused when they come from
  another site (cross-site request forgery): a form must carry the page's CSRF value and, when the browser
  names one, come from this server's own origin. A script may send `Authorization: Bearer <token>` instead,
  which no other site can make a browser send.

A browser shows the token once (`/login`, or the `?token=` of the address `branchspark ui` prints); the
server answers with a cookie (HttpOnly, SameSite=Strict) holding a value derived from the token, never the
token itself. No page shows the token.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from starlette.requests import Request

COOKIE = "branchspark_ui"


def new_token() -> str:
    return secrets.token_urlsafe(24)


class Access:
    def __init__(self, token: str, reads_need_token: bool):
        self._token = token.encode()
        self.reads_need_token = reads_need_token
        self.session_value = self._derive("session")
        self.csrf_value = self._derive("csrf")

    def _derive(self, purpose: str) -> str:
        return hmac.new(self._token, purpose.encode(), hashlib.sha256).hexdigest()

    def is_token(self, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), self._token)

    def bearer(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        return header.startswith("Bearer ") and self.is_token(header[len("Bearer "):])

    def signed_in(self, request: Request) -> bool:
        """The token, as a bearer header or as the session cookie a login set."""
        cookie = request.cookies.get(COOKIE, "")
        return self.bearer(request) or (bool(cookie) and hmac.compare_digest(cookie, self.session_value))

    def may_read(self, request: Request) -> bool:
        return not self.reads_need_token or self.signed_in(request)

    def write_refusal(self, request: Request, form) -> str | None:
        """Why a write request is refused, or None when it may go ahead."""
        if self.bearer(request):
            return None  # a header no other site can make a browser send
        if not self.signed_in(request):
            return ("this action needs the token `branchspark ui` was started with: sign in at /login, or send "
                    "Authorization: Bearer <token>")
        if not same_origin(request):
            return "refused: the request came from another site (cross-site request forgery)"
        given = form.get("csrf") if form is not None else None
        if not given or not hmac.compare_digest(str(given), self.csrf_value):
            return "refused: the form has no valid CSRF value; reload the page and try again"
        return None


def same_origin(request: Request) -> bool:
    """Whether the browser says the request comes from this server's own pages (Origin, else Referer; a
    request that names neither is taken as same-origin: browsers name the origin of every cross-site POST)."""
    if request.headers.get("sec-fetch-site") in ("cross-site", "same-site"):
        return False
    source = request.headers.get("origin") or request.headers.get("referer")
    if not source or source == "null":
        return source != "null"
    return urlsplit(source).netloc.lower() == request.headers.get("host", "").lower()
