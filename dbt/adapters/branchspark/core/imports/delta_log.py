"""A Delta table at a version, read from its `_delta_log` (the Delta protocol) as a SourceTable: the add actions
live at that version are its files (paths, sizes, partition values), their deletion vectors the rows they hide;
column mapping (by name or id) gives the names the files use. A checkpoint (Parquet, one or several parts) is the
start when there is one at or before the version, then the JSON commits after it."""
from __future__ import annotations

import json
import posixpath
import re
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs
from pyspark.sql import types as T

from .. import errors
from . import delta_vectors
from .source import SourceColumn, SourceTable, filesystem, source_file

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.(\d+)\.(\d+))?\.parquet$")
_V2_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.[0-9a-f-]{36}\.(?:json|parquet)$")
# Reader features whose tables an import reads as the protocol says; any other is refused by name.
_READABLE = {"deletionVectors", "columnMapping", "timestampNtz", "vacuumProtocolCheck"}
_PHYSICAL_NAME = "delta.columnMapping.physicalName"


def read_delta(location: str, version: int | None) -> SourceTable:
    fs, base = filesystem(location)
    log = posixpath.join(base, "_delta_log")
    try:
        names = [i.base_name for i in fs.get_file_info(pafs.FileSelector(log)) if i.type == pafs.FileType.File]
    except (OSError, pa.ArrowException) as exc:
        raise errors.InvalidArgument(f"cannot import {location}: its Delta log cannot be read: "
                                     f"{str(exc).strip().splitlines()[0]}") from None
    commits = {int(m.group(1)): n for n in names if (m := _COMMIT.match(n))}
    checkpoints: dict[int, list[str]] = {}
    for name in names:
        if (m := _CHECKPOINT.match(name)):
            checkpoints.setdefault(int(m.group(1)), []).append(name)
    known = set(commits) | set(checkpoints)
    if not known:
        raise errors.InvalidArgument(f"cannot import {location}: its _delta_log holds no commit")
    latest = max(known)
    target = latest if version is None else version
    if target < 0 or target > latest:
        raise errors.InvalidArgument(f"cannot import {location} at version {version}: the Delta table's versions "
                                     f"go up to {latest}")
    start = max((v for v in checkpoints if v <= target and _complete(checkpoints[v])), default=None)
    first = start + 1 if start is not None else 0
    gone = [v for v in range(first, target + 1) if v not in commits]
    if gone:
        if any(_V2_CHECKPOINT.match(n) for n in names):
            raise errors.InvalidArgument(f"cannot import {location}: it uses v2 checkpoints (reader feature "
                                         f"v2Checkpoint), which import does not read yet")
        raise errors.InvalidArgument(f"cannot import {location} at version {target}: its log no longer holds "
                                     f"version {gone[0]} (cleaned up); import a later version")
    live: dict[tuple, dict] = {}
    metadata = protocol = None
    if start is not None:
        for action in _checkpoint_actions(fs, log, checkpoints[start], location):
            if action.get("add"):
                add = action["add"]
                live[_file_key(add)] = add
            metadata = action.get("metaData") or metadata
            protocol = action.get("protocol") or protocol
    for number in range(first, target + 1):
        for action in _commit_actions(fs, posixpath.join(log, commits[number]), location):
            if "add" in action:
                live[_file_key(action["add"])] = action["add"]
            elif "remove" in action:
                live.pop(_file_key(action["remove"]), None)
            elif "metaData" in action:
                metadata = action["metaData"]
            elif "protocol" in action:
                protocol = action["protocol"]
    if metadata is None:
        raise errors.InvalidArgument(f"cannot import {location}: its log has no table metadata")
    _check_protocol(protocol or {}, location)
    return _source(location, target, metadata, list(live.values()))


def _source(location: str, version: int, metadata: dict, adds: list[dict]) -> SourceTable:
    configuration = metadata.get("configuration") or {}
    mapping = configuration.get("delta.columnMapping.mode", "none")
    schema = T.StructType.fromJson(json.loads(metadata["schemaString"]))
    columns = []
    for field in schema.fields:
        stored = field.metadata.get(_PHYSICAL_NAME) if mapping != "none" else None
        if stored and _has_struct(field.dataType):
            raise errors.InvalidArgument(f"cannot import {location}: column '{field.name}' is nested and the table "
                                         f"uses column mapping, which import reads for flat columns only yet")
        columns.append(SourceColumn(field.name, _without_metadata(field.dataType), field.nullable, stored))
    files = []
    for add in adds:
        dv = add.get("deletionVector")
        deleted = delta_vectors.positions(location, dv) if dv else None
        values = {k: v for k, v in _as_dict(add.get("partitionValues")).items()}
        files.append(source_file(location, unquote(add["path"]), add["size"], partition_values=values,
                                 deleted=deleted))
    return SourceTable(location, "delta", str(version), columns, list(metadata.get("partitionColumns") or []), files)


def _check_protocol(protocol: dict, location: str) -> None:
    reader = int(protocol.get("minReaderVersion", 1))
    if reader > 3:
        raise errors.InvalidArgument(f"cannot import {location}: Delta reader version {reader} is not supported")
    unknown = sorted(set(protocol.get("readerFeatures") or ()) - _READABLE)
    if unknown:
        raise errors.InvalidArgument(f"cannot import {location}: Delta reader feature(s) {', '.join(unknown)} "
                                     f"are not supported by import yet")


def _file_key(action: dict) -> tuple:
    """A file's identity in the log: its path and its deletion vector's (the protocol's (path, dv id))."""
    dv = action.get("deletionVector") or {}
    return (unquote(action["path"]), dv.get("storageType"), dv.get("pathOrInlineDv"), dv.get("offset"))


def _commit_actions(fs, path: str, location: str) -> list[dict]:
    try:
        with fs.open_input_stream(path) as stream:
            text = stream.read().decode("utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise errors.InvalidArgument(f"cannot import {location}: {posixpath.basename(path)} of its Delta log "
                                     f"cannot be read: {str(exc).strip().splitlines()[0]}") from None


def _checkpoint_actions(fs, log: str, names: list[str], location: str) -> list[dict]:
    actions = []
    for name in sorted(names):
        try:
            with fs.open_input_file(posixpath.join(log, name)) as handle:
                parquet = pq.ParquetFile(handle)
                wanted = [c for c in ("add", "metaData", "protocol") if c in parquet.schema_arrow.names]
                actions.extend(parquet.read(columns=wanted).to_pylist())
        except (OSError, pa.ArrowException) as exc:
            raise errors.InvalidArgument(f"cannot import {location}: checkpoint {name} cannot be read: "
                                         f"{str(exc).strip().splitlines()[0]}") from None
    for action in actions:  # a checkpoint's maps come back as (key, value) lists
        if action.get("add"):
            action["add"]["partitionValues"] = _as_dict(action["add"].get("partitionValues"))
        if action.get("metaData"):
            action["metaData"]["configuration"] = _as_dict(action["metaData"].get("configuration"))
    return actions


def _complete(parts: list[str]) -> bool:
    """A checkpoint is usable when it is one file or all of its parts are there."""
    if len(parts) == 1 and _CHECKPOINT.match(parts[0]).group(2) is None:
        return True
    total = {int(_CHECKPOINT.match(p).group(3) or 0) for p in parts}
    return len(total) == 1 and len(parts) == total.pop()


def _as_dict(value) -> dict:
    if value is None:
        return {}
    return dict(value) if not isinstance(value, dict) else value


def _has_struct(data_type: T.DataType) -> bool:
    if isinstance(data_type, T.StructType):
        return True
    if isinstance(data_type, T.ArrayType):
        return _has_struct(data_type.elementType)
    if isinstance(data_type, T.MapType):
        return _has_struct(data_type.keyType) or _has_struct(data_type.valueType)
    return False


def _without_metadata(data_type: T.DataType) -> T.DataType:
    """A type without Delta's field metadata (column mapping ids), as branchspark stores a column's type."""
    if isinstance(data_type, T.StructType):
        return T.StructType([T.StructField(f.name, _without_metadata(f.dataType), f.nullable) for f in data_type])
    if isinstance(data_type, T.ArrayType):
        return T.ArrayType(_without_metadata(data_type.elementType), data_type.containsNull)
    if isinstance(data_type, T.MapType):
        return T.MapType(_without_metadata(data_type.keyType), _without_metadata(data_type.valueType),
                         data_type.valueContainsNull)
    return data_type
