"""Which kind of table a source is, and its reader: `_delta_log/` makes a Delta table, `metadata/*.metadata.json`
(or a metadata file named directly) an Iceberg table, anything else a directory of Parquet files."""
from __future__ import annotations

import posixpath
from collections.abc import Callable

import pyarrow as pa
from pyarrow import fs as pafs
from pyspark.sql import SparkSession

from .. import errors
from .catalog_tables import catalog_table, is_table_name
from .delta_log import read_delta
from .iceberg_table import read_iceberg
from .parquet_dir import read_parquet_dir
from .source import SourceTable, filesystem, normalized_location

FORMATS = ("parquet", "hive", "delta", "iceberg")


def read_source(source: str, format: str | None = None, version: int | str | None = None,
                spark: Callable[[], SparkSession] | None = None) -> SourceTable:
    """The SourceTable `source` (a path or URI, or a table of Spark's catalogs, which `spark()` describes) holds, at
    `version` (a Delta version, an Iceberg snapshot id) or its current one. Bad input is one line
    (InvalidArgument); nothing is written."""
    if format is not None and format.lower() not in FORMATS:
        raise errors.InvalidArgument(f"unknown import format '{format}': use {', '.join(FORMATS)}")
    if source and is_table_name(source) and spark is not None:
        source, found = catalog_table(spark(), source)
        format = format or found
    if not source or ("/" not in source and ":" not in source):
        raise errors.InvalidArgument(f"cannot import '{source}': give the table's location (a path or URI) or "
                                     f"its name in Spark's catalogs (catalog.database.table)")
    location = normalized_location(source)
    kind = format.lower() if format else detect(location)
    if kind in ("parquet", "hive"):
        if version is not None:
            raise errors.InvalidArgument(f"cannot import {location} at version {version}: a Parquet directory has "
                                         f"no versions (only Delta and Iceberg tables do)")
        return read_parquet_dir(location)
    if kind == "delta":
        return read_delta(location, _number(version, "version", location))
    return read_iceberg(location, _number(version, "snapshot", location))


def detect(location: str) -> str:
    if location.endswith(".metadata.json"):
        return "iceberg"
    fs, base = filesystem(location)
    try:
        found = fs.get_file_info(base)
        if found.type == pafs.FileType.NotFound:
            raise errors.InvalidArgument(f"cannot import {location}: there is no such file or directory")
        if found.type != pafs.FileType.Directory:
            raise errors.InvalidArgument(f"cannot import {location}: it is a file; give the table's directory")
        if fs.get_file_info(posixpath.join(base, "_delta_log")).type == pafs.FileType.Directory:
            return "delta"
        metadata = fs.get_file_info(pafs.FileSelector(posixpath.join(base, "metadata"), allow_not_found=True))
    except (OSError, pa.ArrowException) as exc:
        raise errors.InvalidArgument(f"cannot import {location}: {str(exc).strip().splitlines()[0]}") from None
    if any(i.base_name.endswith(".metadata.json") for i in metadata):
        return "iceberg"
    return "parquet"


def _number(value, what: str, location: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise errors.InvalidArgument(f"cannot import {location}: {what} '{value}' is not a number") from None
