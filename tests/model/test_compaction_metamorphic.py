"""Metamorphic (SPEC 3.3): compactions added anywhere in either side's history (or the base) never change a
merge's outcome: the same rows, schema and reported conflicts as without any compaction. No model needed:
each case runs twice in one batch, without and with the compactions, and the engine must agree with itself.
A batch holds half as many cases as the model test's (each runs twice), 8 pairs in `make test`."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.model.cases import cases, changes_something
from tests.model.driver import run_compaction_pairs
from tests.model.profiles import MIN_BATCH, PAIR_EXAMPLES, PAIRS_PER_BATCH, SHRINK, engine_settings
from tests.model.session_variants import variants, varied_session

positions = st.fixed_dictionaries({}, optional={"src": st.lists(st.integers(0, 4), min_size=1, max_size=3),
                                                "dest": st.lists(st.integers(0, 4), min_size=1, max_size=3),
                                                "base": st.just(True)})

# full in `make test-long` (profiles.py); not in `make test` (2026-12-03, the suite's time): the model test's
# histories there compact either side before, between and after their writes and check the merge against the
# model, and tests/model/test_found_cases.py keeps what this test found
pytestmark = [pytest.mark.deep, pytest.mark.long_only]


@pytest.mark.parametrize("keyed", [False, True], ids=["keyless", "keyed"])
def test_compactions_never_change_a_merge(spark, keyed):
    ran = []

    @engine_settings(PAIR_EXAMPLES)
    # (a batch without a compaction, or without an operation, would compare a merge with itself)
    @given(data=st.lists(st.tuples(cases(keyed), positions), min_size=min(PAIRS_PER_BATCH, max(1, MIN_BATCH // 2)),
                         max_size=PAIRS_PER_BATCH)
           .filter(lambda data: any(where for _, where in data) and changes_something([c for c, _ in data])),
           variant=variants())
    def check(data, variant):
        ran.append(len(data))
        with varied_session(spark, variant) as session:  # drawn per batch (issue 67)
            problems = run_compaction_pairs(session, [c for c, _ in data], [p for _, p in data], variant.write_split)
        assert not problems, f"{len(problems)} mismatch(es) under {variant}:\n" + "\n".join(problems)

    check()
    wanted = PAIR_EXAMPLES * PAIRS_PER_BATCH
    assert SHRINK or sum(ran) >= wanted, f"only {sum(ran)} pairs ran, the profile wants {wanted}"
