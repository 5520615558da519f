"""dbt-tests-adapter basic suite on branchspark."""

import pytest

from dbt.tests.adapter.basic.test_adapter_methods import BaseAdapterMethod
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_ephemeral import BaseEphemeral
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import BaseIncremental, BaseIncrementalNotSchemaChange
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.basic.test_singular_tests_ephemeral import BaseSingularTestsEphemeral
from dbt.tests.adapter.basic.test_snapshot_check_cols import BaseSnapshotCheckCols
from dbt.tests.adapter.basic.test_snapshot_timestamp import BaseSnapshotTimestamp
from dbt.tests.adapter.basic.test_validate_connection import BaseValidateConnection


class TestSimpleMaterializationsBranchspark(BaseSimpleMaterializations):
    pass


class TestSingularTestsBranchspark(BaseSingularTests):
    pass


class TestSingularTestsEphemeralBranchspark(BaseSingularTestsEphemeral):
    pass


class TestEmptyBranchspark(BaseEmpty):
    pass


class TestEphemeralBranchspark(BaseEphemeral):
    pass


class TestIncrementalBranchspark(BaseIncremental):
    pass


class TestIncrementalNotSchemaChangeBranchspark(BaseIncrementalNotSchemaChange):
    pass


class TestGenericTestsBranchspark(BaseGenericTests):
    pass


class TestSnapshotCheckColsBranchspark(BaseSnapshotCheckCols):
    pass


class TestSnapshotTimestampBranchspark(BaseSnapshotTimestamp):
    pass


class TestBaseAdapterMethodBranchspark(BaseAdapterMethod):
    pass


class TestValidateConnectionBranchspark(BaseValidateConnection):
    pass
