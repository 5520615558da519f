"""`branchspark ui` in a real browser: Debian's chromium, headless, driven by Playwright for Python (its own
browser download does not work here). One browser and one app for the module; the pages' screenshots go to
docs/ui/ (README shows them)."""
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.ui.conftest import TOKEN

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "ui"


@pytest.fixture(scope="module")
def page(served):
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        reason = f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium; .ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
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


def test_three_dot_compare_highlights_the_changed_cell(page):
    page.goto(page.served.url + "/compare/main...dev")
    orders = page.locator('#tables tr[data-table="shop.orders"] td')
    assert [orders.nth(i).inner_text() for i in (2, 3, 4)] == ["0", "0", "1"]  # added, removed, modified
    shot(page, "compare")
    page.click('#tables a:text-is("shop.orders")')
    changed = page.locator("#diff-rows tr.modified td.changed")
    assert changed.count() == 1
    assert changed.get_attribute("data-column") == "amount"
    assert changed.locator(".old").inner_text() == "20.0" and changed.locator(".new").inner_text() == "25.5"
    assert "changed" not in (page.locator('#diff-rows tr.modified td[data-column="status"]').get_attribute("class"))
    shot(page, "diff")


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
