"""`branchspark serve`: a read-only Apache Iceberg REST catalog over the branches (SPEC section 6).

routes.py speaks HTTP, service.py answers from the catalog, metadata.py builds Iceberg table metadata over
a table version's own files, deletes.py turns tombstones into position deletes, schema.py maps schemas and
types, files.py owns where the metadata files live. Nothing here imports dbt; lakehouse.py imports only
files.py (for gc).
"""
