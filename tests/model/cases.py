"""Random cases for the engine-against-model tests: one table each, a base and two histories.

Operations are drawn abstractly (a column by slot, rows as small integers) and made concrete only when
they run, against the model's current version of the table on that side (`concrete`), so every drawn
history is valid whatever came before it and shrinks freely.
"""
from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from tests.model.model import KEY, TYPE_RANK, Branch, Expr, Pred

KEYLESS_COLUMNS = [("a", "smallint"), ("b", "int")]
KEYED_COLUMNS = [("id", "int"), ("a", "smallint"), ("b", "int")]
WIDER = {"smallint": "int", "int": "bigint"}

values = st.integers(0, 3)
keys = st.integers(0, 7)
row_values = st.tuples(keys, values, values, values)
rows = st.lists(row_values, min_size=1, max_size=3)
slot = st.integers(0, 3)
predicate = st.tuples(slot, st.sampled_from(["=", ">=", "%2="]), st.integers(0, 2))
expression = st.tuples(st.sampled_from(["const", "inc"]), st.integers(1, 3))

DML = st.one_of(
    st.tuples(st.just("insert"), rows),
    st.tuples(st.just("delete"), predicate),
    st.tuples(st.just("update"), predicate, slot, expression),
    st.tuples(st.just("overwrite"), st.just("edit"), st.none() | slot, st.none() | slot,
              st.lists(row_values, max_size=2)),
    st.tuples(st.just("overwrite"), st.just("fresh"), st.lists(row_values, max_size=4)),
    st.tuples(st.just("compact")),
)
DDL = st.one_of(
    st.tuples(st.just("add_column")),
    st.tuples(st.just("drop_column"), slot),
    st.tuples(st.just("rename_column"), slot),
    st.tuples(st.just("widen"), slot),
)
KEYED_ONLY = st.tuples(st.just("upsert"), rows)


def operations(keyed: bool):
    # DML more often than DDL: most histories are row changes, a third of the draws touch the schema.
    weighted = st.one_of(DML, DML, DDL, KEYED_ONLY) if keyed else st.one_of(DML, DML, DDL)
    return st.lists(weighted, max_size=4)


@dataclass
class Case:
    keyed: bool
    base: list
    base_later: list  # a second base commit: a second base segment (A1/A3 are per segment)
    src: list
    dest: list
    mode: str  # on_conflict for this table in the settling merge: ours | theirs

    def describe(self) -> str:
        return (f"Case(keyed={self.keyed}, base={self.base}, base_later={self.base_later}, src={self.src}, "
                f"dest={self.dest}, mode={self.mode!r})")


# Keyless histories that contest rows (SPEC 3.3 A1/A3, settled by ours/theirs: 3.6): updates on both sides, some
# of rows the other side updates or deletes, some chained (an update of an update's image), compactions before
# and between them, and inserts, which beside a src update or delete are a CONFLICT cell.
UPDATE = st.tuples(st.just("update"), predicate, slot, expression)
CONTEST = st.one_of(
    UPDATE,
    UPDATE,
    st.tuples(st.just("delete"), predicate),
    st.tuples(st.just("insert"), rows),
    st.tuples(st.just("compact")),
)


def contest_operations(first):
    """A side's history opening with `first` (what makes the contest likely), then up to three more."""
    return st.builds(lambda head, rest: [head] + rest, first, st.lists(CONTEST, max_size=3))


# Two updates (a chain where the second matches an image of the first), a compaction between them or not, then
# up to two more.
CHAINED = st.builds(lambda first, compact, second, rest: [first] + [("compact",)] * compact + [second] + rest,
                    UPDATE, st.booleans(), UPDATE, st.lists(CONTEST, max_size=2))


def cases(keyed: bool):
    drawn = st.builds(Case, st.just(keyed), st.lists(row_values, min_size=1, max_size=4),
                      st.lists(row_values, max_size=3), operations(keyed), operations(keyed),
                      st.sampled_from(["ours", "theirs"]))
    if keyed:
        return drawn
    # One keyless case in two contests rows (src opens with two updates; dest too, or with an update, a delete
    # or a compaction), so every run settles some with ours/theirs.
    dest_opening = st.one_of(UPDATE, st.tuples(st.just("delete"), predicate), st.tuples(st.just("compact")))
    contested = st.builds(Case, st.just(keyed), st.lists(row_values, min_size=3, max_size=5),
                          st.lists(row_values, max_size=2), CHAINED, st.one_of(contest_operations(dest_opening), CHAINED),
                          st.sampled_from(["ours", "theirs"]))
    return st.one_of(drawn, contested)


def changes_something(cases_drawn) -> bool:
    """Whether any case has an operation on a side. Hypothesis tries the simplest example first, which has none:
    a batch of it would check only that merging nothing changes nothing, spending a run's batch on no history."""
    return any(case.src or case.dest for case in cases_drawn)


def batches(keyed: bool, min_size: int, max_size: int):
    return st.lists(cases(keyed), min_size=min_size, max_size=max_size).filter(changes_something)


# ------------------------------------------------------------ from abstract to concrete
def row_dict(columns, drawn: tuple) -> dict:
    """A drawn row over the current columns: the key column takes the key, others cycle the values."""
    out = {}
    for i, c in enumerate(columns):
        out[c.name] = drawn[0] if c.id == KEY else drawn[1 + i % 3]
    return out


def unique_keys(rows: list[dict], key: str | None, keep: str = "first") -> list[dict]:
    if key is None:
        return rows
    seen = {}
    for r in rows:
        if keep == "last" or r[key] not in seen:
            seen[r[key]] = r
    return list(seen.values())


def concrete(op: tuple, branch: Branch, side: str, counter: list) -> tuple | None:
    """The operation as the engine and the model both run it, against `branch`'s current table; None when
    it cannot apply (the last value column dropped, a type already the widest)."""
    t = branch.table
    key = t.columns[0].name if t.keyed else None
    value_columns = [c for c in t.columns if c.id != KEY]
    kind = op[0]

    def column(s: int):
        return value_columns[s % len(value_columns)]

    if kind == "insert":
        new = [row_dict(t.columns, r) for r in op[1]]
        if t.keyed:
            held = set(t.by_key())
            new = [r for r in unique_keys(new, key) if r[key] not in held]
        return ("insert", new) if new else None
    if kind in ("delete", "update"):
        s, cmp, v = op[1]
        target = t.columns[s % len(t.columns)]
        if kind == "delete":
            return ("delete", target.name, cmp, v)
        expr_kind, amount = op[3]
        return ("update", target.name, cmp, v, column(op[2]).name, expr_kind, amount)
    if kind == "upsert":
        return ("upsert", unique_keys([row_dict(t.columns, r) for r in op[1]], key, keep="last"))
    if kind == "overwrite":
        if op[1] == "fresh":
            new = [row_dict(t.columns, r) for r in op[2]]
        else:
            names = [c.name for c in t.columns]
            current = sorted((dict(zip(names, image)) for image in t.read().elements()), key=repr)
            _, _, drop, change, added = op
            if change is not None and current:
                row = dict(current[change % len(current)])
                c = column(change).name
                row[c] = (row[c] or 0) + 1
                current[change % len(current)] = row
            if drop is not None and current:
                del current[drop % len(current)]
            new = current + [row_dict(t.columns, r) for r in added]
        return ("overwrite", unique_keys(new, key))
    if kind == "compact":
        return ("compact",)
    counter[0] += 1
    if kind == "add_column":
        return ("add_column", f"{side[0]}{counter[0]}", "int")
    if kind == "drop_column":
        return ("drop_column", column(op[1]).name) if len(value_columns) > 1 else None
    if kind == "rename_column":
        return ("rename_column", column(op[1]).name, f"{side[0]}r{counter[0]}")
    if kind == "widen":
        c = column(op[1])
        return ("widen", c.name, WIDER[c.type]) if c.type in WIDER else None
    raise ValueError(kind)


def run_on_model(op: tuple, branch: Branch) -> None:
    t = branch.table
    kind = op[0]
    if kind == "insert":
        branch.insert(op[1])
    elif kind == "delete":
        branch.delete(Pred(t.column(op[1]).id, op[2], op[3]))
    elif kind == "update":
        branch.update(Pred(t.column(op[1]).id, op[2], op[3]), t.column(op[4]).id, Expr(op[5], op[6]))
    elif kind == "upsert":
        branch.upsert(op[1])
    elif kind == "overwrite":
        branch.overwrite(op[1])
    elif kind == "compact":
        branch.compact()
    elif kind == "add_column":
        branch.add_column(op[1], op[2])
    elif kind == "drop_column":
        branch.drop_column(op[1])
    elif kind == "rename_column":
        branch.rename_column(op[1], op[2])
    elif kind == "widen":
        assert TYPE_RANK[op[2]] > TYPE_RANK[t.column(op[1]).type]
        branch.widen(op[1], op[2])
    else:
        raise ValueError(kind)


def predicate_sql(column: str, cmp: str, value: int) -> str:
    if cmp == "%2=":
        return f"`{column}` % 2 = {value}"
    return f"`{column}` {cmp} {value}"


def expression_sql(column: str, kind: str, amount: int) -> str:
    return str(amount) if kind == "const" else f"coalesce(`{column}`, 0) + {amount}"
