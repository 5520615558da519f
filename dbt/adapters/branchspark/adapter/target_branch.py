"""A dbt target's lakehouse: one Lakehouse per (session, warehouse, catalog) in this process, and the author
its commits name. The branch session and its write transactions are the core's (core/sql/branch_session.py)."""

import getpass
import threading
from typing import Dict, Optional, Tuple

from pyspark.sql import SparkSession

from dbt.adapters.branchspark.core.lakehouse import Lakehouse

_lakehouses: Dict[Tuple[int, str, Optional[str]], object] = {}
_cache_lock = threading.Lock()


def open_lakehouse(spark: SparkSession, warehouse: str, catalog_url: Optional[str]):
    """One Lakehouse per (session, warehouse, catalog) in this process."""
    key = (id(spark), warehouse, catalog_url)
    with _cache_lock:
        lakehouse = _lakehouses.get(key)
        if lakehouse is None:
            lakehouse = _lakehouses[key] = Lakehouse(spark, warehouse=warehouse, catalog_url=catalog_url)
        return lakehouse


def _author() -> str:
    try:
        return f"dbt ({getpass.getuser()})"
    except (KeyError, OSError):  # no user name in the environment or the password database
        return "dbt"
