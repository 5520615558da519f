"""SQL over branches: the statements dbt, `Lakehouse.sql` and the `branchspark sql` shell send (SPEC 9).

`statements.py` parses the branch statements (pure Python), `router.py` routes every statement (branch
statements to `branch_statements.py`, writes to core transactions, reads to Spark over the session's temp
views of its branch: `temp_views.py`, `branch_session.py`), `version_reads.py` rewrites reads at another
version and the table functions, `session.py` is `Lakehouse.sql`'s session. Nothing here imports dbt.
"""
