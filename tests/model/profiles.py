"""Hypothesis settings of the engine-against-model tests: BRANCHSPARK_MODEL_PROFILE=ci (default) or long."""
import os

from hypothesis import HealthCheck, Phase, settings

PROFILE = os.environ.get("BRANCHSPARK_MODEL_PROFILE", "ci")
BATCH_SIZE = int(os.environ.get("BRANCHSPARK_MODEL_BATCH", "30"))
EXAMPLES = {"small": 1, "ci": 10, "long": 170}[PROFILE]


def engine_settings():
    return settings(max_examples=EXAMPLES, deadline=None, derandomize=PROFILE != "long", print_blob=True,
                    phases=[Phase.explicit, Phase.reuse, Phase.generate]
                    + ([Phase.shrink] if os.environ.get("BRANCHSPARK_MODEL_SHRINK") else []),
                    suppress_health_check=list(HealthCheck), database=None)
