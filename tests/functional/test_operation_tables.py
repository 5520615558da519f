"""Run-operation tables print commit ids as text, whatever digits a random id happens to have.

A 12-character commit id such as '1234e5678901' reads as a number in scientific notation: left to
infer types, agate parsed it and raised decimal.Overflow, failing `drop_branch` once in a while.
"""
import io

import pytest

from dbt.adapters.branchspark.adapter.text_tables import text_table
from dbt.adapters.branchspark.adapter.merge_operations import _text

NUMBER_LIKE_IDS = ["1234e5678901", "2e51e0771d9b", "000000000042", "9e9"]


@pytest.mark.parametrize("commit_id", NUMBER_LIKE_IDS)
def test_branch_tables_print_ids_verbatim(commit_id):
    out = io.StringIO()
    text_table(["branch", "head", "protected", "created_at"], [["dev", commit_id, "", "2026-11-22 10:00:00"]]) \
        .print_table(output=out)
    assert f"| {commit_id} " in out.getvalue()


@pytest.mark.parametrize("commit_id", NUMBER_LIKE_IDS)
def test_merge_report_tables_print_ids_verbatim(commit_id):
    text = _text([{"object": "shop.orders", "commit": commit_id, "rows": 3}])
    assert f"| {commit_id} " in text and "| 3 " in text
