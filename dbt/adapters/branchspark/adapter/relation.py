"""Relations render as the temp view that exposes them: one backquoted `schema.table`."""

from dataclasses import dataclass
from typing import Optional

from dbt.adapters.spark.relation import SparkRelation

from dbt.adapters.branchspark.core.sql_text import core_table_name, quote_identifier


@dataclass(frozen=True, eq=False, repr=False)
class BranchSparkRelation(SparkRelation):
    def render(self) -> str:
        schema = self.schema if self.include_policy.schema else None
        identifier = self.identifier if self.include_policy.identifier else None
        if schema and identifier:
            return quote_identifier(f"{schema}.{identifier}")
        if identifier:
            # temp relations (`model__dbt_tmp`): plain session temp views
            return quote_identifier(identifier)
        return quote_identifier(schema) if schema else ""

    @property
    def core_name(self) -> Optional[str]:
        """The catalog name of this relation, or None for session-only temp relations."""
        if self.schema and self.identifier and self.include_policy.schema:
            return core_table_name(self.schema, self.identifier)
        return None
