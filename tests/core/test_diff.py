"""branch_diff: the rows and schemas that differ between two versions, two-dot and three-dot, and the merge
preview (the conflicts a merge would report). Small hand-made histories; the random ones against the
model are in tests/model/test_diff_against_model.py."""
import json

import pytest
from click.testing import CliRunner

from dbt.adapters.branchspark import errors
from dbt.adapters.branchspark.cli.main import cli
from dbt.adapters.branchspark.core.diff import CHANGED, CONFLICT_RULE, DIFF_TYPE, NEW, OLD, branch_diff
from dbt.adapters.branchspark.errors import MergeConflict


def df(spark, data, schema="id bigint, amount double"):
    return spark.createDataFrame(data, schema)


def rows(frame):
    return sorted(tuple(r) for r in frame.collect())


@pytest.fixture
def keyed(lh, spark):
    """main: shop.orders(id, amount) keyed by id, ids 1..5; shop.events(kind, n) keyless."""
    with lh.transaction("main", message="setup") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.orders", df(spark, [(i, float(i * 10)) for i in range(1, 6)]), primary_key=["id"])
        tx.create_table_as("shop.events", df(spark, [("a", 1), ("a", 1), ("b", 2)], "kind string, n int"))
    lh.create_branch("dev")
    return lh


def test_three_dot_shows_only_what_to_changed_since_the_merge_base(keyed, spark):
    lh = keyed
    with lh.transaction("dev") as tx:
        tx.update("shop.orders", "id = 2", {"amount": "99.0"})
        tx.delete("shop.orders", "id = 3")
        tx.insert("shop.orders", df(spark, [(6, 60.0)]))
    with lh.transaction("main") as tx:  # main moves on: not part of dev...main
        tx.delete("shop.orders", "id = 5")
        tx.insert("shop.events", df(spark, [("c", 3)], "kind string, n int"))
    d = branch_diff(lh, "main", "dev")
    assert d.mode == "three_dot" and [t.name for t in d.tables] == ["shop.orders"]
    orders = d.table("shop.orders")
    assert orders.counts() == {"added": 1, "removed": 1, "modified": 1}
    assert rows(orders.rows.added) == [(6, 60.0)]
    assert rows(orders.rows.removed) == [(3, 30.0)]
    modified = orders.rows.modified.collect()
    assert [(m["id"], m[CHANGED], tuple(m[OLD]), tuple(m[NEW])) for m in modified] == [
        (2, ["amount"], (2, 20.0), (2, 99.0))]
    # two-dot compares the heads: main's own changes show too, reversed
    two = branch_diff(lh, "main", "dev", mode="two_dot")
    assert [t.name for t in two.tables] == ["shop.events", "shop.orders"]
    assert rows(two.table("shop.orders").rows.added) == [(5, 50.0), (6, 60.0)]
    assert rows(two.table("shop.events").rows.removed) == [("c", 3)]
    relation = rows(two.table("shop.orders").relation().select(DIFF_TYPE, "id", "amount", CHANGED))
    assert relation == [("added", 5, 50.0, None), ("added", 6, 60.0, None), ("modified", 2, 99.0, ["amount"]),
                        ("removed", 3, 30.0, None)]


def test_keyless_rows_are_compared_as_multisets(keyed, spark):
    lh = keyed
    with lh.transaction("dev") as tx:
        # a rebuild that reproduces two of three rows changes one copy of ('a', 1) into ('d', 4)
        tx.overwrite("shop.events", df(spark, [("a", 1), ("b", 2), ("d", 4)], "kind string, n int"))
    d = branch_diff(lh, "main", "dev")
    events = d.table("shop.events")
    assert events.rows.modified is None
    assert rows(events.rows.removed) == [("a", 1)] and rows(events.rows.added) == [("d", 4)]
    assert events.counts() == {"added": 1, "removed": 1, "modified": 0}


def test_identical_versions_and_compactions_show_nothing(keyed, spark):
    lh = keyed
    with lh.transaction("dev") as tx:
        tx.compact("shop.orders")
    with lh.transaction("dev") as tx:  # a rebuild to the same rows
        tx.overwrite("shop.events", df(spark, [("b", 2), ("a", 1), ("a", 1)], "kind string, n int"))
    d = branch_diff(lh, "main", "dev")
    assert all(t.counts() == {"added": 0, "removed": 0, "modified": 0} for t in d.tables)
    same = branch_diff(lh, "main", "main")
    assert same.tables == [] and same.unchanged == 2


def test_unchanged_tables_are_skipped_without_reading_data(keyed, spark, monkeypatch):
    lh = keyed
    with lh.transaction("dev") as tx:
        tx.insert("shop.orders", df(spark, [(7, 70.0)]))
    import dbt.adapters.branchspark.core.diff.plan as plan

    compared = []
    real = plan.row_difference
    monkeypatch.setattr(plan, "row_difference", lambda *a, **k: compared.append(a[4] or a[5]) or real(*a, **k))
    d = branch_diff(lh, "main", "dev")
    assert [t.name for t in d.tables] == ["shop.orders"] and d.unchanged == 1
    assert [s.name for s in compared] == ["orders"]  # shop.events shares every file: never read


def test_schema_changes_are_listed_and_rows_compared_in_the_new_columns(keyed, spark):
    lh = keyed
    with lh.transaction("dev") as tx:
        tx.add_column("shop.orders", "note", "string")
        tx.rename_column("shop.orders", "amount", "total")
        tx.alter_column_type("shop.events", "n", "bigint")
        tx.update("shop.orders", "id = 1", {"note": "'late'"})
    d = branch_diff(lh, "main", "dev")
    orders, events = d.table("shop.orders"), d.table("shop.events")
    assert [c.text() for c in orders.schema_changes] == ["renamed amount to total", "added note string"]
    assert [c.text() for c in events.schema_changes] == ["n: type int -> bigint"]
    assert events.rows is None  # the same files: no data read
    modified = orders.rows.modified.collect()
    assert [(m["id"], m[CHANGED], m[NEW]["note"]) for m in modified] == [(1, ["note"], "late")]
    assert orders.counts() == {"added": 0, "removed": 0, "modified": 1}


def test_added_dropped_and_renamed_tables(keyed, spark):
    lh = keyed
    with lh.transaction("dev") as tx:
        tx.drop_table("shop.events")
        tx.create_table_as("shop.refunds", df(spark, [(1, 5.0)]))
        tx.rename_table("shop.orders", "shop.sales")
    d = branch_diff(lh, "main", "dev")
    by_name = {t.name: t for t in d.tables}
    assert by_name["shop.events"].status == "dropped"
    assert rows(by_name["shop.events"].rows.removed) == [("a", 1), ("a", 1), ("b", 2)]
    assert by_name["shop.refunds"].status == "added" and rows(by_name["shop.refunds"].rows.added) == [(1, 5.0)]
    assert by_name["shop.sales"].renamed_from == "shop.orders" and by_name["shop.sales"].rows is None
    only = branch_diff(lh, "main", "dev", tables=["shop.refunds"])
    assert [t.name for t in only.tables] == ["shop.refunds"]


def test_versions_are_commits_and_branch_at_time(keyed, spark):
    lh = keyed
    before = lh.get_branch("dev").head
    with lh.transaction("dev") as tx:
        tx.insert("shop.orders", df(spark, [(8, 80.0)]))
    after = lh.resolve("dev")
    d = branch_diff(lh, before[:12], "dev@" + after.ts.isoformat())
    assert d.mode == "two_dot" and rows(d.table("shop.orders").rows.added) == [(8, 80.0)]
    assert d.preview is None  # a preview needs a branch to merge into


def test_bad_input_gets_one_clear_line(keyed):
    with pytest.raises(errors.InvalidArgument, match="unknown diff mode 'three'"):
        branch_diff(keyed, "main", "dev", mode="three")
    with pytest.raises(errors.InvalidArgument, match="table 'shop.nope' is in neither version"):
        branch_diff(keyed, "main", "dev", tables=["shop.nope"])
    with pytest.raises(errors.CommitNotFound):
        branch_diff(keyed, "main", "nobranch")


def test_merge_preview_equals_what_the_merge_reports(keyed, spark):
    lh = keyed
    with lh.transaction("dev") as tx:
        tx.update("shop.orders", "id in (1, 2)", {"amount": "1.0"})
        tx.insert("shop.orders", df(spark, [(9, 9.0)]))
    with lh.transaction("main") as tx:
        tx.update("shop.orders", "id in (2, 3)", {"amount": "2.0"})
        tx.insert("shop.orders", df(spark, [(9, 90.0)]))
    d = branch_diff(lh, "main", "dev")
    assert d.preview.status == "conflicts"
    keys = rows(d.preview.conflicting_keys["shop.orders"].select("id", CONFLICT_RULE))
    assert keys == [(2, "3.4 cells"), (9, "3.4 insert")]
    head = lh.get_branch("main").head
    with pytest.raises(MergeConflict) as raised:
        lh.merge("dev", "main")
    assert raised.value.report.conflicts == d.preview.conflicts
    assert lh.get_branch("main").head == head  # the preview wrote nothing either
    lh.merge("dev", "main", on_conflict="theirs")
    assert branch_diff(lh, "main", "dev").preview.status == "up-to-date"


def test_merge_preview_clean_and_fast_forward(keyed, spark):
    lh = keyed
    with lh.transaction("dev") as tx:
        tx.insert("shop.orders", df(spark, [(10, 1.0)]))
    assert branch_diff(lh, "main", "dev").preview.status == "fast-forward"
    with lh.transaction("main") as tx:
        tx.insert("shop.orders", df(spark, [(11, 1.0)]))
    preview = branch_diff(lh, "main", "dev").preview
    assert preview.status == "clean" and preview.conflicts == []


def test_merge_preview_is_the_merge_on_several_shapes(keyed, spark):
    """The preview plans rows only for keyed tables both sides wrote (core/diff/preview.py): on one merge with
    every other shape beside such a table, its conflicts (rules, keys, counts of keys not listed) and its
    per-table outcomes are the merge's, and its first keys are in key order."""
    lh = keyed
    with lh.transaction("main", message="more tables") as tx:
        tx.create_table_as("shop.items", df(spark, [(i, float(i)) for i in range(1, 31)]), primary_key=["id"])
        tx.create_table_as("shop.w", df(spark, [(1, 1)], "id bigint, n int"))
        tx.create_table_as("shop.solo", df(spark, [(1, 1.0), (2, 2.0)]), primary_key=["id"])
        tx.create_table_as("shop.apart", df(spark, [(1, 1.0), (2, 2.0)]), primary_key=["id"])
        tx.create_table_as("shop.log", df(spark, [(1, 1.0)]))
    lh.create_branch("dev2", "main")
    with lh.transaction("dev2") as tx:
        tx.update("shop.items", "id <= 25", {"amount": "-1.0"})  # keys 6-25 both sides change differently
        tx.update("shop.orders", "id = 4", {"amount": "7.0"})  # the same change on both sides: no conflict
        tx.update("shop.events", "kind = 'a'", {"n": "5"})  # keyless, the same segment: A3
        tx.set_default("shop.w", "n", "0")  # src alters n, keeping int: A6.1 against dest's bigint
        tx.update("shop.solo", "id = 1", {"amount": "10.0"})  # only src writes it
        tx.update("shop.apart", "id = 1", {"amount": "10.0"})  # both write it, other keys
        tx.insert("shop.log", df(spark, [(2, 2.0)]))  # keyless, both insert
    with lh.transaction("main") as tx:
        tx.update("shop.items", "id >= 6", {"amount": "-2.0"})
        tx.update("shop.orders", "id = 4", {"amount": "7.0"})
        tx.update("shop.events", "kind = 'a'", {"n": "6"})
        tx.alter_column_type("shop.w", "n", "bigint")
        tx.update("shop.apart", "id = 2", {"amount": "20.0"})
        tx.insert("shop.log", df(spark, [(3, 3.0)]))
    preview = branch_diff(lh, "main", "dev2").preview
    assert preview.status == "conflicts"
    shown = [(r["id"], r["_bs_rule"]) for r in preview.shown_keys["shop.items"]]
    assert shown == [(i, "3.4 cells") for i in range(6, 26)]  # in key order, every one of them (20 < 50)
    assert sorted(preview.shown_keys) == ["shop.items"]
    head = lh.get_branch("main").head
    with pytest.raises(MergeConflict) as raised:
        lh.merge("dev2", "main")
    report = raised.value.report
    assert report.conflicts == preview.conflicts
    assert {(c.object_name, c.rule) for c in report.conflicts} == {
        ("shop.items", "3.4 cells"), ("shop.events", "A3"), ("shop.w.n", "A6.1")}
    assert report.outcomes == preview.outcomes
    assert lh.get_branch("main").head == head


def test_merge_preview_lists_more_keys_than_a_report_names_as_the_merge_counts_them(keyed, spark):
    """More conflicting keys than a report names (20): the merge's report and the preview name the same first
    keys, in key order, and count the rest alike; the preview lists up to its own limit."""
    lh = keyed
    with lh.transaction("main", message="wide") as tx:
        tx.create_table_as("shop.many", df(spark, [(i, 0.0) for i in range(40)]), primary_key=["id"])
    lh.create_branch("dev3", "main")
    lh.branch("dev3").update("shop.many", "id < 40", {"amount": "1.0"})
    lh.branch("main").update("shop.many", "id >= 10", {"amount": "2.0"})
    preview = branch_diff(lh, "main", "dev3").preview
    assert [r["id"] for r in preview.shown_keys["shop.many"]] == list(range(10, 40))
    with pytest.raises(MergeConflict) as raised:
        lh.merge("dev3", "main")
    assert raised.value.report.conflicts == preview.conflicts
    assert preview.conflicts[0].involved == "; ".join(f"id={i}" for i in range(10, 30)) + " (+10 more keys)"


def cli_diff(warehouse, *args):
    result = CliRunner().invoke(cli, ["--warehouse", warehouse, "diff", *args], env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_cli_diff_text_markdown_and_json(keyed, spark, warehouse):
    lh = keyed
    with lh.transaction("dev") as tx:
        tx.update("shop.orders", "id = 2", {"amount": "99.0"})
        tx.insert("shop.orders", df(spark, [(6, 60.0), (7, 70.0)]))
        tx.add_column("shop.events", "note", "string")
    with lh.transaction("main") as tx:
        tx.update("shop.orders", "id = 2", {"amount": "98.0"})
    code, text = cli_diff(warehouse, "main", "dev", "--limit", "2")
    assert code == 0, text
    lines = text.splitlines()
    assert lines[0].startswith("diff main...dev (three_dot: ") and lines[0].endswith("2 table(s) differ, 0 unchanged")
    assert lines[1] == "merge of dev into main: conflicts"
    assert "| shop.events | changed | 0     | 0       | 0        | added note string | 0         |" in lines
    assert "| shop.orders | changed | 2     | 0       | 1        |                   | 1         |" in lines
    assert "  conflict 3.4 cells (insert+update vs update): id=2" in lines, text
    assert "first 2 of 3 row(s):" in lines  # ordered by key: the modified id 2, then the added id 6
    assert any(line.startswith("| modified   | 2  | 99.0") for line in lines)
    assert any(line.startswith("| added      | 6  | 60.0") for line in lines)

    code, markdown = cli_diff(warehouse, "main", "dev", "shop.orders", "--format", "markdown", "--mode", "two_dot")
    assert code == 0, markdown
    assert markdown.splitlines()[0].startswith("### diff main..dev (two_dot: ")
    assert "| shop.orders | changed | 2     | 0       | 1        |                | 0         |" in markdown

    code, raw = cli_diff(warehouse, "main", "dev", "--format", "json", "--limit", "0")
    assert code == 0, raw
    parsed = json.loads(raw)
    assert parsed["merge"] == "conflicts" and parsed["mode"] == "three_dot"
    assert [(t["table"], t["added"], t["removed"], t["modified"], t["schema_changes"]) for t in parsed["tables"]] == [
        ("shop.events", 0, 0, 0, ["added note string"]), ("shop.orders", 2, 0, 1, [])]
    assert [c["rule"] for c in parsed["tables"][1]["conflicts"]] == ["3.4 cells"]

    code, error = cli_diff(warehouse, "main", "nosuch")
    assert code == 1 and error.startswith("error: ") and len(error.strip().splitlines()) == 1


def test_a_table_with_its_own_diff_type_column_diffs(keyed, spark, warehouse):
    """Regression: a table built from a diff (it has a `_diff_type` column) made every diff of it fail with
    Spark's COLUMN_ALREADY_EXISTS; a diff column whose name is taken now gets one more leading underscore."""
    lh = keyed
    with lh.transaction("dev") as tx:
        tx.create_table_as("shop.audit", df(spark, [("added", 1)], "_diff_type string, id bigint"))
    d = branch_diff(lh, "main", "dev")
    audit = d.table("shop.audit")
    assert audit.relation().columns == ["__diff_type", "_diff_type", "id", "_diff_changed"]
    assert rows(audit.relation()) == [("added", "added", 1, None)]
    assert audit.counts() == {"added": 1, "removed": 0, "modified": 0}
    code, text = cli_diff(warehouse, "main", "dev")
    assert code == 0 and "| shop.audit | added  | 1     |" in text, text


def test_rows_a_compaction_moved_on_the_side_that_dropped_a_column_are_compared(keyed, spark):
    """Found by the diff model test's wide profile: dev drops `amount` and compacts; its rows, moved to the
    compacted segment, paired by identity with main's copies and were reported unchanged, although in main's
    columns dev's rows read `amount` NULL."""
    lh = keyed
    with lh.transaction("dev") as tx:
        tx.drop_column("shop.orders", "amount")
    lh.branch("dev").compact("shop.orders")
    orders = branch_diff(lh, "dev", "main", mode="two_dot").table("shop.orders")
    assert orders.counts() == {"added": 0, "removed": 0, "modified": 5}
    modified = orders.rows.modified.collect()
    assert sorted((r["id"], r[OLD]["amount"], r[NEW]["amount"], tuple(r[CHANGED])) for r in modified) == \
        [(i, None, float(i * 10), ("amount",)) for i in range(1, 6)]
