"""Random histories on two branches, merged by the engine and by the model (tests/model/model.py)."""
import pytest
from hypothesis import given

from tests.model.cases import batches
from tests.model.driver import run_batch
from tests.model.profiles import BATCH_SIZE, engine_settings


@pytest.mark.parametrize("keyed", [False, True], ids=["keyless", "keyed"])
def test_merges_and_changes_match_the_model(spark, keyed):
    @engine_settings()
    @given(batch=batches(keyed, BATCH_SIZE))
    def check(batch):
        problems = run_batch(spark, batch)
        assert not problems, f"{len(problems)} mismatch(es):\n" + "\n".join(problems)

    check()
