"""The dbt surface: adapter, connections, credentials, relations, materialization writes, SQL
routing, run landing and run-operations, all on the core (`core/`)."""
