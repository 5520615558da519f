"""The CI preview recipe (examples/github-actions-preview.yml), played with real dbt invocations.

Each pull request is a checkout of the project (a folder) whose job runs
`dbt build --target ci --select state:modified+ --state <main's manifest>` with PR_NUMBER set:
the `ci` target's branch `pr_<n>` is created from `main` on first use, holding every table of
main at zero copy. When a pull request is merged, `merge_branch {src: pr_<n>, dest: main}`
publishes it in one commit; on close, `drop_branch {name: pr_<n>}` removes the preview.

Round 1: pr_1 and pr_2 change different models; both merge. Round 2: pr_3, pr_4 and pr_5 change
the same model (incremental on unique_key customer_id: a primary-key table, merged per key):
pr_3 and pr_4 change different columns and merge cell by cell; pr_5 changes the column pr_3
changed, on the same keys, and conflicts. Main is checked row by row against values computed here from the seeds.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.cli.main import dbtRunner

CUSTOMERS = [(1, "ada", "UK"), (2, "grace", "US"), (3, "linus", "FI"), (4, "margaret", "US")]
ORDERS = [(1, 1, 10, "paid"), (2, 1, 20, "cancelled"), (3, 2, 5, "paid"), (4, 3, 7, "paid"),
          (5, 3, 3, "cancelled"), (6, 4, 12, "paid"), (7, 2, 8, "paid")]


def csv(header: str, rows) -> str:
    return header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows)


def customer_totals_sql(name="c.name", total="sum(o.amount)", n_orders="count(o.id)") -> str:
    return f"""{{{{ config(materialized='incremental', unique_key='customer_id') }}}}
select c.id as customer_id, {name} as name, c.country,
       cast({total} as bigint) as total, cast({n_orders} as bigint) as n_orders
from {{{{ ref('customers') }}}} c join {{{{ ref('orders') }}}} o on o.customer_id = c.id
group by c.id, c.name, c.country
"""


def country_totals_sql(where="") -> str:
    return f"""{{{{ config(materialized='table') }}}}
select c.country, cast(sum(o.amount) as bigint) as total
from {{{{ ref('customers') }}}} c join {{{{ ref('orders') }}}} o on o.customer_id = c.id
{where}
group by c.country
"""


SCHEMA_YML = """version: 2
models:
  - name: customer_totals
    columns:
      - name: customer_id
        data_tests: [unique, not_null]
"""

# What each pull request changes (file -> text), relative to the main it was opened from.
UPPER_NAMES = "upper(c.name)"
PAID_TOTAL = "sum(case when o.status != 'cancelled' then o.amount else 0 end)"
PAID_COUNT = "count(case when o.status != 'cancelled' then o.id end)"


def expected_customer_totals(upper=False, paid_total=False, paid_count=False, double_total=False):
    rows = []
    for cid, name, country in CUSTOMERS:
        mine = [o for o in ORDERS if o[1] == cid]
        paid = [o for o in mine if o[3] != "cancelled"]
        total = sum(o[2] for o in (paid if paid_total else mine)) * (2 if double_total else 1)
        rows.append((cid, name.upper() if upper else name, country, total, len(paid if paid_count else mine)))
    return sorted(rows)


def expected_country_totals(paid_only=False):
    countries = dict((cid, country) for cid, _, country in CUSTOMERS)
    totals: dict[str, int] = {}
    for _, cid, amount, status in ORDERS:
        if not paid_only or status != "cancelled":
            totals[countries[cid]] = totals.get(countries[cid], 0) + amount
    return sorted(totals.items())


class Checkout:
    """One checkout of the project (main or a pull request's head), with its own target dir."""

    def __init__(self, root: Path, files: dict[str, str], profiles: dict):
        self.root = root
        root.mkdir(parents=True)
        for relative, text in files.items():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_text(text)
        (root / "profiles.yml").write_text(yaml.safe_dump(profiles))

    def dbt(self, *args: str, pr: int | None = None, monkeypatch=None) -> bool:
        if pr is not None:
            monkeypatch.setenv("PR_NUMBER", str(pr))
        result = dbtRunner().invoke([*args, "--project-dir", str(self.root), "--profiles-dir", str(self.root)])
        return result.success


@pytest.fixture
def ci(tmp_path, dbt_profile_target, spark):
    """main's code, a profile with targets main / bootstrap / ci, and a factory of checkouts."""
    warehouse = str(tmp_path / "warehouse")
    base = {key: dbt_profile_target[key] for key in ("type", "method", "spark_config")}
    if "host" in dbt_profile_target:  # under pytest --connect: the Spark Connect server
        base["host"] = dbt_profile_target["host"]
    base.update(schema="shop", warehouse=warehouse, threads=1)
    profiles = {"shop": {"target": "ci", "outputs": {
        "bootstrap": {**base, "branch": "main"},  # the first build of main, before it is protected
        "main": {**base, "branch": "main", "protected_branches": ["main"]},
        "ci": {**base, "branch": "pr_{{ env_var('PR_NUMBER') }}", "create_branch_from": "main",
               "protected_branches": ["main"]},
    }}}
    main_code = {
        "dbt_project.yml": "name: shop\nversion: '1.0'\nprofile: shop\nconfig-version: 2\n",
        "seeds/customers.csv": csv("id,name,country", CUSTOMERS),
        "seeds/orders.csv": csv("id,customer_id,amount,status", ORDERS),
        "models/customer_totals.sql": customer_totals_sql(),
        "models/country_totals.sql": country_totals_sql(),
        "models/schema.yml": SCHEMA_YML,
    }
    counter = iter(range(1000))

    def checkout(files: dict[str, str]) -> Checkout:
        return Checkout(tmp_path / f"checkout{next(counter)}", files, profiles)

    return main_code, checkout, Lakehouse(spark, warehouse)


def rows(lakehouse: Lakehouse, branch: str, table: str) -> list[tuple]:
    return sorted(tuple(r) for r in lakehouse.snapshot(branch).read(table).collect())


def main_state(main_checkout: Checkout) -> Path:
    """main's manifest (`dbt parse` on a checkout of main), to select what a pull request changed."""
    state = main_checkout.root / "main-state"
    assert main_checkout.dbt("parse", "--target", "main", "--target-path", str(state))
    return state


def pr_job(state: Path, head: Checkout, number: int, monkeypatch) -> None:
    """The pull request job: build what the pull request changed against main's manifest."""
    assert head.dbt("build", "--target", "ci", "--select", "state:modified+", "--state", str(state),
                    pr=number, monkeypatch=monkeypatch)


def merged(checkout: Checkout, number: int, capsys) -> tuple[bool, str]:
    """The job on a merged pull request: merge_branch into main, then drop_branch (also on failure)."""
    capsys.readouterr()
    ok = checkout.dbt("run-operation", "merge_branch", "--args", f"{{src: pr_{number}, dest: main}}",
                      "--target", "main")
    printed = capsys.readouterr().out
    if ok:
        assert checkout.dbt("run-operation", "drop_branch", "--args", f"{{name: pr_{number}}}", "--target", "main")
    return ok, printed


def test_two_concurrent_pull_requests_preview_merge_and_clean_up(ci, spark, monkeypatch, capsys):
    main_code, checkout, lakehouse = ci
    main_v0 = checkout(main_code)
    assert main_v0.dbt("build", "--target", "bootstrap")
    assert rows(lakehouse, "main", "shop.customer_totals") == expected_customer_totals()
    assert rows(lakehouse, "main", "shop.country_totals") == expected_country_totals()
    assert lakehouse.snapshot("main").state("shop.customer_totals").primary_key  # unique_key -> merges per key

    # Round 1: two concurrent pull requests change different models.
    pr1 = checkout({**main_code, "models/country_totals.sql": country_totals_sql("where o.status != 'cancelled'")})
    pr2 = checkout({**main_code, "models/customer_totals.sql": customer_totals_sql(name=UPPER_NAMES)})
    state = main_state(main_v0)
    pr_job(state, pr1, 1, monkeypatch)
    pr_job(state, pr2, 2, monkeypatch)
    main_before = lakehouse.get_branch("main")
    assert main_before.protected

    assert rows(lakehouse, "pr_1", "shop.country_totals") == expected_country_totals(paid_only=True)
    assert rows(lakehouse, "pr_1", "shop.customer_totals") == expected_customer_totals()
    assert rows(lakehouse, "pr_2", "shop.customer_totals") == expected_customer_totals(upper=True)
    assert rows(lakehouse, "pr_2", "shop.country_totals") == expected_country_totals()
    assert rows(lakehouse, "main", "shop.country_totals") == expected_country_totals()
    assert rows(lakehouse, "main", "shop.customer_totals") == expected_customer_totals()
    # Only the changed model was built: every other table is main's version (zero copy).
    main_snap, pr1_snap, pr2_snap = (lakehouse.snapshot(b) for b in ("main", "pr_1", "pr_2"))
    for table in ("shop.customers", "shop.orders", "shop.customer_totals"):
        assert pr1_snap.state(table).version_id == main_snap.state(table).version_id, table
    for table in ("shop.customers", "shop.orders", "shop.country_totals"):
        assert pr2_snap.state(table).version_id == main_snap.state(table).version_id, table

    ok, printed = merged(pr1, 1, capsys)
    assert ok and "merge pr_1 into main: merged" in printed
    ok, printed = merged(pr2, 2, capsys)
    assert ok and "merge pr_2 into main: merged" in printed
    assert rows(lakehouse, "main", "shop.country_totals") == expected_country_totals(paid_only=True)
    assert rows(lakehouse, "main", "shop.customer_totals") == expected_customer_totals(upper=True)
    assert not lakehouse.branch_exists("pr_1") and not lakehouse.branch_exists("pr_2")
    head = lakehouse.store.get_commit(lakehouse.get_branch("main").head)
    assert len(head.parents) == 2  # a merge commit, the only way main changes

    # Round 2: three concurrent pull requests change the same model, from main after round 1.
    main_code_v1 = {**main_code, "models/country_totals.sql": country_totals_sql("where o.status != 'cancelled'"),
                    "models/customer_totals.sql": customer_totals_sql(name=UPPER_NAMES)}
    main_v1 = checkout(main_code_v1)
    pr3 = checkout({**main_code_v1, "models/customer_totals.sql": customer_totals_sql(UPPER_NAMES, total=PAID_TOTAL)})
    pr4 = checkout({**main_code_v1, "models/customer_totals.sql": customer_totals_sql(UPPER_NAMES, n_orders=PAID_COUNT)})
    pr5 = checkout({**main_code_v1, "models/customer_totals.sql": customer_totals_sql(UPPER_NAMES, total="2 * sum(o.amount)")})
    state = main_state(main_v1)
    for number, head in ((3, pr3), (4, pr4), (5, pr5)):
        pr_job(state, head, number, monkeypatch)
    assert rows(lakehouse, "pr_3", "shop.customer_totals") == expected_customer_totals(upper=True, paid_total=True)
    assert rows(lakehouse, "pr_4", "shop.customer_totals") == expected_customer_totals(upper=True, paid_count=True)
    assert rows(lakehouse, "pr_5", "shop.customer_totals") == expected_customer_totals(upper=True, double_total=True)
    assert rows(lakehouse, "main", "shop.customer_totals") == expected_customer_totals(upper=True)

    ok, printed = merged(pr3, 3, capsys)
    assert ok and "merge pr_3 into main: merged" in printed
    # pr_4 changed n_orders of the keys whose total pr_3 changed: cell by cell, both changes land.
    ok, printed = merged(pr4, 4, capsys)
    assert ok and "merge pr_4 into main: merged" in printed
    both = expected_customer_totals(upper=True, paid_total=True, paid_count=True)
    assert rows(lakehouse, "main", "shop.customer_totals") == both
    assert both != expected_customer_totals(upper=True, paid_total=True)  # the data really exercised both

    # pr_5 doubled every total; pr_3 changed the totals of customers 1 and 3: those keys conflict.
    main_head = lakehouse.get_branch("main").head
    ok, printed = merged(pr5, 5, capsys)
    assert not ok and "conflict" in printed.lower() and "shop.customer_totals" in printed
    assert lakehouse.get_branch("main").head == main_head  # nothing written
    assert rows(lakehouse, "main", "shop.customer_totals") == both
    assert rows(lakehouse, "pr_5", "shop.customer_totals") == expected_customer_totals(upper=True, double_total=True)
    # closed without merging: the preview is dropped
    # its commits are on no other branch, so the drop needs force, as git branch -D
    assert not pr5.dbt("run-operation", "drop_branch", "--args", "{name: pr_5}", "--target", "main")
    assert lakehouse.branch_exists("pr_5")
    assert pr5.dbt("run-operation", "drop_branch", "--args", "{name: pr_5, force: true}", "--target", "main")
    assert [b.name for b in lakehouse.list_branches()] == ["main"]
    assert rows(lakehouse, "main", "shop.country_totals") == expected_country_totals(paid_only=True)
    lakehouse.store.dispose()


def test_the_example_workflow_runs_the_commands_played_above():
    """examples/github-actions-preview.yml: the steps and the profile the test above plays."""
    path = Path(__file__).resolve().parents[2] / "examples" / "github-actions-preview.yml"
    text = path.read_text()
    workflow = yaml.safe_load(text)
    jobs = workflow["jobs"]
    steps = {name: " ".join(str(step.get("run", "")) for step in job["steps"]) for name, job in jobs.items()}
    assert "dbt build --target ci --select state:modified+ --state" in steps["preview"]
    assert "dbt parse --target main" in steps["preview"]
    assert 'merge_branch --target main --args "{src: pr_${PR_NUMBER}, dest: main}"' in steps["publish"]
    assert steps["publish"].index("merge_branch") < steps["publish"].index("drop_branch")
    assert 'drop_branch --target main --args "{name: pr_${PR_NUMBER}, force: true}"' in steps["cleanup"]
    assert "github.event.pull_request.merged == true" in jobs["publish"]["if"]
    assert "merged != true" in jobs["cleanup"]["if"]
    for line in ("branch: \"pr_{{ env_var('PR_NUMBER') }}\"", "create_branch_from: main", "protected_branches: [main]"):
        assert line in text, line
