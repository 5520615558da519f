"""Where Iceberg metadata files live, and writing them once.

    <warehouse>/tables/<table_id>/iceberg/<table version id>/<content hash>.<ext>

Every file is named by a hash of what it holds, below the table version that first needed it, so a second
request or another process finds it instead of writing it again, and two writers of the same file write the
same bytes (each to a temporary name, then an atomic rename). A version's metadata also names files in the
directories of the earlier versions of its branch; those versions are reachable whenever it is, so `gc`
keeps them all by keeping the directory of every reachable table version (`metadata_roots`).
"""
from __future__ import annotations

import hashlib
import os
import posixpath
import uuid
from collections.abc import Iterable

from pyarrow import fs as pafs

# Where the metadata lives is the warehouse's layout (the core's gc keeps it): core/storage/layout.py.
from ..core.storage import object_store
from ..core.storage.layout import (  # noqa: F401
    ICEBERG_DIR,
    SEGMENT_COLUMN,
    SEQ_DIGITS,
    Warehouse,
    metadata_roots,
    version_dir,
)


def content_name(prefix: str, parts: Iterable, ext: str) -> str:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:32]
    return f"{prefix}-{digest}.{ext}"


def absolute(warehouse: Warehouse, relative: str) -> str:
    """The location a client reads: a local path stays a path, a URI stays a URI (`s3a://` as `s3://`,
    the scheme pyiceberg, DuckDB and Trino know). A borrowed file (an import's) is named where it lies."""
    return object_store.reader_uri(relative if is_borrowed_location(relative) else warehouse.uri(relative))


def is_borrowed_location(relative: str) -> bool:
    """Whether a data file's location is a borrowed file's absolute one (core/imports) rather than a path below
    the warehouse."""
    return relative.startswith("/") or "://" in relative


def located(warehouse: Warehouse, relative: str) -> tuple[pafs.FileSystem, str]:
    """(file system, path in it) of a file below the warehouse, or of a borrowed file where it lies."""
    if is_borrowed_location(relative):
        return object_store.filesystem(relative)
    fs, base = filesystem(warehouse)
    return fs, f"{base}/{relative}"


def filesystem(warehouse: Warehouse) -> tuple[pafs.FileSystem, str]:
    return object_store.filesystem(warehouse.root)


def exists(warehouse: Warehouse, relative: str) -> bool:
    return warehouse.exists(relative)


def write_once(warehouse: Warehouse, relative: str, data: bytes) -> None:
    """Write `data` at `relative` unless it is there: to a temporary name, then renamed into place, so a
    reader never sees half a file and concurrent writers of the same content do not harm each other. On
    object storage one PUT is already whole or absent, and a rename is a copy: written in place."""
    if warehouse.exists(relative):
        return
    fs, base = filesystem(warehouse)
    target = posixpath.join(base, relative)
    if warehouse.on_object_store:
        with fs.open_output_stream(target) as out:
            out.write(data)
        return
    fs.create_dir(posixpath.dirname(target), recursive=True)
    temporary = f"{posixpath.dirname(target)}/.tmp-{os.getpid()}-{uuid.uuid4().hex}-{posixpath.basename(target)}"
    with fs.open_output_stream(temporary) as out:
        out.write(data)
    fs.move(temporary, target)


def read(warehouse: Warehouse, relative: str) -> bytes:
    fs, base = filesystem(warehouse)
    with fs.open_input_stream(posixpath.join(base, relative)) as stream:
        return stream.read()


# Served unless the table sets its own. The codec is what Iceberg's own catalogs put on every table they create
# (since 1.4): a Java writer without it compresses with gzip, its old default (measured: files 2.5x as large, a
# copy-on-write MERGE twice as slow). The server turns a writer's position deletes into tombstones at commit,
# so a delete file per data file (Iceberg's default granularity) is only more files to write: one per partition.
ICEBERG_TABLE_DEFAULTS = {"write.parquet.compression-codec": "zstd", "write.delete.granularity": "partition"}
_ARROW_CODECS = {"uncompressed": "none"}  # Iceberg's names that pyarrow spells otherwise


def parquet_codec(properties: dict) -> str:
    """The compression pyarrow writes a table's data files with: the codec its writers are served."""
    default = ICEBERG_TABLE_DEFAULTS["write.parquet.compression-codec"]
    codec = str(properties.get("write.parquet.compression-codec") or default).lower()
    codec = _ARROW_CODECS.get(codec, codec)
    return codec if codec in ("none", "snappy", "gzip", "brotli", "lz4", "zstd") else default  # lzo: none here


def writers_segment_dir(warehouse: Warehouse, table_id: str, seq: int, version_id: str) -> str:
    """Where Iceberg writers put the data files of a commit on this table version (its `write.data.path`):
    a segment directory of the table (`_bs_seg=s<seq>-<hash of the version>`), so a committed file is a
    segment where it lies, referenced and never copied. One name per version: the metadata stays one file."""
    digest = hashlib.sha256(version_id.encode()).hexdigest()[:12]
    return f"{warehouse.data_dir(table_id)}/{SEGMENT_COLUMN}=s{seq:0{SEQ_DIGITS}d}-{digest}"


def relative_location(warehouse: Warehouse, location: str) -> str | None:
    """A location a client names (a path, `file:` URI, `s3://` or `s3a://` URI) relative to the warehouse;
    None when it lies outside it."""
    root, given = plain_location(warehouse.root).rstrip("/") + "/", plain_location(location)
    return given[len(root):] if given.startswith(root) else None


def plain_location(text: str) -> str:
    """A location in one spelling: `file:` URIs as paths, `s3a://` as `s3://`."""
    if text.startswith("file:"):
        text = text[len("file:"):]
        while text.startswith("//"):
            text = text[1:]
    return object_store.reader_uri(text)
