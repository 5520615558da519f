"""The dbt plugin object; imported lazily by the package `__init__`."""

from dbt.adapters.base import AdapterPlugin

from dbt.adapters.branchspark.adapter.credentials import BranchSparkCredentials
from dbt.adapters.branchspark.adapter.impl import BranchSparkAdapter
from dbt.include import branchspark

Plugin = AdapterPlugin(
    adapter=BranchSparkAdapter,  # type: ignore[arg-type]
    credentials=BranchSparkCredentials,
    include_path=branchspark.PACKAGE_PATH,
    dependencies=["spark"],
)
