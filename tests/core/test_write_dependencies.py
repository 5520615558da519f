"""What counts as "what a write depended on changed" between two catalog roots (no Spark needed)."""
from dbt.adapters.branchspark.core.catalog.commits import OpInfo
from dbt.adapters.branchspark.core.catalog.state import Root
from dbt.adapters.branchspark.core.write_dependencies import Dependencies, changed_tables, overlap

BEFORE = Root({"d1": ["dv1", "s"]}, {"k": ["kv1", "d1", "k"], "log": ["lv1", "d1", "log"]})


def after(**tables):
    """BEFORE with some table entries replaced (None: dropped)."""
    entries = {**BEFORE.tables, **tables}
    return Root(dict(BEFORE.databases), {t: e for t, e in entries.items() if e is not None})


def insert(table_id):
    return OpInfo("table", table_id, "s." + table_id, "insert")


def update(table_id):
    return OpInfo("table", table_id, "s." + table_id, "update")


def test_a_change_to_another_table_is_no_overlap():
    depends = Dependencies(table_ids={"k"}, row_reads={"k"}, table_names={"s.k"}, database_names={"s"},
                           database_ids={"d1"})
    moved = after(log=["lv2", "d1", "log"])
    assert changed_tables(BEFORE, moved) == {"log"}
    assert overlap(depends, [update("k")], BEFORE, moved) == []


def test_a_new_version_of_a_table_it_read_overlaps():
    depends = Dependencies(table_ids={"k"}, row_reads={"k"}, table_names={"s.k"})
    assert overlap(depends, [update("k")], BEFORE, after(k=["kv2", "d1", "k"])) == ["s.k"]


def test_a_table_it_only_appended_to_does_not_overlap_unless_it_read_its_rows():
    depends = Dependencies(table_ids={"log"}, table_names={"s.log"})
    moved = after(log=["lv2", "d1", "log"])
    assert overlap(depends, [insert("log")], BEFORE, moved) == []
    depends.row_reads.add("log")  # e.g. a primary key check
    assert overlap(depends, [insert("log")], BEFORE, moved) == ["s.log"]
    assert overlap(Dependencies(table_ids={"log"}), [insert("log"), update("log")], BEFORE, moved) == ["s.log"]


def test_a_table_it_wrote_without_looking_it_up_overlaps():
    assert overlap(Dependencies(), [update("k")], BEFORE, after(k=["kv2", "d1", "k"])) == ["s.k"]


def test_a_name_that_now_means_another_table_overlaps():
    depends = Dependencies(table_names={"s.new"})  # looked up, not found: the write created it
    created = after(other=["ov1", "d1", "new"])
    assert overlap(depends, [], BEFORE, created) == ["s.new"]
    dropped = Dependencies(table_names={"s.log"})  # an append whose table was dropped meanwhile
    assert overlap(dropped, [insert("log")], BEFORE, after(log=None)) == ["s.log"]


def test_a_renamed_database_and_a_listed_database_that_gained_a_table_overlap():
    renamed = Root({"d1": ["dv2", "shop"]}, dict(BEFORE.tables))
    assert overlap(Dependencies(database_names={"s"}), [], BEFORE, renamed) == ["s"]
    listed = Dependencies(listed_databases={"d1"})
    assert overlap(listed, [], BEFORE, after(other=["ov1", "d1", "other"])) == ["the tables of s"]
    assert overlap(listed, [], BEFORE, after(k=["kv2", "d1", "k"])) == []  # same tables, new rows
