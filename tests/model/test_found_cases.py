"""Histories the engine-against-model test found wrong, kept as regression tests: each runs through the same
driver (tests/model/driver.py) with the merge back checked, whatever the profile."""
from tests.model.cases import Case
from tests.model.driver import run_batch

# t29 of the ci profile (keyless): src renamed a column and rebuilt the table; dest rebuilt it twice, renamed
# that column and dropped another; merged with theirs. Merging dest back into the unchanged src counted rows
# from the records of dest's merge commit, made against src's old head, and src ended one row short of dest.
REBUILDS_ON_BOTH_SIDES_THEN_MERGED_BACK = Case(
    keyed=False, base=[(2, 0, 1, 0)], base_later=[],
    src=[("rename_column", 3), ("overwrite", "fresh", [(7, 3, 0, 3), (1, 2, 0, 3), (5, 2, 1, 0), (1, 3, 2, 3)])],
    dest=[("overwrite", "fresh", [(3, 3, 0, 0), (1, 2, 0, 0)]),
          ("overwrite", "fresh", [(6, 3, 2, 2), (6, 1, 2, 2), (6, 2, 2, 2), (0, 0, 1, 3)]),
          ("rename_column", 3), ("drop_column", 0)],
    mode="theirs")


def test_merging_back_after_rebuilds_on_both_sides_gives_dest_rows(spark):
    problems = run_batch(spark, [REBUILDS_ON_BOTH_SIDES_THEN_MERGED_BACK], merge_back=True)
    assert not problems, "\n".join(problems)
