"""The local engine: one warm Spark Connect server per user, shared by dbt (`method: local`) and the
`branchspark` command line, started on first use and stopped after an idle time (SPEC section 7).

state.py (files and lock), lifecycle.py (start, check, replace, stop), supervisor.py (the process that
runs the JVM and stops it when idle), client.py (a process attaching to it).
"""
