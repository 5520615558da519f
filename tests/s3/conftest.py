"""Fixtures of the object-storage tests: a bucket of its own per test (helpers: tests/s3_store.py)."""
from __future__ import annotations

import uuid

import pytest

from tests.s3_store import s3_client


@pytest.fixture
def bucket() -> str:
    name = f"bs-{uuid.uuid4().hex[:16]}"
    s3_client().create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3_warehouse(bucket) -> str:
    return f"s3a://{bucket}/lake"


@pytest.fixture
def s3_catalog(tmp_path) -> str:
    return f"sqlite:///{tmp_path}/catalog.db"
