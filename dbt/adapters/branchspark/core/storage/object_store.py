"""The warehouse's file system, local or on object storage, from the URIs Hadoop's file systems take.

Spark writes and reads through Hadoop (S3A for `s3a://` and, set here, `s3://`: the same place); the
driver's few file calls (the binding marker, gc's listing of the folders it owns, deletion-vector
positions, `branchspark serve`'s metadata) go through pyarrow's file systems, opened here from the same
URI and the same settings, so both sides see one warehouse.

Settings come from the standard places, later ones winning: the AWS SDK's variables (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL), then Hadoop's `fs.s3a.*` keys
in a session's config (`spark.hadoop.fs.s3a.*`, as a dbt profile's spark_config gives them; the profile's
s3_* fields become those keys). Secrets are held in `S3Settings` and never shown (its repr hides them).

Spark needs the S3A connector on its class path: `make install` fetches it with Maven (jars/s3/pom.xml)
into .jars/s3/, and `session_config` adds it to a new session with the S3A committers (docs/deploy.md).
"""
from __future__ import annotations

import functools
import os
import re
import threading
import zipfile
from dataclasses import dataclass, field
from urllib.parse import urlparse

import pyarrow.dataset as pads
from pyarrow import fs as pafs

from .. import errors
from . import direct_writes, jvm_build

S3_SCHEMES = ("s3a", "s3", "s3n")
S3A = "org.apache.hadoop.fs.s3a.S3AFileSystem"
HADOOP_PREFIX = "spark.hadoop."
# Spark's commit protocol bound to Hadoop's committer factories: on s3a:// the S3A "magic" committer
# (each task's files are uploaded as pending multipart uploads, completed at job commit: no rename, no
# copy, no listing of the output); on other file systems Hadoop's own FileOutputCommitter as before.
COMMITTER_SETTINGS = {
    "spark.sql.sources.commitProtocolClass": "org.apache.spark.internal.io.cloud.PathOutputCommitProtocol",
    "spark.sql.parquet.output.committer.class": "org.apache.spark.internal.io.cloud.BindingParquetOutputCommitter",
    "spark.hadoop.fs.s3a.committer.name": "magic",
    "spark.hadoop.fs.s3a.committer.magic.enabled": "true",
    "spark.hadoop.mapreduce.outputcommitter.factory.scheme.s3a":
        "org.apache.hadoop.fs.s3a.commit.S3ACommitterFactory",
}
# S3A settings that leave out requests branchspark never relies on (docs/deploy.md, "Requests"; issue 73): the
# catalog names every file, so no existence check, folder marker or success marker serves a reader.
REQUEST_SETTINGS = {
    # no `_SUCCESS` object per write: nothing reads it (a commit is the catalog's)
    "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
    # the magic committer keeps its pending uploads in the task's memory, not as .pending/.pendingset objects
    # that the job commit lists and reads back
    "spark.hadoop.fs.s3a.committer.magic.track.commits.in.memory.enabled": "true",
    # creating a file does not probe for one in its place or above it (names are unique); folders are not
    # probed nor their markers deleted or recreated
    "spark.hadoop.fs.s3a.create.performance": "true",
    "spark.hadoop.fs.s3a.performance.flags": "create,mkdir,delete",
    "spark.hadoop.fs.s3a.directory.marker.retention": "keep",
}
INTERCEPTORS = "fs.s3a.audit.execution.interceptors"  # AWS SDK interceptors S3A adds to its client
_SECRET_KEYS = ("fs.s3a.secret.key", "fs.s3a.session.token", "fs.s3a.access.key")


def is_object_store(location: str) -> bool:
    return urlparse(location).scheme in S3_SCHEMES


def spark_uri(location: str) -> str:
    """The URI Spark writes: `s3://` and `s3n://` become `s3a://` (the same bucket and key)."""
    scheme = urlparse(location).scheme
    return "s3a" + location[len(scheme):] if scheme in ("s3", "s3n") else location


def reader_uri(location: str) -> str:
    """The URI other engines read (pyiceberg, DuckDB, Trino know `s3://`, not `s3a://`)."""
    return "s3" + location[len("s3a"):] if urlparse(location).scheme == "s3a" else location


def bucket_of(location: str) -> str:
    return urlparse(location).netloc


@dataclass(frozen=True)
class S3Settings:
    endpoint: str | None = None  # http(s)://host:port; None: AWS itself
    region: str | None = None
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    path_style: bool = False

    @property
    def scheme(self) -> str:
        return urlparse(self.endpoint).scheme if self.endpoint and "://" in self.endpoint else "https"

    @property
    def host(self) -> str | None:
        """host:port of the endpoint, without its scheme (pyarrow's and DuckDB's form)."""
        if not self.endpoint:
            return None
        return urlparse(self.endpoint).netloc if "://" in self.endpoint else self.endpoint

    def shown(self) -> str:
        """For messages: where, never who."""
        return self.endpoint or f"AWS S3 ({self.region or 'default region'})"


_lock = threading.Lock()
_hadoop: dict[str, str] = {}  # fs.s3a.* settings this process's sessions were given


def remember(config: dict) -> None:
    """Keep the `fs.s3a.*` keys of a session's config (spark.hadoop.fs.s3a.* or fs.s3a.*), for the
    Python side's file system to agree with Spark's."""
    found = {}
    for key, value in (config or {}).items():
        bare = key[len(HADOOP_PREFIX):] if key.startswith(HADOOP_PREFIX) else key
        if bare.startswith("fs.s3a."):
            found[bare] = str(value)
    if found:
        with _lock:
            _hadoop.update(found)
        filesystem_for.cache_clear()


def settings(hadoop: dict | None = None) -> S3Settings:
    """The S3 settings in force: the AWS variables, overridden by fs.s3a.* keys remembered or given."""
    env = os.environ
    keys = {**_hadoop, **{k[len(HADOOP_PREFIX):] if k.startswith(HADOOP_PREFIX) else k: str(v)
                          for k, v in (hadoop or {}).items()}}
    endpoint = keys.get("fs.s3a.endpoint") or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None
    if endpoint and "://" not in endpoint:
        secure = keys.get("fs.s3a.connection.ssl.enabled", "true").lower() != "false"
        endpoint = ("https://" if secure else "http://") + endpoint
    path_style = keys.get("fs.s3a.path.style.access")
    return S3Settings(
        endpoint=endpoint,
        region=keys.get("fs.s3a.endpoint.region") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
        access_key=keys.get("fs.s3a.access.key") or env.get("AWS_ACCESS_KEY_ID") or None,
        secret_key=keys.get("fs.s3a.secret.key") or env.get("AWS_SECRET_ACCESS_KEY") or None,
        session_token=keys.get("fs.s3a.session.token") or env.get("AWS_SESSION_TOKEN") or None,
        # an endpoint of its own (MinIO, moto, Ceph) is path-style unless told otherwise
        path_style=(path_style.lower() == "true") if path_style else bool(endpoint),
    )


def hadoop_settings(s3: S3Settings | None = None) -> dict[str, str]:
    """spark.hadoop.* settings that make S3A reach what the AWS variables name: S3A reads the credentials
    from the environment itself, but not AWS_ENDPOINT_URL nor AWS_REGION; `s3://` is S3A too."""
    s3 = s3 or settings()
    out = {f"{HADOOP_PREFIX}fs.s3.impl": S3A, f"{HADOOP_PREFIX}fs.s3n.impl": S3A}
    if s3.endpoint:
        out[f"{HADOOP_PREFIX}fs.s3a.endpoint"] = s3.endpoint
        out[f"{HADOOP_PREFIX}fs.s3a.connection.ssl.enabled"] = str(s3.scheme == "https").lower()
    out[f"{HADOOP_PREFIX}fs.s3a.path.style.access"] = str(s3.path_style).lower()
    out[f"{HADOOP_PREFIX}fs.s3a.endpoint.region"] = s3.region or "us-east-1"
    # A fault says so at once instead of after S3A's retries (its defaults retry for minutes).
    out[f"{HADOOP_PREFIX}fs.s3a.attempts.maximum"] = "2"
    out[f"{HADOOP_PREFIX}fs.s3a.retry.limit"] = "2"
    out[f"{HADOOP_PREFIX}fs.s3a.retry.throttle.limit"] = "3"
    out[f"{HADOOP_PREFIX}fs.s3a.connection.establish.timeout"] = "5s"
    return out


def jars() -> list[str]:
    """The S3A connector's jars fetched at install (empty when they were not)."""
    return jvm_build.s3a_jars()


def _driver_loads(config: dict, name: str) -> bool:
    """Whether the driver loads branchspark's class `name` from its class path (a local master: local_files.py puts
    the jar there, where Hadoop finds file systems and S3A its client's interceptors), the jar built with S3A's
    classes beside the connector."""
    if not str(config.get("spark.master", "")).startswith("local"):
        return False
    for jar in str(config.get("spark.driver.extraClassPath", "")).split(":"):
        if os.path.basename(jar).startswith("branchspark-spark") and _holds_class(jar, name):
            return True
    return False


@functools.lru_cache(maxsize=8)
def _holds_class(jar: str, name: str) -> bool:
    try:
        with zipfile.ZipFile(jar) as archive:
            return name.replace(".", "/") + ".class" in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def session_config(config: dict) -> dict:
    """`config` for a new JVM, plus the S3A jars (spark.jars for executors, the driver's class path for
    the driver's own file-system lookups), the S3A settings the environment implies and the committers;
    the caller's own keys win. Unchanged without the jars."""
    found = jars()
    if not found:
        return config
    out = {**hadoop_settings(settings(config)), **COMMITTER_SETTINGS, **REQUEST_SETTINGS, **config}
    if out[direct_writes.PROTOCOL_CONF] == direct_writes.PROTOCOL:  # branchspark's writes commit directly,
        out.setdefault(direct_writes.FALLBACK_CONF, COMMITTER_SETTINGS[direct_writes.PROTOCOL_CONF])  # others so
    if _driver_loads(out, direct_writes.KNOWN_STATUS_S3A):  # a scan's files opened with the sizes the catalog
        out.setdefault(f"{HADOOP_PREFIX}fs.s3a.impl", direct_writes.KNOWN_STATUS_S3A)  # knows: no HEAD each
    if _driver_loads(out, direct_writes.UPLOAD_ETAGS):
        # each file written keeps the ETag its upload was answered with: read later, not even S3A's HEAD for it
        key = f"{HADOOP_PREFIX}{INTERCEPTORS}"
        interceptors = [c.strip() for c in str(out.get(key, "")).split(",") if c.strip()]
        if direct_writes.UPLOAD_ETAGS not in interceptors:  # after a user's own, once
            interceptors.append(direct_writes.UPLOAD_ETAGS)
        out[key] = ",".join(interceptors)
    listed = [j for j in str(config.get("spark.jars", "")).split(",") if j]
    out["spark.jars"] = ",".join(listed + [j for j in found if j not in listed])
    present = [p for p in str(config.get("spark.driver.extraClassPath", "")).split(":") if p]
    out["spark.driver.extraClassPath"] = ":".join(present + [j for j in found if j not in present])
    return out


# ----------------------------------------------------------------- the Python side
@functools.lru_cache(maxsize=16)
def filesystem_for(scheme: str, bucket: str) -> pafs.FileSystem:
    """A pyarrow file system for one bucket (cached: opening one resolves credentials)."""
    s3 = settings()
    options = {"region": s3.region or "us-east-1", "connect_timeout": 5, "request_timeout": 30,
               "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=2)}
    if s3.host:
        options.update(endpoint_override=s3.host, scheme=s3.scheme)
    if s3.path_style:
        options["force_virtual_addressing"] = False
    if s3.access_key and s3.secret_key:
        options.update(access_key=s3.access_key, secret_key=s3.secret_key)
        if s3.session_token:
            options["session_token"] = s3.session_token
    return pafs.S3FileSystem(**options)


def parquet_file(filesystem: pafs.FileSystem, path: str, size: int | None = None) -> pads.ParquetFileFragment:
    """A Parquet file for pyarrow to read (`.metadata`, `.to_table(columns=...)`): opened with its size where it
    is known, so that no lookup comes before its reads (pyarrow's open_input_file takes a path only, and looks
    it up: on S3 a HEAD)."""
    return pads.ParquetFileFormat().make_fragment(path, filesystem=filesystem, file_size=size)


def filesystem(location: str) -> tuple[pafs.FileSystem, str]:
    """(file system, path in it) of a warehouse location: a local path, `file:`, `s3a:`/`s3:`/`s3n:`, or
    any other URI pyarrow knows (hdfs:, gs:, abfs:)."""
    parsed = urlparse(location)
    if parsed.scheme in S3_SCHEMES:
        return filesystem_for("s3", parsed.netloc), f"{parsed.netloc}{parsed.path}".rstrip("/")
    if "://" not in location:
        return pafs.LocalFileSystem(), location
    return pafs.FileSystem.from_uri(location)


def client_properties(location: str, credentials: bool = False) -> dict[str, str]:
    """Iceberg FileIO properties a reader of files at `location` needs (pyiceberg's and DuckDB's names):
    the endpoint, region and path-style access on object storage, and the credentials only when asked
    (`branchspark serve --vend-credentials`); nothing for a local warehouse."""
    if not is_object_store(location):
        return {}
    s3 = settings()
    out = {"s3.region": s3.region or "us-east-1"}
    if s3.endpoint:
        out["s3.endpoint"] = s3.endpoint
    if s3.path_style:
        out.update({"s3.path-style-access": "true", "s3.force-virtual-addressing": "false"})
    if credentials and s3.access_key and s3.secret_key:
        out.update({"s3.access-key-id": s3.access_key, "s3.secret-access-key": s3.secret_key})
        if s3.session_token:
            out["s3.session-token"] = s3.session_token
    return out


# ----------------------------------------------------------------- faults as one line
_BUCKET_IN_TEXT = re.compile(r"(?:[Bb]ucket[ :'\"]+|s3a?://)([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])")
_MISSING_BUCKET = ("NoSuchBucket", "NO_SUCH_BUCKET", "specified bucket does not exist", "does not exist", "not found. To create buckets")
_DENIED = ("AccessDenied", "Access Denied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403 Forbidden",
           "ACCESS_DENIED", "status code: 403", "Status Code: 403", "InvalidClientTokenId")
_DOWN = ("NETWORK_CONNECTION", "Connection refused", "ConnectException", "Could not connect",
         "Unable to execute HTTP request", "connect timed out", "UnknownHostException", "ConnectTimeout")


def storage_fault(text: str, bucket: str | None = None) -> errors.StorageUnavailable | None:
    """StorageUnavailable for an S3 client's error text (pyarrow's or S3A's), naming the bucket and what to
    do; None when the text is not a fault of the store. No secret is in it: only the endpoint and bucket."""
    if not any(marker in text for group in (_MISSING_BUCKET, _DENIED, _DOWN) for marker in group):
        return None
    found = _BUCKET_IN_TEXT.search(text)
    bucket = bucket or (found.group(1) if found else "?")
    s3 = settings()
    where = s3.shown()
    if any(marker in text for marker in _DOWN):
        return errors.StorageUnavailable(
            f"object storage at {where} does not answer (bucket {bucket}): nothing was changed; start it or fix "
            f"the endpoint (AWS_ENDPOINT_URL or spark_config fs.s3a.endpoint)")
    if any(marker in text for marker in _DENIED):
        return errors.StorageUnavailable(
            f"object storage at {where} denied access to bucket {bucket}: nothing was changed; check the credentials "
            f"(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or spark_config fs.s3a.access.key/secret.key)")
    if any(marker in text for marker in _MISSING_BUCKET if marker != "does not exist") or \
            re.search(r"[Bb]ucket\s+\S+\s+does not exist", text):
        return errors.StorageUnavailable(
            f"bucket {bucket} does not exist at {where}: nothing was changed; create it, or fix the warehouse URI")
    return None


def guarded(method):
    """A Warehouse file call whose store faults (OSError from pyarrow) become one line."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except FileNotFoundError:
            raise
        except OSError as exc:
            fault = storage_fault(str(exc), bucket_of(self.root) if is_object_store(self.root) else None)
            if fault is None:
                raise
            raise fault from None
    return call
