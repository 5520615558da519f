"""How deep a test run goes: `make test` runs short, `make test-long` runs long (BRANCHSPARK_TEST_DEPTH).

Both depths check the same kinds of behaviour; long runs more random cases and the stress tests at full size
(docs/performance.md, "What `make test` runs smaller"). Two markers say how a test takes part:

- `deep`: sized by the depth (`sized(short, long)` below): `make test` runs it small, `make test-long` full;
- `long_only`: run by `make test-long` only (another pass over what `make test` already checks, such as the
  in-process run of dbt's conformance suites, which `make test` runs through Spark Connect).

`make test-long` runs the `deep` and `long_only` tests; the rest are the same at both depths and run in
`make test` (tests/run.sh). A plain `pytest` runs short, leaving out the `long_only` tests (deselected, and
counted as such in pytest's summary line).
"""
import os

DEPTHS = ("short", "long")
DEPTH = os.environ.get("BRANCHSPARK_TEST_DEPTH", "short")
if DEPTH not in DEPTHS:
    raise SystemExit(f"BRANCHSPARK_TEST_DEPTH={DEPTH!r} is not a depth: use one of {', '.join(DEPTHS)}")
LONG = DEPTH == "long"


def sized(short, long):
    """`short` in `make test`, `long` in `make test-long`."""
    return long if LONG else short
