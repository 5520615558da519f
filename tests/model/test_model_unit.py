"""The model alone (no Spark): SPEC 3-4's own examples and issue 19's six cases, as the model decides them."""
from collections import Counter

from tests.model.model import Branch, Expr, Pred, Table, Universe, merge

KEYLESS = [("id", "int"), ("status", "int")]
PLACED, SHIPPED, RETURNED = 0, 1, 2


def keyless(rows, universe=None):
    table = Table.create(universe or Universe(), False, KEYLESS, [{"id": i, "status": s} for i, s in rows])
    return table, Branch(table.copy())


def keyed(rows, universe=None):
    table = Table.create(universe or Universe(), True, [("id", "int"), ("a", "int"), ("b", "int")],
                         [{"id": i, "a": a, "b": b} for i, a, b in rows])
    return table, Branch(table.copy())


def rows_of(table):
    return table.read()


def ids(table, column="id"):
    return table.column(column).id


def test_issue_0_two_overwrites_of_one_seed_merge_by_rows():
    base, main = keyless([(1, PLACED), (2, PLACED), (3, PLACED)])
    a, b = main.fork(), main.fork()
    a.overwrite([{"id": 1, "status": SHIPPED}, {"id": 2, "status": PLACED}, {"id": 3, "status": PLACED}])
    b.overwrite([{"id": 1, "status": PLACED}, {"id": 2, "status": PLACED}, {"id": 3, "status": RETURNED}])
    first = merge(base, a, main)
    assert not first.conflicts
    second = merge(base, b, Branch.merged(first))
    assert not second.conflicts
    assert rows_of(second.table) == Counter({(1, SHIPPED): 1, (2, PLACED): 1, (3, RETURNED): 1})


def test_issue_1_compaction_does_not_hide_an_a3_or_a1_conflict():
    base, main = keyless([(1, PLACED), (2, PLACED)])
    dev = main.fork()
    for side in (main, dev):
        side.compact()
        side.update(Pred(ids(base), "=", 1), ids(base, "status"), Expr("const", SHIPPED))
    assert merge(base, dev, main).rules == {"A3"}

    base, main = keyless([(1, PLACED), (2, PLACED)])
    dev = main.fork()
    dev.compact()
    dev.update(Pred(ids(base), "=", 1), ids(base, "status"), Expr("const", SHIPPED))
    main.delete(Pred(ids(base), "=", 1))
    assert merge(base, dev, main).rules == {"A1"}


def test_issue_2_updates_after_the_other_side_compacted_merge_without_duplicates():
    base, main = keyless([(1, PLACED), (2, PLACED), (3, PLACED)])
    dev = main.fork()
    main.compact()
    dev.update(Pred(ids(base), ">=", 2), ids(base, "status"), Expr("const", SHIPPED))
    outcome = merge(base, dev, main)
    assert rows_of(outcome.table) == Counter({(1, PLACED): 1, (2, SHIPPED): 1, (3, SHIPPED): 1})


def test_issue_3_keyed_tables_compare_values_not_writes():
    base, main = keyed([(1, 10, 10), (2, 20, 20)])
    dev = main.fork()
    dev.overwrite([{"id": 1, "a": 11, "b": 10}, {"id": 2, "a": 20, "b": 20}])  # a rebuild keeping id=2
    main.delete(Pred(ids(base), "=", 2))
    outcome = merge(base, dev, main)
    assert not outcome.conflicts
    assert rows_of(outcome.table) == Counter({(1, 11, 10): 1})

    base, main = keyed([(1, 10, 10)])
    dev = main.fork()
    dev.insert([{"id": 9, "a": 1, "b": 1}])
    dev.delete(Pred(ids(base), "=", 9))
    main.insert([{"id": 9, "a": 2, "b": 2}])
    for mode in ("abort", "theirs"):
        outcome = merge(base, dev, main, mode)
        assert not outcome.conflicts and rows_of(outcome.table) == Counter({(1, 10, 10): 1, (9, 2, 2): 1})


def test_issue_4_the_same_update_on_both_sides_is_taken_once():
    base, main = keyed([(1, 10, 10), (2, 20, 20)])
    dev = main.fork()
    for side in (main, dev):
        side.update(Pred(ids(base), "=", 1), ids(base, "a"), Expr("inc", 1))
    outcome = merge(base, dev, main)
    assert not outcome.conflicts
    assert rows_of(outcome.table) == Counter({(1, 11, 10): 1, (2, 20, 20): 1})


def test_issue_5_ours_on_a_keyless_conflict_keeps_src_added_column_and_other_rows():
    universe = Universe()
    base, main = keyless([(1, PLACED), (2, PLACED)], universe)
    base._write([base._by_id({"id": 3, "status": PLACED})])  # a second base segment
    main = Branch(base.copy())
    dev = main.fork()
    dev.add_column("note", "int")
    dev.update(Pred(ids(base), "=", 1), ids(base, "status"), Expr("const", SHIPPED))
    dev.update(Pred(ids(base), "=", 3), ids(base, "status"), Expr("const", SHIPPED))
    main.update(Pred(ids(base), "=", 2), ids(base, "status"), Expr("const", RETURNED))
    assert merge(base, dev, main).rules == {"A3"}
    ours = merge(base, dev, main, "ours")
    assert ours.table.schema() == {"id": "int", "status": "int", "note": "int"}
    # rows 1, 2 share the contested segment, but no row is changed by both sides: ours/theirs settle none of
    # them (SPEC 3.6, issue 55), so every side's change merges
    merged = Counter({(1, SHIPPED, None): 1, (2, RETURNED, None): 1, (3, SHIPPED, None): 1})
    assert rows_of(ours.table) == merged
    theirs = merge(base, dev, main, "theirs")
    assert rows_of(theirs.table) == merged


def test_ours_and_theirs_settle_only_the_rows_both_sides_changed_taking_a_side_s_final_version():
    """Issue 55: row 1 both sides update (src twice: its final version, never the intermediate one), row 2 only
    src, row 3 only dest (a delete), row 4 neither; all in one segment (A1 and A3)."""
    base, main = keyless([(1, PLACED), (2, PLACED), (3, PLACED), (4, PLACED)])
    dev = main.fork()
    dev.update(Pred(ids(base), "=", 1), ids(base, "status"), Expr("inc", 5))
    dev.update(Pred(ids(base), "=", 1), ids(base, "status"), Expr("inc", 5))
    dev.update(Pred(ids(base), "=", 2), ids(base, "status"), Expr("const", SHIPPED))
    main.update(Pred(ids(base), "=", 1), ids(base, "status"), Expr("const", RETURNED))
    main.delete(Pred(ids(base), "=", 3))
    assert merge(base, dev, main).rules == {"A1", "A3"}
    assert rows_of(merge(base, dev, main, "ours").table) == Counter(
        {(1, RETURNED): 1, (2, SHIPPED): 1, (4, PLACED): 1})
    assert rows_of(merge(base, dev, main, "theirs").table) == Counter(
        {(1, PLACED + 10): 1, (2, SHIPPED): 1, (4, PLACED): 1})


def test_a2_a_row_deleted_on_both_sides_is_deleted_once():
    base, main = keyless([(1, PLACED), (1, PLACED), (2, PLACED)])
    dev = main.fork()
    main.delete(Pred(ids(base), "=", 1))
    dev.delete(Pred(ids(base), "=", 1))
    outcome = merge(base, dev, main)
    assert not outcome.conflicts and rows_of(outcome.table) == Counter({(2, PLACED): 1})


def test_the_matrix_makes_src_delete_against_dest_insert_a_conflict_and_not_the_reverse():
    base, main = keyless([(1, PLACED)])
    dev = main.fork()
    dev.delete(Pred(ids(base), "=", 1))
    main.insert([{"id": 5, "status": PLACED}])
    assert merge(base, dev, main).rules == {"CONFLICT"}
    assert rows_of(merge(base, dev, main, "ours").table) == Counter({(5, PLACED): 1})  # no row is contested
    assert not merge(base, main, dev).conflicts  # insert on src, delete on dest: ok


def test_a4_an_update_of_rows_dest_overwrote_is_dropped_of_rows_src_added_kept():
    base, main = keyless([(1, PLACED), (2, PLACED)])
    dev = main.fork()
    dev.insert([{"id": 7, "status": PLACED}])
    dev.update(Pred(ids(base), "%2=", 1), ids(base, "status"), Expr("const", SHIPPED))  # ids 1 and 7
    main.overwrite([{"id": 2, "status": PLACED}, {"id": 3, "status": PLACED}])  # removes 1, keeps 2
    outcome = merge(base, dev, main)
    assert not outcome.conflicts
    assert rows_of(outcome.table) == Counter({(2, PLACED): 1, (3, PLACED): 1, (7, SHIPPED): 1})

    base, main = keyless([(1, PLACED), (2, PLACED)])
    dev = main.fork()
    dev.update(Pred(ids(base), "=", 2), ids(base, "status"), Expr("const", SHIPPED))  # dest kept 2: applies
    dev.delete(Pred(ids(base), "=", 1))  # A5: dest removed it too: once
    main.overwrite([{"id": 2, "status": PLACED}, {"id": 3, "status": PLACED}])
    assert rows_of(merge(base, dev, main).table) == Counter({(2, SHIPPED): 1, (3, PLACED): 1})



def test_a4_applies_when_src_overwrote_too():
    # src rebuilds (drops id 3, adds id 4), then updates every row; dest rebuilds away ids 1 and 2. src's
    # updates of 1 and 2 are of rows dest overwrote: dropped (A4), as when src had not rebuilt; its update
    # of its own row 4 applies.
    base, main = keyless([(1, PLACED), (2, PLACED), (3, PLACED)])
    dev = main.fork()
    dev.overwrite([{"id": 1, "status": PLACED}, {"id": 2, "status": PLACED}, {"id": 4, "status": PLACED}])
    dev.update(Pred(ids(base), ">=", 0), ids(base, "status"), Expr("const", SHIPPED))
    main.overwrite([{"id": 5, "status": PLACED}])
    assert rows_of(merge(base, dev, main).table) == Counter({(4, SHIPPED): 1, (5, PLACED): 1})
    # a copy src's own rebuild removed is the copy dest's removed too: src's update of the other applies
    base, main = keyless([(1, PLACED), (1, PLACED)])
    dev = main.fork()
    dev.overwrite([{"id": 1, "status": PLACED}])
    dev.update(Pred(ids(base), "=", 1), ids(base, "status"), Expr("const", SHIPPED))
    main.overwrite([{"id": 1, "status": PLACED}, {"id": 5, "status": PLACED}])
    assert rows_of(merge(base, dev, main).table) == Counter({(1, SHIPPED): 1, (5, PLACED): 1})

def test_keyless_counts_merge_three_way_and_identical_rebuilds_merge_once():
    rebuild = [{"id": 1, "status": SHIPPED}, {"id": 1, "status": SHIPPED}]
    base, main = keyless([(1, PLACED), (1, PLACED), (2, PLACED)])
    dev = main.fork()
    dev.overwrite(rebuild)
    main.overwrite(rebuild)
    assert rows_of(merge(base, dev, main).table) == Counter({(1, SHIPPED): 2})
    base, main = keyless([(1, PLACED), (1, PLACED), (2, PLACED)])
    dev = main.fork()
    dev.overwrite([{"id": 1, "status": PLACED}, {"id": 2, "status": PLACED}])  # one copy of 1 fewer
    main.insert([{"id": 1, "status": PLACED}])
    main.overwrite([{"id": 1, "status": PLACED}] * 4 + [{"id": 2, "status": PLACED}])  # two more
    assert rows_of(merge(base, dev, main).table) == Counter({(1, PLACED): 3, (2, PLACED): 1})


def test_keyed_cells_merge_and_clashes_conflict():
    base, main = keyed([(1, 10, 10), (2, 20, 20)])
    dev = main.fork()
    dev.update(Pred(ids(base), "=", 1), ids(base, "a"), Expr("const", 11))
    main.update(Pred(ids(base), "=", 1), ids(base, "b"), Expr("const", 12))
    assert rows_of(merge(base, dev, main).table) == Counter({(1, 11, 12): 1, (2, 20, 20): 1})
    main.update(Pred(ids(base), "=", 1), ids(base, "a"), Expr("const", 13))
    assert merge(base, dev, main).rules == {"3.4 cells"}
    assert rows_of(merge(base, dev, main, "theirs").table)[(1, 11, 12)] == 1
    assert rows_of(merge(base, dev, main, "ours").table)[(1, 13, 12)] == 1
    main.delete(Pred(ids(base), "=", 1))
    assert merge(base, dev, main).rules == {"3.4 update/delete"}
    assert (1, 11, 10) in rows_of(merge(base, dev, main, "theirs").table)
    assert rows_of(merge(base, dev, main, "ours").table) == Counter({(2, 20, 20): 1})


def test_a6_1_dest_wider_than_src_final_type_conflicts():
    base = Table.create(Universe(), False, [("a", "smallint")], [{"a": 1}])
    main = Branch(base.copy())
    dev = main.fork()
    dev.widen("a", "int")
    main.widen("a", "bigint")
    assert merge(base, dev, main).rules == {"A6.1"}
    assert merge(base, dev, main, "ours").table.schema() == {"a": "bigint"}
    assert merge(base, dev, main, "theirs").table.schema() == {"a": "int"}
    assert merge(base, main, dev).table.schema() == {"a": "bigint"}  # src wider: fine

    base = Table.create(Universe(), False, [("a", "smallint")], [{"a": 1}])
    main = Branch(base.copy())
    dev = main.fork()
    dev.rename_column("a", "x")  # an alter column too: src's final type (smallint) would narrow dest's
    main.widen("a", "int")
    assert merge(base, dev, main).rules == {"A6.1"}
    main = Branch(base.copy())
    main.widen("a", "int")  # only dest altered a: its type stays
    assert merge(base, Branch(base.copy()), main).table.schema() == {"a": "int"}


def test_schema_changes_merge_by_column_id():
    base = Table.create(Universe(), False, [("a", "int"), ("b", "int")], [{"a": 1, "b": 2}])
    main = Branch(base.copy())
    dev = main.fork()
    dev.rename_column("a", "x")
    dev.add_column("c", "int")
    dev.insert([{"x": 5, "b": 6, "c": 7}])
    main.drop_column("b")
    main.insert([{"a": 8}])
    outcome = merge(base, dev, main)
    assert outcome.table.schema() == {"x": "int", "c": "int"}
    assert outcome.table.named_rows() == Counter({(("c", None), ("x", 1)): 1, (("c", 7), ("x", 5)): 1,
                                                  (("c", None), ("x", 8)): 1})
