"""Relations render as Spark names: `` `schema`.`table` `` (with a catalog, `` `catalog`.`schema`.`table` ``).

Spark resolves such a name as dbt-spark's session would: in its session catalog (a Hive metastore, Glue,
Unity) or the catalog named first. The statement router (core/sql/router.py) rewrites a name that is a
relation of the branch to the branch relation's temp view (`` `schema.table` ``) before Spark sees it, so a
branch relation wins and everything else (a dbt source the team's ingestion writes) is read where it is.
A source may also name a path table with `meta: {external_location: ...}` (as dbt-duckdb allows), rendered
as written, e.g. `` delta.`s3a://lake/raw/customers` ``.
"""

from dataclasses import dataclass
from typing import Any, Optional

from dbt.adapters.spark.relation import SparkRelation

from dbt.adapters.branchspark.core.sql_text import core_table_name, quote_identifier

EXTERNAL_LOCATION = "external_location"


@dataclass(frozen=True, eq=False, repr=False)
class BranchSparkRelation(SparkRelation):
    # a source's `meta.external_location`: the relation renders as this text (a path table)
    external: Optional[str] = None

    def __post_init__(self) -> None:
        # a dbt source may name a catalog (`database:`), which dbt-spark refuses
        return None

    @classmethod
    def create_from(cls, quoting: Any, relation_config: Any, **kwargs: Any):
        location = _external_location(relation_config)
        if location is not None:
            kwargs["external"] = location
        return super().create_from(quoting, relation_config, **kwargs)

    @property
    def catalog_part(self) -> Optional[str]:
        """The catalog a source names (`database:`), or None for the session catalog."""
        return self.database if self.database and self.database != self.schema else None

    def render(self) -> str:
        if self.external:
            return self.external
        schema = self.schema if self.include_policy.schema else None
        identifier = self.identifier if self.include_policy.identifier else None
        if schema and identifier:
            parts = [self.catalog_part, schema, identifier] if self.catalog_part else [schema, identifier]
            return ".".join(quote_identifier(part) for part in parts)
        if identifier:
            # temp relations (`model__dbt_tmp`): plain session temp views
            return quote_identifier(identifier)
        return quote_identifier(schema) if schema else ""

    @property
    def core_name(self) -> Optional[str]:
        """The catalog name of this relation as a branch relation, or None (session temp relations, a source
        in another catalog or at a path)."""
        if self.external or self.catalog_part:
            return None
        if self.schema and self.identifier and self.include_policy.schema:
            return core_table_name(self.schema, self.identifier)
        return None


def _external_location(relation_config: Any) -> Optional[str]:
    """A source's `meta.external_location` (the table's own, else its source's), formatted with the table's
    name and schema as dbt-duckdb does (`{name}`, `{identifier}`, `{schema}`)."""
    if getattr(relation_config, "resource_type", None) is None or str(relation_config.resource_type) not in (
            "source", "NodeType.Source"):
        return None
    meta = dict(getattr(relation_config, "source_meta", None) or {})
    meta.update(getattr(relation_config, "meta", None) or {})
    config_meta = getattr(getattr(relation_config, "config", None), "meta", None) or {}
    meta.update(config_meta)
    location = meta.get(EXTERNAL_LOCATION)
    if not location:
        return None
    return str(location).format(name=relation_config.name, identifier=relation_config.identifier,
                                schema=relation_config.schema)
