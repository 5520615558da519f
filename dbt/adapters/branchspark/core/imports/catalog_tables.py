"""A table of Spark's catalogs named as an import's source (`spark_catalog.raw.customers`, `lake.raw.orders`): its
location and format, as `DESCRIBE TABLE EXTENDED` gives them (a Hive, Glue or Unity table, a Delta or an Iceberg
table of a configured catalog). The import then reads its files as it reads a path's."""
from __future__ import annotations

from pyspark.sql import SparkSession

from .. import errors

# Spark's providers an import reads, and the reader each takes (Hive tables say `hive`: their storage decides)
_PROVIDERS = {"parquet": "parquet", "delta": "delta", "iceberg": "iceberg"}


def is_table_name(source: str) -> bool:
    """Whether an import's source is a name of Spark's catalogs rather than a path or URI."""
    return "/" not in source and ":" not in source and "." in source


def catalog_table(spark: SparkSession, name: str) -> tuple[str, str]:
    """(location, format) of table `name` of Spark's catalogs; one line when no catalog has it, or it has no
    location or a format import does not read."""
    try:
        described = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    except Exception as exc:  # Spark's analysis error: no such table, namespace or catalog
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise errors.InvalidArgument(f"cannot import {name}: Spark's catalogs do not have it ({first[:200]})") from None
    info = {str(r[0]).strip(): str(r[1]).strip() for r in described if r[0] is not None and r[1] is not None}
    provider = info.get("Provider", "hive").lower()
    if provider == "hive":
        storage = f"{info.get('InputFormat', '')} {info.get('Serde Library', '')}".lower()
        provider = "parquet" if "parquet" in storage else (storage.strip() or "hive")
    location = info.get("Location")
    if provider not in _PROVIDERS:
        raise errors.InvalidArgument(f"cannot import {name}: it is stored as {provider}; import reads Parquet, Delta "
                                     f"and Iceberg tables")
    if not location:
        raise errors.InvalidArgument(f"cannot import {name}: its catalog gives no location")
    return location, _PROVIDERS[provider]
