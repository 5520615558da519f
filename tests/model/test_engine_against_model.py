"""Random histories on two branches, merged by the engine and by the model (tests/model/model.py).

`@given` over generated batches rather than a RuleBasedStateMachine: a state machine steps one operation
at a time on one engine state, so every case would pay its own merge and branch pair; generated histories
let one batch of many independent tables go through one branch pair and one merge (per on_conflict), with
the model predicting each table, and each table's history shrinks on its own.
"""
import os
import sys
import time

import pytest
from hypothesis import given

from tests.model.cases import batches
from collections import Counter

from tests.model.driver import KEYLESS_SETTLED_SHAPES, run_batch
from tests.model.profiles import BATCH_SIZE, MIN_BATCH, MIN_CASES, SHRINK, engine_settings
from tests.model.session_variants import variants, varied_session

# BRANCHSPARK_MODEL_FROM_BATCH=N runs a derandomized profile from its N-th batch on: a failure CI found in
# batch 9 reproduces without running batches 1-8 again.
FIRST_BATCH = int(os.environ.get("BRANCHSPARK_MODEL_FROM_BATCH", 1))

pytestmark = pytest.mark.deep  # quick in `make test`, full in `make test-long` (profiles.py)


@pytest.mark.parametrize("keyed", [False, True], ids=["keyless", "keyed"])
def test_merges_and_changes_match_the_model(spark, keyed, capsys):
    ran = []
    shapes = Counter()

    @engine_settings()
    @given(batch=batches(keyed, MIN_BATCH, BATCH_SIZE), variant=variants())
    def check(batch, variant):
        ran.append(len(batch))
        if len(ran) < FIRST_BATCH:  # generated (the same batches follow) but not run
            return
        with varied_session(spark, variant) as session:  # drawn per batch (issue 67)
            problems = run_batch(session, batch, shapes=shapes, split=variant.write_split)
        if os.environ.get("BRANCHSPARK_MODEL_PROGRESS"):  # long runs: a line per batch (run pytest with -s)
            with capsys.disabled():  # long_run.py counts a chunk's cases from these lines
                print(f"{time.strftime('%H:%M:%S')} {'keyed' if keyed else 'keyless'}: batch {len(ran)}, "
                      f"{sum(ran)} cases, {len(problems)} mismatch(es), {variant}", file=sys.stderr, flush=True)
        assert not problems, f"{len(problems)} mismatch(es) under {variant}:\n" + "\n".join(problems)

    check()
    assert SHRINK or sum(ran) >= MIN_CASES, f"only {sum(ran)} cases ran, the profile wants {MIN_CASES}"
    if keyed:
        return
    report = ", ".join(f"{shape}: {shapes[shape]}" for shape in KEYLESS_SETTLED_SHAPES)
    with capsys.disabled():
        print(f"\nkeyless cases settled by ours/theirs, per shape (issue 55): {report}", file=sys.stderr)
    if not SHRINK and FIRST_BATCH == 1:
        missed = [shape for shape in KEYLESS_SETTLED_SHAPES if not shapes[shape]]
        assert not missed, f"no case reached {missed}: the generator (tests/model/cases.py) must reach them"
