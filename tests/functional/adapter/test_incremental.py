"""dbt-tests-adapter incremental suites on branchspark (merge = core upsert on unique_key)."""

from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import BaseMergeExcludeColumns
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import BaseIncrementalOnSchemaChange
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey
from dbt.tests.adapter.incremental.test_incremental_microbatch import BaseMicrobatch
import pytest


class TestIncrementalUniqueKeyBranchspark(BaseIncrementalUniqueKey):
    pass


class TestIncrementalOnSchemaChangeBranchspark(BaseIncrementalOnSchemaChange):
    pass


class TestMergeExcludeColumnsBranchspark(BaseMergeExcludeColumns):
    pass


class TestIncrementalPredicatesDeleteInsertBranchspark(BaseIncrementalPredicates):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {
            "models": {
                "+incremental_predicates": ["id != 2"],
                "+incremental_strategy": "delete+insert",
            }
        }


class TestMicrobatchBranchspark(BaseMicrobatch):
    pass
