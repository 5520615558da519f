"""The core: catalog, storage, writes, merge and changes behind the Lakehouse front door.

Plain PySpark: nothing under this package imports dbt, the dbt surface (`adapter/`), the command
line, the Iceberg server or the local engine (tests/core/test_imports.py checks it).
"""
