"""Replaying a change feed on a table's rows, as a consumer of branch_changes would."""
from collections import Counter

from dbt.adapters.branchspark.core.changes import CHANGE_TYPE, DELETE


def multiset(df) -> Counter:
    return Counter(tuple(r) for r in df.collect())


def replay(rows: Counter, changes, width: int) -> Counter:
    """Apply `changes` (rows of table_changes, in order) to a multiset of rows: a delete removes one
    row with that image, an insert adds one. A delete of a row that is not there is an error."""
    result = Counter(rows)
    for change in changes:
        image = tuple(change)[:width]
        if change[CHANGE_TYPE] == DELETE:
            assert result[image] > 0, f"delete of a row that is not there: {image}"
            result[image] -= 1
        else:
            result[image] += 1
    return +result
