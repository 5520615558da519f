"""Helpers of the object-storage tests (issue 51) on the S3-compatible server tests/run.sh starts (tests/moto_server.sh).

Its URL comes from BRANCHSPARK_TEST_S3_URL, and tests/conftest.py sets the four AWS variables from it: the
tests reach the store through them alone. Without it a test skips with the reason printed (a local run);
in CI (CI=true) it fails instead. Each test gets a bucket of its own.
"""
from __future__ import annotations

import os
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
