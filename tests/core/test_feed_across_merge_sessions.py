"""Issue 67: the change feed across a merge is the difference of the two versions (SPEC 4) in every kind of
session a user reads through, on one core and on two, with 1, 2 and 4 shuffle partitions: nothing about a
row's identity may rest on how Spark split or ordered the work. Each kind of session is a JVM of its own
(tests/core/feed_session_process.py); `make test` runs a user's own session on local[2] with 2 shuffle partitions,
`make test-long` every kind on local[1] and local[2], issue 55's reproduction 5 times each. The in-process
variants (the UDF, the join, the session's own way, through Spark Connect too) are in
tests/core/test_merge_keyless_on_conflict.py."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.depth import sized

ROOT = Path(__file__).resolve().parents[2]
# `make test`: a user's own session on two cores, its own JVM (branchspark's session, the extension's way, is the
# in-process test session's: tests/core/test_merge_keyless_on_conflict.py); a JVM and its scenarios cost 1-2 minutes
SESSIONS = sized([("own", "local[2]")],
                 [(kind, master) for kind in ("own", "branchspark", "join") for master in ("local[1]", "local[2]")])
REPEATS = sized(1, 5)
PARTITIONS = sized("2", "1,2,4")  # each scenario is several Spark jobs: make test runs one count, long all three

pytestmark = pytest.mark.deep


@pytest.mark.parametrize("kind, master", SESSIONS, ids=[f"{k}-{m}" for k, m in SESSIONS])
def test_change_feed_across_a_merge_is_the_difference_in_every_session(kind, master, spark_connect_url):
    if spark_connect_url:
        pytest.skip("sessions of their own JVM: the in-process pass runs them (Connect: the in-process variants)")
    command = [sys.executable, "-m", "tests.core.feed_session_process", "--session", kind, "--master", master,
               "--partitions", PARTITIONS, "--repeats", str(REPEATS)] + sized([], ["--all"])
    env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    env.pop("SPARK_REMOTE", None)
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=sized(900, 3600))
    runs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and done.stdout.rstrip().endswith("done"), (
        f"the {kind} session on {master} stopped: {done.stderr.strip().splitlines()[-5:]}")
    problems = [f"{r['partitions']} shuffle partition(s), run {r['run']}: {p}" for r in runs for p in r["problems"]]
    assert runs and not problems, f"{kind} session on {master}:\n" + "\n".join(problems)
