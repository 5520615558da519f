"""A Delta table at a version, read from its `_delta_log` (the Delta protocol) as a SourceTable: the add actions
live at that version are its files (paths, sizes, partition values), their deletion vectors the rows they hide;
column mapping (by name or id) gives the names the files use. A checkpoint (Parquet, one or several parts) is the
start when there is one at or before the version, then the JSON commits after it."""
from __future__ import annotations

import json
import posixpath
import re
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs
from pyspark.sql import types as T

from .. import errors
from . import delta_vectors
from .source import SourceColumn, SourceFile, SourceTable, VersionChanges, added_columns, filesystem, source_file

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.(\d+)\.(\d+))?\.parquet$")
_V2_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.[0-9a-f-]{36}\.(?:json|parquet)$")
# Reader features whose tables an import reads as the protocol says; any other is refused by name.
_READABLE = {"deletionVectors", "columnMapping", "timestampNtz", "vacuumProtocolCheck"}
_PHYSICAL_NAME = "delta.columnMapping.physicalName"
_MAPPING_ID = "delta.columnMapping.id"


def read_delta(location: str, version: int | None) -> SourceTable:
    log = _Log(location)
    target = log.latest if version is None else version
    if target < 0 or target > log.latest:
        raise errors.InvalidArgument(f"cannot import {location} at version {version}: the Delta table's versions "
                                     f"go up to {log.latest}")
    metadata, protocol, live = log.state(target)
    _check_protocol(protocol, location)
    return _source(location, target, metadata, list(live.values()))


def delta_changes(location: str, since: int) -> list[VersionChanges]:
    """The changes of every version after `since`, in order: each is what its add and remove actions and its new
    deletion vectors did, and the columns it added (a refresh lands each as one commit). A version that changes the
    schema otherwise, the partition columns or the protocol's reader features is refused in one line."""
    log = _Log(location)
    metadata, protocol, live = log.state(since)
    _check_protocol(protocol, location)
    out = []
    for version in range(since + 1, log.latest + 1):
        after = dict(live)
        changed_metadata, changed_protocol = _replay(log.actions(version), after, metadata, protocol)
        if changed_metadata.get("partitionColumns") != metadata.get("partitionColumns"):
            raise errors.InvalidArgument(f"cannot refresh from {location}: version {version} changed the table's "
                                         f"partitioning, which a refresh does not follow; import it again")
        columns = _columns(location, changed_metadata)
        new_columns = []
        if changed_metadata.get("schemaString") != metadata.get("schemaString"):
            new_columns = added_columns(location, str(version), _columns(location, metadata), columns)
        _check_protocol(changed_protocol, location)
        before = {key[0]: add for key, add in live.items()}
        now = {key[0]: add for key, add in after.items()}
        added = [_file(location, add, _hidden(location, add)) for path, add in sorted(now.items()) if path not in before]
        removed = [_file(location, add, _hidden(location, add)) for path, add in sorted(before.items()) if path not in now]
        hidden = []
        for path in sorted(set(before) & set(now)):
            if _file_key(before[path]) != _file_key(now[path]):
                newly = np.setdiff1d(_hidden(location, now[path]), _hidden(location, before[path]))
                if len(newly):
                    hidden.append(_file(location, now[path], newly))
        out.append(VersionChanges(str(version), added, removed, hidden, columns, new_columns))
        live, metadata, protocol = after, changed_metadata, changed_protocol
    return out


class _Log:
    """A Delta table's `_delta_log`: its commits and checkpoints, and the table's state at a version."""

    def __init__(self, location: str):
        self.location = location
        self.fs, base = filesystem(location)
        self.path = posixpath.join(base, "_delta_log")
        try:
            names = [i.base_name for i in self.fs.get_file_info(pafs.FileSelector(self.path))
                     if i.type == pafs.FileType.File]
        except (OSError, pa.ArrowException) as exc:
            raise errors.InvalidArgument(f"cannot import {location}: its Delta log cannot be read: "
                                         f"{str(exc).strip().splitlines()[0]}") from None
        self.names = names
        self.commits = {int(m.group(1)): n for n in names if (m := _COMMIT.match(n))}
        self.checkpoints: dict[int, list[str]] = {}
        for name in names:
            if (m := _CHECKPOINT.match(name)):
                self.checkpoints.setdefault(int(m.group(1)), []).append(name)
        known = set(self.commits) | set(self.checkpoints)
        if not known:
            raise errors.InvalidArgument(f"cannot import {location}: its _delta_log holds no commit")
        self.latest = max(known)

    def actions(self, version: int) -> list[dict]:
        if version not in self.commits:
            raise errors.InvalidArgument(f"cannot import {self.location}: its log no longer holds version {version} "
                                         f"(cleaned up)")
        return _commit_actions(self.fs, posixpath.join(self.path, self.commits[version]), self.location)

    def state(self, target: int) -> tuple[dict, dict, dict]:
        """(metadata, protocol, live add actions by file key) at version `target`: from the last complete
        checkpoint at or before it, then the JSON commits after that."""
        start = max((v for v in self.checkpoints if v <= target and _complete(self.checkpoints[v])), default=None)
        first = start + 1 if start is not None else 0
        gone = [v for v in range(first, target + 1) if v not in self.commits]
        if gone:
            if any(_V2_CHECKPOINT.match(n) for n in self.names):
                raise errors.InvalidArgument(f"cannot import {self.location}: it uses v2 checkpoints (reader feature "
                                             f"v2Checkpoint), which import does not read yet")
            raise errors.InvalidArgument(f"cannot import {self.location} at version {target}: its log no longer "
                                         f"holds version {gone[0]} (cleaned up); import a later version")
        live: dict[tuple, dict] = {}
        metadata = protocol = None
        if start is not None:
            for action in _checkpoint_actions(self.fs, self.path, self.checkpoints[start], self.location):
                if action.get("add"):
                    live[_file_key(action["add"])] = action["add"]
                metadata = action.get("metaData") or metadata
                protocol = action.get("protocol") or protocol
        for number in range(first, target + 1):
            metadata, protocol = _replay(self.actions(number), live, metadata, protocol)
        if metadata is None:
            raise errors.InvalidArgument(f"cannot import {self.location}: its log has no table metadata")
        return metadata, protocol or {}, live


def _source(location: str, version: int, metadata: dict, adds: list[dict]) -> SourceTable:
    files = [_file(location, add, _hidden(location, add)) for add in adds]
    return SourceTable(location, "delta", str(version), _columns(location, metadata),
                       list(metadata.get("partitionColumns") or []), files)


def _columns(location: str, metadata: dict) -> list[SourceColumn]:
    mapping = (metadata.get("configuration") or {}).get("delta.columnMapping.mode", "none")
    schema = T.StructType.fromJson(json.loads(metadata["schemaString"]))
    columns = []
    for field in schema.fields:
        stored = field.metadata.get(_PHYSICAL_NAME) if mapping != "none" else None
        if stored and _has_struct(field.dataType):
            raise errors.InvalidArgument(f"cannot import {location}: column '{field.name}' is nested and the table "
                                         f"uses column mapping, which import reads for flat columns only yet")
        field_id = field.metadata.get(_MAPPING_ID) if mapping != "none" else None  # its files carry it
        columns.append(SourceColumn(field.name, _without_metadata(field.dataType), field.nullable, stored, field_id))
    return columns


def _hidden(location: str, add: dict) -> np.ndarray | None:
    """The positions an add action's deletion vector hides (None: it has none)."""
    dv = add.get("deletionVector")
    return delta_vectors.positions(location, dv) if dv else None


def _file(location: str, add: dict, deleted: np.ndarray | None) -> SourceFile:
    return source_file(location, unquote(add["path"]), add["size"],
                       partition_values=dict(_as_dict(add.get("partitionValues"))), deleted=deleted,
                       order=int(add.get("modificationTime") or 0))


def _check_protocol(protocol: dict, location: str) -> None:
    reader = int(protocol.get("minReaderVersion", 1))
    if reader > 3:
        raise errors.InvalidArgument(f"cannot import {location}: Delta reader version {reader} is not supported")
    unknown = sorted(set(protocol.get("readerFeatures") or ()) - _READABLE)
    if unknown:
        raise errors.InvalidArgument(f"cannot import {location}: Delta reader feature(s) {', '.join(unknown)} "
                                     f"are not supported by import yet")


def _replay(actions, live: dict, metadata, protocol) -> tuple:
    """Apply one version's actions: its adds and removes to `live` (file key -> add action); returns the
    metadata and protocol after them."""
    for action in actions:
        if "add" in action:
            live[_file_key(action["add"])] = action["add"]
        elif "remove" in action:
            live.pop(_file_key(action["remove"]), None)
        elif "metaData" in action:
            metadata = action["metaData"]
        elif "protocol" in action:
            protocol = action["protocol"]
    return metadata, protocol


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
