"""Reads of the files the catalog names, with the sizes it recorded: no request before a file is opened.

Spark's Parquet source, given paths, checks that each exists, lists it and (with a basePath) looks up that
folder: on S3 two or three HEADs and a LIST per file, before the GETs that read it; on any file system, from 32
paths on, a Spark job that lists them in parallel (`spark.sql.sources.parallelPartitionDiscovery.threshold`).
The catalog already knows every file of a segment or tombstone and its size (catalog revision 0004), so
branchspark's own source (`jvm/KnownFiles.java`) hands Spark those statuses and the partition values their
folders name, and the read costs only its GETs. On S3 the file's ETag too (revision 0007, as the store
answered its upload): S3A's analytics stream sends a HEAD for it the first time a process opens an object it
does not know the ETag of. Used wherever branchspark's jar is on the session's class path,
local warehouses too: a table of 40 one-row segments built its DataFrame in 0.05 s against 0.47-0.56 s, and
counted in 0.21 s against 0.45-0.61 s (2026-12-03, bench/known_files_reads.py). Files without a recorded size
(older catalogs) and other sessions read as before.
"""
from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, DataFrameReader, SparkSession

from . import deletion_vectors
from .projection import Constant

FORMAT = "branchspark.KnownFiles"
_FILES_OPTION = "branchspark.files"
_CONSTANTS_OPTION = "branchspark.constants"


def usable(spark: SparkSession) -> bool:
    """Whether reads on this session go through the known-files source: with our jar loaded with the session
    (the extension's expression shows it is)."""
    return deletion_vectors.jar_loaded(spark)


def knows(paths: list[str], sizes: dict[str, int] | None) -> bool:
    """Whether `load` reads `paths` through the known-files source: it has every path's size."""
    return sizes is not None and bool(paths) and all(p in sizes for p in paths)


def load(reader: DataFrameReader, paths: list[str], sizes: dict[str, int] | None,
         plain: Callable[[], DataFrame] | None = None, etags: dict[str, str] | None = None,
         constants: tuple[Constant, ...] = ()) -> DataFrame:
    """`reader` (schema, and basePath where partition folders matter, set) reading `paths`: through the known
    files source when every path's size is in `sizes`, else as `plain()` reads them (default: Spark's Parquet
    source; a reader whose format is already set, as the deletion vectors' source, passes its own). `etags`:
    {path: ETag} where the catalog recorded one: such a file is opened with no lookup at all. `constants`
    (columns of the reader's schema, after the others): values of every row, for a read that `knows` only."""
    if not knows(paths, sizes):
        if constants:
            raise ValueError("constant columns need the known-files source")
        return plain() if plain else reader.parquet(*paths)
    etags = etags or {}
    listed = "\n".join(f"{sizes[p]}\t{p}\t{etags[p]}" if p in etags else f"{sizes[p]}\t{p}" for p in paths)
    reader = reader.format(FORMAT).option(_FILES_OPTION, listed)
    if constants:
        reader = reader.option(_CONSTANTS_OPTION, "\n".join(f"{c.name}\t{c.text}" for c in constants))
    return reader.load()
