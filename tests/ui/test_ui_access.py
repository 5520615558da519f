"""Who may read and write through `branchspark ui` (SPEC 10), over real HTTP: bound to loopback by default,
another address only with a token; every write needs the token and a same-site form with its CSRF value; a
non-loopback server (`--token`) refuses every page without it; no page shows the token or a password."""
import re
import urllib.parse

import pytest
from click.testing import CliRunner

from dbt.adapters.branchspark.cli.main import cli
from dbt.adapters.branchspark.ui.access import COOKIE
from dbt.adapters.branchspark.ui.app import create_app
from tests.ui.conftest import TOKEN, Served, fetch

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def _post(server, path: str, fields: dict, headers: dict | None = None):
    return fetch(server.url + path, urllib.parse.urlencode(fields).encode(), {**FORM, **(headers or {})})


def _signed_in(server) -> tuple[str, str]:
    """The session cookie the sign-in sets, and the CSRF value a page then carries."""
    status, _, headers = fetch(server.url + f"/?token={TOKEN}")
    assert status == 303 and headers["location"] == "/"
    cookie = re.search(rf"{COOKIE}=([0-9a-f]+)", headers["set-cookie"]).group(1)
    assert TOKEN not in headers["set-cookie"] and "HttpOnly" in headers["set-cookie"] \
        and "SameSite=strict" in headers["set-cookie"]
    _, body, _ = fetch(server.url + "/merge/hotfix/into/main", headers={"Cookie": f"{COOKIE}={cookie}"})
    return cookie, re.search(r'name="csrf" value="([0-9a-f]+)"', body).group(1)


def test_a_non_loopback_address_needs_a_token(tmp_path):
    for command in (["ui"], ["serve", "--ui"], ["serve"]):
        result = CliRunner().invoke(cli, ["--warehouse", str(tmp_path / "none"), *command, "--host", "0.0.0.0"],
                                    env={"BRANCHSPARK_SERVE_TOKEN": ""})
        assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
        assert result.output.startswith("error: --host 0.0.0.0 would let other machines read every branch")
    assert not (tmp_path / "none").exists()  # refused before opening anything


def test_writes_need_the_token_and_a_same_site_form(served, lake):
    head = lake.get_branch("main").head
    paths = [("/merge/hotfix/into/main", {"on_conflict": "theirs"}),
             ("/merge-status/main", {"action": "abort"})]
    for path, fields in paths:  # no token at all: refused, even on loopback
        status, body, _ = _post(served, path, fields)
        assert status == 401 and "needs the token" in body
    cookie, csrf = _signed_in(served)
    signed = {"Cookie": f"{COOKIE}={cookie}"}
    for path, fields in paths:
        status, body, _ = _post(served, path, fields, signed)  # signed in, no CSRF value
        assert status == 403 and "CSRF" in body
        status, body, _ = _post(served, path, {**fields, "csrf": "0" * 64}, signed)
        assert status == 403 and "CSRF" in body
        status, body, _ = _post(served, path, {**fields, "csrf": csrf},  # right value, from another site
                                {**signed, "Origin": "http://evil.example"})
        assert status == 403 and "another site" in body
        status, body, _ = _post(served, path, {**fields, "csrf": csrf}, {**signed, "Sec-Fetch-Site": "cross-site"})
        assert status == 403 and "another site" in body
    status, body, _ = _post(served, "/merge/hotfix/into/main", {"on_conflict": "theirs"},
                            {"Authorization": "Bearer not-the-token"})
    assert status == 401
    assert lake.get_branch("main").head == head  # nothing of the above wrote
    # the same form from the server's own page goes through (the conflicting merge is then refused by the core)
    status, body, _ = _post(served, "/merge/hotfix/into/main", {"on_conflict": "abort", "csrf": csrf},
                            {**signed, "Origin": served.url})
    assert status == 409 and "stopped with 1 conflict(s)" in body
    assert lake.get_branch("main").head == head


def test_with_a_token_every_page_needs_it(lake):
    with Served(create_app(lake, TOKEN, reads_need_token=True)) as server:
        for path in ("/", "/log/main", "/compare/main...dev", "/table/main/shop.orders"):
            status, body, _ = fetch(server.url + path)
            assert status == 401 and "sign in" in body.lower() and "shop.orders" not in body.replace(path, "")
        status, body, _ = fetch(server.url + "/iceberg/v1/config?warehouse=main")
        assert status == 401  # the Iceberg catalog on the same app needs it too
        status, body, _ = fetch(server.url + "/", headers={"Authorization": f"Bearer {TOKEN}"})
        assert status == 200 and 'data-branch="dev"' in body
        status, _, _ = fetch(server.url + "/?token=wrong")
        assert status == 401
        cookie, _ = _signed_in(server)
        status, body, _ = fetch(server.url + "/log/main", headers={"Cookie": f"{COOKIE}={cookie}"})
        assert status == 200 and "History of" in body


def test_no_page_shows_the_token_or_a_password(served, lake, monkeypatch):
    """A page of each kind, as a signed-in reader sees it, and an error page that would echo the catalog's
    password (BRANCHSPARK_CATALOG_PASSWORD) show neither the token, the session cookie nor the password."""
    password = "Pw-9d2e-secret"
    monkeypatch.setenv("BRANCHSPARK_CATALOG_PASSWORD", password)
    cookie, csrf = _signed_in(served)
    signed = {"Cookie": f"{COOKIE}={cookie}"}
    stage_head = lake.get_branch("stage").head
    for path in ("/", "/login", "/log/stage", f"/commit/{stage_head}", "/compare/main...dev",
                 "/compare/main..dev?table=shop.orders", "/merge/hotfix/into/main", "/merge-status/stage",
                 "/table/main/shop.orders"):
        status, body, _ = fetch(served.url + path, headers=signed)
        assert status == 200, (path, body[-400:])
        assert TOKEN not in body and cookie not in body and password not in body, path
    status, body, _ = fetch(served.url + f"/log/{password}", headers=signed)
    assert status == 404 and "no commit matches" in body and password not in body
