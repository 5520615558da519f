"""Hypothesis settings of the engine-against-model tests, chosen by BRANCHSPARK_MODEL_PROFILE, whose default
follows the test depth (tests/depth.py):

- `quick` (`make test` and CI): 2 batches of 11 tables per table kind = 22 cases per kind, derandomized (the
  same cases every run, so a failure reproduces by running the test again), each batch under its own drawn
  session settings. 11 since 2026-12-03 (20 before, 30 before 2026-12-02; the test was a fifth of `make test`'s
  time): the size is one whose derandomized draws reach every keyless shape the test asserts (KEYLESS_SETTLED_SHAPES),
  which other sizes miss by chance (12-17 per batch, one batch of 20-30: `python -m tests.model.shape_reach`, the
  test's draws through the model alone, no Spark);
  a change to the generator (cases.py) re-draws them, and the test then says which shape it missed;
- `full` (`make test-long`; `ci` is its older name): 10 batches of 30, 300 cases per kind, derandomized (not a
  superset of `quick`'s: hypothesis draws another sequence for another example count);
- `long`: random batches of 30 (BRANCHSPARK_MODEL_BATCHES of them, default 5) under the seed pytest's
  `--hypothesis-seed` gives; `make test-model-long` (tests/model/long_run.py) runs it in chunks, one seed
  each, until 2,550 cases per kind have run; hypothesis prints a `@reproduce_failure` blob of a failing batch;
- `smoke`: one batch of 8, for a quick look.

A case is one table with its own history; a batch drives all its tables through one branch pair and one
merge, since a Spark write costs 0.1-0.5 s and one table per merge would not fit the time budget.
Shrinking a failing batch re-runs Spark many times, so it is off unless BRANCHSPARK_MODEL_SHRINK=1: each
mismatch line already names the one table (and its history) that fails.
"""
import os

from hypothesis import HealthCheck, Phase, settings

from tests.depth import sized

PROFILES = ("smoke", "quick", "full", "long")
PROFILE = os.environ.get("BRANCHSPARK_MODEL_PROFILE") or sized("quick", "full")
PROFILE = {"ci": "full"}.get(PROFILE, PROFILE)
if PROFILE not in PROFILES:
    raise SystemExit(f"BRANCHSPARK_MODEL_PROFILE={PROFILE!r} is not a profile: use one of {', '.join(PROFILES)}")
EXAMPLES, BATCH_SIZE = {"smoke": (1, 8), "quick": (2, 11), "full": (10, 30), "long": (5, 30)}[PROFILE]
# the metamorphic test's batches: fewer, as the model test covers compaction too. `make test-long` runs 10 per
# kind, 150 pairs (300 merged histories, as many as the model test's 300 cases): its 40 of before took about
# 90 minutes per kind, more than the rest of `make test-long` together (2026-11-29)
PAIR_EXAMPLES = {"smoke": 1, "quick": 1, "full": 10, "long": 10}[PROFILE]
# and their pairs per batch: half a model batch, but 4 in `make test`'s one batch (15 pairs cost about a minute
# per kind there, 8 took 39 s keyless and 20 s keyed in CI's log of 2026-11-29; the model test's 40 cases per kind
# have compactions too)
PAIRS_PER_BATCH = {"quick": 4}.get(PROFILE)
BATCH_SIZE = int(os.environ.get("BRANCHSPARK_MODEL_BATCH", BATCH_SIZE))
PAIRS_PER_BATCH = PAIRS_PER_BATCH or max(1, BATCH_SIZE // 2)
EXAMPLES = int(os.environ.get("BRANCHSPARK_MODEL_BATCHES", EXAMPLES))
SHRINK = bool(os.environ.get("BRANCHSPARK_MODEL_SHRINK"))
# Then dest merged back into src, which must then read as dest does (driver.merge_back_and_check): an
# extra check beyond issue 19's list, 15% of a keyed batch's time (measured 2026-11-26), so only the long
# profile runs it: the random chunks of the long ledger, which `make test-long` ends with;
# BRANCHSPARK_MODEL_MERGE_BACK=0/1 decides for any profile.
MERGE_BACK = os.environ.get("BRANCHSPARK_MODEL_MERGE_BACK", "1" if PROFILE in ("long", "smoke") else "0") != "0"
MIN_BATCH = 1 if SHRINK else BATCH_SIZE  # full batches unless shrinking, so the case count is known
MIN_CASES = EXAMPLES * BATCH_SIZE


def engine_settings(examples: int = EXAMPLES):
    return settings(max_examples=examples, deadline=None, derandomize=PROFILE != "long", print_blob=True,
                    phases=[Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if SHRINK else []),
                    suppress_health_check=list(HealthCheck), database=None)
