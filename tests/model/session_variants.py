"""Session settings the model tests draw per batch (issue 67): no outcome may rest on one configuration.

A batch runs on the test session as it is (tombstones applied by our extension's expression and Parquet
source, or through Spark Connect by the UDF), on a session without the extension (the UDF, as a user's own
session has it) or with deletion vectors off (the join, as without the jar); with 1, 2 or 4 shuffle
partitions; with the frames it writes in 1, 2 or 4 partitions (files per write, and which row lands where);
and with a scan's files packed into one partition or each in its own (as a session with several cores
splits them); and with an upsert reading only the files whose key range can hold its keys from the first
such file at any size, or only past its usual count and bytes of them (row_writes._upsert_key_range). The master and the JVM's
static settings stay the test session's: the feed's own test (tests/core/test_feed_across_merge_sessions.py)
runs whole sessions of other kinds, on local[1] and local[2].
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass

from hypothesis import strategies as st

from dbt.adapters.branchspark.core.connect import is_connect
from dbt.adapters.branchspark.core.row_writes import UPSERT_RANGE_BYTES_ENV, UPSERT_RANGE_FILES_ENV
from dbt.adapters.branchspark.core.storage import deletion_vectors
from tests.sessions import make_active
from tests.spark_settings import session_settings

READ_PATHS = ("session", "udf", "join")
_UDF_NAME = "branchspark_deleted_row_as_udf"  # the test session's extension shadows the function's own name
_OPEN_COST = "spark.sql.files.openCostInBytes"


@dataclass(frozen=True)
class SessionVariant:
    read: str = "session"
    shuffle_partitions: int = 1
    write_split: int = 0  # 0: frames as the session makes them (one partition in test sessions)
    file_per_scan_partition: bool = False

    @property
    def upsert_ranges_always(self) -> bool:
        """Half the variants, from the drawn fields rather than a draw of its own: one more draw would shift every
        later batch of the derandomized profile, and the cases it reaches (test_engine_against_model.py)."""
        parts = (READ_PATHS.index(self.read), self.shuffle_partitions // 2, self.write_split // 2,
                 int(self.file_per_scan_partition))
        return sum(parts) % 2 == 1

    def __str__(self) -> str:
        return (f"read={self.read}, shuffle partitions={self.shuffle_partitions}, "
                f"write split={self.write_split or 'as made'}, "
                f"scan partitions={'a file each' if self.file_per_scan_partition else 'packed'}, "
                f"upsert key ranges={'always' if self.upsert_ranges_always else 'as usual'}")


def variants():
    return st.builds(SessionVariant, st.sampled_from(READ_PATHS), st.sampled_from([1, 2, 4]),
                     st.sampled_from([0, 2, 4]), st.booleans())


@contextmanager
def varied_session(spark, variant: SessionVariant):
    """The session a batch of `variant` runs on; the test session's settings come back afterwards."""
    session, saved_function, saved_env = spark, deletion_vectors.FUNCTION, os.environ.get("BRANCHSPARK_DELETION_VECTORS")
    saved_ranges = os.environ.get(UPSERT_RANGE_FILES_ENV)
    saved_bytes = os.environ.get(UPSERT_RANGE_BYTES_ENV)
    if variant.upsert_ranges_always:  # the model's tables are small: any size too
        os.environ[UPSERT_RANGE_FILES_ENV] = "1"
        os.environ[UPSERT_RANGE_BYTES_ENV] = "0"
    if variant.read == "udf" and not is_connect(spark) and deletion_vectors.enabled(spark):
        deletion_vectors.FUNCTION = _UDF_NAME
        session = spark.newSession()  # registers the UDF on first read
    elif variant.read == "join":
        os.environ["BRANCHSPARK_DELETION_VECTORS"] = "off"
    settings = {"spark.sql.shuffle.partitions": variant.shuffle_partitions}
    if variant.file_per_scan_partition:  # a file's open cost counts as a whole partition's bytes
        settings[_OPEN_COST] = 128 << 20
    try:
        with session_settings(session, settings):
            yield session
    finally:
        make_active(spark)
        deletion_vectors.FUNCTION = saved_function
        for name, value in (("BRANCHSPARK_DELETION_VECTORS", saved_env), (UPSERT_RANGE_FILES_ENV, saved_ranges),
                            (UPSERT_RANGE_BYTES_ENV, saved_bytes)):
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
