"""`branchspark ui` (SPEC 10, issue 54) for real: one small catalog, one app on uvicorn in this test process
(sharing its SparkSession), one browser, in one module (one xdist scope, so `make test` builds them once).

First, over plain HTTP, who may read and write: bound to loopback by default, another address only with a
token; every write needs the token and a same-site form with its CSRF value; a server given a token refuses
every page without it; no page shows the token or a password. Then in a real browser: Debian's chromium,
headless, driven by Playwright for Python (its own browser download does not work here): the branches page, a
branch's graph, a three-dot compare's changed cell and each table's first rows inline (and a merge's dry run
counting what the page counts), a merge preview's conflict rule, and a paused merge resolved with theirs. The pages' screenshots go to docs/ui/ (README shows them). The browser tests come last: the last
one merges into `stage`."""
import re
import shutil
import urllib.parse
from functools import reduce
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dbt.adapters.branchspark.cli.main import cli
from dbt.adapters.branchspark.core.diff import THREE_DOT, TWO_DOT, branch_diff
from dbt.adapters.branchspark.ui import compare
from dbt.adapters.branchspark.ui.cells import cell_text
from dbt.adapters.branchspark.ui.access import COOKIE
from dbt.adapters.branchspark.ui.app import create_app
from tests.ui.conftest import TOKEN, Served, fetch
from tests.missing import missing

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
    # the same form from the server's own page goes through to the core (which says no merge is paused there)
    status, body, _ = _post(served, "/merge-status/main", {"action": "abort", "csrf": csrf},
                            {**signed, "Origin": served.url})
    assert status == 400 and "no merge into &#39;main&#39; is paused" in body
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


def test_a_tables_diff_as_csv(served):
    """The compare page's CSV link: the diff's rows (type, columns, changed columns), streamed from Spark."""
    status, body, headers = fetch(served.url + "/compare/main...dev?table=shop.orders&format=csv")
    assert status == 200 and headers["content-type"].startswith("text/csv")
    assert body.splitlines() == ["_diff_type,id,amount,status,_diff_changed", "modified,2,25.5,new,[amount]"]


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


# ------------------------------------------------- figures against Spark, paging
def _cells(body: str, row_attr: str, value: str, classes: tuple[str, ...]) -> list[str]:
    row = re.search(rf'<tr [^>]*{row_attr}="{re.escape(value)}"[^>]*>(.*?)</tr>', body, re.S).group(1)
    return [re.search(rf'<td class="(?:muted )?{c}">([^<]*)</td>', row).group(1) for c in classes]


def _counted_by_spark(frames: dict) -> dict:
    """Rows per label and per value of each frame's one column, in one Spark job."""
    labels = list(frames)
    parts = [frame.select(F.lit(n).alias("_label"), F.col(frame.columns[0]).cast("string").alias("_kind"))
             for n, frame in enumerate(frames.values())]
    found = {label: {} for label in labels}
    for row in reduce(DataFrame.unionByName, parts).groupBy("_label", "_kind").count().collect():
        found[labels[row["_label"]]][row["_kind"]] = row["count"]
    return found


def test_every_row_count_shown_is_what_spark_counts(served, lake):
    """The compare, table and commit pages count from the catalog where it is exact (appended files, added
    tombstones that delete no row twice) and in Spark otherwise: every figure shown is checked against Spark's
    count of the same data (one Spark job for all of them), and each way of counting is seen used. `trim`
    deletes order 5 (its tombstone and main's name one file: told apart by the row ids they hold, the catalog
    counts), compacts events and deletes one (rows held under their old row ids: Spark counts)."""
    shown, frames = {}, {}
    for spec in ("main...dev", "main...trim"):
        from_ref, to_ref = spec.split("...")
        _, body, _ = fetch(served.url + f"/compare/{spec}")
        for t in branch_diff(lake, from_ref, to_ref, mode=THREE_DOT, preview=False).tables:
            shown[(spec, t.name)] = _cells(body, "data-table", t.name, ("added", "removed", "modified", "counted-by"))
            frames[(spec, t.name)] = t.relation().select(t.rows.type_column)
    for ref, table in (("main", "shop.orders"), ("trim", "shop.orders"), ("trim", "shop.events")):
        _, body, _ = fetch(served.url + f"/table/{ref}/{table}")
        found = re.search(r'<span id="row-count">(\d+)</span>.*?<span id="counted-by">(\w+)</span>', body, re.S)
        shown[(ref, table)] = [found.group(1), found.group(2)]
        frames[(ref, table)] = lake.read(table, at=ref).select(F.lit("").alias("_row"))
    # A commit's rows written, deleted and in dropped files per table, from its files: together they are the
    # change in rows Spark finds from the parent. Each update here changes every row it rewrites, so outside a
    # compaction (which moves rows) also: written = added + modified, deleted = removed + modified.
    commits = [c for branch in ("trim", "dev") for c in list(lake.store.first_parents(lake.get_branch(branch).head))[:3]
               if c.message.startswith(("trim", "dev: reprice"))]
    assert len(commits) == 4
    for commit in commits:
        _, body, _ = fetch(served.url + f"/commit/{commit.id}")
        for t in branch_diff(lake, commit.parents[0], commit.id, mode=TWO_DOT, preview=False).tables:
            table_id = lake.snapshot(commit.id).state(t.name).id
            shown[(commit.message, t.name)] = list(map(int, _cells(body, "data-id", table_id,
                                                                   ("written", "deleted", "dropped"))))
            frames[(commit.message, t.name)] = t.relation().select(t.rows.type_column)
            frames[(commit.message, t.name, "rows")] = lake.read(t.name, at=commit.id).select(F.lit("").alias("_row"))
    spark = _counted_by_spark(frames)
    for key, figures in shown.items():
        if len(figures) == 4:  # compare: added, removed, modified, counted by
            assert list(map(int, figures[:3])) == [spark[key].get(k, 0) for k in ("added", "removed", "modified")], key
        elif len(figures) == 2:  # a table's row count
            assert int(figures[0]) == sum(spark[key].values()), key
        else:
            written, deleted, dropped = figures
            n = {k: spark[key].get(k, 0) for k in ("added", "removed", "modified")}
            assert written - deleted - dropped == n["added"] - n["removed"], key
            if "compact" in key[0]:
                assert written == dropped == sum(spark[(*key, "rows")].values()) and deleted == 0, key
            else:
                assert (written, deleted, dropped) == (n["added"] + n["modified"], n["removed"] + n["modified"], 0), key
    ways = {key: figures[-1] for key, figures in shown.items() if len(figures) in (2, 4)}
    assert ways == {("main...dev", "shop.events"): "catalog", ("main...dev", "shop.orders"): "spark",  # insert; update
                    ("main...trim", "shop.orders"): "catalog", ("main...trim", "shop.events"): "spark",  # delete
                    ("main", "shop.orders"): "catalog", ("trim", "shop.orders"): "catalog",
                    ("trim", "shop.events"): "spark"}


def test_a_diffs_pages_are_cut_in_spark_and_add_up_to_the_diff(lake):
    """Paging a row-level diff: each page is its own rows in key order, the pages together are exactly the
    diff's rows, and the counts beside them are Spark's, counted with the page in one job (or the catalog's)."""
    table = branch_diff(lake, "main", "stage", tables=["shop.orders"], mode=THREE_DOT, preview=False).tables[0]
    expected = table.relation().collect()  # two rows: the whole diff, to compare with
    kind = table.rows.type_column
    first, second = (compare.table_page(lake, "main", "stage", THREE_DOT, "shop.orders", page=n, size=1)
                     for n in (0, 1))
    assert len(expected) == 2 and len(first.rows) == len(second.rows) == 1 and first.pages == 2
    assert first.rows != second.rows and int(first.rows[0][1][0].text) < int(second.rows[0][1][0].text)
    shown = sorted((k, tuple(c.text for c in cells)) for k, cells in first.rows + second.rows)
    assert shown == sorted((r[kind], tuple(cell_text(r[c]) for c in table.rows.columns)) for r in expected)
    assert first.counts == second.counts == {"added": 0, "removed": 0, "modified": 2}
    assert first.counted_by == "spark"
    deleted = compare.table_page(lake, "main", "trim", THREE_DOT, "shop.orders")  # counted from the catalog
    assert (deleted.counted_by, deleted.counts) == ("catalog", {"added": 0, "removed": 1, "modified": 0})
    assert [(k, [c.text for c in cells]) for k, cells in deleted.rows] == [("removed", ["5", "50.0", "new"])]


# ---------------------------------------------------------------- in a browser
CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "ui"


@pytest.fixture(scope="module")
def page(served):
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        reason = f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium; .ci/run does)"
        missing(reason)
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is missing: make install")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        context = browser.new_context(viewport={"width": 1200, "height": 700})
        context.set_default_timeout(120_000)  # a busy 2-core machine: the first Spark job of a page is slow
        tab = context.new_page()
        tab.served = served
        yield tab
        browser.close()


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_branches_page_leads_to_a_branch_graph(page, lake):
    page.goto(page.served.url + "/")
    rows = page.locator("#branches tr[data-branch]")
    assert sorted(rows.evaluate_all("rs => rs.map(r => r.dataset.branch)")) == sorted(
        b.name for b in lake.list_branches())
    assert page.locator('tr[data-branch="main"] td').nth(2).inner_text() == "protected"
    assert page.locator('tr[data-branch="dev"] td').nth(2).inner_text() == ""
    stage = page.locator('tr[data-branch="stage"]')
    assert stage.locator("td").nth(1).inner_text() == lake.get_branch("stage").head[:12]
    assert stage.locator("td").nth(3).inner_text() == "4"  # its own commit, dev's two and the merge
    shot(page, "branches")
    page.click('a.branch:text-is("stage")')
    page.wait_for_url(re.compile(r"/log/stage$"))
    ids = page.locator("#history tr").evaluate_all("rs => rs.map(r => r.dataset.commit)")
    assert ids[0] == lake.get_branch("stage").head
    merge = lake.store.get_commit(ids[0])
    assert len(merge.parents) == 2 and set(merge.parents) <= set(ids)  # the merge, with both parents shown
    nodes = page.locator("svg.graph circle.node")
    assert nodes.count() == len(ids)
    # the merge's second parent is drawn in a lane of its own, beside the first parent's
    lanes = {n.get_attribute("data-commit"): n.get_attribute("cx") for n in nodes.all()}
    assert lanes[merge.parents[0]] != lanes[merge.parents[1]]
    shot(page, "history")


def test_three_dot_compare_highlights_the_changed_cell(page, lake):
    page.goto(page.served.url + "/compare/main...dev")
    orders = page.locator('#tables tr[data-table="shop.orders"] td')
    assert [orders.nth(i).inner_text() for i in (2, 3, 4)] == ["0", "0", "1"]  # added, removed, modified
    # issue 71: each changed table's first rows inline, as a code host shows a file's first changes
    inline = page.locator('table[id="rows-of-shop.orders"] tr.modified td.changed')
    assert inline.count() == 1 and inline.get_attribute("data-column") == "amount"
    assert inline.locator(".old").inner_text() == "20.0" and inline.locator(".new").inner_text() == "25.5"
    assert page.locator('table[id="rows-of-shop.events"] tr.added td.v').all_inner_texts() == ["3", "reopen"]
    # and a dry run of the merge counts what the page counts (it reported NULL; an update is -1 +1)
    shown = {t: [int(page.locator(f'#tables tr[data-table="{t}"] td').nth(i).inner_text()) for i in (2, 3, 4)]
             for t in ("shop.orders", "shop.events")}
    report = {r["object"]: r for r in lake.sql("MERGE BRANCH dev TO main WITH (dry_run = true)").collect()}
    assert {t: (report[t]["rows_added"], report[t]["rows_deleted"]) for t in shown} == {
        t: (added + modified, removed + modified) for t, (added, removed, modified) in shown.items()} == {
        "shop.orders": (1, 1), "shop.events": (1, 0)}
    shot(page, "compare")
    page.click('#tables a:text-is("shop.orders")')
    changed = page.locator("#diff-rows tr.modified td.changed")
    assert changed.count() == 1
    assert changed.get_attribute("data-column") == "amount"
    assert changed.locator(".old").inner_text() == "20.0" and changed.locator(".new").inner_text() == "25.5"
    assert "changed" not in (page.locator('#diff-rows tr.modified td[data-column="status"]').get_attribute("class"))
    shot(page, "diff")


def test_the_compare_page_shows_each_tables_first_rows_and_links_the_rest(page, lake, spark):
    """Issue 71: at most compare.INLINE_ROWS rows of a table inline, cut in Spark, and a link to all of them."""
    lake.create_branch("bulk", "main")
    lake.branch("bulk").insert("shop.events", spark.createDataFrame(
        [(10 + i, f"bulk {i}") for i in range(8)], "id int, kind string"), message="bulk: eight events")
    page.goto(page.served.url + "/compare/main...bulk")
    rows = page.locator('table[id="rows-of-shop.events"] tr.added')
    assert rows.count() == compare.INLINE_ROWS == 5
    assert [r.locator("td.v").first.inner_text() for r in rows.all()] == ["10", "11", "12", "13", "14"]
    section = page.locator('section[id="rows-shop.events"]')
    assert "The first 5 of 8 rows that differ" in section.inner_text()
    section.locator("a.all-rows").click()
    page.wait_for_url(re.compile(r"\?table=shop.events$"))
    assert page.locator("#diff-rows tr.added").count() == 8


def test_merge_preview_names_the_conflicts_rule(page, lake):
    head = lake.get_branch("main").head
    page.goto(page.served.url + "/merge/hotfix/into/main")
    assert page.locator("#preview-status").inner_text() == "conflicts"
    conflict = page.locator('#conflicts tr[data-object="shop.orders"]')
    assert conflict.locator("td.rule").inner_text() == "3.4 cells"
    keys = page.locator('table.keys[data-table="shop.orders"] tr')
    assert keys.nth(1).locator("td").all_inner_texts() == ["3", "3.4 cells"]
    shot(page, "merge-preview")
    assert lake.get_branch("main").head == head  # a preview writes nothing


def test_paused_merge_resolved_with_theirs_moves_the_branch(page, lake):
    before = lake.get_branch("stage").head
    page.goto(page.served.url + f"/?token={TOKEN}")  # sign in as the address `branchspark ui` prints
    page.goto(page.served.url + "/merge/patch/into/stage")
    page.select_option('#merge-form select[name="on_conflict"]', "pause")
    page.click("#merge-form button")
    page.wait_for_url(re.compile(r"/merge-status/stage$"))
    row = page.locator('#paused-tables tr[data-table="shop.orders"]')
    assert row.locator("td.open").inner_text() == "1"
    shot(page, "paused-merge")
    row.locator('button[name="resolve-theirs"]').click()
    page.wait_for_url(re.compile(r"/merge-status/stage$"))
    assert page.locator('#paused-tables tr[data-table="shop.orders"] td.open').inner_text() == "0"
    page.click("#continue")
    page.wait_for_url(re.compile(r"/log/stage$"))
    after = lake.get_branch("stage").head
    assert after != before and lake.store.get_commit(after).parents == (before, lake.get_branch("patch").head)
    assert page.locator("#history tr").first.get_attribute("data-commit") == after
    page.goto(page.served.url + "/table/stage/shop.orders")
    amounts = {r.locator("td").nth(0).inner_text(): r.locator("td").nth(1).inner_text()
               for r in page.locator("#first-rows tr").all()[1:]}
    assert amounts["4"] == "44.0" and amounts["2"] == "25.5"  # theirs (patch) for 4, dev's change kept
    shot(page, "table")
