"""Row-level diff between two versions of the catalog (branches, commits, branch@time), with a merge preview.

    from dbt.adapters.branchspark.diff import branch_diff
    d = branch_diff(lh, "main", "dev")
    d.tables[0].rows.added                         # Spark DataFrames; nothing is collected

Plain PySpark: nothing here imports dbt. See README.md, section Diff.
"""
from .plan import MODES, THREE_DOT, TWO_DOT, Diff, TableDiff, branch_diff
from .preview import CONFLICT_RULE, MergePreview, preview_merge
from .rows import ADDED, CHANGED, DIFF_TYPE, MODIFIED, NEW, OLD, REMOVED, RowDifference
from .schema import SchemaChange

__all__ = ["branch_diff", "Diff", "TableDiff", "RowDifference", "SchemaChange", "MergePreview", "preview_merge",
           "MODES", "TWO_DOT", "THREE_DOT", "DIFF_TYPE", "CHANGED", "OLD", "NEW", "ADDED", "REMOVED", "MODIFIED",
           "CONFLICT_RULE"]
