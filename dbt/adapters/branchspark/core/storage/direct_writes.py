"""Writes whose files go straight to their final names, handed to the catalog without a listing.

Spark's commit protocols make a write's files visible on the file system: a temporary folder and a rename per
file (Hadoop's committer; on S3 a copy and a delete), or S3A's magic committer with about forty requests of
bookkeeping per write. branchspark needs none of it, because a file becomes part of a table only when a
catalog commit names it (SPEC 8). So a session branchspark starts commits through `jvm/DirectCommitProtocol`:
for a write tagged here, each task writes its files under unique final names and the job's commit returns the
committed files with their sizes; a failed task attempt's file is never named, and `gc` removes it. Every
other write of the session (a user's own) goes through the protocol it would have used.

Used where the protocol is the session's and the driver's JVM is in this process (not through Spark Connect,
whose server holds the list): otherwise `write` returns None and the caller lists the folder as before.
"""
from __future__ import annotations

import uuid

from pyspark.sql import DataFrameWriter, SparkSession

from ..connect import is_connect

PROTOCOL = "branchspark.DirectCommitProtocol"
PROTOCOL_CONF = "spark.sql.sources.commitProtocolClass"
FALLBACK_CONF = "spark.branchspark.commitProtocol.fallback"  # the protocol every other write goes through
_WRITE_OPTION = "branchspark.write"
_REDIRECT_OPTION = "branchspark.write.redirect"
_S3A_CONF = "spark.hadoop.fs.s3a.impl"
# S3A that skips the lookups of what branchspark knows (jvm/s3a/KnownStatusS3AFileSystem.java; object_store.py sets it)
KNOWN_STATUS_S3A = "branchspark.KnownStatusS3AFileSystem"
# the ETag each upload was answered with, kept for the commit (jvm/s3a/UploadEtags.java; object_store.py sets it)
UPLOAD_ETAGS = "branchspark.UploadEtags"


def session_config(config: dict, jar_added: bool) -> dict:
    """`config` for a new session whose class path has branchspark's jar: branchspark's writes commit
    directly; a commit protocol the caller set stays theirs (then writes are listed, as before)."""
    if not jar_added or config.get(PROTOCOL_CONF, PROTOCOL) != PROTOCOL:
        return config
    return {**config, PROTOCOL_CONF: PROTOCOL}


def usable(spark: SparkSession) -> bool:
    if is_connect(spark):
        return False
    try:
        return spark.conf.get(PROTOCOL_CONF, None) == PROTOCOL
    except Exception:  # a stopped or foreign session: list as before
        return False


def write(spark: SparkSession, writer: DataFrameWriter, uri: str,
          redirects: dict[str, str] | None = None) -> list[tuple[str, str, int, str | None]] | None:
    """Write Parquet at `uri`; returns (partition folder or "", file name, bytes, ETag or None) of every file
    committed (the ETag where the store gave one: on S3), or
    None when this session does not commit directly (the files are then in folders under `uri`, to list).
    `redirects`: {partition folder: folder URI}: that partition's files are written there instead."""
    if not usable(spark):
        writer.parquet(uri)
        return None
    write_id = uuid.uuid4().hex
    writer = writer.option(_WRITE_OPTION, write_id)
    jvm = spark._jvm
    if uri.startswith("s3a://") and spark.conf.get(_S3A_CONF, None) == KNOWN_STATUS_S3A:
        # the folder's name is new and unique: S3A need not look for it (Spark's existence check, a HEAD and a LIST)
        jvm.branchspark.KnownFileStatus.expectNewFolder(uri)
    if redirects:
        writer = writer.option(_REDIRECT_OPTION, "\n".join(f"{d}\t{u}" for d, u in redirects.items()))
    writer.parquet(uri)
    committed = jvm.branchspark.DirectCommitProtocol.take(write_id)
    if committed is None:  # the fallback ran (e.g. a plan Spark writes another way): list as before
        return None
    files = []
    for line in committed:
        folder, name, size, *etag = str(line).split("\t")
        files.append((folder, name, int(size), etag[0] if etag else None))
    return files
