"""Where files live in the warehouse, and the few file-system calls the driver makes.

    <warehouse>/tables/<table_id>/data/_bs_seg=<segment>/[<col>=<value>/]part-*.parquet
    <warehouse>/tables/<table_id>/tombstones/<tombstone>/part-*.parquet
    <warehouse>/tables/<table_id>/iceberg/<table version id>/...   (`branchspark serve`'s metadata)

`_bs_seg=<segment>` is a pseudo-partition: reading a table with basePath
`.../data` gives every row its segment id as a column, for free. A segment id
starts with the write's sequence number, so a row's sequence is readable too.
The driver lists and deletes files (for `gc` and to register partition
directories), reads keyless tombstones' deleted positions (deletion vectors:
change-sized metadata) and new files' footers; it never reads table data. pyarrow's file systems do
that without a JVM, so the same code runs under Spark Connect.
"""
from __future__ import annotations

import os
import posixpath
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pyarrow import fs as pafs
from pyarrow import parquet as pq

from . import object_store

SEGMENT_COLUMN = "_bs_seg"
SEQ_DIGITS = 16
ICEBERG_DIR = "iceberg"
_FOOTER_READS = 8  # footers the driver reads at once (each a GET on object storage: waiting, not work)


def version_dir(table_id: str, version_id: str) -> str:
    """The directory of one table version's Iceberg metadata (written by iceberg/files.py)."""
    return f"tables/{table_id}/{ICEBERG_DIR}/{version_id}"


def metadata_roots(tables: Iterable) -> set[str]:
    """The directories (relative to the warehouse) holding the Iceberg metadata of these table versions
    (catalog TableStates): `gc` keeps them while a branch reaches the version."""
    return {version_dir(t.id, t.version_id) for t in tables if t.version_id}


def segment_name(seq: int) -> str:
    return f"s{seq:0{SEQ_DIGITS}d}-{uuid.uuid4().hex[:12]}"


def seq_of_segment_name(name: str) -> int:
    return int(name[1:1 + SEQ_DIGITS])


def resolve_location(location: str) -> str:
    """A warehouse location as every later call needs it: URIs as given (`s3://` as `s3a://`, the same place
    through Hadoop's S3A), local paths (also `file:` ones) absolute, relative ones taken from the working
    directory."""
    if location.startswith("file:"):
        path = location[len("file:"):]
        path = path[2:] if path.startswith("//") else path
        return location.rstrip("/") if path.startswith("/") else "file://" + os.path.abspath(path)
    if "://" in location:
        return object_store.spark_uri(location.rstrip("/"))
    return os.path.abspath(os.path.expanduser(location))


@dataclass(frozen=True)
class Warehouse:
    root: str  # a path or URI Spark can write

    def __post_init__(self):
        object.__setattr__(self, "root", resolve_location(self.root))

    @property
    def on_object_store(self) -> bool:
        return object_store.is_object_store(self.root)

    def uri(self, relative: str) -> str:
        return f"{self.root}/{relative}"

    def table_dir(self, table_id: str) -> str:
        return f"tables/{table_id}"

    def data_dir(self, table_id: str) -> str:
        return f"tables/{table_id}/data"

    def new_segment_dir(self, table_id: str, seq: int) -> str:
        return f"{self.data_dir(table_id)}/{SEGMENT_COLUMN}={segment_name(seq)}"

    def new_tombstone_dir(self, table_id: str, seq: int) -> str:
        return f"tables/{table_id}/tombstones/{segment_name(seq)}"

    # ----------------------------------------------------------- file system
    def _fs(self) -> tuple[pafs.FileSystem, str]:
        return object_store.filesystem(self.root)

    @object_store.guarded
    def list_leaf_dirs(self, relative: str) -> list[str]:
        """Directories under `relative` that hold Parquet files, relative to the warehouse root."""
        filesystem, base = self._fs()
        selector = pafs.FileSelector(posixpath.join(base, relative), recursive=True, allow_not_found=True)
        leaves = set()
        for info in filesystem.get_file_info(selector):
            if info.type == pafs.FileType.File and info.base_name.endswith(".parquet"):
                leaves.add(posixpath.relpath(posixpath.dirname(info.path), base))
        return sorted(leaves)

    @object_store.guarded
    def list_files(self, relative: str) -> list[tuple[str, float]]:
        """(path relative to the root, modification time in seconds) of every file under `relative`."""
        filesystem, base = self._fs()
        selector = pafs.FileSelector(posixpath.join(base, relative), recursive=True, allow_not_found=True)
        out = []
        for info in filesystem.get_file_info(selector):
            if info.type == pafs.FileType.File:
                mtime = info.mtime.timestamp() if info.mtime is not None else 0.0
                out.append((posixpath.relpath(info.path, base), mtime))
        return out

    @object_store.guarded
    def parquet_files(self, relative: str) -> list[tuple[str, int]]:
        """(path relative to the root, bytes) of every Parquet file under `relative`: one listing (on S3 a LIST
        per thousand files), whose sizes the catalog records so that readers never look a file up."""
        filesystem, base = self._fs()
        selector = pafs.FileSelector(posixpath.join(base, relative), recursive=True, allow_not_found=True)
        return sorted((posixpath.relpath(info.path, base), info.size) for info in filesystem.get_file_info(selector)
                      if info.type == pafs.FileType.File and info.base_name.endswith(".parquet"))

    @object_store.guarded
    def list_dirs(self, relative: str) -> list[str]:
        filesystem, base = self._fs()
        selector = pafs.FileSelector(posixpath.join(base, relative), recursive=False, allow_not_found=True)
        return [posixpath.relpath(i.path, base) for i in filesystem.get_file_info(selector)
                if i.type == pafs.FileType.Directory]

    @object_store.guarded
    def delete_file(self, relative: str) -> None:
        filesystem, base = self._fs()
        filesystem.delete_file(posixpath.join(base, relative))

    @object_store.guarded
    def delete_dir(self, relative: str, missing_ok: bool = False) -> None:
        filesystem, base = self._fs()
        path = posixpath.join(base, relative)
        if missing_ok and filesystem.get_file_info(path).type == pafs.FileType.NotFound:
            return
        filesystem.delete_dir(path)

    @object_store.guarded
    def move_files(self, source: str, destination: str, suffix: str) -> list[tuple[str, int]]:
        """Move the files of folder `source` whose names end with `suffix` into folder `destination` (made if
        missing), keeping their names; returns (name, bytes) of each. A rename where the file system has one, a copy
        and a delete per file on object storage: before the commit that names them, so no reader depends
        on it, and as many as the write's files (its changes), not the table's."""
        filesystem, base = self._fs()
        target = posixpath.join(base, destination)
        if not self.on_object_store:
            filesystem.create_dir(target, recursive=True)
        selector = pafs.FileSelector(posixpath.join(base, source), recursive=False, allow_not_found=True)
        names = []
        for info in filesystem.get_file_info(selector):
            if info.type == pafs.FileType.File and info.base_name.endswith(suffix):
                filesystem.move(info.path, posixpath.join(target, info.base_name))
                names.append((info.base_name, info.size))
        return names

    @object_store.guarded
    def read_text(self, relative: str) -> str | None:
        """The text of a small file, or None when there is none."""
        filesystem, base = self._fs()
        try:
            with filesystem.open_input_stream(posixpath.join(base, relative)) as stream:
                return stream.read().decode("utf-8")
        except FileNotFoundError:
            return None

    @object_store.guarded
    def write_text(self, relative: str, text: str) -> None:
        filesystem, base = self._fs()
        if not self.on_object_store:  # object stores have no folders to make (a marker object is only noise)
            filesystem.create_dir(base, recursive=True)
        with filesystem.open_output_stream(posixpath.join(base, relative)) as stream:
            stream.write(text.encode("utf-8"))

    @object_store.guarded
    def holds_files(self, relative: str) -> bool:
        """Whether any file sits under `relative` (stops at the first one it finds)."""
        filesystem, base = self._fs()
        selector = pafs.FileSelector(posixpath.join(base, relative), recursive=True, allow_not_found=True)
        return any(info.type == pafs.FileType.File for info in filesystem.get_file_info(selector))

    @object_store.guarded
    def parquet_rows(self, relatives: Iterable[str | tuple[str, int]]) -> int:
        """The rows of Parquet files, from their footers: no data is read and no Spark job runs. A file given
        with its size, (path, bytes), is opened without a lookup (on S3, no HEAD before its GETs)."""
        filesystem, base = self._fs()
        total = 0
        for relative in relatives:
            path, size = relative if isinstance(relative, tuple) else (relative, None)
            total += object_store.parquet_file(filesystem, posixpath.join(base, path), size).metadata.num_rows
        return total

    @object_store.guarded
    def key_ranges(self, files: list[tuple[str, int]], column: str) -> list[tuple | None]:
        """(lowest, highest) value of `column` in each Parquet file, (path relative to the root, bytes), from the
        statistics of its footer: one read of the footer per file (on S3 a GET), files side by side. None for a
        file whose footer has no such statistics (the column not in the file, or values too long to keep)."""
        filesystem, base = self._fs()

        def key_range(item: tuple[str, int]) -> tuple | None:
            metadata = object_store.parquet_file(filesystem, posixpath.join(base, item[0]), item[1]).metadata
            names = metadata.schema.names
            if column not in names or metadata.num_row_groups == 0:
                return None
            index, lows, highs = names.index(column), [], []
            for group in range(metadata.num_row_groups):
                statistics = metadata.row_group(group).column(index).statistics
                if statistics is None or not statistics.has_min_max:
                    return None
                lows.append(statistics.min)
                highs.append(statistics.max)
            return min(lows), max(highs)

        if len(files) <= 1:
            return [key_range(item) for item in files]
        with ThreadPoolExecutor(max_workers=min(len(files), _FOOTER_READS)) as pool:
            return list(pool.map(key_range, files))

    @object_store.guarded
    def parquet_column_values(self, relative_dir: str, columns: list[str]) -> list[tuple]:
        """The values of `columns` in every Parquet file directly below `relative_dir`, as tuples: for small
        metadata files (a tombstone's row ids), never table data."""
        filesystem, base = self._fs()
        selector = pafs.FileSelector(posixpath.join(base, relative_dir), allow_not_found=True)
        found: list[tuple] = []
        for info in filesystem.get_file_info(selector):
            if info.type == pafs.FileType.File and info.base_name.endswith(".parquet"):
                with filesystem.open_input_file(info.path) as handle:
                    table = pq.read_table(handle, columns=columns)
                found.extend(zip(*(table.column(c).to_pylist() for c in columns)))
        return found

    @object_store.guarded
    def check_reachable(self) -> None:
        """Before a new catalog is made for it: the bucket of an object-store warehouse exists and answers
        (one request), else StorageUnavailable, so that a bad warehouse URI creates no catalog."""
        if not self.on_object_store:
            return
        filesystem, base = self._fs()
        bucket = base.split("/", 1)[0]
        if filesystem.get_file_info(bucket).type == pafs.FileType.NotFound:
            raise object_store.storage_fault(f"Bucket '{bucket}' not found. To create buckets", bucket)

    @object_store.guarded
    def exists(self, relative: str) -> bool:
        filesystem, base = self._fs()
        return filesystem.get_file_info(posixpath.join(base, relative)).type != pafs.FileType.NotFound
