"""Helpers of the object-storage tests (issue 51) on the S3-compatible server tests/run.sh starts (tests/moto_server.sh).

Its URL comes from BRANCHSPARK_TEST_S3_URL, and tests/conftest.py sets the four AWS variables from it: the
tests reach the store through them alone. Without it a test skips with the reason printed (a local run);
in CI (CI=true) it fails instead. Each test gets a bucket of its own.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlparse

import pytest

from dbt.adapters.branchspark.core.storage import object_store
from tests.missing import missing

S3_URL_ENV = "BRANCHSPARK_TEST_S3_URL"


def s3_url() -> str:
    url = os.environ.get(S3_URL_ENV)
    if not url:
        reason = f"{S3_URL_ENV} is not set: start one with `tests/moto_server.sh start` and export its URL"
        missing(reason)
    if not object_store.jars():
        pytest.fail("the S3A jars are not in .jars/s3: run `make install`")
    return url


def s3_client():
    import boto3

    return boto3.client("s3", endpoint_url=s3_url())


def keys(bucket: str, prefix: str = "") -> list[str]:
    client = s3_client()
    found, token = [], None
    while True:
        page = client.list_objects_v2(Bucket=bucket, Prefix=prefix, **({"ContinuationToken": token} if token else {}))
        found += [entry["Key"] for entry in page.get("Contents", [])]
        token = page.get("NextContinuationToken")
        if not token:
            return sorted(found)


class ServerRequests:
    """The requests the S3 server logged for one bucket since the last mark: moto's request log (one line per
    request, .moto-server/<port>/requests.log, tests/moto_server.sh), filtered by bucket so that other tests
    running against the same server at the same time do not count. None when the log is not on this machine."""

    _LINE = re.compile(r'"(GET|PUT|POST|HEAD|DELETE) (/[^ ?/]+)(\S*) HTTP')

    def __init__(self, bucket: str):
        port = urlparse(s3_url()).port
        self.path = Path(__file__).resolve().parents[1] / ".moto-server" / str(port) / "requests.log"
        self.bucket = bucket
        self.offset = 0

    def available(self) -> bool:
        return self.path.is_file()

    def mark(self) -> None:
        self.offset = self.path.stat().st_size

    def since(self) -> list[tuple[str, str]]:
        """(kind, path) of each request: kind LIST for a GET that lists (list-type), else the method."""
        with open(self.path, "rb") as log:
            log.seek(self.offset)
            text = log.read().decode("utf-8", "replace")
        found = []
        for method, bucket, rest in self._LINE.findall(text):
            if bucket.strip("/") == self.bucket:
                found.append(("LIST" if method == "GET" and "list-type" in rest else method, rest))
        return found
