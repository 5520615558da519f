"""`branchspark serve`: an Apache Iceberg REST catalog over the branches (SPEC sections 6, 11): reads, and
writes on branches.

routes.py speaks HTTP, service.py answers from the catalog, metadata.py builds Iceberg table metadata over
a table version's own files, deletes.py turns tombstones into position deletes, schema.py maps schemas and
types, files.py owns where the metadata files live; writes.py takes a client's commits as branchspark
transactions and commit_data.py turns its snapshots into segments and tombstones. Nothing here imports dbt; lakehouse.py imports only
files.py (for gc).
"""
