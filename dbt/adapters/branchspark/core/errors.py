"""Typed errors of the branchspark core.

Every error carries one line that names the object and what to do; callers
(the dbt adapter, the command line) print that line as it is.
"""


class BranchsparkError(Exception):
    """Base of every error the core raises on bad input or a refused change."""


class NotFound(BranchsparkError):
    pass


class BranchNotFound(NotFound):
    def __init__(self, name: str):
        super().__init__(
            f"branch '{name}' does not exist: create it with `branchspark branch create {name}` "
            f"or pick one of `branchspark branch list`"
        )
        self.name = name


class CommitNotFound(NotFound):
    def __init__(self, ref: str):
        super().__init__(f"no commit matches '{ref}': give a commit id, a branch name or a time from `branchspark log`")
        self.ref = ref


class DatabaseNotFound(NotFound):
    def __init__(self, name: str, branch: str):
        super().__init__(f"database '{name}' does not exist on branch '{branch}': create it first or check the name")
        self.name = name


class TableNotFound(NotFound):
    def __init__(self, name: str, branch: str):
        super().__init__(
            f"table '{name}' does not exist on branch '{branch}': check the name, or whether it was dropped on this branch"
        )
        self.name = name


class ColumnNotFound(NotFound):
    def __init__(self, column: str, table: str):
        super().__init__(f"column '{column}' does not exist in table '{table}': see `branchspark show {table}`")


class AlreadyExists(BranchsparkError):
    def __init__(self, kind: str, name: str, where: str = ""):
        place = f" on branch '{where}'" if where else ""
        super().__init__(f"{kind} '{name}' already exists{place}: choose another name or drop it first")
        self.kind, self.name = kind, name


class InvalidName(BranchsparkError):
    def __init__(self, kind: str, name: str, rule: str):
        super().__init__(f"invalid {kind} name '{name}': {rule}")


class InvalidSchemaChange(BranchsparkError):
    pass


class InvalidArgument(BranchsparkError):
    pass


class StaleHead(BranchsparkError):
    """The branch moved between reading its head and committing: nothing was written."""

    def __init__(self, branch: str, expected: str | None, actual: str | None):
        super().__init__(
            f"branch '{branch}' moved while committing (expected head {str(expected)[:12]}, now {str(actual)[:12]}): "
            f"nothing was written; re-read the branch and retry"
        )
        self.branch, self.expected, self.actual = branch, expected, actual


class ProtectedBranch(BranchsparkError):
    def __init__(self, branch: str, action: str = "written"):
        if action == "dropped":
            text = (f"branch '{branch}' is protected and cannot be dropped: unprotect it first "
                    f"(`branchspark branch protect --off {branch}`), then drop it")
        else:
            text = (f"branch '{branch}' is protected and only changes by merge: write to a feature branch and "
                    f"`merge_branch` it into '{branch}'")
        super().__init__(text)
        self.branch = branch


class MergeInProgress(InvalidArgument):
    """A branch with a paused merge or rebase takes no other change until that one is continued or aborted."""

    def __init__(self, branch: str, kind: str, src: str, phase: str):
        super().__init__(
            f"a {kind} of '{src}' into '{branch}' is paused ({phase}): continue it (merge_branch with continue: "
            f"true) or abort it (abort_merge {branch}) first; nothing was written to '{branch}'"
        )
        self.branch = branch


class MergeConflict(BranchsparkError):
    """A merge found conflicts; `report` holds one row per conflict."""

    def __init__(self, message: str, report=None):
        super().__init__(message)
        self.report = report or []


class WriteConflict(BranchsparkError):
    """A write whose branch moved could not be replayed onto the new head (it conflicts, or kept losing the race)."""


class CatalogUnavailable(BranchsparkError):
    """The catalog database cannot be reached or opened (the message never shows a password)."""


class CatalogMismatch(BranchsparkError):
    """The catalog and the warehouse do not belong together (or one of them is missing): nothing was read,
    written or deleted."""


class CatalogVersionMismatch(BranchsparkError):
    """The catalog was written by another version of branchspark (older: `branchspark upgrade`; newer:
    upgrade branchspark)."""


class DataFileUnreadable(BranchsparkError):
    """A Parquet file of a segment or tombstone is missing or damaged."""


class StorageUnavailable(BranchsparkError):
    """The warehouse's storage refused or failed a request: a missing bucket, denied credentials, an endpoint
    that does not answer (object storage, docs/deploy.md). Nothing was changed."""


class SourceUnavailable(BranchsparkError):
    """A name no catalog has, a catalog whose class is missing, a source version a commit never recorded."""
