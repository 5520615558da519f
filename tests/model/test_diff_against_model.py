"""branch_diff against the independent model (tests/model/model.py): random histories on two branches, then
two-dot and three-dot diffs between them, before and after a merge, must equal the model's, keyed and
keyless, across overwrites, compactions and schema changes; the merge preview must equal what the merge
then reports.

The model's diff of two versions of a table: both versions' rows, as each version reads them, in the `to`
version's columns (matched by column id; a column the `from` version lacks is NULL in its rows), as multisets; removed = from - to, added = to - from; on a keyed table a key on both sides is
modified (old and new row, the columns that differ). Schema changes by column id: added, dropped, renamed,
type. The operations and the model come from tests/model (driver.Batch, cases); only the diff is new here.

Profiles (BRANCHSPARK_DIFF_PROFILE): `ci` (default) one batch of 12 tables per kind, derandomized (about
two minutes per kind on a busy 2-core machine); `wide` 3 batches of 10; `long` 30 batches of 30, random
(hypothesis prints a `@reproduce_failure` blob of a failing batch). A batch is many independent tables
through one branch pair, as in test_engine_against_model.py.
"""
import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core.diff import CHANGED, DIFF_TYPE, OLD, branch_diff
from dbt.adapters.branchspark.errors import MergeConflict
from tests.model.cases import batches
from tests.model.driver import Batch, _json_rows
from tests.model.model import KEY, Table, merge

# `make test-model-long` (BRANCHSPARK_MODEL_PROFILE=long) runs the long profile here too
PROFILE = os.environ.get("BRANCHSPARK_DIFF_PROFILE") or (
    "long" if os.environ.get("BRANCHSPARK_MODEL_PROFILE") == "long" else "ci")
EXAMPLES, BATCH_SIZE = {"ci": (1, 12), "wide": (3, 10), "long": (30, 30)}[PROFILE]
OLD_ROW = "old"  # the engine frame's extra diff type: a modified key's old row

# `make test-long` only (2026-12-03, the suite's time): a second random oracle beside the model test, which
# `make test` runs; `make test` keeps branch_diff's own cases (tests/core/test_diff.py) and the dbt and UI diffs
pytestmark = pytest.mark.long_only


def model_diff(before: Table, after: Table) -> dict:
    """{"removed"|"added"|"modified"|"old": Counter of rows as sorted (name, value) tuples (modified: with the
    changed column names)}; "schema": the set of (kind, column)."""
    columns = after.columns

    def named(image):
        return tuple(sorted((c.name, v) for c, v in zip(columns, image)))

    # (Table.project reads an empty column list as "this table's columns": a table whose every column was
    # dropped holds only row counts)
    # Each version's rows as that version reads them: a column `before` lacks (it dropped it, or `after` added
    # it) is NULL in its rows, even where its files still hold a value under that id.
    known = {c.id for c in before.columns}
    old = Counter(tuple(r.values.get(c.id) if c.id in known else None for c in columns) for r in before.rows.values())
    new = Counter(tuple(r.values.get(c.id) for c in columns) for r in after.rows.values())
    removed, added = old - new, new - old
    out = {"removed": Counter(), "added": Counter(), "modified": Counter(), "old": Counter()}
    if after.keyed:
        index = [c.id for c in columns].index(KEY)
        gone = {image[index]: image for image in removed.elements()}
        came = {image[index]: image for image in added.elements()}
        for key in set(gone) | set(came):
            if key in gone and key in came:
                changed = tuple(sorted(c.name for c, a, b in zip(columns, gone[key], came[key]) if a != b))
                out["modified"][(named(came[key]), changed)] += 1
                out["old"][named(gone[key])] += 1
            elif key in gone:
                out["removed"][named(gone[key])] += 1
            else:
                out["added"][named(came[key])] += 1
    else:
        out["removed"] = Counter({named(i): n for i, n in removed.items()})
        out["added"] = Counter({named(i): n for i, n in added.items()})
    ids = {c.id: c for c in before.columns}
    schema = set()
    for c in columns:
        if c.id not in ids:
            schema.add(("added", c.name))
            continue
        if ids[c.id].name != c.name:
            schema.add(("renamed", c.name))
        if ids[c.id].type != c.type:
            schema.add(("type", c.name))
    schema |= {("dropped", c.name) for c in before.columns if c.id not in {x.id for x in columns}}
    out["schema"] = schema
    return out


def engine_diffs(lh, from_, to, mode, names) -> dict:
    """{table: the same shape as model_diff} from branch_diff, all tables' rows in one Spark job."""
    diff = branch_diff(lh, from_, to, mode=mode, preview=False)
    frames = {}
    for t in diff.tables:
        if t.rows is None:
            continue
        frame = t.rows.relation()
        if t.rows.modified is not None:
            frame = frame.unionByName(t.rows.modified.select(
                F.lit(OLD_ROW).alias(DIFF_TYPE), f"{OLD}.*", CHANGED))
        frames[t.name] = frame
    found = _json_rows(frames)
    out = {}
    for name in names:
        table = diff.table(name)
        got = {"removed": Counter(), "added": Counter(), "modified": Counter(), "old": Counter(),
               "schema": {(c.kind, c.column) for c in table.schema_changes} if table else set()}
        for row in found.get(name, []):
            kind, changed = row.pop(DIFF_TYPE), row.pop(CHANGED)
            image = tuple(sorted(row.items()))
            got[kind][(image, tuple(sorted(changed))) if kind == "modified" else image] += 1
        out[name] = got
    return out


def compare(batch: Batch, what: str, engine: dict, expected: dict) -> None:
    for t in batch.tracked:
        got, want = engine[t.name], expected[t.name]
        for part in ("removed", "added", "modified", "old", "schema"):
            if got[part] != want[part]:
                batch.problem(t, f"{what}: {part}: engine {dict(got[part]) if part != 'schema' else got[part]}, "
                                 f"model {dict(want[part]) if part != 'schema' else want[part]}")


def run_diff_batch(spark, cases) -> tuple[list[str], int]:
    """The mismatches of one batch, and how many tables' post-merge diff was not checked (the engine's merge
    itself disagreed with the model there: tests/model/test_engine_against_model.py reports those)."""
    batch = Batch(spark, cases)
    lh = batch.lh
    skipped = 0
    try:
        batch.build()
        for side in ("src", "dest"):
            batch.play(side, {t.name: getattr(t.case, side) for t in batch.tracked})
        names = [t.name for t in batch.tracked]
        compare(batch, "two-dot dest..src", engine_diffs(lh, "dest", "src", "two_dot", names),
                {t.name: model_diff(t.dest.table, t.src.table) for t in batch.tracked})
        compare(batch, "three-dot dest...src", engine_diffs(lh, "dest", "src", "three_dot", names),
                {t.name: model_diff(t.base, t.src.table) for t in batch.tracked})
        compare(batch, "three-dot src...dest", engine_diffs(lh, "src", "dest", None, names),
                {t.name: model_diff(t.base, t.dest.table) for t in batch.tracked})
        # The preview equals what the merge reports.
        preview = branch_diff(lh, "dest", "src").preview
        before_merge = lh.get_branch("dest").head
        try:
            lh.merge("src", "dest")
            reported = []
        except MergeConflict as exc:
            reported = exc.report.conflicts
            lh.merge("src", "dest", on_conflict={t.name: t.case.mode for t in batch.tracked})
        if preview.conflicts != reported:  # the same Conflict records, in the same order
            batch.problem(None, f"merge preview {preview.conflicts}, the merge reported {reported}")
        if (preview.status == "conflicts") != bool(reported):
            batch.problem(None, f"merge preview status {preview.status}, the merge reported {reported}")
        # Across the merge: dest before it against dest after it; and src...dest is now empty.
        settled = {t.name: merge(t.base, t.src, t.dest, t.case.mode).table for t in batch.tracked}
        dest_now = lh.snapshot("dest")
        merged_rows = _json_rows({t.name: lh.read(t.name, at="dest") for t in batch.tracked})
        agreed = {t.name for t in batch.tracked
                  if Counter(tuple(sorted(r.items())) for r in merged_rows[t.name]) == settled[t.name].named_rows()
                  and {c.name: c.type for c in dest_now.table(t.name).columns} == settled[t.name].schema()}
        skipped = len(batch.tracked) - len(agreed)
        across = engine_diffs(lh, before_merge, "dest", "two_dot", names)
        expected = {t.name: model_diff(t.dest.table, settled[t.name]) for t in batch.tracked}
        for t in batch.tracked:
            if t.name in agreed:
                for part in ("removed", "added", "modified", "old", "schema"):
                    if across[t.name][part] != expected[t.name][part]:
                        batch.problem(t, f"two-dot across the merge: {part}: engine {across[t.name][part]}, "
                                         f"model {expected[t.name][part]}")
        after = engine_diffs(lh, "dest", "src", "three_dot", names)
        for t in batch.tracked:
            leftover = {k: v for k, v in after[t.name].items() if v}
            if leftover:
                batch.problem(t, f"three-dot dest...src after merging src: {leftover}, the model: nothing")
        return batch.problems, skipped
    finally:
        batch.close()


@pytest.mark.parametrize("keyed", [False, True], ids=["keyless", "keyed"])
def test_diffs_match_the_model(spark, keyed):
    ran, skipped = [], []

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=PROFILE != "long", print_blob=True,
              phases=[Phase.explicit, Phase.reuse, Phase.generate], suppress_health_check=list(HealthCheck),
              database=None)
    @given(batch=batches(keyed, BATCH_SIZE, BATCH_SIZE))
    def check(batch):
        problems, unchecked = run_diff_batch(spark, batch)
        ran.append(len(batch))
        skipped.append(unchecked)
        assert not problems, f"{len(problems)} mismatch(es):\n" + "\n".join(problems)

    check()
    assert sum(ran) >= EXAMPLES * BATCH_SIZE
    if sum(skipped):
        print(f"post-merge diff not checked for {sum(skipped)} of {sum(ran)} tables: the engine's merge differs "
              f"from the model there (reported by test_engine_against_model.py)")
