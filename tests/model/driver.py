"""Runs a batch of cases on the engine (through the public Lakehouse API only) and on the model, side by side.

Each case is its own table with its own random history; all tables go through ONE branch pair and the
same few merges, so a batch of N cases costs about N table writes per operation round, not N merges.
Returns the mismatches found, one line each, naming the table and its case so that one table's history
is the repro.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import reduce

from pyspark.sql import functions as F

from dbt.adapters.branchspark.core.changes import CHANGE_TYPE, COMMIT_ID, DELETE, table_changes
from dbt.adapters.branchspark.core.errors import MergeConflict
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from tests.model.cases import (KEYED_COLUMNS, KEYLESS_COLUMNS, Case, concrete, expression_sql, predicate_sql,
                               row_dict, run_on_model)
from tests.model.model import KEY, Branch, MergeOutcome, Table, Universe, merge
from tests.model.profiles import MERGE_BACK

DATABASE = "m"


@dataclass
class Tracked:
    """One case: its table name, the model's base and sides, and the changes each engine commit should list."""
    case: Case
    name: str
    base: Table
    src: Branch
    dest: Branch
    commits: dict = field(default_factory=dict)  # dest commit id -> (deleted values, inserted values) by id
    counter: list = field(default_factory=lambda: [0])


def _schema_ddl(columns) -> str:
    return ", ".join(f"`{c.name}` {c.type}" for c in columns)


def _frame(spark, table: Table, rows: list[dict], split: int = 0):
    """`rows` as a DataFrame; in `split` partitions (files of a write) when given (session_variants.py)."""
    df = spark.createDataFrame([tuple(r[c.name] for c in table.columns) for r in rows], _schema_ddl(table.columns))
    return df.repartition(split) if split else df


def _run_on_engine(spark, tx, name: str, table: Table, op: tuple, split: int = 0) -> None:
    kind = op[0]
    if kind == "insert":
        tx.insert(name, _frame(spark, table, op[1], split))
    elif kind == "delete":
        tx.delete(name, predicate_sql(*op[1:4]))
    elif kind == "update":
        tx.update(name, predicate_sql(*op[1:4]), {op[4]: expression_sql(op[4], op[5], op[6])})
    elif kind == "upsert":
        tx.upsert(name, _frame(spark, table, op[1], split))
    elif kind == "overwrite":
        tx.overwrite(name, _frame(spark, table, op[1], split))
    elif kind == "compact":
        tx.compact(name)
    elif kind == "add_column":
        tx.add_column(name, op[1], op[2])
    elif kind == "drop_column":
        tx.drop_column(name, op[1])
    elif kind == "rename_column":
        tx.rename_column(name, op[1], op[2])
    elif kind == "widen":
        tx.alter_column_type(name, op[1], op[2])


def _snapshot_rows(table: Table) -> dict:
    return {identity: dict(row.values) for identity, row in table.rows.items()}


def _named(values: dict, columns) -> tuple:
    return tuple(sorted((c.name, values.get(c.id)) for c in columns))


def _json_rows(frames: dict, extra: list[str] = ()) -> dict:
    """{name: [dict]} from {name: DataFrame} in ONE Spark job: each frame as JSON strings, all unioned."""
    if not frames:
        return {}
    parts = [df.select(F.lit(name).alias("_t"), F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns]),
                                                          {"ignoreNullFields": "false"}).alias("_j"))
             for name, df in frames.items()]
    out = {name: [] for name in frames}
    for row in reduce(lambda a, b: a.unionAll(b), parts).collect():
        out[row["_t"]].append(json.loads(row["_j"]))
    return out


def changed_keys(deleted: list[dict], inserted: list[dict]) -> set:
    """Keys whose row an operation replaced by a different one, in the columns of its own time."""
    before = {values[KEY]: values for values in deleted}
    return {values[KEY] for values in inserted if values[KEY] in before and before[values[KEY]] != values}


class Batch:
    def __init__(self, spark, cases: list[Case], split: int = 0):
        self.spark = spark
        self.cases = cases
        self.split = split  # partitions of the frames it writes (session_variants.py)
        self.problems: list[str] = []
        self.warehouse = tempfile.mkdtemp(prefix="model-batch-")
        self.lh = Lakehouse(spark, self.warehouse)

    def close(self) -> None:
        self.lh.store.dispose()
        shutil.rmtree(self.warehouse, ignore_errors=True)

    def problem(self, tracked: Tracked | None, text: str) -> None:
        where = f"{tracked.name} {tracked.case.describe()}: " if tracked else ""
        self.problems.append(where + text)

    # ------------------------------------------------------------ building the histories
    def build(self) -> list[Tracked]:
        spark, lh = self.spark, self.lh
        tracked = []
        with lh.transaction("main", message="base") as tx:
            tx.create_database(DATABASE)
            for i, case in enumerate(self.cases):
                universe = Universe()
                columns = KEYED_COLUMNS if case.keyed else KEYLESS_COLUMNS
                table = Table.create(universe, case.keyed, columns)
                rows = [row_dict(table.columns, r) for r in case.base]
                if case.keyed:
                    rows = list({r["id"]: r for r in rows}.values())
                table = Table.create(universe, case.keyed, columns, rows)
                name = f"{DATABASE}.t{i}"
                tx.create_table_as(name, _frame(spark, table, rows, self.split),
                                   primary_key=["id"] if case.keyed else None)
                tracked.append(Tracked(case, name, table, Branch(table), Branch(table)))
        with lh.transaction("main", message="base, second segment") as tx:
            for t in tracked:
                later = Branch(t.base)
                op = concrete(("insert", t.case.base_later), later, "base", [0]) if t.case.base_later else None
                if op:
                    run_on_model(op, later)
                    _run_on_engine(spark, tx, t.name, t.base, op, self.split)
        for t in tracked:
            t.src, t.dest = Branch(t.base.copy()), Branch(t.base.copy())
        self.base_commit = lh.snapshot("main").commit_id
        lh.create_branch("src", "main")
        lh.create_branch("dest", "main")
        self.tracked = tracked
        return tracked

    def play(self, side: str, histories: dict) -> None:
        """Round r runs the r-th operation of every table's history on `side`, as one commit."""
        rounds = max((len(h) for h in histories.values()), default=0)
        for r in range(rounds):
            pending = []
            with self.lh.transaction(side, message=f"round {r}") as tx:
                for t in self.tracked:
                    history = histories[t.name]
                    if r >= len(history):
                        continue
                    branch = t.src if side == "src" else t.dest
                    op = concrete(history[r], branch, side, t.counter)
                    if op is None:
                        continue
                    before = _snapshot_rows(branch.table)
                    _run_on_engine(self.spark, tx, t.name, branch.table, op, self.split)
                    run_on_model(op, branch)
                    after = _snapshot_rows(branch.table)
                    pending.append((t, [before[i] for i in before if i not in after],
                                    [after[i] for i in after if i not in before]))
            if side == "dest" and tx.commit_info is not None:
                for t, deleted, inserted in pending:
                    t.commits[tx.commit_info.id] = (deleted, inserted)

    # ------------------------------------------------------------ merging and checking
    def engine_conflicts(self, conflicts) -> dict:
        found = {}
        for c in conflicts:
            table = ".".join(c.object_name.split(".")[:2])
            found.setdefault(table, set()).add(c.rule)
        return found

    def merge_and_check(self) -> dict[str, MergeOutcome]:
        lh = self.lh
        predicted = {t.name: merge(t.base, t.src, t.dest, "abort") for t in self.tracked}
        settled = {t.name: merge(t.base, t.src, t.dest, t.case.mode) for t in self.tracked}
        expected_conflicts = {name: o.rules for name, o in predicted.items() if o.conflicts}
        # The engine plans a table's rows once its operation and schema conflicts are settled (as Dolt resolves
        # schema conflicts before data ones): with abort, a table with such a conflict lists no key conflict
        # (3.4) yet; settled by ours or theirs, both are listed.
        abort_conflicts = {name: {r for r in rules if not str(r).startswith("3.4")} or rules
                           for name, rules in expected_conflicts.items()}
        by_name = {t.name: t for t in self.tracked}
        head = lh.snapshot("dest").commit_id
        if expected_conflicts:
            try:
                lh.merge("src", "dest", on_conflict="abort")
                self.problem(None, f"merge with abort succeeded; the model expects conflicts in "
                                   f"{sorted(expected_conflicts)}")
                return {}
            except MergeConflict as exc:
                self._compare_conflicts(by_name, abort_conflicts, self.engine_conflicts(exc.report.conflicts))
            if lh.snapshot("dest").commit_id != head:
                self.problem(None, "a merge that raised MergeConflict moved dest's head")
        modes = {t.name: t.case.mode for t in self.tracked}
        try:
            result = lh.merge("src", "dest", on_conflict=modes)
        except MergeConflict as exc:
            self.problem(None, f"merge with ours/theirs per table raised: {exc}")
            return {}
        self._compare_conflicts(by_name, expected_conflicts, self.engine_conflicts(result.resolved))
        self.merge_commit = result.commit_id or lh.snapshot("dest").commit_id  # None: src made no commit
        self.merged_anew = result.commit_id is not None
        again = lh.merge("src", "dest", on_conflict=modes)
        if again.status != "up-to-date" or lh.snapshot("dest").commit_id != self.merge_commit:
            self.problem(None, f"a second merge was not a no-op: {again.summary()}")
        self._check_rows(settled)
        self._check_changes(settled)
        if self.merged_anew:
            self._check_merge_range(head, settled)
        return settled

    def merge_back_and_check(self) -> None:
        """dest merged into src, which changed nothing since: src must then read as dest does, table by table
        (the rows dest has were checked against the model). This merge's base is src's head, which a merge
        that decided rows one by one did not carry into dest as it is."""
        lh = self.lh
        try:
            lh.merge("dest", "src", on_conflict="abort")
        except MergeConflict as exc:
            self.problem(None, f"merging dest back into an unchanged src conflicts: {exc}")
            return
        back = _json_rows({t.name: lh.read(t.name, "src") for t in self.tracked})
        for t in self.tracked:
            got = Counter(tuple(sorted(r.items())) for r in back[t.name])
            want = self.engine_rows.get(t.name)
            if want is not None and got != want:
                self.problem(t, f"merged back into src: {dict(got - want)} more, {dict(want - got)} fewer than dest")

    def _compare_conflicts(self, by_name, expected: dict, found: dict) -> None:
        for name in sorted(set(expected) | set(found)):
            if expected.get(name, set()) != found.get(name, set()):
                self.problem(by_name.get(name), f"conflicts: model {sorted(expected.get(name, ()))}, "
                                                f"engine {sorted(found.get(name, ()))}")

    def _check_rows(self, settled: dict) -> None:
        snap = self.lh.snapshot(self.merge_commit)
        self.engine_rows = {}
        engine = _json_rows({t.name: snap.read(t.name) for t in self.tracked})
        for t in self.tracked:
            model = settled[t.name].table
            schema = {c.name: c.type for c in snap.table(t.name).columns}
            if schema != model.schema():
                self.problem(t, f"schema: model {model.schema()}, engine {schema}")
                continue
            got = Counter(tuple(sorted(r.items())) for r in engine[t.name])
            self.engine_rows[t.name] = got
            want = model.named_rows()
            if got != want:
                self.problem(t, f"rows: engine has {dict(got - want)} more, {dict(want - got)} fewer than "
                                f"the model")

    def _check_changes(self, settled: dict) -> None:
        """SPEC 4 between the base and the merge commit: replaying the changes on the base rows gives the merged
        rows; each dest commit lists exactly the rows its operation changed (the model's), the merge commit
        exactly the rows it changed on dest; no key both deleted and inserted with the same values at one
        commit."""
        lh = self.lh
        base_snap = lh.snapshot(self.base_commit)
        feeds = _json_rows({t.name: table_changes(lh, t.name, from_=self.base_commit, to=self.merge_commit)
                            for t in self.tracked})
        base_rows = _json_rows({t.name: base_snap.read(t.name) for t in self.tracked})
        for t in self.tracked:
            merged = settled[t.name].table
            columns = merged.columns
            names = {c.id: c.name for c in t.base.columns}
            # base rows, projected by column id onto the merged columns
            replayed = Counter(_named({cid: r[names[cid]] for cid in names}, columns) for r in base_rows[t.name])
            per_commit: dict = {}
            for change in feeds[t.name]:
                image = tuple(sorted((c.name, change.get(c.name)) for c in columns))
                deleted = change[CHANGE_TYPE] == DELETE
                per_commit.setdefault(change[COMMIT_ID], (Counter(), Counter()))[0 if deleted else 1][image] += 1
                if deleted:
                    if replayed[image] <= 0:
                        self.problem(t, f"change feed deletes a row that is not there: {image}")
                        break
                    replayed[image] -= 1
                else:
                    replayed[image] += 1
            else:
                engine_rows = self.engine_rows.get(t.name)
                if engine_rows is not None and +replayed != engine_rows:
                    self.problem(t, f"replaying the changes from the base gives {dict(+replayed)}, the merge "
                                    f"commit has {dict(engine_rows)}")
            expected = {cid: (Counter(_named(v, columns) for v in d), Counter(_named(v, columns) for v in i))
                        for cid, (d, i) in t.commits.items()}
            if self.merged_anew:
                expected[self.merge_commit] = self._merge_changes(t, merged)
            for commit in set(expected) | set(per_commit):
                want = tuple(+c for c in expected.get(commit, (Counter(), Counter())))
                got = per_commit.get(commit, (Counter(), Counter()))
                if want != got:
                    what = "the merge commit" if commit == self.merge_commit else f"dest commit {commit[:8]}"
                    self.problem(t, f"changes of {what}: engine deletes {dict(got[0])} inserts {dict(got[1])}, "
                                    f"model deletes {dict(want[0])} inserts {dict(want[1])}")
                if t.case.keyed:
                    key = next(c.name for c in columns if c.id == KEY)
                    # a commit before a column was dropped may have changed only that column: the feed (in the
                    # `to` columns) then shows the key deleted and inserted alike, yet the row did change
                    changed = changed_keys(*t.commits.get(commit, ([], [])))
                    same = {i for i in got[0] if i in got[1] and dict(i)[key] not in changed}
                    if same:
                        self.problem(t, f"at one commit key(s) {sorted(dict(i)[key] for i in same)} deleted and "
                                        f"inserted with identical values")

    def _check_merge_range(self, head: str, settled: dict) -> None:
        """SPEC 4 over the range from dest's head before the merge to the merge commit, net: exactly the multiset
        difference of the two versions' rows (no intermediate image of a side's update chain, no row the merge
        did not land). The plain feed of that range is the merge commit's own, which _check_changes compares
        with the same difference; reading it again here took a third of a batch's checks (2026-11-30)."""
        feeds = _json_rows({t.name: table_changes(self.lh, t.name, from_=head, to=self.merge_commit, net=True)
                            for t in self.tracked})
        for t in self.tracked:
            columns = settled[t.name].table.columns
            want = self._merge_changes(t, settled[t.name].table)
            got = (Counter(), Counter())
            for change in feeds[t.name]:
                image = tuple(sorted((c.name, change.get(c.name)) for c in columns))
                got[0 if change[CHANGE_TYPE] == DELETE else 1][image] += 1
            if got != want:
                self.problem(t, f"changes from dest's head to the merge commit (net): engine deletes {dict(got[0])} "
                                f"inserts {dict(got[1])}, the difference of the two versions deletes "
                                f"{dict(want[0])} inserts {dict(want[1])}")

    @staticmethod
    def _merge_changes(t: Tracked, merged: Table) -> tuple[Counter, Counter]:
        """What the merge commit changes on dest: the multiset difference of dest's rows and the merged rows, in
        the merged columns (SPEC 4: a row deleted and written back alike, or changed only in a column the merge
        drops, did not change)."""
        columns = merged.columns
        before = Counter(_named(r.values, columns) for r in t.dest.table.rows.values())
        after = merged.named_rows()
        return before - after, after - before


# The shapes of keyless merges settled by ours/theirs that issue 55 found wrong; a run reports how many of its
# cases reached each (test_engine_against_model.py), so a generator that stops reaching them shows.
KEYLESS_SETTLED_SHAPES = ("untouched row in a contested segment", "row one side changed in a contested segment",
                          "update chain on src", "update chain on dest", "compaction then update on src",
                          "compaction then update on dest", "CONFLICT cell beside A1/A3")


def keyless_settled_shapes(t: Tracked, settled: MergeOutcome) -> set[str]:
    """Which of KEYLESS_SETTLED_SHAPES the case's ours/theirs merge reached (none unless A1/A3 settled rows)."""
    rules = settled.rules
    if t.case.keyed or not rules & {"A1", "A3"}:
        return set()
    s_side, d_side = t.src.side, t.dest.side
    segments = ({i[0] for i, how in s_side.removed.items() if how == "update"}
                & {i[0] for i, how in d_side.removed.items() if how in ("update", "delete")})
    in_contest = [i for i in t.base.rows if i[0] in segments]
    reached = set()
    if any(i not in s_side.removed and i not in d_side.removed for i in in_contest):
        reached.add("untouched row in a contested segment")
    if any((i in s_side.removed) != (i in d_side.removed) for i in in_contest):
        reached.add("row one side changed in a contested segment")
    for name, side in (("src", s_side), ("dest", d_side)):
        if any(side.updates[i] > 1 for i in in_contest):
            reached.add(f"update chain on {name}")
        if side.compacted_before_update:
            reached.add(f"compaction then update on {name}")
    if "CONFLICT" in rules:
        reached.add("CONFLICT cell beside A1/A3")
    return reached


def run_batch(spark, cases: list[Case], merge_back: bool = MERGE_BACK, shapes: Counter | None = None,
              split: int = 0) -> list[str]:
    """The engine-against-model test of one batch: the mismatches found. `merge_back`: then merge dest back
    into src and check that src reads as dest does. `shapes`: counts, per KEYLESS_SETTLED_SHAPES, the cases
    that reached it. `split`: partitions of the frames it writes."""
    batch = Batch(spark, cases, split)
    try:
        batch.build()
        for side in ("src", "dest"):
            batch.play(side, {t.name: getattr(t.case, side) for t in batch.tracked})
        settled = batch.merge_and_check()
        if shapes is not None:
            for t in batch.tracked:
                shapes.update(keyless_settled_shapes(t, merge(t.base, t.src, t.dest, t.case.mode)))
        if settled and merge_back:
            batch.merge_back_and_check()
        return batch.problems
    finally:
        batch.close()


def without_compactions(history: list) -> list:
    return [op for op in history if op[0] != "compact"]


def with_compactions(history: list, positions: list[int]) -> list:
    out = without_compactions(history)
    for p in sorted(positions, reverse=True):
        out.insert(min(p, len(out)), ("compact",))
    return out


def run_compaction_pairs(spark, cases: list[Case], positions: list[dict], split: int = 0) -> list[str]:
    """The metamorphic test: each case runs twice in one batch, once without any compaction and once with
    compactions at `positions` ({side: [index]}); both merges must give the same rows, schema and conflicts."""
    pairs = []
    for case, where in zip(cases, positions):
        plain = replace(case, src=without_compactions(case.src), dest=without_compactions(case.dest))
        compacted = replace(case, src=with_compactions(case.src, where.get("src", [])),
                            dest=with_compactions(case.dest, where.get("dest", [])))
        pairs += [plain, compacted]
    batch = Batch(spark, pairs, split)
    lh = batch.lh
    try:
        batch.build()
        if any(where.get("base") for where in positions):
            with lh.transaction("main", message="compact the base") as tx:
                for i, where in enumerate(positions):
                    if where.get("base"):
                        tx.compact(batch.tracked[2 * i + 1].name)
            lh.drop_branch("src", force=True)
            lh.drop_branch("dest", force=True)
            lh.create_branch("src", "main")
            lh.create_branch("dest", "main")
        for side in ("src", "dest"):
            batch.play(side, {t.name: getattr(t.case, side) for t in batch.tracked})
        try:
            lh.merge("src", "dest", on_conflict="abort")
            found = {}
        except MergeConflict as exc:
            found = batch.engine_conflicts(exc.report.conflicts)
        result = lh.merge("src", "dest", on_conflict={t.name: t.case.mode for t in batch.tracked})
        settled = batch.engine_conflicts(result.resolved)
        snap = lh.snapshot(result.commit_id or lh.snapshot("dest").commit_id)
        rows = _json_rows({t.name: snap.read(t.name) for t in batch.tracked})
        for i in range(0, len(batch.tracked), 2):
            plain, compacted = batch.tracked[i], batch.tracked[i + 1]
            where = positions[i // 2]
            for what, a, b in [("conflicts (abort)", found.get(plain.name, set()), found.get(compacted.name, set())),
                               ("conflicts (ours/theirs)", settled.get(plain.name, set()),
                                settled.get(compacted.name, set())),
                               ("schema", {c.name: c.type for c in snap.table(plain.name).columns},
                                {c.name: c.type for c in snap.table(compacted.name).columns}),
                               ("rows", Counter(tuple(sorted(r.items())) for r in rows[plain.name]),
                                Counter(tuple(sorted(r.items())) for r in rows[compacted.name]))]:
                if a != b:
                    batch.problem(plain, f"compactions at {where} change the merge's {what}: without {a}, with {b}")
        return batch.problems
    finally:
        batch.close()
