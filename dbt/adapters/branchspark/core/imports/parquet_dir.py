"""A directory of Parquet files, Hive-partitioned (`col=value/` folders) or not, as a SourceTable: the folders'
values are the partition columns, after the files' own columns, as Spark reads such a directory."""
from __future__ import annotations

import posixpath
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from .. import errors
from .source import SourceColumn, SourceTable, filesystem, partition_type, source_file, spark_type

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def read_parquet_dir(location: str) -> SourceTable:
    fs, base = filesystem(location)
    try:
        infos = fs.get_file_info(pafs.FileSelector(base, recursive=True))
    except (OSError, pa.ArrowException) as exc:
        raise errors.InvalidArgument(f"cannot import {location}: {_first_line(exc)}") from None
    found = []
    for info in infos:
        relative = posixpath.relpath(info.path, base)
        if info.type != pafs.FileType.File or any(p.startswith(("_", ".")) for p in relative.split("/")):
            continue  # _SUCCESS, .crc files, _temporary folders: not data
        found.append((relative, info.size))
    if not found:
        raise errors.InvalidArgument(f"cannot import {location}: it holds no Parquet files")
    partitions = [_folder_values(relative, location) for relative, _ in found]
    names = list(partitions[0])
    if any(list(p) != names for p in partitions):
        raise errors.InvalidArgument(f"cannot import {location}: its files are not all below the same partition "
                                     f"folders ({', '.join(names) or 'none'})")
    first = posixpath.join(base, found[0][0])
    try:
        with fs.open_input_file(first) as handle:
            schema = pq.read_schema(handle)
    except (OSError, pa.ArrowException) as exc:
        raise errors.InvalidArgument(f"cannot import {location}: {found[0][0]} is not Parquet: "
                                     f"{_first_line(exc)}") from None
    columns = [SourceColumn(f.name, spark_type(f.type, location)) for f in schema if f.name not in names]
    columns += [SourceColumn(n, partition_type([p[n] for p in partitions])) for n in names]
    files = [source_file(location, relative, size, partition_values=values)
             for (relative, size), values in zip(found, partitions)]
    return SourceTable(location, "parquet", None, columns, names, files)


def _folder_values(relative: str, location: str) -> dict:
    values = {}
    for part in relative.split("/")[:-1]:
        if "=" not in part:
            raise errors.InvalidArgument(f"cannot import {location}: folder '{part}' of {relative} is not a "
                                         f"partition folder (col=value)")
        key, text = part.split("=", 1)
        text = unquote(text)
        values[unquote(key)] = None if text == NULL_PARTITION else text
    return values


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
