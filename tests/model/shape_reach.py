"""Which keyless shapes of issue 55 a profile's cases reach, found with the model alone (no Spark, seconds).

    python -m tests.model.shape_reach [--batches 2] [--batch 11]

Runs the model test's own derandomized draws (test_engine_against_model.py, the same hypothesis settings, so
the same cases as `make test` at that size) through the model only: each case's histories are played on the
model and merged as its settling merge would be, and the shapes are counted as the test counts them. The test
asserts that every shape is reached; a size whose draws miss one fails there after minutes of Spark. This says
so first, and is how the `quick` profile's size was chosen (profiles.py).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=None, help="batches per kind (the profile's by default)")
    parser.add_argument("--batch", type=int, default=None, help="cases per batch (the profile's by default)")
    args = parser.parse_args()
    if args.batches is not None:
        os.environ["BRANCHSPARK_MODEL_BATCHES"] = str(args.batches)
    if args.batch is not None:
        os.environ["BRANCHSPARK_MODEL_BATCH"] = str(args.batch)
    # imported after the environment is set: profiles.py reads it at import
    import tests.model.driver as driver
    import tests.model.test_engine_against_model as model_test
    from tests.model.cases import KEYED_COLUMNS, KEYLESS_COLUMNS, concrete, row_dict, run_on_model
    from tests.model.model import Branch, Table, Universe, merge

    def model_only_batch(_spark, cases, shapes=None, split=0, **_):
        """driver.run_batch's histories on the model alone: Batch.build and Batch.play without the engine."""
        for case in cases:
            columns = KEYED_COLUMNS if case.keyed else KEYLESS_COLUMNS
            empty = Table.create(Universe(), case.keyed, columns)
            rows = [row_dict(empty.columns, r) for r in case.base]
            if case.keyed:
                rows = list({r["id"]: r for r in rows}.values())
            base = Table.create(empty.universe, case.keyed, columns, rows)
            tracked = driver.Tracked(case, "t", base, Branch(base), Branch(base))
            second = Branch(base)  # the base's second segment, as Batch.build writes it
            later = concrete(("insert", case.base_later), second, "base", [0]) if case.base_later else None
            if later:
                run_on_model(later, second)
            tracked.src, tracked.dest = Branch(base.copy()), Branch(base.copy())
            for side, branch in (("src", tracked.src), ("dest", tracked.dest)):
                for drawn in getattr(case, side):
                    op = concrete(drawn, branch, side, tracked.counter)
                    if op is not None:
                        run_on_model(op, branch)
            shapes.update(driver.keyless_settled_shapes(tracked, merge(base, tracked.src, tracked.dest, case.mode)))
        return []

    class Output:  # the test's capsys: its report goes to stderr as in a run
        @staticmethod
        def disabled():
            return contextlib.nullcontext()

    model_test.run_batch = model_only_batch
    model_test.varied_session = lambda spark, variant: contextlib.nullcontext(spark)
    try:
        model_test.test_merges_and_changes_match_the_model(None, False, Output())
    except AssertionError as missed:
        print(f"not every shape: {missed}", file=sys.stderr)
        return 1
    print("every shape reached", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
